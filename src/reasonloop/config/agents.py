"""The ``[agents.NAME]`` tables of the configuration: declared agents, each a strategy, a model, tools
and instructions. Re-exported by :mod:`reasonloop.config`, which most code imports it from."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from reasonloop.config.tools import ApprovalPolicy, Section

__all__ = ["AgentSettings"]


class AgentSettings(Section):
    """One declared agent, ``[agents.NAME]``: a strategy, a model, tools and instructions.

    Example::

        [agents.researcher]
        description = "Finds facts in the documents and on the web"
        reasoning = "toolcall"
        llm = "openai:gpt-4o-mini"
        tools = ["docsearch", "web_search", "mcp:catalog"]
        instructions = ["Quote the sources you use."]
        settings = { max_rounds = 4, require_tool_call = true }

        [agents.writer]
        reasoning = "react"
        tools = ["agent:researcher"]
    """

    description: str = ""
    """What the agent is for; a parent agent reads it as the description of this agent's tool."""
    reasoning: str = "react"
    """Strategy id (``qa``, ``decompose``, ``react``, ``toolcall``, ``rewoo``, ``ircot`` or a plugin's)."""
    llm: str = ""
    """``provider:model``; empty means ``[llm]`` (or the model handed to ``Agent.from_config``)."""
    planner_llm: str = ""
    """Model for planning (ReWOO); empty means ``llm``."""
    solver_llm: str = ""
    """Model for the final synthesis (ReWOO); empty means ``llm``."""
    tools: list[str] = Field(default_factory=list)
    """Tool ids, ``mcp:SERVER`` for every tool of a ``[[tools.mcp_servers]]`` entry, ``agent:OTHER`` for
    another declared agent offered as a tool."""
    instructions: list[str] | str = Field(default_factory=list)
    """Appended to the strategy's built-in prompts."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """The strategy's settings (``max_rounds``, ``require_tool_call``, ...), validated at load time."""
    kb: bool = True
    """Search the knowledge base the agent runs with (tool-using strategies get ``docsearch``)."""
    language: str | None = None
    """Answer language; ``None`` follows each question."""
    timeout_s: float = Field(default=300.0, gt=0)
    """How long a parent agent waits for this one when it calls it as a tool."""
    approvals: dict[str, ApprovalPolicy] = Field(default_factory=dict)
    """Tool name (or ``mcp:SERVER``) -> whether a person approves this agent's calls of it; over
    ``[approvals]`` for the runs of this agent."""
