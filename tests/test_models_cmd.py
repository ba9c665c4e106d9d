"""``reasonloop models`` and the note the CLI prints when ``auto`` picks a served model, against a
loopback server speaking Ollama's API."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from reasonloop.cli.console import console, rich_console
from reasonloop.registry import Registry
from tests.cli_run import run_cli as run
from tests.environment import DISCOVERY_OFF, is_outside_setting
from tests.llm.fixtures.local_servers import OLLAMA_MODELS, closed_port, ollama_app, serving


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """A cwd without reasonloop.toml, no REASONLOOP_* variables but the discovery ports of each test."""
    for name in list(os.environ):
        if is_outside_setting(name):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(rich_console(console), "width", 200)  # table rows on one line each
    saved = Registry._default
    yield
    Registry.set_default(saved)


@pytest.fixture
async def ollama(monkeypatch):
    """The Ollama fixture on a free port; the OpenAI-compatible ports looked at are closed."""
    seen: list[str] = []
    async with serving(ollama_app(OLLAMA_MODELS, seen)) as port:
        monkeypatch.setenv("REASONLOOP_LLM__DISCOVER_OLLAMA_PORTS", f"[{port}]")
        monkeypatch.setenv("REASONLOOP_LLM__OLLAMA_URL", f"http://127.0.0.1:{port}")
        monkeypatch.setenv("REASONLOOP_LLM__DISCOVER_OPENAI_PORTS", f"[{closed_port()}]")
        yield port, seen


@pytest.mark.integration
async def test_models_lists_what_it_found_with_capabilities(ollama, capsys, monkeypatch):
    port, _ = ollama
    monkeypatch.setenv(DISCOVERY_OFF, "true")
    code, out, _ = await asyncio.to_thread(run, capsys, "models", "--json")
    assert code == 0
    report = json.loads(out)
    rows = {m["name"]: m for m in report["models"]}
    assert list(rows) == list(OLLAMA_MODELS)
    assert rows["llama3.2:3b"] | {} == {
        "id": f"ollama:llama3.2:3b@127.0.0.1:{port}",
        "spec": "ollama:llama3.2:3b",
        "server": "ollama",
        "base_url": f"http://127.0.0.1:{port}",
        "name": "llama3.2:3b",
        "kind": "instruct",
        "kind_from": "server",
        "tool_calls": True,
        "context_length": 131072,
        "chosen": True,
    }
    assert [m["name"] for m in report["models"] if m["chosen"]] == ["llama3.2:3b"]
    assert report["in_use"] == f"ollama:llama3.2:3b at http://127.0.0.1:{port}"
    assert [p["answered"] for p in report["probes"]] == [True, False]

    code, out, _ = await asyncio.to_thread(run, capsys, "models")
    assert code == 0
    assert "llama3.2:3b" in out and "instruction-tuned (server)" in out and "131072" in out
    assert "base (server)" in out and "not for chat" in out
    assert "connection refused" in out


@pytest.mark.integration
async def test_models_with_discovery_off_still_lists_but_auto_does_not_use_them(ollama, capsys):
    code, out, _ = await asyncio.to_thread(run, capsys, "models")
    assert code == 0
    assert "llama3.2:3b" in out
    assert "in use: local (the embedded model)" in out
    assert "discover is off" in out


@pytest.mark.integration
async def test_models_with_a_configured_model_says_so(ollama, capsys, monkeypatch):
    monkeypatch.setenv("REASONLOOP_LLM__PROVIDER", "openai")
    monkeypatch.setenv("REASONLOOP_LLM__MODEL", "gpt-4o-mini")
    code, out, _ = await asyncio.to_thread(run, capsys, "models", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["in_use"] == "openai:gpt-4o-mini"
    assert not any(m["chosen"] for m in report["models"])


async def test_models_with_every_port_closed(capsys, monkeypatch):
    monkeypatch.setenv("REASONLOOP_LLM__DISCOVER_OLLAMA_PORTS", f"[{closed_port()}]")
    monkeypatch.setenv("REASONLOOP_LLM__DISCOVER_OPENAI_PORTS", f"[{closed_port()}]")
    monkeypatch.setenv(
        "REASONLOOP_LLM__OLLAMA_URL", "http://127.0.0.1:" + os.environ["REASONLOOP_LLM__DISCOVER_OLLAMA_PORTS"][1:-1]
    )
    monkeypatch.setenv(DISCOVERY_OFF, "true")
    code, out, _ = await asyncio.to_thread(run, capsys, "models")
    assert code == 0
    assert "no models found on this machine" in out
    assert out.count("connection refused") == 2
    assert "in use: local (the embedded model)" in out


@pytest.mark.integration
async def test_llm_command_says_which_found_model_answers_and_how_to_change_it(ollama, capsys, monkeypatch):
    port, seen = ollama
    monkeypatch.setenv(DISCOVERY_OFF, "true")
    code, out, err = await asyncio.to_thread(run, capsys, "llm", "What is the capital of France?")
    assert code == 0, err
    assert out.strip() == "Paris"
    assert "/api/chat llama3.2:3b" in seen
    note = " ".join(err.split())
    assert f"note: using ollama:llama3.2:3b at http://127.0.0.1:{port}" in note
    assert "--llm provider:model" in note and "REASONLOOP_LLM__DISCOVER=false" in note
