"""The WebSocket outbox (frames written at once while the socket takes them, in order when it does not) and the fast path."""

from __future__ import annotations

import asyncio

from reasonloop.server.ws import _Outbox


class SlowSocket:
    """``send_text`` waits on ``gate`` while it is closed, like a transport that paused writing."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.gate.set()
        self.sent: list[str] = []
        self.fail = False

    async def send_text(self, text: str) -> None:
        if self.fail:
            raise RuntimeError("socket closed")
        await self.gate.wait()
        self.sent.append(text)


async def test_frames_go_out_at_once_while_the_socket_takes_writes():
    ws = SlowSocket()
    box = _Outbox(ws)
    for i in range(3):
        box.put(str(i))
    assert ws.sent == ["0", "1", "2"] and box.drainer is None  # no task, no wait


async def test_a_slow_socket_queues_frames_in_order_behind_the_waiting_one():
    ws = SlowSocket()
    box = _Outbox(ws)
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
    box = _Outbox(ws)
    ws.fail = True
    box.put("a")
    assert box.closed
    ws.fail = False
    box.put("b")
    assert ws.sent == []
    ws2 = SlowSocket()
    box2 = _Outbox(ws2)
    ws2.gate.clear()
    box2.put("x")
    box2.put("y")
    ws2.fail = True
    ws2.gate.set()
    await box2.flush()
    assert box2.closed and ws2.sent == ["x"] and not box2.queue


async def test_the_fast_path_takes_only_the_websocket_endpoint(monkeypatch):
    from reasonloop.server import ws as ws_module

    served: list[str] = []
    passed: list[tuple[str, str]] = []

    async def endpoint(socket) -> None:
        served.append(socket.scope["path"])

    async def inner(scope, receive, send) -> None:
        passed.append((scope["type"], scope["path"]))

    monkeypatch.setattr(ws_module, "websocket_endpoint", endpoint)
    fast = ws_module.WebSocketFastPath(inner)
    for kind, path in [("websocket", "/v1/ws"), ("websocket", "/other"), ("http", "/v1/ws")]:
        await fast({"type": kind, "path": path, "app": object(), "headers": []}, None, None)
    assert served == ["/v1/ws"]
    assert passed == [("websocket", "/other"), ("http", "/v1/ws")]
