"""One MCP server's session, held open by a task of its own, through the official ``mcp`` SDK.

An :class:`MCPConnection` serves one ``[[tools.mcp_servers]]`` entry (a stdio ``command`` or a
streamable-HTTP ``url``): a task of its own enters the SDK client's context managers and holds
the session open, so every run shares one long-lived session (the SDK's anyio scopes must be
entered and left in the same task). When the server dies, the call in flight fails with
``tool.unavailable`` and the next call starts a new session. A handshake that does not finish
within ``connect_timeout_s`` costs exactly that: the attempt is abandoned at once and its
teardown happens in the background.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from typing import IO, Any

import mcp_types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from reasonloop.config import MCPServerSettings, secret
from reasonloop.errors import ToolError, ToolTimeout, ToolUnavailable

__all__ = ["MCPConnection", "describe_error"]

log = logging.getLogger("reasonloop.tools.mcp_client")

# Failures that mean the session is gone (as opposed to a failed call on a live session).
_CLOSED_CODES = {mcp_types.CONNECTION_CLOSED}
_GONE = (EOFError, ConnectionError, OSError)


class MCPConnection:
    """One MCP server and the task that holds its session open.

    Args:
        settings: The server's ``[[tools.mcp_servers]]`` entry.
        errlog: Where a stdio server's stderr goes (a file with a descriptor); defaults to
            this process's stderr.
    """

    def __init__(self, settings: MCPServerSettings, *, errlog: IO[str] | None = None) -> None:
        self.settings = settings
        self.name = settings.name
        self.errlog = errlog
        self.error: str | None = None
        """Why the last connection attempt failed (``None`` while healthy)."""
        self.connects = 0
        """How many sessions have been opened (1 on start, +1 per re-establishment)."""
        self._client: Client | None = None
        self._holder: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self._tools: list[mcp_types.Tool] | None = None
        self._closing: set[asyncio.Task[None]] = set()

    @property
    def tearing_down(self) -> int:
        """Abandoned sessions whose teardown is still running in the background."""
        return len(self._closing)

    @property
    def alive(self) -> bool:
        return self._client is not None and self._holder is not None and not self._holder.done()

    def _transport(self) -> Any:
        s = self.settings
        if s.url:
            headers = {k: v for k, env in s.headers_env.items() if (v := secret(env))}
            if headers:
                import httpx2

                return streamable_http_client(s.url, http_client=httpx2.AsyncClient(headers=headers))
            return s.url
        params = StdioServerParameters(command=s.command, args=s.args, env=s.env or None, cwd=s.cwd or None)
        return stdio_client(params, errlog=self.errlog or _stderr())

    async def connect(self) -> None:
        """Open a session unless one is alive.

        Raises:
            ToolUnavailable: the server did not start or answer the handshake in time.
        """
        async with self._lock:
            if self.alive:
                return
            await self._drop()
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._stop = asyncio.Event()
            self._holder = asyncio.create_task(self._hold(ready, self._stop), name=f"mcp:{self.name}")
            try:
                async with asyncio.timeout(self.settings.connect_timeout_s):
                    await asyncio.shield(ready)
            except BaseException as exc:
                self._abandon(ready)
                self.error = describe_error(exc) if not isinstance(exc, TimeoutError) else "no handshake in time"
                if isinstance(exc, asyncio.CancelledError):
                    raise
                raise ToolUnavailable(
                    f"MCP server {self.name!r} is unavailable: {self.error}", server=self.name
                ) from None
            self.error = None
            self.connects += 1

    async def _hold(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        try:
            async with Client(self._transport()) as client:
                self._client = client
                ready.set_result(None)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else ToolUnavailable(describe_error(exc)))
            elif not stop.is_set():
                log.warning("MCP server %r: session ended: %s", self.name, describe_error(exc))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._client = None

    def _abandon(self, ready: asyncio.Future[None]) -> None:
        """Give up on a session whose handshake failed or never came, without waiting for it.

        The holder is stuck in the handshake (it never reached the point where it waits to be
        told to stop), so it is cancelled at once; the SDK's teardown (closing the pipes, ending
        the server process, each wait bounded) finishes in the background and :meth:`aclose`
        waits for it. ``ready``'s outcome is consumed here, so nothing is left unretrieved.
        """
        if not ready.done():
            ready.cancel()
        elif not ready.cancelled():
            ready.exception()
        holder, self._holder = self._holder, None
        self._client = None
        if self._stop is not None:
            self._stop.set()
        if holder is not None and not holder.done():
            holder.cancel()
            self._closing.add(holder)
            holder.add_done_callback(self._closing.discard)

    async def _drop(self) -> None:
        """End the holder task (politely, then by cancelling)."""
        holder, self._holder = self._holder, None
        self._client = None
        if holder is None:
            return
        if self._stop is not None:
            self._stop.set()
        try:
            async with asyncio.timeout(5):
                await asyncio.gather(holder, return_exceptions=True)
        except TimeoutError:
            holder.cancel()
            await asyncio.gather(holder, return_exceptions=True)

    async def list_tools(self, refresh: bool = False) -> list[mcp_types.Tool]:
        """The server's tools (cached; ``refresh`` asks the server again)."""
        if self._tools is not None and not refresh:
            return self._tools
        await self.connect()
        generation = self.connects
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        try:
            async with asyncio.timeout(self.settings.connect_timeout_s):
                while True:
                    page = await self._live().list_tools(cursor=cursor, cache_mode="refresh")
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if not cursor:
                        break
        except TimeoutError:
            raise ToolUnavailable(
                f"MCP server {self.name!r} did not list its tools in time", server=self.name
            ) from None
        except (MCPError, *_GONE) as exc:
            await self._lost(exc, generation)
            raise ToolUnavailable(f"MCP server {self.name!r}: {describe_error(exc)}", server=self.name) from exc
        self._tools = tools
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """Call ``name``; reconnects first when the session died since the last call.

        Raises:
            ToolTimeout: no answer within the server's ``timeout_s``.
            ToolUnavailable: the server is down (the next call tries to start it again).
        """
        await self._ensure_live()
        timeout = self.settings.timeout_s
        generation = self.connects
        try:
            async with asyncio.timeout(timeout + 1.0):
                return await self._live().call_tool(name, arguments, read_timeout_seconds=timeout)
        except TimeoutError:
            raise ToolTimeout(f"MCP tool {name!r} on {self.name!r} did not answer within {timeout:g}s") from None
        except MCPError as exc:
            if exc.code == mcp_types.REQUEST_TIMEOUT:
                raise ToolTimeout(f"MCP tool {name!r} on {self.name!r} did not answer within {timeout:g}s") from None
            if exc.code in _CLOSED_CODES:
                await self._lost(exc, generation)
                raise ToolUnavailable(f"MCP server {self.name!r} went away during {name!r}", server=self.name) from exc
            raise ToolError(f"MCP server {self.name!r} refused {name!r}: {exc}", server=self.name) from exc
        except _GONE as exc:
            await self._lost(exc, generation)
            raise ToolUnavailable(f"MCP server {self.name!r} went away during {name!r}", server=self.name) from exc

    async def _ensure_live(self) -> None:
        """Connect, and reconnect first if the session closed while idle (the server exited)."""
        await self.connect()
        if _closed(self._client):
            await self._lost(ToolUnavailable("the server closed the session"), self.connects)
            await self.connect()

    def _live(self) -> Client:
        client = self._client
        if client is None:
            raise ToolUnavailable(f"MCP server {self.name!r} is not connected", server=self.name)
        return client

    async def _lost(self, exc: BaseException, generation: int | None = None) -> None:
        """Drop the session a failed call used (not a newer one another call opened meanwhile)."""
        async with self._lock:
            if generation is not None and generation != self.connects:
                return
            self.error = describe_error(exc)
            log.warning("MCP server %r lost: %s", self.name, self.error)
            await self._drop()

    async def aclose(self) -> None:
        async with self._lock:
            await self._drop()
        if self._closing:  # sessions given up on, still tearing down
            await asyncio.gather(*self._closing, return_exceptions=True)


def _closed(client: Client | None) -> bool:
    """True when the session's transport has reached end of stream.

    The SDK exposes no public flag; its dispatcher keeps ``_closed``. Without that
    attribute the session counts as open and a dead server shows on the next call.
    """
    if client is None:
        return True
    try:
        dispatcher = client.session._dispatcher
    except (AttributeError, RuntimeError):
        return False
    return bool(getattr(dispatcher, "_closed", False))


def describe_error(exc: BaseException) -> str:
    """One line saying what went wrong (an exception group: each of its exceptions)."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe_error(e) for e in exc.exceptions)
    if isinstance(exc, ToolError):
        return exc.message
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _stderr() -> Any:
    """Our stderr for a stdio server's, or nowhere when ours has no descriptor (captured)."""
    try:
        sys.stderr.fileno()
        return sys.stderr
    except (AttributeError, ValueError, OSError):
        return subprocess.DEVNULL  # taken as is by the process spawn: no file to open and forget
