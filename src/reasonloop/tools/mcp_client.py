"""Tools of MCP servers, through the official ``mcp`` SDK.

Each configured server (``[[tools.mcp_servers]]``: a stdio ``command`` or a streamable-HTTP
``url``) gets one :class:`~reasonloop.tools.mcp_connection.MCPConnection` holding one
long-lived session that every run shares.

:class:`MCPManager` lists each server's tools when something first asks for that server
(:meth:`MCPManager.server_tools`), so an agent waits only on the servers it names, and
concurrent askers share one attempt. A server that fails is reported in
:attr:`MCPManager.errors` and costs its ``connect_timeout_s`` once: later asks answer at once
with the failure while an attempt in the background, at most once per ``retry_interval_s``,
brings its tools back. Each tool becomes an :class:`MCPTool` whose arguments are validated
against the server's JSON schema before the call is sent.

Example::

    manager = MCPManager(settings.tools.mcp_servers)
    await manager.start()                   # every server, now (optional)
    tools = await manager.server_tools("catalog")   # list[MCPTool]
    ...
    await manager.aclose()
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import IO, Any

import mcp_types

from reasonloop.config import MCPServerSettings
from reasonloop.errors import ToolError
from reasonloop.tools.base import ToolContext, ToolOutput
from reasonloop.tools.mcp_connection import MCPConnection, describe_error
from reasonloop.tools.spec_tool import SpecTool

__all__ = ["MCPConnection", "MCPManager", "MCPTool"]

log = logging.getLogger(__name__)


class MCPTool(SpecTool):
    """One tool of an MCP server, as a reasonloop tool.

    Args:
        connection: The server's connection (shared by all its tools).
        tool: The tool as the server lists it.
        name: Name shown to models (defaults to the server's name for it).
    """

    def __init__(self, connection: MCPConnection, tool: mcp_types.Tool, name: str | None = None) -> None:
        self.connection = connection
        self.remote_name = tool.name
        self.input_schema: dict[str, Any] = dict(tool.input_schema or {})
        """The arguments' JSON schema as the server lists it."""
        annotations = tool.annotations
        self.side_effects = not (annotations is not None and annotations.read_only_hint)
        """Unless the server marks the tool read-only (``[approvals] side_effects`` applies to it)."""
        description = tool.description or tool.title or f"Tool {tool.name} of MCP server {connection.name}."
        settings = connection.settings
        super().__init__(
            name or tool.name,
            description,
            self.input_schema,
            self._call,
            timeout_s=settings.timeout_s + settings.connect_timeout_s + 2.0,
        )

    async def _call(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        result = await self.connection.call_tool(self.remote_name, arguments)
        text = _content_text(result.content)
        if result.is_error:
            raise ToolError(text or f"MCP tool {self.remote_name!r} failed", server=self.connection.name)
        return ToolOutput(text=text, data=result.structured_content)


class MCPManager:
    """All configured MCP servers: start, discover, call, close.

    Args:
        servers: ``[[tools.mcp_servers]]`` entries.
        errlog: Where stdio servers' stderr goes.
    """

    def __init__(self, servers: Sequence[MCPServerSettings], *, errlog: IO[str] | None = None) -> None:
        self.connections = {s.name: MCPConnection(s, errlog=errlog) for s in servers}
        self.errors: dict[str, str] = {}
        """Server name (or ``server/tool``) -> why it is not offering tools (failed start or discovery)."""
        self._listed: dict[str, list[mcp_types.Tool]] = {}
        self._failed_at: dict[str, float] = {}
        self._attempts: dict[str, asyncio.Task[None]] = {}
        self._tools: dict[str, list[MCPTool]] = {}

    async def start(self) -> dict[str, str]:
        """Start every server concurrently and discover their tools; returns :attr:`errors`."""
        await self.tools(refresh=True)
        return self.errors

    def status(self, server: str) -> str:
        """``ok`` (its tools are listed), ``unavailable`` (its last attempt failed) or ``not started``."""
        if server in self._listed:
            return "ok"
        return "unavailable" if server in self.errors else "not started"

    async def server_tools(self, server: str, *, refresh: bool = False) -> list[MCPTool]:
        """The tools of ``server``, filtered by its ``allow`` list.

        The first ask starts the server (callers asking meanwhile share that attempt). Once it
        failed, asks answer at once (an empty list, the reason in :attr:`errors`) and start an
        attempt in the background when the last one is ``retry_interval_s`` old; ``refresh``
        asks the server again now.
        """
        if refresh or (server not in self._listed and server not in self.errors):
            await self._attempt(server, refresh)
        elif server in self.errors:
            self._retry_later(server)
        return self._tools.get(server, [])

    async def tools(self, refresh: bool = False) -> list[MCPTool]:
        """The tools of every reachable server, in configuration order.

        A tool name offered by two servers keeps its name on the one configured first and is
        prefixed with the server name (``two_whoami``) on the others.
        """
        await asyncio.gather(*(self.server_tools(name, refresh=refresh) for name in self.connections))
        return [tool for name in self.connections for tool in self._tools.get(name, [])]

    async def _attempt(self, server: str, refresh: bool) -> None:
        """List ``server``'s tools now, or join the attempt in flight."""
        task = self._attempts.get(server)
        if task is None:
            task = asyncio.create_task(self._list(server, refresh), name=f"mcp-list:{server}")
            self._attempts[server] = task
            task.add_done_callback(lambda done: self._attempts.pop(server, None) if done is task else None)
        await asyncio.shield(task)  # one caller cancelled leaves the attempt to the others

    def _retry_later(self, server: str) -> None:
        interval = self.connections[server].settings.retry_interval_s
        if server in self._attempts or time.monotonic() - self._failed_at.get(server, 0.0) < interval:
            return
        self._failed_at[server] = time.monotonic()  # the rate bound holds while the attempt runs
        task = asyncio.create_task(self._list(server, True), name=f"mcp-retry:{server}")
        self._attempts[server] = task
        task.add_done_callback(lambda done: self._attempts.pop(server, None) if done is task else None)

    async def _list(self, server: str, refresh: bool) -> None:
        connection = self.connections[server]
        try:
            remote = await connection.list_tools(refresh=refresh)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            first = server not in self.errors
            self.errors[server] = describe_error(exc)
            self._failed_at[server] = time.monotonic()
            self._listed.pop(server, None)
            self._tools.pop(server, None)
            (log.warning if first else log.debug)("MCP server %r offers no tools: %s", server, self.errors[server])
            return
        if server in self.errors:
            log.info("MCP server %r is back", server)
        for key in [k for k in self.errors if k == server or k.startswith(f"{server}/")]:
            del self.errors[key]
        self._failed_at.pop(server, None)
        self._listed[server] = remote
        self._tools[server] = self._wrap(server, remote)
        order = list(self.connections)
        for later in order[order.index(server) + 1 :]:  # names an earlier server now takes
            if later in self._listed:
                renamed = self._wrap(later, self._listed[later])
                if [t.name for t in renamed] != [t.name for t in self._tools.get(later, [])]:
                    self._tools[later] = renamed

    def _wrap(self, server: str, remote: list[mcp_types.Tool]) -> list[MCPTool]:
        connection = self.connections[server]
        earlier = list(self.connections)[: list(self.connections).index(server)]
        taken = {t.name for name in earlier for t in self._tools.get(name, [])}
        allow = connection.settings.allow
        tools: list[MCPTool] = []
        for tool in remote:
            if allow is not None and tool.name not in allow:
                continue
            shown = tool.name if tool.name not in taken else f"{server}_{tool.name}"
            try:
                tools.append(MCPTool(connection, tool, shown))
            except ToolError as exc:
                self.errors[f"{server}/{tool.name}"] = exc.message
                continue
            taken.add(shown)
        return tools

    def catalog(self) -> list[dict[str, Any]]:
        """What a user is shown of each server: its tools (``name``, ``description``, ``schema``,
        ``server``, ``status``), or one row with its error when it offers none."""
        rows: list[dict[str, Any]] = []
        for server in self.connections:
            tools = self._tools.get(server)
            if tools is None:
                rows.append(
                    {
                        "name": f"mcp:{server}",
                        "description": "",
                        "schema": None,
                        "server": server,
                        "status": self.status(server),
                        "error": self.errors.get(server),
                    }
                )
                continue
            for tool in tools:
                rows.append(
                    {
                        "name": tool.name,
                        "description": tool.description,
                        "schema": tool.input_schema,
                        "server": server,
                        "status": "ok",
                        "error": None,
                    }
                )
        return rows

    async def aclose(self) -> None:
        attempts = list(self._attempts.values())
        for task in attempts:
            task.cancel()
        await asyncio.gather(*attempts, return_exceptions=True)
        await asyncio.gather(*(c.aclose() for c in self.connections.values()), return_exceptions=True)


def _content_text(content: Sequence[Any]) -> str:
    parts = []
    for block in content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource" and hasattr(block.resource, "text"):
            parts.append(block.resource.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind}: {getattr(block, 'mime_type', '')}]")
        elif kind == "resource_link":
            parts.append(f"[resource: {getattr(block, 'uri', '')}]")
    return "\n".join(parts)
