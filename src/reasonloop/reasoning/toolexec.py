"""Running the tool calls a model asked for: concurrently, within budget, never raising.

:func:`run_tools` yields a :class:`~reasonloop.events.ToolCall` per call, the nested events
tools emit, and a :class:`~reasonloop.events.ToolResult` per call as each finishes; the
outputs land in call order in the list it is given. Unknown tools, invalid arguments,
exceptions and timeouts become observations ``{tool, error, type}``. Calls beyond the
tool budget are not executed: their observation tells the model the budget is spent.
Cancelling the consumer cancels every running tool and waits for it, so no task outlives
the run. A tool that delegates (an agent offered as a tool) defines ``tool_calls_made(out)``:
its own call does not count toward ``require_tool_call``; the real calls it reports do. Nested events a tool emits (``ToolContext.emit``) are yielded while concurrent calls
run; a lone call is awaited directly and its events follow it, unless the tool sets
``emits_events = True`` (sub-agents), which makes its events arrive live as well.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from reasonloop.errors import ReasonLoopError, ToolArgumentsInvalid, ToolBudgetExhausted, ToolNotFound, ToolTimeout
from reasonloop.events import Event, Step, ToolCall, ToolResult
from reasonloop.reasoning.base import RunContext
from reasonloop.reasoning.budget import BudgetTracker
from reasonloop.tokens import trim_to_tokens
from reasonloop.tools.base import Tool, ToolOutput
from reasonloop.tools.docsearch import EvidenceLog

__all__ = ["PlannedCall", "coerce_input", "delegates", "failure", "record_result", "run_tools", "tally"]


@dataclass(slots=True)
class PlannedCall:
    """A call the model asked for."""

    call_id: str
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_input: Any = None
    """What the model wrote, kept for the steps (defaults to ``arguments``)."""
    invalid: str | None = None
    """Why the arguments could not be read (the call is answered with this error)."""


def failure(tool: str, error: ReasonLoopError) -> ToolOutput:
    """An error observation ``{tool, error, type, code}`` in the shape every strategy shows the model."""
    return ToolOutput(
        text=f"Error from {tool}: {error.message}",
        error={"tool": tool, "error": error.message, "type": type(error).__name__, "code": error.code},
    )


def coerce_input(tool: Tool, raw: Any) -> dict[str, Any]:
    """Tool arguments from what a text-format model wrote.

    A JSON object is used as is; anything else (plain text, a JSON string or number)
    fills the tool's first required parameter (or its first parameter).
    """
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("{"):
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                value = None
            if isinstance(value, dict):
                return value
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            text = text[1:-1]
        raw = text
    fields = tool.Params.model_fields
    if not fields:
        return {}
    primary = next((name for name, f in fields.items() if f.is_required()), next(iter(fields)))
    return {primary: raw if raw is not None else ""}


def delegates(tool: Tool) -> bool:
    """True for a tool whose real tool calls happen elsewhere (it reports them by ``tool_calls_made``)."""
    return callable(getattr(tool, "tool_calls_made", None))


def tally(ctx: RunContext, tracker: BudgetTracker, tool: Tool, out: ToolOutput | None = None) -> None:
    """Count real tool calls: 1 when an ordinary ``tool`` starts; a delegating one's report when it ends."""
    n = 0
    if not delegates(tool):
        n = 1 if out is None else 0
    elif out is not None:
        n = int(tool.tool_calls_made(out))  # type: ignore[attr-defined]
    tracker.real_tool_calls += n
    ctx.tool_tally += n


def _budget_note(tracker: BudgetTracker) -> str:
    return (
        f"Not executed: the tool-call budget of this run ({tracker.budget.max_tool_calls} calls) is spent. "
        "Answer now from what you have."
    )


