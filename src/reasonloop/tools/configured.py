"""The network tools that the operator's configuration turns on.

``http_request``, ``web_search`` and ``wikipedia`` reach outside the machine, so a model is
offered them only when ``[tools]`` says so: :func:`configured_tools` builds exactly the ones
that apply. (MCP servers are started by :class:`reasonloop.tools.mcp_client.MCPManager`.)

Example::

    [tools.web_search]
    backend = "brave"
    api_key_env = "BRAVE_API_KEY"

    tools = configured_tools(load_settings())   # -> [WebSearchTool]
"""

from __future__ import annotations

from reasonloop.config import Settings, ToolsSettings
from reasonloop.tools.base import Tool
from reasonloop.tools.http_request import HttpRequestTool
from reasonloop.tools.web_search import WebSearchTool
from reasonloop.tools.wikipedia import WikipediaTool

__all__ = ["configured_tools"]


def configured_tools(settings: Settings | ToolsSettings) -> list[Tool]:
    """The network tools enabled in ``settings`` (``[tools]`` or the whole settings).

    Raises:
        ConfigError: a tool is enabled but its configuration is incomplete.
    """
    tools_settings = settings.tools if isinstance(settings, Settings) else settings
    tools: list[Tool] = []
    if tools_settings.http.enabled:
        tools.append(HttpRequestTool(tools_settings.http))
    if tools_settings.web_search.backend:
        tools.append(WebSearchTool(tools_settings.web_search))
    if tools_settings.wikipedia.enabled:
        tools.append(WikipediaTool(tools_settings.wikipedia))
    return tools
