"""API keys (hashed in config), tenant isolation across every resource, and rate limits."""

from __future__ import annotations

import asyncio
import json
import logging

import httpx
import pytest
import redis.asyncio as aioredis
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from reasonloop.config import APIKeySettings, RunsSettings, ServerSettings
from reasonloop.errors import CrossSiteRefused, RateLimited, RunStoreUnavailable
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.runs.stores.redis.store import RedisRunStore
from reasonloop.server import create_app
from reasonloop.server.auth import auth_warning, hash_key
from reasonloop.server.cross_site import check_host
from reasonloop.server.gate import Gate, presented_key
from reasonloop.server.rate_limit import TokenBucket
from tests.llm_runner import LLMRunner
from tests.runs.helpers import RedisServer
from tests.server.helpers import make_settings, serve, sse_events

KEYS = {"alice": "sk-alice-123", "bob": "sk-bob-456", "slow": "sk-slow-789"}


def bearer(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[name]}"}


@pytest.fixture
async def server(tmp_path):
    settings = make_settings(
        tmp_path,
        api_keys=[
            APIKeySettings(sha256=hash_key(KEYS["alice"]), tenant="acme", name="alice"),
            APIKeySettings(sha256=hash_key(KEYS["bob"]), tenant="globex", name="bob"),
            APIKeySettings(sha256=hash_key(KEYS["slow"]), tenant="acme", rate_per_minute=60, burst=2),
        ],
    )
    runner = LLMRunner(lambda: ScriptedProvider(replies=["fine."]))
    async with (
        serve(create_app(settings, runner=runner), settings) as url,
        httpx.AsyncClient(base_url=url, timeout=20) as client,
    ):
        yield client, url


@pytest.mark.integration
async def test_keys_are_required_and_checked(server):
    client, _ = server
    assert (await client.get("/v1/runs")).status_code == 401
    wrong = await client.get("/v1/runs", headers={"Authorization": "Bearer sk-nope"})
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "auth.invalid_key"
    assert (await client.get("/v1/runs", headers=bearer("alice"))).status_code == 200
    assert (await client.get("/healthz")).status_code == 200


@pytest.mark.integration
async def test_tenants_never_see_each_other(server):
    client, _ = server
    run = (await client.post("/v1/runs", json={"question": "secret plans"}, headers=bearer("alice"))).json()
    await sse_events(client, f"/v1/runs/{run['run_id']}/events", headers=bearer("alice"))
    for method, path in [
        ("GET", f"/v1/runs/{run['run_id']}"),
        ("GET", f"/v1/runs/{run['run_id']}/events"),
        ("POST", f"/v1/runs/{run['run_id']}/stop"),
        ("GET", f"/v1/conversations/{run['conversation_id']}"),
        ("DELETE", f"/v1/conversations/{run['conversation_id']}"),
    ]:
        assert (await client.request(method, path, headers=bearer("bob"))).status_code == 404, path
    assert (await client.get("/v1/runs", headers=bearer("bob"))).json() == []
    assert (await client.get("/v1/conversations", headers=bearer("bob"))).json() == []
    cont = await client.post(
        "/v1/runs", json={"question": "more", "conversation_id": run["conversation_id"]}, headers=bearer("bob")
    )
    assert cont.status_code == 422
    feedback = await client.post("/v1/feedback", json={"run_id": run["run_id"], "rating": 1}, headers=bearer("bob"))
    assert feedback.status_code == 404
    assert len((await client.get("/v1/runs", headers=bearer("alice"))).json()) == 1
    assert (await client.get(f"/v1/conversations/{run['conversation_id']}", headers=bearer("alice"))).status_code == 200


@pytest.mark.integration
async def test_rate_limit_answers_429_with_retry_after(server):
    client, _ = server
    codes = [(await client.get("/v1/runs", headers=bearer("slow"))).status_code for _ in range(3)]
    assert codes[:2] == [200, 200] and codes[2] == 429
    limited = await client.get("/v1/runs", headers=bearer("slow"))
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
    assert limited.json()["error"]["code"] == "auth.rate_limited"
    assert (await client.get("/v1/runs", headers=bearer("alice"))).status_code == 200  # other keys unaffected


