"""What the agents of one owner share: feedback stores and MCP client sessions.

A command, a server or a test that builds agents makes one :class:`AgentResources`, hands it to
everything it builds and closes it when it is done. Nothing here is process-wide: two owners
in one process get two sets, and closing one leaves the other untouched.

Example::

    resources = AgentResources()
    try:
        agent = Agent.from_config("librarian", settings, resources=resources)
        await agent.run("books about Rome?")
    finally:
        await agent.aclose()
        await resources.aclose()
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING

from reasonloop.config import Settings
from reasonloop.tools.feedback import FeedbackStore

if TYPE_CHECKING:
    from reasonloop.tools.mcp_client import MCPManager

__all__ = ["AgentResources"]


class AgentResources:
    """One feedback store per file and one MCP client per server list and event loop.

    MCP sessions are long-lived and belong to the event loop that opened them, so a new loop
    (a new ``asyncio.run``) gets a new client.
    """

    def __init__(self) -> None:
        self._stores: dict[str, FeedbackStore] = {}
        self._managers: dict[str, tuple[asyncio.AbstractEventLoop, MCPManager]] = {}

    def feedback_store(self, settings: Settings) -> FeedbackStore:
        """The :class:`FeedbackStore` ``[tools.feedback]`` names (one per file)."""
        path = settings.tools.feedback.path or str(Path(settings.kb.path) / "feedback.sqlite")
        key = str(Path(path).resolve()) if path != ":memory:" else path
        store = self._stores.get(key)
        if store is None:
            store = self._stores[key] = FeedbackStore.from_settings(settings)
        return store

    def mcp_manager(self, settings: Settings) -> MCPManager:
        """The MCP client for ``[[tools.mcp_servers]]`` on the running event loop."""
        from reasonloop.tools.mcp_client import MCPManager

        key = json.dumps([s.model_dump(mode="json") for s in settings.tools.mcp_servers], sort_keys=True)
        loop = asyncio.get_running_loop()
        held = self._managers.get(key)
        if held is None or held[0] is not loop or held[0].is_closed():
            held = self._managers[key] = (loop, MCPManager(settings.tools.mcp_servers))
        return held[1]

    async def aclose(self) -> None:
        """Close the MCP clients of the running event loop (stops stdio server processes) and the
        feedback stores."""
        loop = asyncio.get_running_loop()
        for key, (owner, manager) in list(self._managers.items()):
            if owner is loop:
                del self._managers[key]
                await manager.aclose()
        stores, self._stores = list(self._stores.values()), {}
        for store in stores:
            store.close()
