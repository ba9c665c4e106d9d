"""``/v1/ws`` served straight from the server, outside the application's middleware stack.

Why: every layer a socket passes through keeps a coroutine frame alive for the socket's whole
life (benchmarks/README.md, "Design notes: WebSocket transport").

A socket lives as long as its client, and every layer it passes through (the HTTP middleware,
the routers, the exception wrappers) would wrap every frame it sends. Here messages are read
with the server's ``receive`` itself (:class:`AsgiSocket`); frames go out through the server's
protocol directly when it offers that, else through the server's ASGI ``send``, not through
Starlette's state checks. The same session serves sockets routed the ordinary way (under a
``root_path``).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from starlette.websockets import WebSocketState

from reasonloop.server.ws.frames import SOCKET_PATH, AsgiSend

__all__ = ["AsgiSocket", "SocketServer", "UnwrappedSockets"]

SocketServer = Callable[[Any, AsgiSend | None], Coroutine[Any, Any, None]]
"""Serves one socket: ``serve(socket, send)`` (:func:`reasonloop.server.ws.session.serve_socket`)."""


class AsgiSocket:
    """A WebSocket served straight on the server's ASGI ``receive`` and ``send``, with what a
    session uses of Starlette's ``WebSocket``: ``receive`` is the server's own (no coroutine of
    its own per message), and no state checks run per frame."""

    __slots__ = ("client_state", "receive", "scope", "send")

    def __init__(self, scope: Any, receive: Any, send: AsgiSend) -> None:
        self.scope = scope
        self.receive = receive
        self.send = send
        self.client_state = WebSocketState.CONNECTING

    async def accept(self, subprotocol: str | None = None) -> None:
        message = await self.receive()  # websocket.connect
        if message["type"] == "websocket.disconnect":
            self.client_state = WebSocketState.DISCONNECTED
            return
        await self.send({"type": "websocket.accept", "subprotocol": subprotocol, "headers": []})
        self.client_state = WebSocketState.CONNECTED

    async def close(self, code: int = 1000, reason: str | None = None) -> None:
        await self.send({"type": "websocket.close", "code": code, "reason": reason or ""})


class UnwrappedSockets:
    """Picks the ``/v1/ws`` sockets out of an app's ASGI calls and serves them with ``serve``;
    everything else goes to the app as usual.

    Args:
        serve: Serves one socket.
    """

    __slots__ = ("serve",)

    def __init__(self, serve: SocketServer) -> None:
        self.serve = serve

    def takes(self, scope: Any) -> bool:
        return scope["type"] == "websocket" and scope.get("path") == SOCKET_PATH

    def __call__(self, scope: Any, receive: Any, send: Any) -> Coroutine[Any, Any, None]:
        """The socket's session coroutine (returned rather than awaited: one frame fewer kept for
        each open socket)."""
        return self.serve(AsgiSocket(scope, receive, send), send)
