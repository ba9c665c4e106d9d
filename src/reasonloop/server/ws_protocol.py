"""The WebSocket protocol reasonloop serves with: uvicorn's, answering pings where they are read.

``{"type": "ping"}`` is how a client checks its connection (a browser cannot send the
protocol's own ping frames). Answered by the application, the pong waits until the socket's
receive loop is scheduled, behind every task the event loop has ready: under load, a whole
extra pass of the loop. :class:`PingAnsweringProtocol` writes the pong in the same callback
that parsed the ping, as uvicorn answers the protocol's own pings.

Only a small, well-formed ping on a socket the application accepted on ``/v1/ws`` is
answered here. Anything else, and every ping while the socket's writes are paused (a client
that does not read: the application's outbox then applies its limit), goes to the
application as before, which answers it the same way.
"""

from __future__ import annotations

import json
from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from reasonloop.server.ws import SOCKET_PATH, pong_frame

__all__ = ["PingAnsweringProtocol"]

_MAX_PING_BYTES = 256


class PingAnsweringProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol, answering ``ping`` frames itself (see the module docstring)."""

    def handle_text(self, event: Any) -> None:
        if event.fin and self.answer_ping(event.data):
            return
        super().handle_text(event)

    def answer_ping(self, data: bytes) -> bool:
        """Write the pong for ``data`` when it is a ping this protocol may answer; False otherwise."""
        if len(data) > _MAX_PING_BYTES or b"ping" not in data:
            return False
        if not self.handshake_complete or self.close_sent or self.initial_response is not None:
            return False  # not accepted (yet), or closing
        if not self.writable.is_set() or self.scope.get("path") != SOCKET_PATH:
            return False
        try:
            frame = json.loads(data)
        except ValueError:
            return False
        if not isinstance(frame, dict) or frame.get("type") != "ping":
            return False
        self.conn.send_text(pong_frame(frame.get("id")).encode())
        self.transport.write(b"".join(self.conn.data_to_send()))
        return True