@pytest.mark.redis
async def test_with_the_redis_store_every_instance_draws_from_the_same_rate_budget(tmp_path, redis_server):
    keys = [APIKeySettings(sha256=hash_key(KEYS["slow"]), tenant="acme", rate_per_minute=60, burst=3)]
    runs = RunsSettings(store="redis", redis_url=redis_server.url, redis_prefix=f"rl{tmp_path.name}:")
    settings = make_settings(tmp_path, api_keys=keys, runs=runs)
    runner = LLMRunner(lambda: ScriptedProvider(replies=["fine."]))
    async with (
        serve(create_app(settings, runner=runner), settings) as url_a,
        serve(create_app(settings, runner=runner), settings) as url_b,
        httpx.AsyncClient(timeout=20) as client,
    ):
        codes = [
            (await client.get(f"{url}/v1/runs", headers=bearer("slow"))).status_code for url in (url_a, url_b, url_a)
        ]
        assert codes == [200, 200, 200]
        limited = await client.get(f"{url_b}/v1/runs", headers=bearer("slow"))  # the budget of both, spent
        assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1


async def test_a_shared_budget_that_does_not_answer_leaves_each_process_counting_on_its_own(caplog):
    gate = Gate(ServerSettings(api_keys=[{"sha256": hash_key("k"), "rate_per_minute": 60, "burst": 1}]))
    who = gate.identify({"type": "http", "headers": [(b"authorization", b"Bearer k")]})
    answers: list[float | None] = [None, None, 0.0, 30.0]

    async def shared(key: str, rate: float, burst: int) -> float:
        assert (key, rate, burst) == (who.key_hash, 1.0, 1)
        answer = answers.pop(0)
        if answer is None:
            raise RunStoreUnavailable("Redis at redis://x is unreachable")
        return answer

    gate.rates.shared = shared
    caplog.set_level(logging.INFO, logger="reasonloop.server.rate_limit")
    await gate.charge(who)  # Redis silent: this process's own bucket (burst 1) takes it
    with pytest.raises(RateLimited):
        await gate.charge(who)  # still silent: the own bucket is empty
    await gate.charge(who)  # Redis back, with a token: its word counts, not the empty own bucket
    with pytest.raises(RateLimited) as info:
        await gate.charge(who)
    assert info.value.details["retry_after"] == 30
    said = [r.getMessage() for r in caplog.records]
    assert len([m for m in said if "rate limits unavailable" in m]) == 1  # said once, not per request
    assert len([m for m in said if "rate limits are back" in m]) == 1


@pytest.mark.redis
async def test_redis_rate_buckets_refill_on_the_servers_clock_and_expire(redis_server):
    store = RedisRunStore(RunsSettings(store="redis", redis_url=redis_server.url, redis_prefix="rlunit:"))
    assert store.features.rate_buckets
    client = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    await store.open()
    try:
        assert await store.take_token("k", 20.0, 2) == 0.0
        assert await store.take_token("k", 20.0, 2) == 0.0
        wait = await store.take_token("k", 20.0, 2)
        assert 0 < wait <= 0.05
        await asyncio.sleep(wait + 0.02)
        assert await store.take_token("k", 20.0, 2) == 0.0  # one token back after 1/rate seconds
        assert await store.take_token("other", 20.0, 2) == 0.0  # buckets are per key
        assert 0 < await client.pttl("rlunit:rate:k") <= 1100  # gone once it would be full again
    finally:
        await store.close()
        await client.aclose()


@pytest.mark.redis
async def test_redis_rate_buckets_are_unavailable_when_redis_does_not_answer():
    server = RedisServer()
    store = RedisRunStore(RunsSettings(store="redis", redis_url=server.url))
    try:
        with pytest.raises(RunStoreUnavailable):
            await store.take_token("k", 1.0, 1)  # not open yet
        await store.open()
        assert await store.take_token("k", 1.0, 1) == 0.0
        server.stop()  # Redis goes away
        with pytest.raises(RunStoreUnavailable):
            await store.take_token("k", 1.0, 1)
    finally:
        await store.close()
        server.stop()


@pytest.mark.integration
async def test_websocket_auth_by_query_or_subprotocol(server):
    _, url = server
    ws_url = url.replace("http://", "ws://") + "/v1/ws"
    with pytest.raises((InvalidStatus, ConnectionClosed)):
        async with connect(ws_url) as ws:
            await ws.send(json.dumps({"type": "ping"}))
            await ws.recv()
    async with connect(f"{ws_url}?api_key={KEYS['alice']}") as ws:
        await ws.send(json.dumps({"type": "ping"}))
        assert json.loads(await ws.recv()) == {"type": "pong"}
    async with connect(ws_url, subprotocols=["reasonloop.v1", f"bearer.{KEYS['bob']}"]) as ws:
        assert ws.subprotocol == "reasonloop.v1"
        await ws.send(json.dumps({"type": "ask", "question": "hi"}))
        run_id = json.loads(await ws.recv())["run_id"]
    async with connect(f"{ws_url}?api_key={KEYS['alice']}") as ws:
        await ws.send(json.dumps({"type": "resume", "run_id": run_id, "after_seq": 0}))
        assert json.loads(await ws.recv())["code"] == "run.not_found"


