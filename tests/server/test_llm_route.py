"""``GET /v1/llm`` and ``model`` in a run request: the model in use and the served ones a run may
pick, against a loopback server speaking Ollama's API."""

from __future__ import annotations

import httpx
import pytest

from reasonloop.config import LLMSettings
from reasonloop.server import create_app
from tests.llm.fixtures.local_servers import OLLAMA_MODELS, closed_port, discovery_settings, ollama_app, serving
from tests.server.helpers import make_settings, serve
from tests.waiting import await_until

pytestmark = pytest.mark.integration


@pytest.fixture
async def ollama():
    seen: list[str] = []
    async with serving(ollama_app(OLLAMA_MODELS, seen)) as port:
        yield port, seen


async def started(tmp_path, llm: LLMSettings):
    settings = make_settings(tmp_path)
    settings.llm = llm
    return settings, create_app(settings)


async def finished(http: httpx.AsyncClient, run_id: str) -> dict:
    async def ended() -> dict | None:
        view = (await http.get(f"/v1/runs/{run_id}")).json()
        return view if view["run"]["status"] not in ("queued", "running") else None

    return await await_until(ended, interval=0.05, what=f"run {run_id} ended")


async def test_the_model_in_use_and_the_served_ones_a_run_may_pick(tmp_path, ollama):
    port, seen = ollama
    settings, app = await started(tmp_path, discovery_settings([port]))
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
        view = (await http.get("/v1/llm")).json()
        assert view["in_use"]["name"] == "ollama:llama3.2:3b"
        assert "found on this machine" in view["in_use"]["chosen_by"]
        assert view["offered"] is True
        assert [m["name"] for m in view["found"]] == list(OLLAMA_MODELS)
        phi = next(m for m in view["found"] if m["name"] == "phi3:mini")
        assert phi["id"] == f"ollama:phi3:mini@127.0.0.1:{port}" and phi["kind"] == "instruct"

        started_run = await http.post(
            "/v1/runs", json={"question": "Capital of France?", "reasoning": "react", "model": phi["id"]}
        )
        assert started_run.status_code == 201, started_run.text
        done = await finished(http, started_run.json()["run_id"])
        assert done["run"]["status"] == "completed", done
        assert "/api/chat phi3:mini" in seen and "/api/chat llama3.2:3b" not in seen

        plain = await http.post("/v1/runs", json={"question": "Capital of France?", "reasoning": "react"})
        await finished(http, plain.json()["run_id"])
        assert "/api/chat llama3.2:3b" in seen  # without a pick: the model in use


async def test_a_model_that_was_not_found_is_refused(tmp_path, ollama):
    port, _ = ollama
    settings, app = await started(tmp_path, discovery_settings([port]))
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
        await http.get("/v1/llm")
        for model in ("openai:gpt-4o@api.openai.com", f"ollama:llama3.2:3b@127.0.0.1:{closed_port()}"):
            refused = await http.post("/v1/runs", json={"question": "hi", "reasoning": "react", "model": model})
            assert refused.status_code == 422, refused.text
            error = refused.json()["error"]
            assert error["field"] == "model" and "was found on the server's machine" in error["message"]


async def test_with_a_configured_model_nothing_is_offered_or_looked_for(tmp_path, ollama):
    port, seen = ollama
    settings, app = await started(tmp_path, discovery_settings([port], provider="ollama", model="mine"))
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
        view = (await http.get("/v1/llm")).json()
        assert view["offered"] is False and view["found"] == []
        assert view["in_use"] == {"name": "ollama:mine", "chosen_by": "", "problem": ""}
        refused = await http.post("/v1/runs", json={"question": "hi", "reasoning": "react", "model": "x"})
        assert refused.status_code == 422 and refused.json()["error"]["field"] == "model"
    assert seen == []


async def test_nothing_found_and_nothing_configured_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr("reasonloop.llm.resolve.local_model_installed", lambda: False)
    settings, app = await started(tmp_path, discovery_settings())
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
        view = (await http.get("/v1/llm")).json()
    assert view["in_use"]["name"] == "" and "no LLM is configured" in view["in_use"]["problem"]
    assert view["offered"] is True and view["found"] == []
