"""What a WebSocket keeps alive: nothing of its handshake, and nothing once it closes.

These tests pin how the code is built, not what it does (tests/perf/README.md)."""

from __future__ import annotations

import asyncio
import gc
import json

import pytest
from websockets.asyncio.client import connect

from reasonloop.server import create_app
from reasonloop.server.transport.ws_protocol import ReasonloopHttpProtocol, ReasonloopWebSocketProtocol
from reasonloop.server.ws.session import _Reader, _Session
from tests.runs.helpers import GatedRunner
from tests.server.helpers import make_settings, serve
from tests.server.test_ws_protocol import ws_url


async def test_an_accepted_socket_keeps_nothing_of_its_handshake(tmp_path):
    """The handshake's request and response (a list per header name) are let go once the socket is
    accepted, not kept as long as it is open; the socket goes on working."""
    settings = make_settings(tmp_path)
    headers = {f"X-Extra-{i}": "v" for i in range(5)}
    async with serve(create_app(settings), settings) as url, connect(ws_url(url), additional_headers=headers) as ws:
        await ws.send('{"type":"ping"}')
        assert json.loads(await asyncio.wait_for(ws.recv(), 5)) == {"type": "pong"}
        [protocol] = [o for o in gc.get_objects() if type(o) is ReasonloopWebSocketProtocol]
        assert protocol.request is None and protocol.response is None
        # the parser of websockets keeps the request in its frame while it reads the socket
        parser_request = protocol.conn.parser.gi_frame.f_locals.get("request")
        assert parser_request is None or len(parser_request.headers) == 0
        await ws.send(json.dumps({"type": "ask", "question": "still there?"}))
        assert json.loads(await asyncio.wait_for(ws.recv(), 5))["type"] == "run"


def _alive(cls: type) -> int:
    """Instances of ``cls`` the collector tracks: alive, or garbage it has yet to collect."""
    return sum(1 for o in gc.get_objects() if type(o) is cls)


@pytest.mark.parametrize("leave_mid_run", [False, True])
async def test_a_closed_connection_is_freed_without_a_garbage_collection(tmp_path, leave_mid_run):
    """No reference cycle keeps a connection's objects (protocol, session, buffers) alive after it
    closes: with thousands of sockets they would pile up for a collection to find, and its pause
    would land on every open stream."""
    settings = make_settings(tmp_path)
    runner = GatedRunner(steps=2)
    run_id = ""
    async with serve(create_app(settings, runner=runner), settings) as url:
        gc.collect()
        gc.disable()
        try:
            assert _alive(ReasonloopWebSocketProtocol) == _alive(_Session) == 0
            async with connect(ws_url(url)) as ws:
                await ws.send(json.dumps({"type": "ask", "question": "q"}))
                run_id = json.loads(await ws.recv())["run_id"]
                if not leave_mid_run:
                    runner.finish(run_id)
                    while json.loads(await asyncio.wait_for(ws.recv(), 10))["event"]["type"] != "answer":
                        pass
                assert _alive(ReasonloopWebSocketProtocol) == _alive(_Session) == 1
                assert _alive(ReasonloopHttpProtocol) == 0  # the HTTP side went at the upgrade
            for _ in range(200):  # until the server has seen the close and its application returned
                if _alive(_Session) == 0:
                    break
                await asyncio.sleep(0.01)
            assert _alive(ReasonloopWebSocketProtocol) == _alive(_Session) == _alive(_Reader) == 0
        finally:
            gc.enable()
            runner.finish(run_id)
