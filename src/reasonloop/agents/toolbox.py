"""An agent's toolbox: its tools by name, the knowledge sources it searches, and tool sources loaded later.

Tools are given as tools, tool ids, other agents (offered as tools) or :class:`ToolSource`
objects, whose tools need I/O to discover (an MCP server's) and join the toolbox before a run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from reasonloop.errors import ConfigError
from reasonloop.kb.base import Retriever
from reasonloop.registry import Registry, resolve
from reasonloop.tools.base import RunScope, Tool
from reasonloop.tools.docsearch import DocSearchTool

__all__ = ["ToolSource", "knowledge_sources", "load_sources", "run_scope", "sort_tools", "stats_sources", "toolbox"]

_SCOPE_FIELDS = frozenset({"kb", "feedback", "user", "conversation", "stream_answer", "max_evidence_tokens"})
"""``services`` keys that set the run's :class:`RunScope` (what tools read), as they always did."""


class ToolSource(Protocol):
    """Tools that need I/O to discover (the tools of an MCP server), loaded before a run."""

    label: str

    async def load(self) -> tuple[list[Tool], str | None]:
        """The tools available now, and a problem to report (``None`` when all is well)."""
        ...


def knowledge_sources(kb: Any) -> list[Retriever]:
    """The retrievers of ``kb``: a knowledge base (its ``retriever()``), a retriever, or a list of them.

    Raises:
        ConfigError: ``kb`` is none of those.
    """
    if kb is None:
        return []
    if isinstance(kb, list | tuple):
        return [r for item in kb for r in knowledge_sources(item)]
    if callable(getattr(kb, "retriever", None)):
        return [kb.retriever()]
    if callable(getattr(kb, "search", None)):
        return [kb]
    raise ConfigError(f"kb must be a knowledge base, a retriever or a list of them, not {type(kb).__name__}")


def stats_sources(kb: Any) -> list[Any]:
    """What ``kb_stats`` can report on among ``kb``: items with ``stats()``."""
    items = kb if isinstance(kb, list | tuple) else [kb] if kb is not None else []
    return [item for item in items if callable(getattr(item, "stats", None))]


def sort_tools(
    items: Sequence[Any] | None, registry: Registry | None, is_agent: Callable[[Any], bool]
) -> tuple[list[Tool], list[Any], list[ToolSource]]:
    """``items`` sorted into tools (ids resolved, classes made), agents and tool sources.

    Raises:
        PluginNotFound: an unknown tool id.
    """
    chosen: list[Tool] = []
    agents: list[Any] = []
    sources: list[ToolSource] = []
    for item in items or ():
        if is_agent(item):
            agents.append(item)
            continue
        if not isinstance(item, str | Tool | type) and callable(getattr(item, "load", None)):
            sources.append(item)
            continue
        obj = resolve("tool", item, registry) if isinstance(item, str) else item
        chosen.append(obj() if isinstance(obj, type) else obj)
    return chosen, agents, sources


def toolbox(tools: list[Tool], agent_tools: list[Tool], *, docsearch: bool) -> dict[str, Tool]:
    """The tools by name: ``tools``, then the agents offered as tools, with ``docsearch`` first
    when ``docsearch`` asks for it and none is given.

    Raises:
        ConfigError: two tools have one name.
    """
    chosen = [*tools, *agent_tools]
    if docsearch and not any(t.name == DocSearchTool.name for t in chosen):
        chosen.insert(0, DocSearchTool())
    by_name: dict[str, Tool] = {}
    for tool in chosen:
        if tool.name in by_name:
            raise ConfigError(f"two tools are named {tool.name!r}; tool names must be unique")
        by_name[tool.name] = tool
    return by_name


async def load_sources(sources: list[ToolSource], tools: dict[str, Tool]) -> tuple[list[str], list[ToolSource]]:
    """Load ``sources`` into ``tools``; the problems to report, and the sources to try again later.

    The sources load concurrently (each MCP server's start costs its own time, not the sum);
    a tool whose name is already taken is not offered (and reported).
    """
    notes: list[str] = []
    failed: list[ToolSource] = []
    results = await asyncio.gather(*(source.load() for source in sources))
    for source, (loaded, problem) in zip(sources, results, strict=True):
        if problem is not None:
            notes.append(problem)
            failed.append(source)
        for tool in loaded:
            if tool.name in tools and tools[tool.name] is not tool:
                notes.append(f"{source.label}: tool name {tool.name!r} is already taken; {tool.name} not offered")
                continue
            tools[tool.name] = tool
    return notes, failed


def run_scope(
    services: Mapping[str, Any],
    label: str,
    kb: Any,
    feedback: Any,
    user_id: str | None,
    conversation_id: str | None,
) -> RunScope:
    """What one run of the agent ``label`` shares with its tools. ``services`` keys that name scope
    fields still set them; an explicit user or conversation wins."""
    scope = RunScope(**{name: value for name, value in services.items() if name in _SCOPE_FIELDS})
    scope.agent_stack = (label,)
    if scope.kb is None:
        scope.kb = kb
    if scope.feedback is None:
        scope.feedback = feedback
    if user_id is not None or "user" not in services:
        scope.user = user_id or ""
    if conversation_id is not None or "conversation" not in services:
        scope.conversation = conversation_id or ""
    return scope
