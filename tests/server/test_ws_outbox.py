"""The WebSocket outbox (frames written at once while the socket takes them, in order when it does not) and the fast path."""

from __future__ import annotations

import asyncio

from fastapi import FastAPI

from reasonloop.server.app import ReasonloopAPI
from reasonloop.server.transport.outbox import Outbox


class SlowSocket:
    """``send`` (ASGI messages) waits on ``gate`` while it is closed, like a transport that paused writing."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.gate.set()
        self.sent: list[str] = []
        self.fail = False

    async def send(self, message: dict) -> None:
        if self.fail:
            raise RuntimeError("socket closed")
        await self.gate.wait()
        assert message["type"] == "websocket.send"
        self.sent.append(message["text"])


async def test_frames_go_out_at_once_while_the_socket_takes_writes():
    ws = SlowSocket()
    box = Outbox(ws)
    for i in range(3):
        box.put(str(i))
    assert ws.sent == ["0", "1", "2"] and box.drainer is None  # no task, no wait


async def test_a_slow_socket_queues_frames_in_order_behind_the_waiting_one():
    ws = SlowSocket()
    box = Outbox(ws)
    box.put("a")
    ws.gate.clear()
    box.put("b")
    box.put("c")
    assert ws.sent == ["a"] and box.drainer is not None and list(box.queue) == ["c"]
    await asyncio.sleep(0.01)
    box.put("d")
    ws.gate.set()
    await box.flush()
    assert ws.sent == ["a", "b", "c", "d"] and box.drainer is None
    box.put("e")
    assert ws.sent[-1] == "e"


async def test_a_failed_write_closes_the_outbox_quietly():
    ws = SlowSocket()
    box = Outbox(ws)
    ws.fail = True
    box.put("a")
    assert box.closed
    ws.fail = False
    box.put("b")
    assert ws.sent == []
    ws2 = SlowSocket()
    box2 = Outbox(ws2)
    ws2.gate.clear()
    box2.put("x")
    box2.put("y")
    ws2.fail = True
    ws2.gate.set()
    await box2.flush()
    assert box2.closed and ws2.sent == ["x"] and not box2.queue


async def test_the_fast_path_takes_only_the_websocket_endpoint(monkeypatch):
    from reasonloop.server.ws import session as ws_module

    served: list[str] = []
    passed: list[tuple[str, str]] = []

    async def endpoint(socket, send) -> None:
        served.append(socket.scope["path"])
        assert send is raw_send  # frames go straight to the server's send

    async def inner(scope, receive, send) -> None:
        passed.append((scope["type"], scope["path"]))

    async def raw_send(message) -> None:
        raise AssertionError("not called here")

    monkeypatch.setattr(ws_module, "serve_socket", endpoint)
    monkeypatch.setattr(FastAPI, "__call__", lambda self, scope, receive, send: inner(scope, receive, send))
    app = ReasonloopAPI()
    for kind, path in [("websocket", "/v1/ws"), ("websocket", "/other"), ("http", "/v1/ws")]:
        await app({"type": kind, "path": path, "headers": []}, None, raw_send)
    assert served == ["/v1/ws"]
    assert passed == [("websocket", "/other"), ("http", "/v1/ws")]


async def test_a_client_too_far_behind_is_disconnected_not_buffered_forever(monkeypatch):
    from reasonloop.server.transport import outbox as ws_outbox

    monkeypatch.setattr(ws_outbox, "OUTBOX_LIMIT_CHARS", 10)
    closed: list[int] = []

    class Stalled(SlowSocket):
        async def close(self, code: int = 1000, reason: str = "") -> None:
            closed.append(code)

    sock = Stalled()
    box = Outbox(sock)
    sock.gate.clear()
    box.put("first")  # waits: the client reads slowly
    for _ in range(5):
        box.put("xxxx")  # 4 characters each: the third one passes the limit
    await asyncio.sleep(0)
    assert box.closed and not box.queue and closed == [1013]
    box.put("later")
    assert sock.sent == []  # nothing more is queued or written


async def test_a_socket_lets_go_of_a_run_once_its_last_event_is_written():
    from types import SimpleNamespace

    from reasonloop.events import Answer, AnswerDelta, RunStarted
    from reasonloop.runs.live import LiveRun
    from reasonloop.runs.models import RunRecord
    from reasonloop.runs.reading import RunFeed
    from reasonloop.server.ws.session import _Session

    state = SimpleNamespace(settings=SimpleNamespace(server=SimpleNamespace(ws_max_frame_bytes=1 << 20)))
    socket = SlowSocket()
    session = _Session(socket, state, who=None, outbox=Outbox(socket))  # type: ignore[arg-type]
    live = LiveRun(record=RunRecord(run_id="r1"))
    for event in [RunStarted(reasoning="x", question="q", run_id="r1", seq=1)]:
        live.publish(event, event.to_json())
    session._follow("r1", RunFeed(0, live=live))
    assert "r1" in session.followers  # following: the run is still going
    for event in [AnswerDelta(text="hi", run_id="r1", seq=2), Answer(text="hi", run_id="r1", seq=3)]:
        live.publish(event, event.to_json())
    assert "r1" not in session.followers
    assert len(session.ws.sent) == 3

    # a run that already ended is replayed and not followed at all
    session._follow("r1", RunFeed(1, live=live))
    assert "r1" not in session.followers and len(session.ws.sent) == 5


async def test_a_heartbeat_closes_a_socket_whose_writes_failed_and_stops_beating():
    from types import SimpleNamespace

    from starlette.websockets import WebSocketState

    from reasonloop.server.ws.session import _Session

    class Socket(SlowSocket):
        client_state = WebSocketState.CONNECTED

        def __init__(self) -> None:
            super().__init__()
            self.closed: list[int] = []

        async def close(self, code: int = 1000, reason: str | None = None) -> None:
            self.closed.append(code)

    server = SimpleNamespace(ws_max_frame_bytes=1 << 20, ws_ping_interval_s=0.01)
    socket = Socket()
    state = SimpleNamespace(settings=SimpleNamespace(server=server))
    session = _Session(socket, state, who=None, outbox=Outbox(socket))  # type: ignore[arg-type]
    session._beat()
    assert session.ws.sent == ['{"type": "heartbeat"}'] and session._heartbeat is not None  # the next one is armed
    session._heartbeat.cancel()
    session.ws.fail = True
    session._beat()  # the write fails: the outbox closes, and so does the socket
    await asyncio.gather(*session.tasks)
    assert session.outbox.closed and session.ws.closed == [1000] and session._heartbeat is None