@pytest.mark.integration
async def test_websocket_auth_by_header(server):
    _, url = server
    ws_url = url.replace("http://", "ws://") + "/v1/ws"
    async with connect(ws_url, additional_headers=bearer("bob")) as ws:
        await ws.send(json.dumps({"type": "ping"}))
        assert json.loads(await ws.recv()) == {"type": "pong"}
    with pytest.raises((InvalidStatus, ConnectionClosed)):
        async with connect(ws_url, additional_headers={"Authorization": "Basic Ym9iOmJvYg=="}) as ws:
            await ws.send(json.dumps({"type": "ping"}))
            await ws.recv()


def test_the_key_is_read_from_the_scope_as_a_request_would_read_it():
    def scope(query: bytes = b"", subprotocols: tuple[str, ...] = (), kind: str = "websocket", **headers: str) -> dict:
        raw = [(name.encode(), value.encode("latin-1")) for name, value in headers.items()]
        return {"type": kind, "query_string": query, "subprotocols": list(subprotocols), "headers": raw}

    assert presented_key(scope()) is None
    assert presented_key(scope(b"api_key=sk%2Dx%20y")) == "sk-x y"  # percent-decoded
    assert presented_key(scope(b"api_key=first&other=1&api_key=last")) == "last"  # the last one, as Starlette's
    empty_query = scope(b"api_key=&x=1", authorization="Bearer from-header")
    assert presented_key(empty_query) == "from-header"  # empty: next source
    assert presented_key(scope(subprotocols=("reasonloop.v1", "bearer.from-proto"))) == "from-proto"
    assert presented_key(scope(b"api_key=q", ("bearer.p",), authorization="Bearer h")) == "q"  # query first
    assert presented_key(scope(b"", ("bearer.p",), authorization="Bearer h")) == "p"  # then the subprotocol
    assert presented_key(scope(authorization="bearer  spaced ")) == "spaced"
    assert presented_key(scope(authorization="Basic abc")) is None
    assert presented_key(scope(authorization="Bearer   ")) is None
    # Over HTTP only the header counts: a key in a URL ends up in logs and browser histories.
    assert presented_key(scope(b"api_key=q", ("bearer.p",), kind="http")) is None
    assert presented_key(scope(b"api_key=q", kind="http", authorization="Bearer h")) == "h"


def test_token_bucket_refills_at_its_rate():
    bucket = TokenBucket(rate=2.0, burst=2, updated=0.0)
    assert bucket.take(0.0) == 0 and bucket.take(0.0) == 0
    assert bucket.take(0.0) == pytest.approx(0.5)
    assert bucket.take(0.5) == 0


def test_auth_warning_only_off_loopback_without_keys():
    assert auth_warning(ServerSettings(host="127.0.0.1")) is None
    assert auth_warning(ServerSettings(host="::1")) is None
    assert "OFF" in auth_warning(ServerSettings(host="0.0.0.0"))
    assert "OFF" in auth_warning(ServerSettings(host=""))  # every interface, as 0.0.0.0
    keyed = ServerSettings(host="0.0.0.0", api_keys=[{"sha256": hash_key("k")}])
    assert auth_warning(keyed) is None


@pytest.mark.integration
async def test_with_auth_off_other_sites_pages_cannot_use_the_server(tmp_path):
    # No keys: anything on this machine may call the server, but a web page of another site the
    # user visits must not (browsers send its Origin; a WebSocket is not covered by CORS).
    settings = make_settings(tmp_path, cors_origins=["https://app.example"])
    app = create_app(settings, runner=LLMRunner(lambda: ScriptedProvider(replies=["fine."])))
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=20) as client:
        host = url.removeprefix("http://")
        evil = {"Origin": "https://evil.example"}
        refused = await client.post("/v1/runs", json={"question": "q"}, headers=evil)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "auth.cross_site"
        upload = await client.post("/v1/kb/documents", files={"files": ("x.txt", "x")}, headers=evil)
        assert upload.status_code == 403
        for origin in (f"http://{host}", "http://localhost:5173", "http://[::1]:3000", "https://app.example"):
            allowed = await client.post("/v1/runs", json={"question": "q"}, headers={"Origin": origin})
            assert allowed.status_code == 201, origin
        assert (await client.get("/v1/runs", headers=evil)).status_code == 200  # reads: the browser's CORS decides
        assert (await client.post("/v1/runs", json={"question": "q"})).status_code == 201  # no Origin: not a page
        ws_url = url.replace("http://", "ws://") + "/v1/ws"
        with pytest.raises(InvalidStatus):
            async with connect(ws_url, origin="https://evil.example"):
                pass
        with pytest.raises(InvalidStatus):
            async with connect(ws_url, origin="null"):  # a local file or a sandboxed frame
                pass
        async with connect(ws_url, origin=f"http://{host}") as ws:
            await ws.send(json.dumps({"type": "ping"}))
            assert json.loads(await ws.recv()) == {"type": "pong"}


