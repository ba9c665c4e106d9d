"""The app's own HTTP middleware: each refuses a request before any route reads its body.

* :class:`SiteGuard` is the HTTP face of the gate's first step (:meth:`Gate.check_site
  <reasonloop.server.gate.Gate.check_site>`): every request, routes that need no key included
  (the web UI, the docs, health);
* :class:`UploadSizeGuard` refuses an upload whose body is over the limit.
"""

from __future__ import annotations

from typing import Any

from reasonloop.errors import CrossSiteRefused, UploadTooLarge
from reasonloop.server.errors import error_response
from reasonloop.server.gate import Gate

__all__ = ["SiteGuard", "UploadSizeGuard"]


class SiteGuard:
    """ASGI middleware refusing HTTP requests of another site while no API keys are configured.

    Args:
        gate: The app's gate.
    """

    def __init__(self, app: Any, gate: Gate) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            try:
                self.gate.check_site(scope)
            except CrossSiteRefused as exc:
                await error_response(exc)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class UploadSizeGuard:
    """ASGI middleware refusing an upload whose body is over the limit: before it is read when
    its length is declared, else as soon as that much of it has arrived (a chunked body).

    The multipart body is spooled to disk before a route runs, so the upload route's per-file
    check alone would let a huge body fill the disk first.

    Args:
        path: The upload route's path (``POST`` requests whose path ends with it are counted).
        limit: The most bytes its body may have.
    """

    def __init__(self, app: Any, path: str, limit: int) -> None:
        self.app = app
        self.path = path
        self.limit = limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if not (scope["type"] == "http" and scope["method"] == "POST" and scope["path"].endswith(self.path)):
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length", b"")
        if length.isdigit() and int(length) > self.limit:
            error = UploadTooLarge(f"upload body of {int(length)} bytes is over {self.limit}", limit=self.limit)
            return await _refuse(error, scope, receive, send)
        await _CountedBody(self, scope, receive, send).serve()


class _CountedBody:
    """One request's body, counted as it arrives. Past the limit the client is answered 413 at
    once and the application is told the client left (its own answer is dropped)."""

    def __init__(self, guard: UploadSizeGuard, scope: Any, receive: Any, send: Any) -> None:
        self.guard, self.scope, self._receive, self._send = guard, scope, receive, send
        self.received = 0
        self.refused = False
        self.answering = False
        """The application has begun its response: too late to answer 413 instead."""

    async def serve(self) -> None:
        await self.guard.app(self.scope, self.receive, self.send)

    async def receive(self) -> Any:
        if self.refused:
            return {"type": "http.disconnect"}
        message = await self._receive()
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.guard.limit:
                self.refused = True
                if not self.answering:
                    limit = self.guard.limit
                    error = UploadTooLarge(f"upload body is over {limit} bytes", limit=limit)
                    await _refuse(error, self.scope, self._receive, self._send)
                return {"type": "http.disconnect"}
        return message

    async def send(self, message: Any) -> None:
        if self.refused:
            return
        if message["type"] == "http.response.start":
            self.answering = True
        await self._send(message)


async def _refuse(error: UploadTooLarge, scope: Any, receive: Any, send: Any) -> None:
    await error_response(error)(scope, receive, send)
