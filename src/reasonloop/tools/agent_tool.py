"""Agents as tools: one agent offered to another as ``run_agent(query, context?)``.

The parent's model sees the sub-agent's ``description`` and calls the tool with a query (and
optional background). The sub-agent runs to its end; its answer goes back to the parent as
the observation, never to the user. The tool's data is ``{content, meta, stack}``: the
answer, the sub-run's facts (agent, run id, timings, tool calls, stop reason, usage) and
the chain of agent names from the top-level run down to the sub-agent.

While it runs, the sub-agent's events are sent into the parent's stream through
``ToolContext.emit`` with ``depth`` one more than the parent's and ``parent_call_id`` set
to the tool call that started it, so a UI can show them indented (a surface shows only
``depth == 0`` answers as the answer). Calls are refused, as an error observation the
parent's model can read, when the agent is already on the stack (``agent.recursion``) or
when the sub-run would nest deeper than ``max_depth`` (``agent.depth_exceeded``).

Naming: an agent offered alone is the tool ``run_agent``; when a parent is offered several,
each is ``agent_<name>`` (:func:`agent_tools` applies the rule; ``name=`` overrides it).

For ``require_tool_call``, calling a sub-agent is not evidence in itself: the tool reports
the real tool calls and the searches the sub-run made (:meth:`AgentTool.tool_calls_made`), and
those count toward the parent's tally.

Example::

    researcher = Agent("toolcall", llm=llm, tools=[web], name="researcher", description="Finds facts")
    writer = Agent("react", llm=llm, tools=[AgentTool(researcher)], name="writer")
    result = await writer.run("Write a paragraph on the history of Lyon")
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import Annotated, Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, Field

from reasonloop.errors import AgentDepthExceeded, AgentRecursion, ConfigError, SubAgentFailed
from reasonloop.events import Answer, AnswerDelta, ErrorEvent, Event
from reasonloop.tools.base import Tool, ToolContext, ToolOutput

__all__ = ["DEFAULT_MAX_DEPTH", "AgentParams", "AgentTool", "RunnableAgent", "agent_tools", "tool_name_for"]

DEFAULT_MAX_DEPTH = 3
"""Sub-agents may nest three levels below the top-level run (depth 0) by default."""
DEFAULT_AGENT_TIMEOUT_S = 300.0
"""A sub-agent runs a whole reasoning loop: allow minutes, not the one minute of a plain tool."""


class RunnableAgent(Protocol):
    """What :class:`AgentTool` needs of an agent (:class:`reasonloop.agent.Agent` is one)."""

    name: str | None
    description: str

    def context(
        self,
        history: Any = None,
        *,
        run_id: str | None = None,
        user_id: str | None = None,
        conversation_id: str | None = None,
        depth: int = 0,
    ) -> Any: ...

    def events(self, question: str, ctx: Any) -> AsyncIterator[Event]: ...


class AgentParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: Annotated[str, Field(min_length=1, description="The question or task for the agent, self-contained.")]
    context: Annotated[
        str | None,
        Field(default=None, description="Background the agent needs: facts found so far, constraints, the goal."),
    ] = None


def tool_name_for(agent_name: str) -> str:
    """``agent_<name>`` with characters that tool names may not hold replaced by ``_`` (64 at most)."""
    return ("agent_" + re.sub(r"[^A-Za-z0-9_-]", "_", agent_name))[:64]


class AgentTool(Tool):
    """Another agent, run to its end as one tool call.

    Args:
        agent: The sub-agent; it must have a ``name`` (the recursion check and the stack use it).
        name: Tool name shown to the model (default ``run_agent``).
        description: What the model reads (default: the agent's description).
        max_depth: Deepest nesting allowed for the sub-run (the top-level run is depth 0).
        timeout_s: How long the whole sub-run may take.

    Raises:
        ConfigError: the agent has no name, or ``max_depth`` is below 1.
    """

    Params = AgentParams
    emits_events: ClassVar[bool] = True
    """Run as a task so the sub-agent's events reach the parent's stream while it works."""

    def __init__(
        self,
        agent: RunnableAgent,
        *,
        name: str | None = None,
        description: str | None = None,
        max_depth: int = DEFAULT_MAX_DEPTH,
        timeout_s: float = DEFAULT_AGENT_TIMEOUT_S,
    ) -> None:
        agent_name = getattr(agent, "name", None)
        if not agent_name:
            raise ConfigError("an agent offered as a tool needs a name (Agent(..., name='researcher'))")
        if max_depth < 1:
            raise ConfigError(f"max_depth of agent tool {agent_name!r} must be at least 1, got {max_depth}")
        self.agent = agent
        self.agent_name: str = agent_name
        self.name = name or "run_agent"  # type: ignore[misc]
        self.description = (  # type: ignore[misc]
            description
            or getattr(agent, "description", "")
            or f"Ask the agent {agent_name!r} to handle a question or task; it answers with what it found."
        )
        self.max_depth = max_depth
        self.timeout_s = timeout_s

    def tool_calls_made(self, out: ToolOutput) -> int:
        """Real tool calls and searches the sub-run made: the evidence it gathered, what the
        parent's ``require_tool_call`` counts."""
        meta = out.data.get("meta") if isinstance(out.data, Mapping) else None
        if not isinstance(meta, Mapping):
            return 0
        return int(meta.get("tool_calls", 0)) + int(meta.get("searches", 0))

    async def run(self, params: AgentParams, ctx: ToolContext) -> ToolOutput:
        stack = list(ctx.scope.agent_stack)
        depth = ctx.depth + 1
        if self.agent_name in stack:
            chain = " -> ".join([*stack, self.agent_name])
            raise AgentRecursion(
                f"refused: agent {self.agent_name!r} is already running in this chain ({chain})",
                agent=self.agent_name,
                stack=stack,
            )
        if depth > self.max_depth:
            raise AgentDepthExceeded(
                f"refused: calling agent {self.agent_name!r} would nest agents {depth} deep (the limit is "
                f"{self.max_depth}); answer with what you have",
                agent=self.agent_name,
                stack=stack,
            )
        question = params.query if not params.context else f"{params.query}\n\nContext: {params.context}"
        sub = self.agent.context(
            user_id=ctx.scope.user or None,
            conversation_id=ctx.scope.conversation or None,
            depth=depth,
        )
        sub_stack = [*stack, self.agent_name]
        sub.scope.agent_stack = tuple(sub_stack)
        # One evidence numbering for the whole tree: the sub-agent's [n] mean the same to the parent.
        sub.scope.evidence = ctx.scope.evidence_log()
        started, clock = time.time(), time.perf_counter()
        answer: Answer | None = None
        error: ErrorEvent | None = None
        partial: list[str] = []
        try:
            async with aclosing(self.agent.events(question, sub)) as events:
                async for event in events:
                    own = event.depth == depth
                    if event.parent_call_id is None:
                        event.parent_call_id = ctx.call_id
                    if ctx.emit is not None:
                        await ctx.emit(event)
                    if not own:
                        continue
                    if isinstance(event, AnswerDelta):
                        partial.append(event.text)
                    elif isinstance(event, Answer):
                        answer = event
                    elif isinstance(event, ErrorEvent):
                        error = event
        finally:  # also when the sub-run failed, timed out or was stopped: its model calls happened
            if ctx.usage is not None:
                ctx.usage.add(sub.usage, tool_calls=False)
        content = answer.text if answer is not None else "".join(partial)
        meta = {
            "agent": self.agent_name,
            "run_id": sub.run_id,
            "started_at": started,
            "ended_at": time.time(),
            "elapsed_s": round(time.perf_counter() - clock, 6),
            "tool_calls": sub.real_tool_calls,
            "searches": sub.usage.searches,
            "stop_reason": answer.stop_reason if answer is not None else "error",
            "usage": dataclasses.asdict(sub.usage),
            "depth": depth,
        }
        data = {"content": content, "meta": meta, "stack": sub_stack}
        if error is not None or answer is None:
            code = error.code if error is not None else "run.error"
            message = error.message if error is not None else "the sub-run ended without an answer"
            failed = SubAgentFailed(f"agent {self.agent_name!r} failed: [{code}] {message}", cause=code)
            return ToolOutput(
                text=f"Error from {self.name}: {failed.message}",
                data=data,
                error={
                    "tool": self.name,
                    "error": failed.message,
                    "type": type(failed).__name__,
                    "code": failed.code,
                    "cause": code,
                },
            )
        return ToolOutput(text=content, citations=list(answer.citations), data=data)


def agent_tools(
    agents: Sequence[RunnableAgent],
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    timeouts: Mapping[str, float] | None = None,
) -> list[AgentTool]:
    """Wrap ``agents`` for one parent: ``run_agent`` for a single one, ``agent_<name>`` for several.

    Args:
        agents: The sub-agents (each with a distinct name).
        max_depth: Deepest nesting allowed (see :class:`AgentTool`).
        timeouts: Agent name -> seconds for that sub-run (default 300).

    Raises:
        ConfigError: an agent has no name, or two have the same name.
    """
    names = [getattr(a, "name", None) for a in agents]
    taken = [n for n in names if n]
    if len(set(taken)) != len(taken):
        raise ConfigError(f"agents offered as tools need distinct names, got {taken}")
    timeouts = timeouts or {}
    single = len(agents) == 1
    return [
        AgentTool(
            agent,
            name="run_agent" if single else tool_name_for(str(agent.name)),
            max_depth=max_depth,
            timeout_s=timeouts.get(str(agent.name), DEFAULT_AGENT_TIMEOUT_S),
        )
        for agent in agents
    ]
