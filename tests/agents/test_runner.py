"""The server's default runner: the Agent API over each tenant's own knowledge base."""

from __future__ import annotations

import os

import httpx
import pytest

from reasonloop.agents import AgentRunner
from reasonloop.config import APIKeySettings
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.server import create_app
from reasonloop.server.auth import hash_key
from tests.server.helpers import event_data, make_settings, serve, sse_events

A = {"Authorization": "Bearer key-a"}
B = {"Authorization": "Bearer key-b"}


@pytest.mark.integration
async def test_runs_search_only_their_tenants_documents(tmp_path):
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    settings = make_settings(
        tmp_path,
        api_keys=[
            APIKeySettings(sha256=hash_key("key-a"), tenant="a"),
            APIKeySettings(sha256=hash_key("key-b"), tenant="b"),
        ],
    )
    runner = AgentRunner(settings, llm=ScriptedProvider(replies=["The keeper logs ships [1]."], repeat_last=True))
    app = create_app(settings, runner=runner)
    runner.kb = app.state.reasonloop.kb
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=60) as client:
        doc = ("ships.txt", "The lighthouse keeper logs every ship that passes.\n", "text/plain")
        assert (await client.post("/v1/kb/documents", files={"files": doc}, headers=A)).status_code == 201
        outputs = {}
        for name, headers in (("a", A), ("b", B)):
            run = (
                await client.post("/v1/runs", json={"question": "who logs ships?", "reasoning": "qa"}, headers=headers)
            ).json()
            events = event_data(await sse_events(client, f"/v1/runs/{run['run_id']}/events", headers=headers))
            assert events[0]["type"] == "run_started" and events[0]["reasoning"] == "qa"
            assert events[-1]["type"] == "answer"
            outputs[name + "_answer"] = events[-1]["text"]
            assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
            assert {e["run_id"] for e in events} == {run["run_id"]}
            outputs[name] = " ".join(e["evidence"] for e in events if e["type"] == "searched")
        assert "lighthouse" in outputs["a"] and outputs["a_answer"] == "The keeper logs ships [1]."
        assert "lighthouse" not in outputs["b"]


@pytest.mark.integration
async def test_declared_agents_are_listed_and_run(tmp_path):
    from reasonloop.config import AgentSettings

    settings = make_settings(tmp_path)
    settings.agents = {"helper": AgentSettings(reasoning="toolcall", description="answers briefly", tools=[])}
    runner = AgentRunner(settings, llm=ScriptedProvider(replies=["Brief answer."], repeat_last=True))
    app = create_app(settings, runner=runner)
    runner.kb = app.state.reasonloop.kb
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=60) as client:
        agents = (await client.get("/v1/agents")).json()
        assert [a["id"] for a in agents] == ["helper"] and agents[0]["description"] == "answers briefly"
        assert "max_rounds" in agents[0]["settings_schema"]["properties"]
        run = (await client.post("/v1/runs", json={"question": "hi?", "agent": "helper"})).json()
        events = event_data(await sse_events(client, f"/v1/runs/{run['run_id']}/events"))
        assert events[-1]["type"] == "answer" and events[-1]["text"] == "Brief answer."
        unknown = await client.post("/v1/runs", json={"question": "hi?", "agent": "nobody"})
        assert unknown.status_code == 422 and unknown.json()["error"]["field"] == "agent"
        chat = await client.post(
            "/v1/chat/completions", json={"model": "helper", "messages": [{"role": "user", "content": "hi"}]}
        )
        assert chat.json()["choices"][0]["message"]["content"] == "Brief answer."


@pytest.mark.integration
async def test_feedback_reaches_the_store_that_guides_later_runs(tmp_path):
    from reasonloop.tools.feedback import FeedbackStore

    settings = make_settings(tmp_path)
    llm = ScriptedProvider(replies=["Answer one.", "Answer two."])
    app = create_app(settings, runner=AgentRunner(settings, llm=llm))
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=60) as client:
        run = (await client.post("/v1/runs", json={"question": "first?", "reasoning": "toolcall"})).json()
        await sse_events(client, f"/v1/runs/{run['run_id']}/events")
        posted = await client.post("/v1/feedback", json={"run_id": run["run_id"], "rating": -1, "comment": "too vague"})
        assert posted.status_code == 201
        store = FeedbackStore.from_settings(settings)  # the file, read as another process would
        recent = await store.recent("default", run["conversation_id"])
        store.close()
        assert [(f.rating, f.reason, f.run_id) for f in recent] == [("bad", "too vague", run["run_id"])]
        second = (await client.post("/v1/runs", json={"question": "second?", "reasoning": "toolcall"})).json()
        await sse_events(client, f"/v1/runs/{second['run_id']}/events")
    system_prompt = " ".join(m.content for m in llm.prompts[-1] if m.role == "system")
    assert "too vague" in system_prompt


