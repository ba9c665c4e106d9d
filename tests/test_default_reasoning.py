"""One default strategy: a run that names none runs ``DEFAULT_REASONING`` from the command line,
the Python API, the HTTP run API, the OpenAI-compatible endpoint, and (tests/webui) the web UI."""

from __future__ import annotations

import inspect
import json
import os

import httpx
import pytest

from reasonloop.agents import DEFAULT_REASONING as RUNNER_DEFAULT
from reasonloop.agents import Agent, AgentRunner
from reasonloop.cli import ask_cmd, chat_cmd
from reasonloop.defaults import DEFAULT_REASONING
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.registry import Registry
from reasonloop.server import create_app
from tests.cli_run import run_cli
from tests.environment import is_outside_setting
from tests.server.helpers import event_data, make_settings, serve, sse_events


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """A working directory without a config or a knowledge base, no REASONLOOP_* variables."""
    for name in list(os.environ):
        if is_outside_setting(name):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    saved = Registry._default
    yield tmp_path
    Registry.set_default(saved)


def test_the_default_answers_from_the_documents_in_one_step():
    assert DEFAULT_REASONING == "qa"
    assert RUNNER_DEFAULT is DEFAULT_REASONING  # the server's runner reads the same constant


def test_an_agent_runs_the_default():
    assert Agent(llm=ScriptedProvider(replies=[])).reasoning_id == DEFAULT_REASONING


def test_ask_and_chat_run_the_default(isolated, capsys):
    for command in (ask_cmd.ask, chat_cmd.chat):
        # None: no strategy named (a --mode may name one instead); the Agent runs the default then
        assert inspect.signature(command).parameters["reasoning"].default is None
    replies = isolated / "replies.json"
    replies.write_text(json.dumps(["Hello!"]), encoding="utf-8")
    code, out, err = run_cli(capsys, "ask", "hello", "--llm", f"scripted:{replies}", "--json")
    assert code == 0, err
    assert json.loads(out)["meta"]["reasoning"] == DEFAULT_REASONING


async def test_the_run_api_the_openai_endpoint_and_the_catalog_use_the_default(tmp_path):
    settings = make_settings(tmp_path)
    runner = AgentRunner(settings, llm=ScriptedProvider(replies=["Hello!"], repeat_last=True))
    app = create_app(settings, runner=runner)
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=60) as client:
        listed = (await client.get("/v1/reasoning")).json()
        assert [p["id"] for p in listed if p["default"]] == [DEFAULT_REASONING]  # what the web UI selects
        run_ids = [(await client.post("/v1/runs", json={"question": "hello"})).json()["run_id"]]
        for model in ("reasonloop", "default"):
            body = {"model": model, "messages": [{"role": "user", "content": "hello"}]}
            completion = await client.post("/v1/chat/completions", json=body)
            assert completion.status_code == 200, completion.text
            run_ids.append(completion.headers["x-run-id"])
        for run_id in run_ids:
            events = event_data(await sse_events(client, f"/v1/runs/{run_id}/events"))
            assert events[0]["type"] == "run_started" and events[0]["reasoning"] == DEFAULT_REASONING