async def run_tools(
    ctx: RunContext,
    tracker: BudgetTracker,
    calls: Sequence[PlannedCall],
    outputs: list[ToolOutput],
    *,
    observation_tokens: int = 1500,
) -> AsyncIterator[Event]:
    """Run ``calls``; yield their events; append one output per call (in call order) to ``outputs``."""
    results: list[ToolOutput | None] = [None] * len(calls)
    runnable: list[tuple[int, Tool]] = []
    granted = tracker.take_tool_slots(sum(1 for c in calls if c.tool in ctx.tools and c.invalid is None))
    for i, call in enumerate(calls):
        yield ToolCall(call_id=call.call_id, tool=call.tool, input=call.arguments)
        tool = ctx.tools.get(call.tool)
        if tool is None:
            known = ", ".join(sorted(ctx.tools)) or "none"
            results[i] = failure(call.tool, ToolNotFound(f"unknown tool {call.tool!r} (tools: {known})"))
        elif call.invalid is not None:
            results[i] = failure(call.tool, ToolArgumentsInvalid(call.invalid))
        elif granted > 0:
            granted -= 1
            runnable.append((i, tool))
        else:
            results[i] = failure(call.tool, ToolBudgetExhausted(_budget_note(tracker)))
    for _, tool in runnable:
        tally(ctx, tracker, tool)
    for i, out in enumerate(results):
        if out is not None:
            yield record_result(ctx, calls[i], out, observation_tokens)

    if len(runnable) == 1 and tracker.deadline is None and not getattr(runnable[0][1], "emits_events", False):
        # One call, no deadline, no live nested events: await it directly (no task to schedule).
        i, tool = runnable[0]
        call = calls[i]
        results[i] = await tool.invoke(call.arguments, ctx.tool_context(call.call_id))
        tally(ctx, tracker, tool, results[i])
        for event in ctx.drain():
            yield event
        yield record_result(ctx, call, results[i], observation_tokens)
    elif runnable:
        async with aclosing(_run_concurrently(ctx, tracker, calls, runnable, results, observation_tokens)) as events:
            async for event in events:
                yield event
    outputs.extend(r for r in results if r is not None)


async def _run_concurrently(
    ctx: RunContext,
    tracker: BudgetTracker,
    calls: Sequence[PlannedCall],
    runnable: list[tuple[int, Tool]],
    results: list[ToolOutput | None],
    observation_tokens: int,
) -> AsyncIterator[Event]:
    tasks: dict[asyncio.Task[ToolOutput], int] = {}
    for i, tool in runnable:
        call = calls[i]
        tasks[asyncio.create_task(tool.invoke(call.arguments, ctx.tool_context(call.call_id)))] = i
    wake = ctx._wake = asyncio.Event()
    waiter: asyncio.Task[bool] | None = None
    try:
        pending = set(tasks)
        while pending:
            left = tracker.time_left()
            if left is not None and left <= 0:
                break
            waiter = asyncio.create_task(wake.wait())
            done, _ = await asyncio.wait({*pending, waiter}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            if waiter not in done:
                waiter.cancel()
            waiter = None
            wake.clear()
            for event in ctx.drain():
                yield event
            for task in done:
                if task in tasks:
                    pending.discard(task)
                    i = tasks[task]
                    results[i] = task.result()
                    tally(ctx, tracker, ctx.tools[calls[i].tool], results[i])
                    yield record_result(ctx, calls[i], results[i], observation_tokens)
        for task in pending:  # the run's deadline passed
            task.cancel()
            i = tasks[task]
            tracker.hit("timeout")
            results[i] = failure(calls[i].tool, ToolTimeout("stopped: the run's time budget ran out"))
            yield record_result(ctx, calls[i], results[i], observation_tokens)
    finally:
        ctx._wake = None
        leftovers = [t for t in tasks if not t.done()]
        if waiter is not None:
            leftovers.append(waiter)
        for task in leftovers:
            task.cancel()
        if leftovers:
            await asyncio.gather(*leftovers, return_exceptions=True)
    for event in ctx.drain():
        yield event


def record_result(ctx: RunContext, call: PlannedCall, out: ToolOutput, observation_tokens: int) -> ToolResult:
    """Trim the observation, keep the citations and the step, and make the result event."""
    if out.error is not None:
        out.text = json.dumps({k: out.error[k] for k in ("tool", "error", "type")}, ensure_ascii=False)
    if len(out.text) > observation_tokens:  # fewer characters than the budget's tokens always fit
        out.text = trim_to_tokens(out.text, observation_tokens)
    if out.citations:
        log = EvidenceLog.of(ctx.services)
        for citation in out.citations:
            log.add_citation(citation)
    ctx.steps.append(
        Step(
            action=call.tool,
            action_input=call.raw_input if call.raw_input is not None else call.arguments,
            observation=out.text,
            error=out.error,
        )
    )
    return ToolResult(
        call_id=call.call_id, tool=call.tool, output=out.text, error=out.error, citations=out.citations, depth=ctx.depth
    )
