"""Pings answered by the WebSocket protocol itself, and every other frame left to the application."""

from __future__ import annotations

import asyncio
import json

from websockets.asyncio.client import connect
from websockets.protocol import State
from websockets.server import ServerProtocol

from reasonloop.server import create_app
from reasonloop.server.ws import _Session
from reasonloop.server.ws_protocol import PingAnsweringProtocol
from tests.server.helpers import make_settings, serve


async def test_a_ping_is_answered_even_while_the_application_reads_nothing(tmp_path, monkeypatch):
    reached: list[str] = []

    async def deaf(self: _Session) -> None:  # accepted, then never reads a frame
        reached.append("serving")
        await asyncio.Event().wait()

    monkeypatch.setattr(_Session, "serve", deaf)
    settings = make_settings(tmp_path)
    async with serve(create_app(settings), settings) as url, connect(url.replace("http", "ws") + "/v1/ws") as ws:
        for ref in (None, 3, {"k": "é"}):
            await ws.send(json.dumps({"type": "ping"} if ref is None else {"type": "ping", "id": ref}))
            pong = json.loads(await asyncio.wait_for(ws.recv(), 5))
            assert pong == ({"type": "pong"} if ref is None else {"type": "pong", "id": ref})
    assert reached == ["serving"]


async def test_frames_other_than_pings_still_reach_the_application(tmp_path, monkeypatch):
    dispatched: list[str] = []
    real = _Session._dispatch

    def spy(self: _Session, raw: str) -> None:
        dispatched.append(raw)
        real(self, raw)

    monkeypatch.setattr(_Session, "_dispatch", spy)
    settings = make_settings(tmp_path)
    async with serve(create_app(settings), settings) as url, connect(url.replace("http", "ws") + "/v1/ws") as ws:
        await ws.send('{"type": "ping", "id": 1}')
        assert json.loads(await ws.recv()) == {"type": "pong", "id": 1}
        for frame in ('{"type": "ping"', '["ping"]', '{"type": "pingx"}'):
            await ws.send(frame)
            assert json.loads(await ws.recv())["type"] == "error"
    assert dispatched == ['{"type": "ping"', '["ping"]', '{"type": "pingx"}']


class _Transport:
    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)


def _protocol(**state: object) -> tuple[PingAnsweringProtocol, _Transport]:
    proto = PingAnsweringProtocol.__new__(PingAnsweringProtocol)  # the state answer_ping reads, nothing more
    proto.conn = ServerProtocol()
    proto.conn.state = State.OPEN
    proto.transport = _Transport()  # type: ignore[assignment]
    proto.writable = asyncio.Event()
    proto.writable.set()
    proto.handshake_complete, proto.close_sent, proto.initial_response = True, False, None
    proto.scope = {"path": "/v1/ws"}  # type: ignore[typeddict-item]
    for name, value in state.items():
        setattr(proto, name, value)
    return proto, proto.transport  # type: ignore[return-value]


async def test_only_an_accepted_open_socket_on_the_endpoint_gets_a_pong_from_the_protocol():
    ping = b'{"type":"ping","id":"a"}'
    proto, transport = _protocol()
    assert proto.answer_ping(ping) and b'{"type":"pong","id":"a"}' in transport.written[0]
    paused = asyncio.Event()  # the client does not read: the application's outbox decides
    for state in (
        {"handshake_complete": False},
        {"close_sent": True},
        {"initial_response": (403, [], b"")},
        {"writable": paused},
        {"scope": {"path": "/v1/other"}},
    ):
        proto, transport = _protocol(**state)
        assert not proto.answer_ping(ping) and transport.written == [], state
    proto, transport = _protocol()
    for data in (b'{"type":"ping"', b'"ping"', b'{"type":"pong"}', b'{"type":"ping","x":"' + b"y" * 300 + b'"}'):
        assert not proto.answer_ping(data) and transport.written == [], data
