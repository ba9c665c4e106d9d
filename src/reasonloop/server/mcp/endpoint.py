"""The MCP server over streamable HTTP, at ``[mcp] path`` (``/mcp``) of ``reasonloop serve``.

Every request is admitted by the gate before the MCP SDK sees it (:mod:`reasonloop.server.gate`:
its site while no keys are configured, its key, its rate), refused with the same errors as the
REST API; each MCP request then runs as its key's tenant (:mod:`reasonloop.server.mcp.server`).
The endpoint answers requests before the app's HTTP middleware, as the WebSocket does: the SDK
streams its own responses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from reasonloop.server.deps import ServerState
from reasonloop.server.errors import error_response
from reasonloop.server.gate import ADMITTED, REFUSALS

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
        from mcp.server.transport_security import TransportSecuritySettings

        from reasonloop.server.mcp.server import build_mcp_server

        server = build_mcp_server(state, transport="http")
        app = server.streamable_http_app(
            streamable_http_path=self.path,
            host=state.settings.server.host,
            # Hosts and origins are the gate's to check, by the rules of every other surface.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
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
        try:
            caller = await state.gate.admit(scope)
        except REFUSALS as exc:
            await error_response(exc)(scope, receive, send)
            return
        inner = dict(scope)
        inner["path"] = self.path  # as the SDK's app routes it, under any root path
        inner["root_path"] = ""
        inner[ADMITTED] = caller  # who the tools run as
        await self._app(inner, receive, send)
