"""The network tools that the operator's configuration turns on.

``http_request``, ``web_search`` and ``wikipedia`` reach outside the machine, so a model is
offered them only when ``[tools]`` says so: :func:`configured_tools` builds exactly the ones
that apply, :func:`network_tool` one of them by id (as a declared agent names it), and
:func:`not_enabled` says which setting turns an id on. (MCP servers are started by
:class:`reasonloop.tools.mcp_client.MCPManager`.)

Example::

    [tools.web_search]
    backend = "brave"
    api_key_env = "BRAVE_API_KEY"

    tools = configured_tools(load_settings())   # -> [WebSearchTool]
"""

from __future__ import annotations

from reasonloop.config import Settings, ToolsSettings
from reasonloop.tools.base import Tool

__all__ = ["NETWORK_TOOLS", "configured_tools", "network_tool", "not_enabled"]

NETWORK_TOOLS = ("http_request", "web_search", "wikipedia")
"""Ids of the tools that reach the network: built from ``[tools]``, offered only when enabled there."""


def _tools_settings(settings: Settings | ToolsSettings) -> ToolsSettings:
    return settings.tools if isinstance(settings, Settings) else settings


def not_enabled(tool_id: str, settings: Settings | ToolsSettings) -> str | None:
    """The setting to add when the network tool ``tool_id`` is off (None: it is on)."""
    tools = _tools_settings(settings)
    enabled, setting = {
        "http_request": (tools.http.enabled, "[tools.http] enabled = true"),
        "web_search": (bool(tools.web_search.backend), "[tools.web_search] backend"),
        "wikipedia": (tools.wikipedia.enabled, "[tools.wikipedia] enabled = true"),
    }[tool_id]
    return None if enabled else setting


def network_tool(tool_id: str, settings: Settings | ToolsSettings) -> Tool:
    """The network tool ``tool_id`` (one of :data:`NETWORK_TOOLS`) built from ``[tools]``.

    Raises:
        ConfigError: its configuration is incomplete.
    """
    tools = _tools_settings(settings)
    if tool_id == "http_request":
        from reasonloop.tools.http_request import HttpRequestTool

        return HttpRequestTool(tools.http)
    if tool_id == "web_search":
        from reasonloop.tools.web_search import WebSearchTool

        return WebSearchTool(tools.web_search)
    if tool_id == "wikipedia":
        from reasonloop.tools.wikipedia import WikipediaTool

        return WikipediaTool(tools.wikipedia)
    raise KeyError(tool_id)


def configured_tools(settings: Settings | ToolsSettings) -> list[Tool]:
    """The network tools enabled in ``settings`` (``[tools]`` or the whole settings).

    Raises:
        ConfigError: a tool is enabled but its configuration is incomplete.
    """
    return [network_tool(name, settings) for name in NETWORK_TOOLS if not_enabled(name, settings) is None]
