"""The server's WebSocket protocol: pings answered where they are read, text frames written
directly, and everything else (or anything it cannot do at once) left to the ASGI path."""

from __future__ import annotations

import asyncio
import json

import pytest
from websockets.asyncio.client import connect
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.uri import parse_uri

from reasonloop.server import create_app
from reasonloop.server.transport.ws_protocol import ReasonloopWebSocketProtocol, text_frame
from reasonloop.server.ws.session import _Session
from tests.runs.helpers import GatedRunner
from tests.server.helpers import make_settings, serve


def ws_url(url: str) -> str:
    return url.replace("http", "ws") + "/v1/ws"


@pytest.mark.integration
async def test_a_ping_is_answered_without_the_application(tmp_path, monkeypatch):
    reached: list[str] = []

    async def deaf(self: _Session) -> None:  # accepted, then never reads a frame
        assert await self._admit()
        reached.append("serving")
        await asyncio.Event().wait()

    monkeypatch.setattr(_Session, "serve", deaf)
    settings = make_settings(tmp_path)
    async with serve(create_app(settings), settings) as url, connect(ws_url(url)) as ws:
        for ref in (None, 3, {"k": "é"}):
            await ws.send(json.dumps({"type": "ping"} if ref is None else {"type": "ping", "id": ref}))
            pong = json.loads(await asyncio.wait_for(ws.recv(), 5))
            assert pong == ({"type": "pong"} if ref is None else {"type": "pong", "id": ref})
    assert reached == ["serving"]


@pytest.mark.integration
async def test_an_id_without_a_utf8_form_comes_back_escaped_and_the_socket_stays(tmp_path, caplog):
    settings = make_settings(tmp_path)
    async with serve(create_app(settings), settings) as url, connect(ws_url(url)) as ws:
        long_ping = json.dumps({"type": "ping", "id": "\ud800", "pad": "x" * 400})  # the application's path
        for frame in ('{"type":"ping","id":"\\ud800"}', long_ping, '{"type":"stop","id":"\\ud800"}'):
            await ws.send(frame)
            reply = json.loads(await asyncio.wait_for(ws.recv(), 5))
            assert reply["id"] == "\ud800" and reply["type"] in ("pong", "error"), reply
        await ws.send('{"type":"ping"}')
        assert json.loads(await asyncio.wait_for(ws.recv(), 5)) == {"type": "pong"}
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


@pytest.mark.integration
async def test_frames_other_than_pings_still_reach_the_application(tmp_path, monkeypatch):
    dispatched: list[str] = []
    real = _Session._dispatch

    def spy(self: _Session, raw: str) -> None:
        dispatched.append(raw)
        real(self, raw)

    monkeypatch.setattr(_Session, "_dispatch", spy)
    settings = make_settings(tmp_path)
    async with serve(create_app(settings), settings) as url, connect(ws_url(url)) as ws:
        await ws.send('{"type": "ping", "id": 1}')
        assert json.loads(await ws.recv()) == {"type": "pong", "id": 1}
        for frame in ('{"type": "ping"', '["ping"]', '{"type": "pingx"}'):
            await ws.send(frame)
            assert json.loads(await ws.recv())["type"] == "error"
    assert dispatched == ['{"type": "ping"', '["ping"]', '{"type": "pingx"}']


@pytest.mark.integration
@pytest.mark.parametrize("compression", [False, True])
async def test_a_run_streams_whole_whether_frames_go_directly_or_through_asgi(tmp_path, monkeypatch, compression):
    direct: list[bool] = []
    real = ReasonloopWebSocketProtocol.write_text

    def counted(self: ReasonloopWebSocketProtocol, text: str) -> bool:
        direct.append(real(self, text))
        return direct[-1]

    monkeypatch.setattr(ReasonloopWebSocketProtocol, "write_text", counted)
    settings = make_settings(tmp_path, ws_compression=compression)
    runner = GatedRunner(steps=3)
    async with (
        serve(create_app(settings, runner=runner), settings) as url,
        connect(ws_url(url), compression="deflate") as ws,
    ):
        await ws.send(json.dumps({"type": "ask", "question": "q" * 500}))
        run_id = json.loads(await ws.recv())["run_id"]
        runner.finish(run_id)
        frames = []
        while not frames or frames[-1]["event"]["type"] != "answer":
            frames.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
        assert [f["event"]["seq"] for f in frames] == list(range(1, len(frames) + 1))
        assert frames[0]["event"]["question"] == "q" * 500  # over 125 bytes: a longer length field
    # compressed, the protocol declines every frame and ASGI sends (and compresses) it
    assert direct and set(direct) == {not compression}


@pytest.mark.parametrize("text", ["", "a", "é" * 62, "x" * 125, "x" * 126, "y" * 65535, "z" * 65536, "雪" * 30000])
def test_a_direct_frame_parses_as_the_same_text_frame(text):
    client = ClientProtocol(parse_uri("ws://h/"), state=State.OPEN)  # past the handshake: frames only
    client.receive_data(text_frame(text.encode()))
    (frame,) = client.events_received()
    assert frame.opcode is Opcode.TEXT and frame.fin and frame.data.decode() == text
    assert text_frame(text.encode()) == Frame(Opcode.TEXT, text.encode()).serialize(mask=False, extensions=[])


class _Transport:
    def __init__(self, closing: bool = False) -> None:
        self.written: list[bytes] = []
        self.closing = closing

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def is_closing(self) -> bool:
        return self.closing


def _protocol(**state: object) -> tuple[ReasonloopWebSocketProtocol, _Transport]:
    proto = ReasonloopWebSocketProtocol.__new__(ReasonloopWebSocketProtocol)  # only what the shortcuts read
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


def _declining_states() -> list[dict[str, object]]:
    closed = ServerProtocol()
    closed.state = State.CLOSING
    compressing = ServerProtocol()
    compressing.state = State.OPEN
    compressing.extensions = [object()]  # type: ignore[list-item]
    return [
        {"handshake_complete": False},
        {"close_sent": True},
        {"initial_response": (403, [], b"")},
        {"writable": asyncio.Event()},  # paused: the client does not read; the outbox decides
        {"conn": closed},
        {"conn": compressing},
        {"transport": _Transport(closing=True)},
    ]


async def test_the_shortcuts_act_only_on_an_accepted_open_socket_that_takes_writes():
    ping = b'{"type":"ping","id":"a"}'
    proto, transport = _protocol()
    assert proto.answer_ping(ping) and proto.write_text("hello")
    assert transport.written == [text_frame(b'{"type":"pong","id":"a"}'), text_frame(b"hello")]
    for state in _declining_states():
        proto, transport = _protocol(**state)
        assert not proto.answer_ping(ping) and not proto.write_text("hello"), state
        assert getattr(proto.transport, "written", []) == [], state
    proto, transport = _protocol(scope={"path": "/v1/other"})
    assert not proto.answer_ping(ping) and transport.written == []
    proto, transport = _protocol()
    for data in (b'{"type":"ping"', b'"ping"', b'{"type":"pong"}', b'{"type":"ping","x":"' + b"y" * 300 + b'"}'):
        assert not proto.answer_ping(data) and transport.written == [], data
