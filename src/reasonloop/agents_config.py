"""Declared agents: ``[agents.NAME]`` tables turned into :class:`~reasonloop.agent.Agent` objects.

Agents live in ``reasonloop.toml`` and, optionally, in the TOML file named by ``agents_file``
(same ``[agents.NAME]`` shape; a name may be declared only once). Each names a strategy, a
model, tools, instructions, a description and strategy settings (see
:class:`~reasonloop.config.AgentSettings`). Tools are given as:

- a tool id (``docsearch``, ``summarize``, ``kb_stats``, ``feedback``, a plugin's id); the
  network tools ``http_request``, ``web_search`` and ``wikipedia`` are built from ``[tools]``
  and must be enabled there;
- ``mcp:SERVER``: every tool of that ``[[tools.mcp_servers]]`` entry, discovered on the first
  run through one :class:`~reasonloop.tools.mcp_client.MCPManager` shared by the process;
- ``agent:OTHER``: another declared agent, offered as a tool (``run_agent`` when it is the
  only one, ``agent_<name>`` when there are several).

Everything reachable from the requested agent is checked before anything is built; a bad
reference (unknown tool, agent, strategy or MCP server, a cycle of sub-agents, invalid
settings) raises :class:`~reasonloop.errors.AgentConfigError` naming the agent.

Example::

    agent = build_agent("writer", load_settings())
    result = await agent.run("Summarise the warranty terms")
"""

from __future__ import annotations

import asyncio
import json
import re
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from reasonloop.config import AgentSettings, Settings, load_settings
from reasonloop.errors import AgentConfigError, ReasonLoopError
from reasonloop.llm.base import LLM
from reasonloop.registry import Registry, resolve
from reasonloop.tools.agent_tool import agent_tools
from reasonloop.tools.base import Tool
from reasonloop.tools.feedback import FeedbackStore

if TYPE_CHECKING:
    from reasonloop.agent import Agent
    from reasonloop.tools.mcp_client import MCPManager

__all__ = [
    "MCPServerTools",
    "build_agent",
    "check_agents",
    "close_agent",
    "close_shared_mcp",
    "declared_agents",
    "feedback_store",
    "shared_mcp_manager",
]

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
NETWORK_TOOLS = ("http_request", "web_search", "wikipedia")


def _error(agent: str, message: str, reference: str | None = None) -> AgentConfigError:
    return AgentConfigError(f"agent {agent!r}: {message}", agent=agent, reference=reference)


