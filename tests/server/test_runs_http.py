"""REST and SSE over a real uvicorn server: runs, resume, errors, catalogs, conversations, metrics."""

from __future__ import annotations

import json

import httpx
import pytest
import redis.asyncio as aioredis

from reasonloop.agents import AgentRunner
from reasonloop.config import RunsSettings
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.registry import PluginInfo
from reasonloop.server import create_app
from tests.llm_runner import LLMRunner
from tests.runs.helpers import GatedRunner, RedisServer
from tests.server.helpers import event_data, make_settings, serve, sse_events
from tests.waiting import await_until

pytestmark = pytest.mark.integration

ANSWER = "Write-ahead logging keeps readers and the writer out of each other's way."


def scripted_runner() -> LLMRunner:
    return LLMRunner(lambda: ScriptedProvider(replies=[ANSWER], chunk_size=5, repeat_last=True))


@pytest.fixture
async def server(tmp_path):
    settings = make_settings(tmp_path)
    app = create_app(settings, runner=scripted_runner())
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=20) as client:
        yield client


async def test_start_stream_and_read_a_run(server):
    created = await server.post("/v1/runs", json={"question": "What does WAL do?"})
    assert created.status_code == 201
    run_id = created.json()["run_id"]
    events = event_data(await sse_events(server, f"/v1/runs/{run_id}/events"))
    assert events[0]["type"] == "run_started" and events[-1]["type"] == "answer"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert "".join(e["text"] for e in events if e["type"] == "answer_delta") == ANSWER
    view = (await server.get(f"/v1/runs/{run_id}")).json()
    assert view["run"]["status"] == "completed"
    assert view["result"]["content"] == ANSWER
    listed = (await server.get("/v1/runs")).json()
    assert [r["run_id"] for r in listed] == [run_id]


async def test_the_event_that_ends_the_run_says_so_live_and_from_the_store(server):
    run_id = (await server.post("/v1/runs", json={"question": "What does WAL do?"})).json()["run_id"]
    async with server.stream("GET", f"/v1/runs/{run_id}/events") as response:
        assert response.headers["x-reasonloop-event-schema"] == "3"
    for _ in range(2):  # while it runs (or just after), then once it is only in the store
        events = event_data(await sse_events(server, f"/v1/runs/{run_id}/events"))
        assert [e["final"] for e in events] == [False] * (len(events) - 1) + [True]
        assert events[-1]["type"] == "answer" and events[0]["event_schema"] == 3
    resumed = event_data(await sse_events(server, f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "2"}))
    assert resumed[-1]["final"] is True and not any(e["final"] for e in resumed[:-1])


async def test_sse_resume_with_last_event_id_matches_an_uninterrupted_stream(tmp_path):
    settings = make_settings(tmp_path)
    runner = GatedRunner(steps=6)
    app = create_app(settings, runner=runner)
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=20) as client:
        run_id = (await client.post("/v1/runs", json={"question": "q"})).json()["run_id"]
        await runner.entered_event(run_id).wait()
        runner.gate(run_id).set()
        first = await sse_events(client, f"/v1/runs/{run_id}/events", limit=3)  # disconnect mid-run
        runner.finish(run_id)
        rest = await sse_events(client, f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": first[-1]["id"]})
        whole = await sse_events(client, f"/v1/runs/{run_id}/events")
        assert [m["id"] for m in first + rest] == [m["id"] for m in whole]
        assert [m["data"] for m in first + rest] == [m["data"] for m in whole]
        assert [m["event"] for m in whole][-1] == "answer"
        by_query = await sse_events(client, f"/v1/runs/{run_id}/events?after=5")
        assert [m["data"] for m in by_query] == [m["data"] for m in whole[5:]]


async def test_sse_resume_points_out_of_range_are_refused_and_the_later_of_two_wins(tmp_path):
    settings = make_settings(tmp_path, runs=RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite"), keep_finished_s=0))
    app = create_app(settings, runner=LLMRunner(ScriptedProvider(replies=[ANSWER], chunk_size=4)))
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=20) as client:
        run_id = (await client.post("/v1/runs", json={"question": "q"})).json()["run_id"]
        whole = await sse_events(client, f"/v1/runs/{run_id}/events")
        await await_until(lambda: app.state.reasonloop.manager.execution(run_id) is None)  # read from the store now
        for headers, query in (
            ({"Last-Event-ID": str(2**70)}, ""),
            ({}, f"?after={2**63}"),
            ({"Last-Event-ID": "-1"}, ""),
        ):
            refused = await client.get(f"/v1/runs/{run_id}/events{query}", headers=headers)
            assert refused.status_code == 422, (headers, query)
            assert ("last-event-id" if headers else "after") in refused.text.lower()
        # A browser's EventSource reconnects to the URL it was given, with the id it saw last.
        both = await sse_events(client, f"/v1/runs/{run_id}/events?after=2", headers={"Last-Event-ID": "5"})
        assert [m["id"] for m in both] == [m["id"] for m in whole[5:]]


async def test_stop_over_http(tmp_path):
    settings = make_settings(tmp_path)
    runner = GatedRunner(steps=4)
    app = create_app(settings, runner=runner)
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=20) as client:
        run_id = (await client.post("/v1/runs", json={"question": "q"})).json()["run_id"]
        await runner.entered_event(run_id).wait()
        stopped = await client.post(f"/v1/runs/{run_id}/stop")
        assert stopped.status_code == 200 and stopped.json()["status"] == "stopped"
        assert stopped.json()["content"] == "part0 "
        again = await client.post(f"/v1/runs/{run_id}/stop")
        assert again.status_code == 409
        assert again.json()["error"]["status"] == "stopped" and again.json()["error"]["code"] == "run.finished"
        events = event_data(await sse_events(client, f"/v1/runs/{run_id}/events"))
        assert [e["final"] for e in events] == [False] * (len(events) - 1) + [True]  # the stopped answer ends it
        assert events[-1]["stop_reason"] == "stopped"


