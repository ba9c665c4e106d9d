"""Errors of a tool call: unknown tool, bad arguments, a policy or a person refusing it, its backend
down, the budget spent, and a sub-agent called as a tool that nests too deep, recurses or fails.
Re-exported by :mod:`reasonloop.errors`."""

from __future__ import annotations

from reasonloop.errors.base import ReasonLoopError

__all__ = [
    "AgentDepthExceeded",
    "AgentRecursion",
    "SubAgentFailed",
    "ToolArgumentsInvalid",
    "ToolBlocked",
    "ToolBudgetExhausted",
    "ToolError",
    "ToolNetworkError",
    "ToolNotFound",
    "ToolRejected",
    "ToolTimeout",
    "ToolUnavailable",
]


class ToolError(ReasonLoopError):
    code = "tool.error"


class ToolNotFound(ToolError):
    code = "tool.not_found"


class ToolArgumentsInvalid(ToolError):
    code = "tool.invalid_arguments"


class ToolTimeout(ToolError):
    code = "tool.timeout"


class ToolBlocked(ToolError):
    """A policy refused the call: a private address, a method not allowed, a host not allowed."""

    code = "tool.blocked"


class ToolRejected(ToolBlocked):
    """The person asked to approve the call rejected it (or nobody answered in time)."""

    code = "tool.rejected"


class ToolNetworkError(ToolError):
    """The tool could not reach the service it talks to (DNS, connection, bad response)."""

    code = "tool.network"


class ToolUnavailable(ToolError):
    """The tool's backend is not running (an MCP server that failed to start or died)."""

    code = "tool.unavailable"


class ToolBudgetExhausted(ToolError):
    """A tool call was not executed because the run's tool-call budget is spent."""

    code = "tool.budget_exhausted"


class AgentDepthExceeded(ToolBlocked):
    """A sub-agent call was refused: it would nest agents deeper than the configured limit."""

    code = "agent.depth_exceeded"


class AgentRecursion(ToolBlocked):
    """A sub-agent call was refused: the agent is already running higher up the same stack."""

    code = "agent.recursion"


class SubAgentFailed(ToolError):
    """A sub-agent's run ended in an error; ``details`` carry the sub-run's ``cause`` code."""

    code = "agent.sub_agent_failed"
