"""Building declared agents: each ``[agents.NAME]`` turned into an agent with its tools and sub-agents.

Tools named ``mcp:SERVER`` are discovered on an agent's first run, through the MCP client of
the :class:`~reasonloop.agents.resources.AgentResources` the builder was given; ``agent:OTHER``
sub-agents are built once per builder (a sub-agent used by two parents is one object).
The builder makes agents with the class it is given, so it never imports the facade that
calls it (:meth:`reasonloop.agents.agent.Agent.from_config`).

Example::

    agent = Agent.from_config("writer", load_settings(), resources=resources)
    result = await agent.run("Summarise the warranty terms")
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reasonloop.agents.declared import check_agents, config_error, declared_agents, settings_registry
from reasonloop.agents.resources import AgentResources
from reasonloop.config import AgentSettings, Settings
from reasonloop.errors import AgentConfigError, ReasonLoopError
from reasonloop.llm.base import LLM
from reasonloop.registry import Registry
from reasonloop.tools.agent_tool import agent_tools
from reasonloop.tools.base import Tool
from reasonloop.tools.configured import NETWORK_TOOLS, network_tool

__all__ = ["AgentBuilder", "MCPServerTools"]


class MCPServerTools:
    """The tools of one MCP server, discovered when a run first needs them (a ``ToolSource``).

    Only this server is waited on; once it failed, later loads answer at once while the MCP
    client retries it in the background (:meth:`~reasonloop.tools.mcp_client.MCPManager.server_tools`).

    Args:
        resources: Holds the MCP client shared by every agent of its owner.
        settings: Settings holding ``[[tools.mcp_servers]]``.
        server: The server's name.
    """

    def __init__(self, resources: AgentResources, settings: Settings, server: str) -> None:
        self.resources = resources
        self.settings = settings
        self.server = server
        self.label = f"mcp:{server}"

    async def load(self) -> tuple[list[Tool], str | None]:
        manager = self.resources.mcp_manager(self.settings)
        mine: list[Tool] = list(await manager.server_tools(self.server))
        problem = manager.errors.get(self.server)
        if problem is not None:
            return mine, f"MCP server {self.server!r} offers no tools: {problem}"
        return mine, None


class AgentBuilder:
    """Builds the declared agents reachable from the one asked for, each once.

    Args:
        settings: Settings holding ``[agents.*]`` (and ``agents_file``).
        make: The agent class (called with the agent's constructor arguments).
        resources: Feedback store and MCP clients for every agent built.
        kb: Knowledge base for agents that search one (``kb = true``, the default).
        llm: Model for declared agents that name none (default: the ``[llm]`` model).
        registry: Where ids are looked up (default: one built from ``[plugins]``).
    """

    def __init__(
        self,
        settings: Settings,
        make: Callable[..., Any],
        resources: AgentResources,
        *,
        kb: Any = None,
        llm: LLM | None = None,
        registry: Registry | None = None,
    ) -> None:
        self.settings = settings
        self.make = make
        self.resources = resources
        self.kb = kb
        self.default_llm = llm
        self.registry = registry or settings_registry(settings)
        self.agents: dict[str, AgentSettings] = {}
        self.built: dict[str, Any] = {}
        self.models: dict[str, LLM] = {}

    def build(self, name: str) -> Any:
        """The declared agent ``name``, checked with everything below it first.

        Raises:
            AgentConfigError: a bad reference anywhere below ``name``.
            LLMNotConfigured: an agent names no model, none was given and none is configured.
        """
        check_agents(self.settings, [name], self.registry)
        self.agents = declared_agents(self.settings)
        return self._agent(name)

    def _model(self, spec: str) -> LLM:
        from reasonloop.llm.resolve import create_llm

        if not spec:
            if self.default_llm is None:
                self.default_llm = create_llm(None, self.settings, self.registry)
            return self.default_llm
        if spec not in self.models:
            self.models[spec] = create_llm(spec, self.settings, self.registry)
        return self.models[spec]

    def _agent(self, name: str) -> Any:
        if name in self.built:
            return self.built[name]
        spec = self.agents[name]
        tools: list[Any] = []
        subs: list[Any] = []
        for ref in spec.tools:
            if ref.startswith("agent:"):
                subs.append(self._agent(ref.removeprefix("agent:").strip()))
            elif ref.startswith("mcp:"):
                tools.append(MCPServerTools(self.resources, self.settings, ref.removeprefix("mcp:").strip()))
            elif ref in NETWORK_TOOLS:
                tools.append(network_tool(ref, self.settings))
            else:
                tools.append(ref)
        timeouts = {sub.label: self.agents[sub.label].timeout_s for sub in subs}
        tools.extend(agent_tools(subs, max_depth=self.settings.agent_max_depth, timeouts=timeouts))
        try:
            agent = self.make(
                spec.reasoning,
                llm=self._model(spec.llm),
                kb=self.kb if spec.kb else None,
                tools=tools,
                settings=spec.settings,
                instructions=spec.instructions,
                planner_llm=self._model(spec.planner_llm) if spec.planner_llm else None,
                solver_llm=self._model(spec.solver_llm) if spec.solver_llm else None,
                language=spec.language,
                registry=self.registry,
                name=name,
                description=spec.description,
                feedback=self.resources.feedback_store(self.settings),
                feedback_recent=self.settings.tools.feedback.recent,
            )
        except AgentConfigError:
            raise
        except ReasonLoopError as exc:
            if exc.code.startswith("llm."):
                raise
            raise config_error(name, exc.message) from None
        self.built[name] = agent
        return agent