async def test_unknown_runs_are_404(server):
    for method, path in [
        ("GET", "/v1/runs/run_nope"),
        ("GET", "/v1/runs/run_nope/events"),
        ("POST", "/v1/runs/run_nope/stop"),
        ("GET", "/v1/conversations/conv_nope"),
        ("DELETE", "/v1/conversations/conv_nope"),
    ]:
        response = await server.request(method, path)
        assert response.status_code == 404, (method, path)
        assert response.json()["error"]["code"] in ("run.not_found", "conversation.not_found")


async def test_invalid_requests_are_422_naming_the_field(tmp_path):
    settings = make_settings(tmp_path)
    app = create_app(settings, runner=AgentRunner(settings, llm=ScriptedProvider(replies=["x"])))
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=20) as client:
        missing = await client.post("/v1/runs", json={"reasoning": "qa"})
        assert missing.status_code == 422 and missing.json()["detail"][0]["loc"] == ["body", "question"]
        assert missing.json()["error"]["field"] == "question"  # the shape every other error has
        assert missing.json()["error"]["code"] == "request.invalid"
        for blank in ("", " \n\t "):
            refused = await client.post("/v1/runs", json={"question": blank})
            assert refused.status_code == 422, blank
            assert refused.json()["error"]["message"] == "question: the question is empty"
        assert (await client.get("/v1/runs")).json() == []  # nothing was started
        bad_setting = await client.post(
            "/v1/runs", json={"question": "q", "reasoning": "qa", "settings": {"top_k": 500}}
        )
        assert bad_setting.status_code == 422
        assert bad_setting.json()["error"]["field"] == "settings.top_k"
        assert bad_setting.json()["detail"][0]["loc"] == ["body", "settings", "top_k"]
        unknown = await client.post("/v1/runs", json={"question": "q", "reasoning": "telepathy"})
        assert unknown.status_code == 422 and unknown.json()["error"]["field"] == "reasoning"
        bad_conv = await client.post("/v1/runs", json={"question": "q", "conversation_id": "conv_nope"})
        assert bad_conv.status_code == 422 and bad_conv.json()["error"]["field"] == "conversation_id"
        bad_sampling = await client.post("/v1/runs", json={"question": "q", "sampling": {"temperature": -1}})
        assert bad_sampling.status_code == 422
        assert bad_sampling.json()["detail"][0]["loc"] == ["body", "sampling", "temperature"]
        assert bad_sampling.json()["error"]["field"] == "sampling.temperature"
        assert bad_sampling.json()["error"]["message"].startswith("sampling.temperature: ")
        bad_feedback = await client.post("/v1/feedback", json={"run_id": "r", "rating": 7})
        assert bad_feedback.status_code == 422 and bad_feedback.json()["detail"][0]["loc"] == ["body", "rating"]


async def test_catalogs_publish_settings_schemas(tmp_path):
    settings = make_settings(tmp_path)
    app = create_app(settings, runner=scripted_runner())
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=20) as client:
        reasoning = {p["id"]: p for p in (await client.get("/v1/reasoning")).json()}
        assert "qa" in reasoning and "top_k" in reasoning["qa"]["settings_schema"]["properties"]
        # Names, descriptions and setting labels in English and, under translations, Chinese.
        assert (
            reasoning["qa"]["translations"]["zh"]
            == PluginInfo.declared("reasoning", "qa").translations["zh"].model_dump()
        )
        timeout = reasoning["react"]["settings_schema"]["properties"]["timeout_s"]
        assert timeout["title"] == "Time limit (s)" and timeout["x-translations"]["zh"]["title"] == "时间上限（秒）"
        tools = (await client.get("/v1/tools")).json()
        assert all("id" in t for t in tools)
        docsearch = next(t for t in tools if t["id"] == "docsearch")
        assert (docsearch["name"], docsearch["translations"]["zh"]["name"]) == ("Document search", "文档检索")
        assert (await client.get("/v1/agents")).json() == []
        openapi = (await client.get("/openapi.json")).json()
        assert "/v1/runs/{run_id}/events" in openapi["paths"] and "/v1/chat/completions" in openapi["paths"]


