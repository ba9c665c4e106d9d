"""A WebSocket's outgoing frames: written at once while the socket takes writes, queued in
order behind a slow client, which is disconnected once too far behind."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from typing import Any, Protocol

from reasonloop._aio import first_step, resume
from reasonloop.server.ws.frames import AsgiSend, DirectText

__all__ = ["OUTBOX_LIMIT_CHARS", "Outbox", "Socket"]

log = logging.getLogger(__name__)


class Socket(Protocol):
    """What an outbox uses of a WebSocket: Starlette's, or the server's own ASGI calls
    (:class:`reasonloop.server.transport.unwrapped.AsgiSocket`)."""

    async def send(self, message: dict[str, Any]) -> None: ...

    async def close(self, code: int = 1000, reason: str | None = None) -> None: ...


OUTBOX_LIMIT_CHARS = 8 * 1024 * 1024
"""Characters a socket may have queued behind a slow client before it is closed with 1013
(try again later). Every event is in the run store: the client resumes with ``after_seq``."""


class Outbox:
    """Frames for one socket, in order: written at once while the socket takes writes.

    A write that has to wait (the client reads slowly and the transport paused writing) is
    finished by a drain task, and later frames queue behind it; nothing else ever waits, so
    a run's events reach the socket straight from the call that publishes them. A client
    that falls :data:`OUTBOX_LIMIT_CHARS` behind is disconnected instead of growing the queue.
    """

    def __init__(self, ws: Socket, send: AsgiSend | None = None, direct: DirectText | None = None) -> None:
        self.ws = ws
        self._send = send or ws.send
        """Writes one ASGI message; the server's own ``send`` when we have it (see :mod:`reasonloop.server.transport.unwrapped`)."""
        self._direct = direct
        """The server protocol's own frame writer (:data:`reasonloop.server.ws.frames.DIRECT_TEXT`), when it offers one."""
        self.queue: deque[str] = deque()
        self.queued = 0
        self.drainer: asyncio.Task[None] | None = None
        self.closer: asyncio.Task[None] | None = None
        self.closed = False

    def put(self, text: str) -> None:
        if self.closed:
            return
        if self.drainer is not None:
            self.queued += len(text)
            if self.queued > OUTBOX_LIMIT_CHARS:
                self._overflow()
                return
            self.queue.append(text)
            return
        try:
            if self._direct is not None and self._direct(text):
                return
            done, pending = first_step(self._send({"type": "websocket.send", "text": text}))
        except Exception:  # the socket is gone: the receive loop ends the session
            self.closed = True
            return
        if not done:
            self.drainer = asyncio.create_task(self._drain(pending))

    async def _drain(self, pending: Any) -> None:
        try:
            await resume(*pending)
            while self.queue:
                text = self.queue.popleft()
                self.queued -= len(text)
                await self._send({"type": "websocket.send", "text": text})
        except Exception:
            self.closed = True
            self.queue.clear()
        finally:
            self.drainer = None

    def _overflow(self) -> None:
        """Too far behind: drop what is queued and close the socket (the receive loop then ends)."""
        self.close()
        log.warning("closing a WebSocket whose client fell %d characters behind", OUTBOX_LIMIT_CHARS)
        self.closer = asyncio.get_running_loop().create_task(self._close_slow())

    async def _close_slow(self) -> None:
        with contextlib.suppress(Exception):
            await self.ws.close(code=1013, reason="client too slow: reconnect and resume with after_seq")

    async def flush(self) -> None:
        """Until every frame put so far is written (or the socket is gone)."""
        while self.drainer is not None:
            await asyncio.wait({self.drainer})

    def close(self) -> None:
        self.closed = True
        self.queue.clear()
        self.queued = 0
        if self.drainer is not None:
            self.drainer.cancel()
