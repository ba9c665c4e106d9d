"""The MCP server over streamable HTTP, at ``[mcp] path`` (``/mcp``) of ``reasonloop serve``.

Every request must carry an API key as the REST API does (``Authorization: Bearer KEY`` when keys
are configured) and takes from the key's rate budget; a request without one is answered 401 before
the MCP SDK sees it. Each MCP request then runs as its key's tenant
(:mod:`reasonloop.server.mcp_server`). The endpoint answers requests before the app's HTTP middleware,
as the WebSocket does: the SDK streams its own responses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from reasonloop.errors import ReasonLoopError
from reasonloop.server.deps import ServerState
from reasonloop.server.errors import error_response

__all__ = ["MCPEndpoint"]


class MCPEndpoint:
    """An ASGI endpoint serving MCP at ``path`` once :meth:`serving` has opened it."""

    def __init__(self, path: str) -> None:
        self.path = path.rstrip("/") or "/"
        self._app: Any = None
        self._state: ServerState | None = None

    def takes(self, scope: dict[str, Any]) -> bool:
        if scope["type"] != "http":
            return False
        path = scope["path"].removeprefix(scope.get("root_path", "")) or "/"
        return path == self.path or path == self.path + "/"

    @asynccontextmanager
    async def serving(self, state: ServerState) -> AsyncIterator[None]:
        """Serve MCP over ``state`` (its run manager open) until the block ends."""
        from reasonloop.server.mcp_server import build_mcp_server

        server = build_mcp_server(state, transport="http")
        app = server.streamable_http_app(streamable_http_path=self.path, host=state.settings.server.host)
        async with server.session_manager.run():
            self._app, self._state = app, state
            try:
                yield
            finally:
                self._app = self._state = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        state = self._state
        if self._app is None or state is None:
            from reasonloop.errors import RunStoreUnavailable

            await error_response(RunStoreUnavailable("the server is starting"))(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        try:
            authorization = headers.get(b"authorization")
            who = state.auth.from_bearer(authorization.decode("latin-1") if authorization else None)
            await state.auth.check_rate(who)
        except ReasonLoopError as exc:
            await error_response(exc)(scope, receive, send)
            return
        inner = dict(scope)
        inner["path"] = self.path  # as the SDK's app routes it, under any root path
        inner["root_path"] = ""
        await self._app(inner, receive, send)