async def test_the_configured_llm_is_resolved_once_from_the_servers_settings(tmp_path, monkeypatch):
    import json

    import reasonloop.llm.resolve as resolve
    from reasonloop.config import LLMSettings
    from reasonloop.runs.models import RunRequest

    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["First.", "Second."]), encoding="utf-8")
    settings = make_settings(tmp_path)
    settings.llm = LLMSettings(provider="scripted", model=str(replies), max_retries=0)
    made = []
    real = resolve.create_llm

    def counting(*args, **kwargs):
        made.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(resolve, "create_llm", counting)
    monkeypatch.chdir(tmp_path)  # no reasonloop.toml here: only the server's settings name the model
    runner = AgentRunner(settings)
    answers = []
    for n in range(2):
        events = [e async for e in runner(RunRequest(question="hello there", reasoning="toolcall", run_id=f"r{n}"))]
        answers.append(events[-1].text)
    assert answers == ["First.", "Second."]  # one scripted model served both runs, in order
    assert len(made) == 1 and made[0][1] is settings


async def test_a_declared_agent_runs_with_its_own_llm_when_the_runner_has_none(tmp_path, monkeypatch):
    import json

    from reasonloop.config import AgentSettings
    from reasonloop.runs.models import RunRequest

    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["From the agent's own model."]), encoding="utf-8")
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    settings = make_settings(tmp_path)
    settings.agents = {"own": AgentSettings(reasoning="toolcall", llm=f"scripted:{replies}", tools=[])}
    events = [e async for e in AgentRunner(settings)(RunRequest(question="hi", agent="own", run_id="r1"))]
    assert events[-1].type == "answer" and events[-1].text == "From the agent's own model."


@pytest.mark.integration
async def test_agents_of_the_agents_file_serve_like_the_others_and_their_settings_are_checked(tmp_path):
    import json

    from reasonloop.runs.models import RunRequest

    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["Filed answer."] * 3), encoding="utf-8")  # one model for the three runs
    agents_file = tmp_path / "agents.toml"
    agents_file.write_text(
        f'[agents.filed]\nreasoning = "toolcall"\ntools = []\nllm = "scripted:{replies}"\n'
        "settings = { max_rounds = 2 }\n",
        encoding="utf-8",
    )
    settings = make_settings(tmp_path)
    settings.agents_file = str(agents_file)
    runner = AgentRunner(settings)
    app = create_app(settings, runner=runner)
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=60) as client:
        assert [a["id"] for a in (await client.get("/v1/agents")).json()] == ["filed"]
        assert "filed" in [m["id"] for m in (await client.get("/v1/models")).json()["data"]]
        bad = await client.post("/v1/runs", json={"question": "hi?", "agent": "filed", "settings": {"max_rounds": "x"}})
        assert bad.status_code == 422 and bad.json()["error"]["field"] == "settings.max_rounds"
        for given in ({}, {"max_rounds": 3}, {}):
            run = (await client.post("/v1/runs", json={"question": "hi?", "agent": "filed", "settings": given})).json()
            events = event_data(await sse_events(client, f"/v1/runs/{run['run_id']}/events"))
            assert events[-1]["type"] == "answer" and events[-1]["text"] == "Filed answer."
    # One model client per declared agent and tenant, not one per run (each would keep its connections).
    models = {id(runner._agent(RunRequest(question="q", agent="filed"), None).llm) for _ in range(3)}
    assert len(models) == 1


@pytest.mark.integration
async def test_the_servers_models_are_closed_when_it_stops(tmp_path):
    from reasonloop.config import AgentSettings

    closed: list[str] = []

    class Closing(ScriptedProvider):
        async def aclose(self) -> None:
            closed.append(self.name)

    settings = make_settings(tmp_path)
    settings.agents = {"helper": AgentSettings(reasoning="toolcall", tools=[])}
    runner = AgentRunner(settings, llm=Closing(replies=["ok"], repeat_last=True))
    app = create_app(settings, runner=runner)
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=60) as client:
        for body in ({"question": "q"}, {"question": "q", "agent": "helper"}):
            run = (await client.post("/v1/runs", json=body)).json()
            await sse_events(client, f"/v1/runs/{run['run_id']}/events")
        assert closed == []
    assert closed == ["scripted"]  # once, though the agent shares it