async def test_conversations_continue_and_can_be_deleted(server):
    first = (await server.post("/v1/runs", json={"question": "first?"})).json()
    await sse_events(server, f"/v1/runs/{first['run_id']}/events")
    second = (
        await server.post("/v1/runs", json={"question": "second?", "conversation_id": first["conversation_id"]})
    ).json()
    await sse_events(server, f"/v1/runs/{second['run_id']}/events")
    conv = (await server.get(f"/v1/conversations/{first['conversation_id']}")).json()
    assert [m["role"] for m in conv["messages"]] == ["user", "assistant", "user", "assistant"]
    assert conv["messages"][2]["content"] == "second?"
    listed = (await server.get("/v1/conversations")).json()
    assert [c["conversation_id"] for c in listed] == [first["conversation_id"]]
    assert "messages" not in listed[0]  # listed without them, rather than as an empty list
    assert (await server.delete(f"/v1/conversations/{first['conversation_id']}")).status_code == 204
    assert (await server.get(f"/v1/conversations/{first['conversation_id']}")).status_code == 404


async def test_feedback_is_recorded_for_visible_runs(server):
    run_id = (await server.post("/v1/runs", json={"question": "q"})).json()["run_id"]
    await sse_events(server, f"/v1/runs/{run_id}/events")
    ok = await server.post("/v1/feedback", json={"run_id": run_id, "rating": 1, "comment": "good"})
    assert ok.status_code == 201
    assert (await server.post("/v1/feedback", json={"run_id": "run_nope", "rating": -1})).status_code == 404


async def test_health_ready_and_metrics(server):
    assert (await server.get("/healthz")).json() == {"status": "ok"}
    assert (await server.get("/readyz")).json()["status"] == "ready"
    run_id = (await server.post("/v1/runs", json={"question": "q"})).json()["run_id"]
    await sse_events(server, f"/v1/runs/{run_id}/events")

    async def metrics() -> str:
        text = (await server.get("/metrics")).text
        return text if 'reasonloop_runs_total{status="completed"} 1.0' in text else ""

    text = await await_until(metrics)  # the run's end is counted once it is recorded
    assert 'reasonloop_runs_total{status="completed"} 1.0' in text
    assert "reasonloop_run_duration_seconds_count 1.0" in text
    assert 'reasonloop_llm_tokens_total{kind="completion"}' in text


@pytest.mark.redis
async def test_a_redis_refusing_writes_is_not_ready_and_runs_get_503(tmp_path):
    redis = RedisServer()
    try:
        settings = make_settings(tmp_path, runs=RunsSettings(store="redis", redis_url=redis.url))
        app = create_app(settings, runner=scripted_runner())
        async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=20) as client:
            assert (await client.get("/readyz")).json()["status"] == "ready"
            admin = aioredis.Redis.from_url(redis.url)
            await admin.config_set("maxmemory-policy", "noeviction")
            await admin.config_set("maxmemory", "1")
            ready = await client.get("/readyz")
            assert ready.status_code == 503 and "refused" in ready.json()["error"]
            refused = await client.post("/v1/runs", json={"question": "q"})
            assert refused.status_code == 503 and refused.json()["error"]["code"] == "run.store_unavailable"
            assert "Retry-After" in refused.headers
            await admin.config_set("maxmemory", "0")
            await admin.aclose()
            assert (await client.get("/readyz")).json()["status"] == "ready"
    finally:
        redis.stop()


async def test_a_stream_that_cannot_be_read_further_ends_with_a_final_error_message():
    from reasonloop.errors import RunStoreUnavailable
    from reasonloop.events import Progress, number
    from reasonloop.runs.reading import RunFeed
    from reasonloop.server.routes.runs import sse_frames

    async def stored():
        yield number(Progress(message="retrieving", run_id="r"), 1)
        raise RunStoreUnavailable("the store went away")

    messages = [m async for m in sse_frames(RunFeed(0, stored=stored()))]
    assert [m["event"] for m in messages] == ["progress", "error"]
    first, last = (json.loads(m["data"]) for m in messages)
    assert first["final"] is False
    assert last == {"type": "error", "code": "run.store_unavailable", "message": "the store went away", "final": True}
