"""The WebSocket protocol reasonloop serves with: uvicorn's sans-I/O one, with three shortcuts;
and the HTTP protocol that hands connections over to it (:class:`ReasonloopHttpProtocol`).

Why: benchmarks/README.md, "Design notes: WebSocket transport".

**Pings answered where they are read.** ``{"type": "ping"}`` is how a client checks its
connection (a browser cannot send the protocol's own ping frames). Answered by the
application, the pong waits until the socket's receive loop is scheduled, behind every task
the event loop has ready: under load, one more pass of the loop. The protocol writes it in
the callback that parsed the ping, as uvicorn answers the protocol's own pings, even while
the application is busy elsewhere (uvicorn stops reading a socket while a message it queued
for the application waits, so a ping behind an unread ``ask`` waits for it). Only a small,
well-formed ping on a socket the application accepted on ``/v1/ws`` is answered there;
anything else goes to the application, which answers pings too. A pong is not ordered with
the event frames the application still has queued for a slow reader; it may overtake them.

**Text frames written directly.** Through ASGI, every frame an application sends is a
message dictionary, two coroutines (uvicorn's ``send`` and its wait on the transport being
writable) and the ``websockets`` protocol's frame objects. The protocol offers the application a function, in the ASGI scope's extensions under
:data:`DIRECT_TEXT`, that frames a text message itself (an unmasked, unfragmented RFC 6455
frame: two to ten bytes of header) and writes it to the transport. It declines (returns
False) whenever the ASGI path has something to do: the socket is not open, a close was
sent, writes are paused behind a slow reader, or an extension (compression) is negotiated;
the application then sends that frame through ASGI, which waits, compresses or fails as
usual.

**Heartbeats with the keepalive pings.** The session sends its clients a heartbeat frame every
``ws_ping_interval_s`` (browsers never see the protocol's pings), the interval at which this
protocol pings anyway. Offered :data:`HEARTBEAT` in the scope's extensions, the session names
the frame there and the protocol writes it with each ping (when it may write directly: a
client slow to read is evidently alive), instead of each socket keeping a timer of its own.

With all of them, a slow client is still the application's business: pings and frames go to it,
and through its outbox's limit, whenever the transport has paused writing.
"""

from __future__ import annotations

import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.protocol import State

from reasonloop.server.ws.frames import DIRECT_TEXT, HEARTBEAT, SOCKET_PATH, pong_frame

__all__ = ["ReasonloopHttpProtocol", "ReasonloopWebSocketProtocol", "text_frame"]

_MAX_PING_BYTES = 256
_FIN_TEXT = 0x81
"""First byte of a final (unfragmented) text frame."""


def text_frame(data: bytes) -> bytes:
    """One unmasked, final text frame carrying ``data`` (UTF-8), as a server sends it (RFC 6455 §5.2)."""
    size = len(data)
    if size < 126:
        return bytes((_FIN_TEXT, size)) + data
    if size < 65536:
        return bytes((_FIN_TEXT, 126)) + size.to_bytes(2, "big") + data
    return bytes((_FIN_TEXT, 127)) + size.to_bytes(8, "big") + data


class ReasonloopWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol with the shortcuts of the module docstring."""

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)  # absent when the handshake was refused
        if scope is not None:
            extensions = scope["extensions"]
            extensions[DIRECT_TEXT] = self.write_text
            if self.ping_interval:  # offered (the session names its frame here) only if it pings
                extensions[HEARTBEAT] = None

    def on_task_complete(self, task: Any) -> None:
        # The scope's writer is a method of this protocol, which holds the scope: a reference
        # cycle. Broken once the application is done, the connection's objects are freed when
        # it closes instead of waiting for (and lengthening) a garbage collection.
        super().on_task_complete(task)
        scope = getattr(self, "scope", None)
        if scope is not None:
            scope["extensions"].pop(DIRECT_TEXT, None)
            scope["extensions"].pop(HEARTBEAT, None)

    def start_keepalive(self) -> None:
        # Called once, right after the handshake's response is written. The request and the
        # response (a dictionary and a list per header name: some thirty objects for the
        # collector to walk) are never read again, and would otherwise live as long as the
        # socket. The request's headers are emptied too: the parser of ``websockets`` keeps the
        # request in its frame for as long as it reads the socket.
        if self.request is not None:
            self.request.headers.clear()
        self.request = self.response = None  # type: ignore[assignment]
        super().start_keepalive()

    def send_keepalive_ping(self) -> None:
        scope = getattr(self, "scope", None)
        frame = scope["extensions"].get(HEARTBEAT) if scope is not None else None
        if frame is not None:
            self.write_text(frame)  # nothing written unless the socket takes direct writes
        super().send_keepalive_ping()

    def handle_text(self, event: Any) -> None:
        if event.fin and self.answer_ping(event.data):
            return
        super().handle_text(event)

    def can_write_directly(self) -> bool:
        """Open, accepted, not closing, writes not paused, no extension to apply."""
        return (
            self.handshake_complete
            and not self.close_sent
            and self.initial_response is None
            and self.writable.is_set()
            and self.conn.state is State.OPEN
            and not self.conn.extensions
            and not self.transport.is_closing()
        )

    def write_text(self, text: str) -> bool:
        """Write ``text`` as one frame now; False (nothing written) when the ASGI path must take it.

        Raises:
            UnicodeEncodeError: ``text`` has no UTF-8 form (a lone surrogate); nothing is written.
        """
        if not self.can_write_directly():
            return False
        self.transport.write(text_frame(text.encode()))
        return True

    def answer_ping(self, data: bytes) -> bool:
        """Write the pong for ``data`` when it is a ping this protocol may answer; False otherwise."""
        if len(data) > _MAX_PING_BYTES or b"ping" not in data:
            return False
        if not self.can_write_directly() or self.scope.get("path") != SOCKET_PATH:
            return False
        try:
            frame = json.loads(data)
        except ValueError:
            return False
        if not isinstance(frame, dict) or frame.get("type") != "ping":
            return False
        self.transport.write(text_frame(pong_frame(frame.get("id")).encode()))
        return True


class ReasonloopHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools HTTP protocol, which lets go of itself once it hands a connection over
    to the WebSocket protocol.

    Its request parser calls back into it (the protocol holds the parser, the parser holds the
    protocol's methods): a reference cycle, which only a garbage collection frees. Left to the
    collector, the HTTP side of every WebSocket (about 28 objects) stays in memory and counts
    toward the next collection, so thousands of clients connecting bring collections, and their
    pauses, sooner. Dropped at the upgrade, it is freed at once.
    """

    def handle_websocket_upgrade(self) -> None:
        super().handle_websocket_upgrade()
        self.parser = None  # type: ignore[assignment]  # nothing reads this protocol any more
