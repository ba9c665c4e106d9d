"""The WebSocket contract shared by the session (:mod:`reasonloop.server.ws.session`) and the transport
(:mod:`reasonloop.server.transport`): the socket's path, the frames both write, the ASGI scope
extensions a server protocol may offer, and what the session needs of an outbox.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

__all__ = [
    "CLIENT_FRAMES",
    "DIRECT_TEXT",
    "HEARTBEAT",
    "HEARTBEAT_FRAME",
    "SERVER_FRAMES",
    "SOCKET_PATH",
    "AsgiSend",
    "DirectText",
    "FrameOutbox",
    "OutboxFactory",
    "encode_frame",
    "pong_frame",
]

SOCKET_PATH = "/v1/ws"

CLIENT_FRAMES: dict[str, tuple[str, ...]] = {
    "ping": ("id",),
    "ask": (
        "id",
        "question",
        "reasoning",
        "mode",
        "budget",
        "agent",
        "settings",
        "conversation_id",
        "sampling",
        "model",
    ),
    "stop": ("id", "run_id"),
    "resume": ("id", "run_id", "after_seq"),
    "approve": ("id", "run_id", "approval_id", "decision", "arguments", "reason"),
}
"""The frames a client sends, by ``type``, with their fields (``id``, optional on every one, is
echoed on the reply). ``ask`` carries the fields of ``POST /v1/runs``. docs/server.md describes
each one; a test keeps the two in step."""

SERVER_FRAMES: dict[str, tuple[str, ...]] = {
    "pong": ("id",),
    "run": ("id", "run_id", "conversation_id"),
    "event": ("run_id", "event"),
    "stopped": ("id", "run_id", "status"),
    "approved": ("id", "run_id", "approval_id", "decision"),
    "error": ("id", "code", "message", "run_id", "field", "status", "retry_after"),
    "heartbeat": (),
}
"""The frames the server sends, by ``type``, with every field they may carry (an ``error`` has
``code`` and ``message``, and the others only when they apply)."""
DIRECT_TEXT = "reasonloop.websocket.direct_text"
"""ASGI scope extension: ``write(text) -> bool``, a text frame written by the server's protocol
at once, or False when it must go through ASGI."""
HEARTBEAT = "reasonloop.websocket.heartbeat"
"""ASGI scope extension, offered (as None) by a server protocol that can write the session's
heartbeat frame with each of its own keepalive pings; the session sets it to the frame's text
and keeps no timer of its own."""

AsgiSend = Callable[[dict[str, Any]], Awaitable[None]]
DirectText = Callable[[str], bool]

encode_frame = json.JSONEncoder().encode
"""One encoder for the session's own frames. ASCII only: an ``id`` echoed from a client may hold
a lone surrogate (``"\\ud800"`` is valid JSON), which has no UTF-8 form; escaped, it goes back
as it came."""

HEARTBEAT_FRAME = encode_frame({"type": "heartbeat"})
_PONG = '{"type":"pong"}'
_PONG_WITH_ID = '{"type":"pong","id":'


def pong_frame(ref: Any = None) -> str:
    """The reply to a ping (echoing its ``id``), put together without an encoder pass: it is
    the most frequent frame."""
    return _PONG if ref is None else _PONG_WITH_ID + encode_frame(ref) + "}"


class FrameOutbox(Protocol):
    """A socket's outgoing text frames, in order."""

    closed: bool
    """The socket failed a write or fell too far behind: nothing more goes out."""

    def put(self, text: str) -> None:
        """Send ``text`` as soon as the socket takes it; never waits."""

    async def flush(self) -> None:
        """Until every frame put so far is written."""

    def close(self) -> None:
        """Drop what is queued (the socket is going away)."""


OutboxFactory = Callable[[Any, AsgiSend | None, DirectText | None], FrameOutbox]
"""Makes a socket's outbox from the socket, the server's ASGI ``send`` (frames may go straight
through it once the socket is accepted) and the protocol's direct writer, when offered."""
