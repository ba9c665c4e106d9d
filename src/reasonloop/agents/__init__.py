"""Agents: the :class:`Agent` facade, declared agents, their builder, shared resources and the runner.

:class:`Agent` answers questions with one strategy (the Python API); ``[agents.NAME]`` tables
are read and checked by :mod:`~reasonloop.agents.declared` and built by
:mod:`~reasonloop.agents.builder`; :class:`AgentResources` holds what the agents of one owner
share; :class:`AgentRunner` answers the run manager's requests with agents.
"""

from reasonloop.agents.agent import Agent, ToolSource, ask
from reasonloop.agents.declared import check_agents, declared_agents
from reasonloop.agents.resources import AgentResources
from reasonloop.agents.runner import DEFAULT_REASONING, AgentRunner

__all__ = [
    "DEFAULT_REASONING",
    "Agent",
    "AgentResources",
    "AgentRunner",
    "ToolSource",
    "ask",
    "check_agents",
    "declared_agents",
]
