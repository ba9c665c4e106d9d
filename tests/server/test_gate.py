"""One gate for every surface: each refusal (no key, an unknown key, over the rate, another site's
host or page, another tenant's resource) answers the same code and status over HTTP, the WebSocket
and MCP, against a real server (uvicorn with the app's own protocols), the official ``mcp`` SDK
client and a real WebSocket client."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from reasonloop.config import APIKeySettings
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.server import create_app
from reasonloop.server.auth import hash_key
from tests.llm_runner import LLMRunner
from tests.server.helpers import make_settings, serve, sse_events

pytestmark = pytest.mark.integration  # a real server, the mcp SDK client and a WebSocket client

KEYS = {"alice": "sk-alice", "bob": "sk-bob", "http": "sk-slow-http", "ws": "sk-slow-ws", "mcp": "sk-slow-mcp"}
TENANTS = {"alice": "acme", "bob": "globex", "http": "slow", "ws": "slow", "mcp": "slow"}
SURFACES = ("http", "ws", "mcp")
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def call(surface: str, url: str, headers: dict[str, str]) -> tuple[int, dict[str, Any], httpx.Headers | Any]:
    """One call on ``surface`` with ``headers``: (status, JSON body, response headers). A WebSocket
    that is accepted answers 101 (and is closed at once)."""
    if surface == "ws":
        try:
            async with connect(url.replace("http://", "ws://") + "/v1/ws", additional_headers=headers):
                return 101, {}, {}
        except InvalidStatus as refused:
            response = refused.response
            return response.status_code, json.loads(response.body), response.headers
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        if surface == "http":
            answer = await http.get("/v1/runs", headers=headers)
        else:
            answer = await http.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **headers})
        body = answer.json() if answer.headers.get("content-type", "").startswith("application/json") else {}
        return answer.status_code, body, answer.headers


@pytest.fixture
async def keyed(tmp_path) -> AsyncIterator[str]:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    keys = [APIKeySettings(sha256=hash_key(KEYS[n]), tenant=TENANTS[n], name=n) for n in ("alice", "bob")]
    keys += [  # one budget of two calls per surface, refilled only after a minute
        APIKeySettings(sha256=hash_key(KEYS[s]), tenant="slow", name=s, rate_per_minute=1, burst=2) for s in SURFACES
    ]
    settings = make_settings(tmp_path, api_keys=keys)
    async with serve(
        create_app(settings, runner=LLMRunner(lambda: ScriptedProvider(replies=["fine."]))), settings
    ) as url:
        yield url


@pytest.mark.parametrize("surface", SURFACES)
async def test_a_missing_or_unknown_key_is_refused_alike(keyed, surface):
    for headers, words in (({}, "an API key is required"), (bearer("sk-nobody"), "unknown API key")):
        status, body, headers_back = await call(surface, keyed, headers)
        assert status == 401, (surface, headers)
        assert body["error"]["code"] == "auth.invalid_key" and words in body["error"]["message"]
        assert headers_back["www-authenticate"] == "Bearer"
    status, _, _ = await call(surface, keyed, bearer(KEYS["alice"]))
    assert status in (101, 200)  # the key is let through


@pytest.mark.parametrize("surface", SURFACES)
async def test_a_caller_over_its_rate_is_refused_alike(keyed, surface):
    key = bearer(KEYS[surface])
    assert (await call(surface, keyed, key))[0] in (101, 200)
    assert (await call(surface, keyed, key))[0] in (101, 200)
    status, body, headers = await call(surface, keyed, key)
    assert status == 429 and body["error"]["code"] == "auth.rate_limited"
    assert int(headers["retry-after"]) >= 1 and body["error"]["retry_after"] >= 1
    assert (await call(surface, keyed, bearer(KEYS["alice"])))[0] in (101, 200)  # other keys unaffected


async def test_each_ask_on_an_admitted_socket_takes_from_the_same_budget(keyed):
    ws_url = keyed.replace("http://", "ws://") + "/v1/ws"
    async with connect(ws_url, additional_headers=bearer(KEYS["ws"])) as ws:  # the first call of two
        await ws.send(json.dumps({"type": "ask", "question": "q", "id": 1}))
        assert json.loads(await ws.recv())["type"] == "run"  # the second
        await ws.send(json.dumps({"type": "ask", "question": "q", "id": 2}))
        while (frame := json.loads(await ws.recv())).get("id") != 2:
            pass
        assert frame["type"] == "error" and frame["code"] == "auth.rate_limited" and frame["retry_after"] >= 1
    async with httpx.AsyncClient(base_url=keyed) as http:
        refused = await http.get("/v1/runs", headers=bearer(KEYS["ws"]))  # the same key, another surface
        assert refused.status_code == 429


@asynccontextmanager
async def mcp_client(url: str, key: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers=bearer(key), timeout=60) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        yield client


async def test_another_tenants_resources_are_not_found_alike(keyed):
    alice, bob = bearer(KEYS["alice"]), bearer(KEYS["bob"])
    ws_url = keyed.replace("http://", "ws://") + "/v1/ws"
    async with httpx.AsyncClient(base_url=keyed, timeout=60) as http:
        run = (await http.post("/v1/runs", json={"question": "secret plans"}, headers=alice)).json()
        await sse_events(http, f"/v1/runs/{run['run_id']}/events", headers=alice)
        up = await http.post(
            "/v1/kb/documents", files={"files": ("plans.txt", "The plans are secret.\n")}, headers=alice
        )
        assert up.status_code == 201, up.text
        (doc,) = (await http.get("/v1/kb/documents", headers=alice)).json()

        # A run: over HTTP and the WebSocket.
        seen = await http.get(f"/v1/runs/{run['run_id']}", headers=bob)
        assert seen.status_code == 404 and seen.json()["error"]["code"] == "run.not_found"
        async with connect(ws_url, additional_headers=bob) as ws:
            await ws.send(json.dumps({"type": "resume", "run_id": run["run_id"], "after_seq": 0}))
            assert json.loads(await ws.recv())["code"] == "run.not_found"
            await ws.send(json.dumps({"type": "stop", "run_id": run["run_id"]}))
            assert json.loads(await ws.recv())["code"] == "run.not_found"
            # A conversation to continue: over HTTP and the WebSocket.
            await ws.send(json.dumps({"type": "ask", "question": "more", "conversation_id": run["conversation_id"]}))
            frame = json.loads(await ws.recv())
            assert frame["code"] == "request.invalid" and frame["field"] == "conversation_id"
        cont = await http.post(
            "/v1/runs", json={"question": "more", "conversation_id": run["conversation_id"]}, headers=bob
        )
        assert cont.status_code == 422 and cont.json()["error"]["code"] == "request.invalid"

        # A document: over HTTP and MCP.
        shown = await http.get(f"/v1/documents/{doc['id']}", headers=bob)
        assert shown.status_code == 404 and shown.json()["error"]["code"] == "kb.document_not_found"
    async with mcp_client(keyed, KEYS["alice"]) as client:
        (listed,) = (await client.call_tool("list_documents", {})).structured_content["documents"]
        assert "secret" in (await client.read_resource(listed["uri"])).contents[0].text
    async with mcp_client(keyed, KEYS["bob"]) as client:
        assert (await client.call_tool("list_documents", {})).structured_content["documents"] == []
        with pytest.raises(MCPError, match=r"kb\.document_not_found"):
            await client.read_resource(listed["uri"])


@pytest.fixture
async def open_server(tmp_path) -> AsyncIterator[str]:
    settings = make_settings(tmp_path, cors_origins=["https://app.example"], allowed_hosts=["proxy.local"])
    async with serve(
        create_app(settings, runner=LLMRunner(lambda: ScriptedProvider(replies=["fine."]))), settings
    ) as url:
        yield url


@pytest.mark.parametrize("surface", SURFACES)
async def test_without_keys_another_sites_host_or_page_is_refused_alike(open_server, surface):
    port = open_server.rsplit(":", 1)[1]
    for headers in ({"Host": f"evil.example:{port}"}, {"Origin": "https://evil.example"}):
        status, body, _ = await call(surface, open_server, headers)
        if surface == "http" and "Origin" in headers:  # a read: the browser's CORS keeps its answer from the page
            assert status == 200
            async with httpx.AsyncClient(base_url=open_server) as http:
                written = await http.post("/v1/runs", json={"question": "q"}, headers=headers)
            status, body = written.status_code, written.json()
        assert status == 403, (surface, headers)
        assert body["error"]["code"] == "auth.cross_site"
    for headers in (
        {"Host": f"localhost:{port}"},
        {"Host": "proxy.local"},
        {"Origin": f"http://127.0.0.1:{port}"},
        {"Origin": "https://app.example"},
        {},
    ):
        status, _, _ = await call(surface, open_server, headers)
        assert status in (101, 200), (surface, headers)
