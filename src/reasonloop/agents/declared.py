"""Declared agents: reading and checking the ``[agents.NAME]`` tables.

Agents live in ``reasonloop.toml`` and, optionally, in the TOML file named by ``agents_file``
(same ``[agents.NAME]`` shape; a name may be declared only once). Each names a strategy, a
model, tools, instructions, a description and strategy settings (see
:class:`~reasonloop.config.AgentSettings`). Tools are given as:

- a tool id (``docsearch``, ``summarize``, ``kb_stats``, ``feedback``, a plugin's id); the
  network tools ``http_request``, ``web_search`` and ``wikipedia`` are built from ``[tools]``
  and must be enabled there;
- ``mcp:SERVER``: every tool of that ``[[tools.mcp_servers]]`` entry;
- ``agent:OTHER``: another declared agent, offered as a tool (``run_agent`` when it is the
  only one, ``agent_<name>`` when there are several).

:func:`check_agents` checks everything reachable from the requested agents before anything is
built; a bad reference (unknown tool, agent, strategy or MCP server, a cycle of sub-agents,
invalid settings) raises :class:`~reasonloop.errors.AgentConfigError` naming the agent.
Building them is :mod:`reasonloop.agents.builder`'s job.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pydantic import ValidationError

from reasonloop.config import AgentSettings, Settings
from reasonloop.errors import AgentConfigError, ReasonLoopError
from reasonloop.registry import Registry, resolve
from reasonloop.tools.configured import NETWORK_TOOLS, not_enabled

__all__ = ["check_agents", "config_error", "declared_agents", "settings_registry", "sub_agents"]

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def config_error(agent: str, message: str, reference: str | None = None) -> AgentConfigError:
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
            raise config_error(name, f"declared twice (in the settings and in {path})")
        try:
            agents[name] = AgentSettings.model_validate(table)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise config_error(name, f"invalid declaration in {path}: {problems}") from None
    return agents


def sub_agents(spec: AgentSettings) -> list[str]:
    return [t.removeprefix("agent:").strip() for t in spec.tools if t.startswith("agent:")]


def check_agents(settings: Settings, names: list[str] | None = None, registry: Registry | None = None) -> None:
    """Check the declarations reachable from ``names`` (all agents by default) without building them.

    Raises:
        AgentConfigError: the first bad reference found, naming the agent that makes it.
    """
    agents = declared_agents(settings)
    registry = registry or settings_registry(settings)
    roots = list(agents) if names is None else names
    for root in roots:
        if root not in agents:
            known = ", ".join(sorted(agents)) or "none"
            raise config_error(root, f"no such agent is declared (declared: {known})", root)
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
    for sub in sub_agents(agents[name]):
        _walk(agents, sub, seen)


def _check_graph(agents: dict[str, AgentSettings], roots: list[str]) -> None:
    """Unknown sub-agents and cycles, reported with the path that leads to them."""
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in done:
            return
        for sub in sub_agents(agents[name]):
            if sub not in agents:
                known = ", ".join(sorted(agents)) or "none"
                raise config_error(name, f"unknown agent {sub!r} in tools (declared: {known})", f"agent:{sub}")
            if sub in path or sub == name:
                cycle = " -> ".join([*path[path.index(sub) :], name, sub]) if sub in path else f"{name} -> {sub}"
                raise config_error(name, f"sub-agent cycle {cycle}", f"agent:{sub}")
            visit(sub, [*path, name])
        done.add(name)

    for root in roots:
        visit(root, [])


def _check_one(name: str, spec: AgentSettings, settings: Settings, servers: set[str], registry: Registry) -> None:
    if not NAME_PATTERN.match(name):
        raise config_error(name, "names are 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit")
    try:
        strategy = resolve("reasoning", spec.reasoning, registry)
    except ReasonLoopError as exc:
        raise config_error(name, f"unknown reasoning {spec.reasoning!r}: {exc.message}", spec.reasoning) from None
    try:
        strategy.validate_settings(spec.settings)
    except ReasonLoopError as exc:
        raise config_error(name, exc.message) from None
    for ref in spec.tools:
        if ref.startswith("agent:"):
            continue
        if ref.startswith("mcp:"):
            server = ref.removeprefix("mcp:").strip()
            if server not in servers:
                known = ", ".join(sorted(servers)) or "none"
                raise config_error(
                    name, f"unknown MCP server {server!r} in tools ([[tools.mcp_servers]]: {known})", ref
                )
            continue
        if ref in NETWORK_TOOLS:
            setting = not_enabled(ref, settings)
            if setting is not None:
                raise config_error(name, f"tool {ref!r} is not configured (set {setting})", ref)
            continue
        try:
            resolve("tool", ref, registry)
        except ReasonLoopError as exc:
            raise config_error(name, f"unknown tool {ref!r}: {exc.message}", ref) from None


def settings_registry(settings: Settings) -> Registry:
    """The registry ``[plugins] paths`` asks for (the process registry when it names none)."""
    return Registry(settings.plugins.paths) if settings.plugins.paths else Registry.default()
