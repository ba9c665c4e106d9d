"""Thinking modes over HTTP: POST /v1/runs takes a mode and a budget, the OpenAI route takes modes as
model names (official ``openai`` SDK), the WebSocket ``ask`` takes a mode; bad names are refused in our words."""

from __future__ import annotations

import json

import httpx
import openai
import pytest
import websockets

from reasonloop.agents import AgentRunner
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.server import create_app
from tests.server.helpers import event_data, make_settings, serve, sse_events

ANSWER = "Write-ahead logging keeps readers and the writer out of each other's way."
ROUTE = json.dumps({"route": "none", "reason": "nothing to look up"})


def _reply(messages, tools):
    if '"route":' in messages[-1].content:
        return ROUTE
    return ANSWER


@pytest.fixture
async def server(tmp_path):
    settings = make_settings(tmp_path)
    llm = ScriptedProvider(replies=_reply)
    app = create_app(settings, runner=AgentRunner(settings, llm=llm))
    async with serve(app, settings) as url:
        yield url, llm


async def test_a_run_asked_by_mode_runs_the_modes_strategy(server):
    url, _ = server
    async with httpx.AsyncClient(base_url=url, timeout=20) as client:
        created = await client.post("/v1/runs", json={"question": "Hello!", "mode": "fast"})
        assert created.status_code == 201
        run_id = created.json()["run_id"]
        events = event_data(await sse_events(client, f"/v1/runs/{run_id}/events"))
        assert events[0]["reasoning"] == "qa" and events[-1]["text"] == ANSWER
        assert (await client.get(f"/v1/runs/{run_id}")).json()["run"]["reasoning"] == "fast"


async def test_auto_sends_its_route_event_and_keeps_to_the_budget(server):
    url, llm = server
    async with httpx.AsyncClient(base_url=url, timeout=20) as client:
        body = {"question": "Good day to you", "mode": "auto", "budget": {"max_tokens": 4000, "timeout_s": 60}}
        run_id = (await client.post("/v1/runs", json=body)).json()["run_id"]
        events = event_data(await sse_events(client, f"/v1/runs/{run_id}/events"))
        route = next(e for e in events if e["type"] == "route")
        assert route == {
            **route,
            "route": "none",
            "strategy": "",
            "reason": "nothing to look up",
            "decided_by": "model",
            "wanted": None,
        }
        assert [e["type"] for e in events][:2] == ["run_started", "route"] and events[-1]["text"] == ANSWER
        asked = len(llm.prompts)
        tiny = {"question": "Hello there, nice to see you", "mode": "auto", "budget": {"max_tokens": 300}}
        run_id = (await client.post("/v1/runs", json=tiny)).json()["run_id"]
        events = event_data(await sse_events(client, f"/v1/runs/{run_id}/events"))
    route = next(e for e in events if e["type"] == "route")
    assert route["decided_by"] == "rule" and "too small to ask the model" in route["reason"]
    assert len(llm.prompts) == asked + 1  # only the answer: the budget reached the router


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"mode": "quick"}, "mode", "unknown mode 'quick': the modes are fast, balanced, deep, research, auto"),
        ({"mode": "fast", "reasoning": "qa"}, "mode", "give a strategy or a mode, not both"),
        ({"mode": "research"}, "mode", "strategy research is not available"),
        ({"mode": "deep", "settings": {"max_rounds": 0}}, "settings.max_rounds", "greater than or equal to 1"),
        ({"mode": "auto", "budget": {"max_tokens": 0}}, "budget", "greater than or equal to 1"),
        ({"mode": "auto", "budget": {"tokens": 10}}, "budget", "tokens"),
    ],
)
async def test_bad_modes_and_budgets_are_refused_naming_the_field(server, body, field, words):
    url, _ = server
    async with httpx.AsyncClient(base_url=url, timeout=20) as client:
        refused = await client.post("/v1/runs", json={"question": "q", **body})
        assert refused.status_code == 422, refused.text
        assert words in refused.text and field in refused.text
        assert (await client.get("/v1/runs")).json() == []  # nothing was recorded


async def test_modes_are_openai_model_names(server):
    url, _ = server
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    listed = [m.id async for m in client.models.list()]
    assert {"fast", "balanced", "deep", "auto"} <= set(listed) and "research" not in listed  # not installed here
    stream = await client.chat.completions.create(
        model="auto", messages=[{"role": "user", "content": "Hi!"}], stream=True
    )
    chunks = [chunk async for chunk in stream if chunk.choices]
    lane = "".join((c.choices[0].delta.model_extra or {}).get("reasoning_content") or "" for c in chunks)
    assert "Route: none: nothing to look up" in lane
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == ANSWER
    fast = await client.chat.completions.create(model="fast", messages=[{"role": "user", "content": "Hi!"}])
    assert fast.choices[0].message.content == ANSWER
    with pytest.raises(openai.NotFoundError) as info:
        await client.chat.completions.create(model="research", messages=[{"role": "user", "content": "q"}])
    assert "strategy research is not available" in str(info.value)
    await client.close()


async def test_a_websocket_ask_takes_a_mode(server):
    url, _ = server
    async with websockets.connect(url.replace("http", "ws") + "/v1/ws") as ws:
        await ws.send(json.dumps({"type": "ask", "question": "Hello there", "mode": "auto"}))
        seen = []
        while True:
            frame = json.loads(await ws.recv())
            if frame.get("type") == "event":
                seen.append(frame["event"])
                if frame["event"].get("final"):
                    break
            elif frame.get("type") == "error":
                raise AssertionError(frame)
        assert [e["type"] for e in seen if e["type"] == "route"] == ["route"] and seen[-1]["text"] == ANSWER
        await ws.send(json.dumps({"type": "ask", "question": "Hello", "mode": "quick"}))
        refused = json.loads(await ws.recv())
        assert refused["type"] == "error" and "unknown mode 'quick'" in json.dumps(refused)


def test_a_declared_agent_with_a_mode_is_refused_naming_mode():
    from reasonloop.config import Settings
    from reasonloop.errors import RequestInvalid
    from reasonloop.runs.models import RunRequest

    runner = AgentRunner(Settings(), llm=ScriptedProvider(replies=[]))
    with pytest.raises(RequestInvalid, match="a declared agent answers with its own strategy: leave out mode") as info:
        runner.validate(RunRequest(question="q", agent="helper", mode="fast"))
    assert info.value.details["field"] == "mode"
