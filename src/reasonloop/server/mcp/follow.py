"""A run ``ask`` follows to its end: each step an MCP progress notification and a line of the
trace summary, an approval asked of the client, a cancelled request stopping the run. Its own
module: following a run is one concept, apart from the tools' arguments and results."""

from __future__ import annotations

import contextlib
import json

import anyio
from mcp.server.mcpserver import Context
from mcp.types import InputRequiredResult
from pydantic import BaseModel, Field

from reasonloop.errors import ReasonLoopError, RunError
from reasonloop.events import (
    Answer,
    ApprovalDecided,
    ApprovalRequested,
    Citation,
    ErrorEvent,
    Event,
    Plan,
    Progress,
    Route,
    Searched,
    ToolCall,
    ToolResult,
)
from reasonloop.server.deps import ServerState
from reasonloop.server.gate import Caller
from reasonloop.server.mcp.approvals import can_elicit, elicit_approval

__all__ = ["AskResult", "RunFailed", "follow"]

_TRACE_LINES = 20
"""Steps kept in ``ask``'s trace summary (the whole trace is at ``/v1/runs/{id}``)."""


class AskResult(BaseModel):
    answer: str
    citations: list[Citation]
    run_id: str = Field(description="The run; its whole trace is at /v1/runs/{run_id} of the HTTP API")
    stop_reason: str
    trace: list[str] = Field(description="What the run did, one line per step (the first steps)")


class RunFailed(Exception):
    """A run ``ask`` followed ended with an error event: reported with the event's own code."""

    def __init__(self, event: ErrorEvent) -> None:
        super().__init__(f"[{event.code}] {event.message}")


def _summary(event: Event) -> str | None:
    """A trace line of the event, read from its fields (a plan's text is not parsed)."""
    if isinstance(event, Progress):
        return event.message
    if isinstance(event, Plan):
        return ("plan: " + "; ".join(step.line() for step in event.steps))[:300]
    if isinstance(event, ToolCall):
        return f"{event.tool}({json.dumps(event.input, ensure_ascii=False)[:200]})"
    if isinstance(event, ToolResult):
        return f"{event.tool}: {'error' if event.error else 'ok'}"
    if isinstance(event, Searched):
        return f"search({json.dumps(event.query, ensure_ascii=False)[:200]}): {event.hits} found"
    if isinstance(event, ApprovalDecided):
        return f"approval {event.approval_id}: {event.decision} (via {event.by.get('via', '?')})"
    if isinstance(event, ApprovalRequested):
        return (
            f"approval {event.approval_id} of run {event.run_id} needed: {event.tool}"
            f"({json.dumps(event.arguments, ensure_ascii=False)[:200]}); answer with answer_approval"
        )
    if isinstance(event, Route):
        return f"route: {event.route}{f' ({event.strategy})' if event.strategy else ''}: {event.reason[:200]}"
    return None


async def follow(
    state: ServerState, run_id: str, who: Caller, ctx: Context, after: int = 0
) -> AskResult | InputRequiredResult:
    """Follow a run to its end (from its event ``after``), reporting its steps as progress; a
    cancelled request stops it. A tool call waiting for approval is asked of the client when it
    can answer elicitations: at once (a session that takes server requests), or by returning an
    ``InputRequiredResult`` whose answer comes with the client's retry of the call (the run waits
    meanwhile)."""
    tenant = who.tenant
    trace: list[str] = []
    step = 0
    answer: Answer | None = None
    try:
        await ctx.report_progress(0, None, f"run {run_id} started" if not after else f"run {run_id} goes on")
        feed = await state.runs.read(run_id, after, tenant)
        async for event in feed.events():
            if event.depth == 0 and isinstance(event, Answer):
                answer = event
            elif event.depth == 0 and isinstance(event, ErrorEvent):
                raise RunFailed(event)
            elif (line := _summary(event)) is not None:
                step += 1
                if len(trace) < _TRACE_LINES:
                    trace.append(line)
                await ctx.report_progress(step, None, line)
                if isinstance(event, ApprovalRequested) and can_elicit(ctx):
                    needed = await elicit_approval(state, run_id, who, event, ctx)
                    if needed is not None:
                        answer = None
                        return needed
    except BaseException:
        if answer is None:  # the request was cancelled (or its session ended): the run stops too
            with anyio.CancelScope(shield=True):
                await _stop(state, run_id, tenant)
        raise
    if answer is None:
        raise RunError(f"run {run_id} ended without an answer", run_id=run_id)
    return AskResult(
        answer=answer.text, citations=answer.citations, run_id=run_id, stop_reason=answer.stop_reason, trace=trace
    )


async def _stop(state: ServerState, run_id: str, tenant: str) -> None:
    with contextlib.suppress(ReasonLoopError):  # it ended meanwhile
        await state.runs.stop(run_id, tenant)