@pytest.mark.integration
@pytest.mark.parametrize("bound", ["127.0.0.1", "0.0.0.0"])
async def test_with_auth_off_on_loopback_only_loopback_host_names_are_answered(tmp_path, bound):
    # DNS rebinding: a page's own name re-pointed at 127.0.0.1 makes its requests same-site for the
    # browser (reads too); they still carry that name in Host.
    settings = make_settings(tmp_path, host=bound, allowed_hosts=["Proxy.Local"])
    app = create_app(settings, runner=LLMRunner(lambda: ScriptedProvider(replies=["fine."])))
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=20) as client:
        port = url.rsplit(":", 1)[1]
        rebound = {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}
        for method, path in [("GET", "/v1/runs"), ("GET", "/v1/kb/search?q=x"), ("POST", "/v1/runs")]:
            answer = await client.request(method, path, headers=rebound, json={"question": "q"})
            if bound == "127.0.0.1":
                assert answer.status_code == 403, (method, path)
                assert answer.json()["error"]["code"] == "auth.cross_site" and "allowed_hosts" in answer.text
            else:  # bound to every interface without keys: warned at start, any name is answered
                assert answer.status_code in (200, 201), (method, path)
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "proxy.local", "PROXY.local:80"):
            assert (await client.get("/v1/runs", headers={"Host": host})).status_code == 200, host
        ws_url = url.replace("http://", "ws://") + "/v1/ws"
        if bound == "127.0.0.1":
            with pytest.raises(InvalidStatus):
                async with connect(ws_url, additional_headers={"Host": f"evil.example:{port}"}):
                    pass
        async with connect(ws_url, additional_headers={"Host": f"localhost:{port}"}) as ws:
            await ws.send(json.dumps({"type": "ping"}))
            assert json.loads(await ws.recv()) == {"type": "pong"}


def test_a_host_header_that_names_no_host_is_refused():
    for host in (b"[", b"evil.example", b"127.0.0.1.evil.example"):
        with pytest.raises(CrossSiteRefused):
            check_host({"headers": [(b"host", host)]}, frozenset())
    check_host({"headers": [(b"host", b"evil.example")]}, None)  # not on loopback: any host
    check_host({"headers": []}, frozenset())  # no Host at all: not a browser


@pytest.mark.integration
async def test_with_keys_the_key_decides_whatever_the_origin(server):
    client, url = server
    headers = {**bearer("alice"), "Origin": "https://evil.example"}
    assert (await client.post("/v1/runs", json={"question": "q"}, headers=headers)).status_code == 201
    async with connect(
        url.replace("http://", "ws://") + f"/v1/ws?api_key={KEYS['alice']}", origin="https://evil.example"
    ) as ws:
        await ws.send(json.dumps({"type": "ping"}))
        assert json.loads(await ws.recv()) == {"type": "pong"}


@pytest.mark.integration
async def test_a_websocket_key_in_the_query_is_masked_in_the_server_log(tmp_path, capfd):
    settings = make_settings(tmp_path, api_keys=[APIKeySettings(sha256=hash_key(KEYS["alice"]), tenant="acme")])
    app = create_app(settings, runner=LLMRunner(lambda: ScriptedProvider(replies=["fine."])))
    async with serve(app, settings, log_level="info") as url:
        ws_url = url.replace("http://", "ws://") + "/v1/ws"
        async with connect(f"{ws_url}?api_key={KEYS['alice']}&x=1") as ws:
            await ws.send(json.dumps({"type": "ping"}))
            await ws.recv()
        with pytest.raises(InvalidStatus):
            async with connect(f"{ws_url}?api_key=sk-wrong-key"):
                pass
    logged = capfd.readouterr()
    text = logged.out + logged.err
    assert "api_key=***" in text
    assert KEYS["alice"] not in text and "sk-wrong-key" not in text