def declared_agents(settings: Settings) -> dict[str, AgentSettings]:
    """Every declared agent: ``[agents.*]`` of the settings plus those of ``agents_file``.

    Raises:
        AgentConfigError: the agents file is missing, not TOML, invalid, or declares a name twice.
    """
    agents = dict(settings.agents)
    if not settings.agents_file:
        return agents
    path = Path(settings.agents_file)
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise AgentConfigError(f"agents file not found: {path}", file=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise AgentConfigError(f"agents file {path} is not valid TOML: {exc}", file=str(path)) from None
    extra = set(data) - {"agents"}
    if extra:
        raise AgentConfigError(f"agents file {path}: only [agents.NAME] tables belong here, found {sorted(extra)}")
    for name, table in (data.get("agents") or {}).items():
        if name in agents:
            raise _error(name, f"declared twice (in the settings and in {path})")
        try:
            agents[name] = AgentSettings.model_validate(table)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise _error(name, f"invalid declaration in {path}: {problems}") from None
    return agents


def _sub_agents(spec: AgentSettings) -> list[str]:
    return [t.removeprefix("agent:").strip() for t in spec.tools if t.startswith("agent:")]


def check_agents(settings: Settings, names: list[str] | None = None, registry: Registry | None = None) -> None:
    """Check the declarations reachable from ``names`` (all agents by default) without building them.

    Raises:
        AgentConfigError: the first bad reference found, naming the agent that makes it.
    """
    agents = declared_agents(settings)
    registry = registry or _registry(settings)
    roots = list(agents) if names is None else names
    for root in roots:
        if root not in agents:
            known = ", ".join(sorted(agents)) or "none"
            raise _error(root, f"no such agent is declared (declared: {known})", root)
    _check_graph(agents, roots)
    seen: set[str] = set()
    for root in roots:
        _walk(agents, root, seen)
    servers = {s.name for s in settings.tools.mcp_servers}
    for name in sorted(seen):
        _check_one(name, agents[name], settings, servers, registry)


def _walk(agents: dict[str, AgentSettings], name: str, seen: set[str]) -> None:
    if name in seen:
        return
    seen.add(name)
    for sub in _sub_agents(agents[name]):
        _walk(agents, sub, seen)


def _check_graph(agents: dict[str, AgentSettings], roots: list[str]) -> None:
    """Unknown sub-agents and cycles, reported with the path that leads to them."""
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in done:
            return
        for sub in _sub_agents(agents[name]):
            if sub not in agents:
                known = ", ".join(sorted(agents)) or "none"
                raise _error(name, f"unknown agent {sub!r} in tools (declared: {known})", f"agent:{sub}")
            if sub in path or sub == name:
                cycle = " -> ".join([*path[path.index(sub) :], name, sub]) if sub in path else f"{name} -> {sub}"
                raise _error(name, f"sub-agent cycle {cycle}", f"agent:{sub}")
            visit(sub, [*path, name])
        done.add(name)

    for root in roots:
        visit(root, [])


def _check_one(name: str, spec: AgentSettings, settings: Settings, servers: set[str], registry: Registry) -> None:
    if not NAME_PATTERN.match(name):
        raise _error(name, "names are 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit")
    try:
        strategy = resolve("reasoning", spec.reasoning, registry)
    except ReasonLoopError as exc:
        raise _error(name, f"unknown reasoning {spec.reasoning!r}: {exc.message}", spec.reasoning) from None
    try:
        strategy.validate_settings(spec.settings)
    except ReasonLoopError as exc:
        raise _error(name, exc.message) from None
    for ref in spec.tools:
        if ref.startswith("agent:"):
            continue
        if ref.startswith("mcp:"):
            server = ref.removeprefix("mcp:").strip()
            if server not in servers:
                known = ", ".join(sorted(servers)) or "none"
                raise _error(name, f"unknown MCP server {server!r} in tools ([[tools.mcp_servers]]: {known})", ref)
            continue
        if ref in NETWORK_TOOLS:
            _network_tool(name, ref, settings, build=False)
            continue
        try:
            resolve("tool", ref, registry)
        except ReasonLoopError as exc:
            raise _error(name, f"unknown tool {ref!r}: {exc.message}", ref) from None


def _network_tool(agent: str, ref: str, settings: Settings, *, build: bool) -> Tool | None:
    tools = settings.tools
    enabled = {
        "http_request": (tools.http.enabled, "[tools.http] enabled = true"),
        "web_search": (bool(tools.web_search.backend), "[tools.web_search] backend"),
        "wikipedia": (tools.wikipedia.enabled, "[tools.wikipedia] enabled = true"),
    }[ref]
    if not enabled[0]:
        raise _error(agent, f"tool {ref!r} is not configured (set {enabled[1]})", ref)
    if not build:
        return None
    if ref == "http_request":
        from reasonloop.tools.http_request import HttpRequestTool

        return HttpRequestTool(tools.http)
    if ref == "web_search":
        from reasonloop.tools.web_search import WebSearchTool

        return WebSearchTool(tools.web_search)
    from reasonloop.tools.wikipedia import WikipediaTool

    return WikipediaTool(tools.wikipedia)


def _registry(settings: Settings) -> Registry:
    return Registry(settings.plugins.paths) if settings.plugins.paths else Registry.default()


_STORES: dict[str, FeedbackStore] = {}


def feedback_store(settings: Settings) -> FeedbackStore:
    """The process's :class:`FeedbackStore` for ``[tools.feedback]`` (one per file)."""
    probe = settings.tools.feedback.path or str(Path(settings.kb.path) / "feedback.sqlite")
    key = str(Path(probe).resolve()) if probe != ":memory:" else probe
    store = _STORES.get(key)
    if store is None:
        store = _STORES[key] = FeedbackStore.from_settings(settings)
    return store


_MANAGERS: dict[str, tuple[asyncio.AbstractEventLoop, MCPManager]] = {}


def shared_mcp_manager(settings: Settings) -> MCPManager:
    """The process's MCP client for ``[[tools.mcp_servers]]`` (one per server list and event loop).

    Sessions are long-lived and belong to the event loop that opened them, so a new loop
    (a new ``asyncio.run``) gets a new manager.
    """
    from reasonloop.tools.mcp_client import MCPManager

    key = json.dumps([s.model_dump(mode="json") for s in settings.tools.mcp_servers], sort_keys=True)
    loop = asyncio.get_running_loop()
    held = _MANAGERS.get(key)
    if held is None or held[0] is not loop or held[0].is_closed():
        held = _MANAGERS[key] = (loop, MCPManager(settings.tools.mcp_servers))
    return held[1]


async def close_shared_mcp() -> None:
    """Close the shared MCP clients of the running event loop (stops stdio server processes)."""
    loop = asyncio.get_running_loop()
    for key, (owner, manager) in list(_MANAGERS.items()):
        if owner is loop:
            del _MANAGERS[key]
            await manager.aclose()


class MCPServerTools:
    """The tools of one MCP server, discovered when a run first needs them.

    Args:
        settings: Settings holding ``[[tools.mcp_servers]]``.
        server: The server's name.
    """

    def __init__(self, settings: Settings, server: str) -> None:
        self.settings = settings
        self.server = server
        self.label = f"mcp:{server}"
        self._attempts = 0

    async def load(self) -> tuple[list[Tool], str | None]:
        manager = shared_mcp_manager(self.settings)
        self._attempts += 1
        tools = await manager.tools(refresh=self._attempts > 1 and self.server in manager.errors)
        mine: list[Tool] = [t for t in tools if t.connection.name == self.server]
        problem = manager.errors.get(self.server)
        if problem is not None:
            return mine, f"MCP server {self.server!r} offers no tools: {problem}"
        return mine, None


def build_agent(
    name: str,
    settings: Settings | None = None,
    *,
    kb: Any = None,
    llm: LLM | None = None,
    registry: Registry | None = None,
) -> Agent:
    """The declared agent ``name`` with its tools and sub-agents (see the module docstring).

    Raises:
        AgentConfigError: a bad reference anywhere below ``name``.
        LLMNotConfigured: an agent names no model, none was given and none is configured.
    """
    settings = settings or load_settings()
    registry = registry or _registry(settings)
    check_agents(settings, [name], registry)
    agents = declared_agents(settings)
    builder = _Builder(settings, agents, kb, llm, registry)
    return builder.agent(name)


class _Builder:
    """Builds each reachable agent once (a sub-agent used by two parents is one object)."""

    def __init__(
        self, settings: Settings, agents: dict[str, AgentSettings], kb: Any, llm: LLM | None, registry: Registry
    ) -> None:
        self.settings = settings
        self.agents = agents
        self.kb = kb
        self.default_llm = llm
        self.registry = registry
        self.built: dict[str, Agent] = {}
        self.models: dict[str, LLM] = {}
        self.feedback = feedback_store(settings)

    def model(self, spec: str) -> LLM:
        if not spec:
            if self.default_llm is None:
                from reasonloop.llm.resolve import create_llm

                self.default_llm = create_llm(None, self.settings, self.registry)
            return self.default_llm
        if spec not in self.models:
            from reasonloop.llm.resolve import create_llm

            self.models[spec] = create_llm(spec, self.settings, self.registry)
        return self.models[spec]

    def agent(self, name: str) -> Agent:
        if name in self.built:
            return self.built[name]
        from reasonloop.agent import Agent

        spec = self.agents[name]
        tools: list[Any] = []
        subs: list[Agent] = []
        for ref in spec.tools:
            if ref.startswith("agent:"):
                subs.append(self.agent(ref.removeprefix("agent:").strip()))
            elif ref.startswith("mcp:"):
                tools.append(MCPServerTools(self.settings, ref.removeprefix("mcp:").strip()))
            elif ref in NETWORK_TOOLS:
                tools.append(_network_tool(name, ref, self.settings, build=True))
            else:
                tools.append(ref)
        timeouts = {sub.label: self.agents[sub.label].timeout_s for sub in subs}
        tools.extend(agent_tools(subs, max_depth=self.settings.agent_max_depth, timeouts=timeouts))
        try:
            agent = Agent(
                spec.reasoning,
                llm=self.model(spec.llm),
                kb=self.kb if spec.kb else None,
                tools=tools,
                settings=spec.settings,
                instructions=spec.instructions,
                planner_llm=self.model(spec.planner_llm) if spec.planner_llm else None,
                solver_llm=self.model(spec.solver_llm) if spec.solver_llm else None,
                language=spec.language,
                registry=self.registry,
                name=name,
                description=spec.description,
                feedback=self.feedback,
                feedback_recent=self.settings.tools.feedback.recent,
            )
        except AgentConfigError:
            raise
        except ReasonLoopError as exc:
            if exc.code.startswith("llm."):
                raise
            raise _error(name, exc.message) from None
        self.built[name] = agent
        return agent


async def close_agent(agent: Agent) -> None:
    """Close the models of ``agent`` and of every sub-agent below it (each once)."""
    from reasonloop.tools.agent_tool import AgentTool

    seen: set[int] = set()
    models: list[LLM] = []
    stack = [agent]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for model in (current._llm, current._planner_llm, current._solver_llm):
            if isinstance(model, LLM) and all(m is not model for m in models):
                models.append(model)
        stack.extend(t.agent for t in current.tools.values() if isinstance(t, AgentTool))  # type: ignore[misc]
    for model in models:
        await model.aclose()
