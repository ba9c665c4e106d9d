"""Running the tool calls a model asked for: concurrently, within budget, never raising.

Every strategy runs tools through one :class:`ToolRound` and its one entry point,
:meth:`ToolRound.run`: a :class:`~reasonloop.events.ToolCall` per call, the nested events tools
emit, and a :class:`~reasonloop.events.ToolResult` per call as each finishes; the outputs land
in call order. Unknown tools, invalid arguments, exceptions and timeouts
become observations ``{tool, error, type}``. Calls beyond the tool budget are not executed:
their observation tells the model the budget is spent. Cancelling the consumer cancels
every running tool and waits for it, so no task outlives the run. A tool that delegates (an
agent offered as a tool) defines ``tool_calls_made(out)``: its own call does not count
toward ``require_tool_call``; the real calls it reports do. Nested events a tool emits
(``ToolContext.emit``) are yielded while concurrent calls run; a lone call in a run without
a time budget is awaited directly and its events follow it, unless the tool sets
``emits_events = True`` (sub-agents), which makes its events arrive live as well.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import aclosing

from reasonloop import telemetry
from reasonloop.errors import ReasonLoopError, ToolArgumentsInvalid, ToolBudgetExhausted, ToolNotFound, ToolTimeout
from reasonloop.events import Event, Step, ToolCall, ToolResult
from reasonloop.reasoning.base import RunContext
from reasonloop.reasoning.formats.planned_call import PlannedCall, coerce_input
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.tokens import trim_to_tokens
from reasonloop.tools.base import Tool, ToolOutput, error_output

__all__ = ["PlannedCall", "ToolRound", "coerce_input", "delegates", "failure", "record_result", "tally"]


def failure(tool: str, error: ReasonLoopError) -> ToolOutput:
    """The observation of a call that never ran (unknown tool, bad arguments, budget spent, a plan
    step that failed): :func:`~reasonloop.tools.base.error_output`, the one shape of them all."""
    return error_output(tool, error)


def delegates(tool: Tool) -> bool:
    """True for a tool whose real tool calls happen elsewhere (it reports them by ``tool_calls_made``)."""
    return callable(getattr(tool, "tool_calls_made", None))


def tally(ctx: RunContext, tool: Tool, out: ToolOutput | None = None) -> None:
    """Count real tool calls in ``ctx.real_tool_calls``: 1 when an ordinary ``tool`` starts; a
    delegating one's report when it ends."""
    made = getattr(tool, "tool_calls_made", None)
    if made is None:  # an ordinary tool: the call itself is the real call
        n = 1 if out is None else 0
    elif out is None:
        n = 0
    else:
        n = int(made(out))
    if n:
        ctx.real_tool_calls += n


def _budget_note(tracker: BudgetTracker) -> str:
    return (
        f"Not executed: the tool-call budget of this run ({tracker.budget.max_tool_calls} calls) is spent. "
        "Answer now from what you have."
    )


class ToolRound:
    """The tool calls of one model turn (or one plan step): what runs, in what order, and their events.

    Building it decides everything that needs no waiting: which calls are unknown, invalid
    or over the budget (their results are ready at once) and which run. :meth:`run` yields
    every event of the round; :attr:`outputs` then holds one output per call, in call order::

        tools = ToolRound(ctx, tracker, calls)
        # aclosing: if our consumer closes us mid-call, the tools are cancelled now, not at GC.
        async with aclosing(tools.run()) as events:
            async for event in events:
                yield event
        outputs = tools.outputs

    A lone call in a run without a deadline whose tool emits no live events is awaited
    directly (no task); otherwise every call runs as a task and results come as they finish.
    """

    __slots__ = ("_ctx", "_observation_tokens", "_results", "_runnable", "_tracker", "calls", "direct")

    def __init__(
        self, ctx: RunContext, tracker: BudgetTracker, calls: Sequence[PlannedCall], observation_tokens: int = 1500
    ) -> None:
        self._ctx, self._tracker, self.calls = ctx, tracker, calls
        self._observation_tokens = observation_tokens
        self._results: list[ToolOutput | None] = [None] * len(calls)
        self._runnable: list[tuple[int, Tool]] = []
        tools = ctx.tools
        wanted = 0
        for call in calls:
            if call.tool in tools and call.invalid is None:
                wanted += 1
        granted = tracker.take_tool_slots(wanted)
        for i, call in enumerate(calls):
            tool = tools.get(call.tool)
            if tool is None:
                known = ", ".join(sorted(tools)) or "none"
                self._results[i] = failure(call.tool, ToolNotFound(f"unknown tool {call.tool!r} (tools: {known})"))
            elif call.invalid is not None:
                self._results[i] = failure(call.tool, ToolArgumentsInvalid(call.invalid))
            elif granted > 0:
                granted -= 1
                self._runnable.append((i, tool))
            else:
                self._results[i] = failure(call.tool, ToolBudgetExhausted(_budget_note(tracker)))
        self.direct = (
            len(self._runnable) == 1
            and tracker.deadline is None
            and not getattr(self._runnable[0][1], "emits_events", False)
        )
        """One call to run, no deadline, no live nested events: it is awaited directly."""

    @property
    def done(self) -> bool:
        """Every call has its output (the round ran to its end)."""
        return None not in self._results

    @property
    def outputs(self) -> list[ToolOutput]:
        """One output per call, in call order.

        Raises:
            RuntimeError: some calls have not run yet.
        """
        if None in self._results:
            raise RuntimeError("the tool round has not run all its calls yet")
        return self._results  # type: ignore[return-value]

    def run(self) -> AsyncIterator[Event]:
        """A :class:`ToolCall` per call, the results that need no running, then the nested events
        and the result of each call that runs, as it finishes."""
        return self._run()

    async def _run(self) -> AsyncIterator[Event]:
        ctx = self._ctx
        # Each event gets its own copy of the arguments: a consumer that edits an event (a sink
        # redacting a secret) must not rewrite the prompt the assistant message carries.
        for call in self.calls:
            yield ToolCall(call_id=call.call_id, tool=call.tool, input=dict(call.arguments), step=call.step)
        for _, tool in self._runnable:
            tally(ctx, tool)
        for i, out in enumerate(self._results):
            if out is not None:
                yield record_result(ctx, self.calls[i], out, self._observation_tokens)
        if not self._runnable:
            return
        if self.direct:
            for event in await self._run_direct():
                yield event
            return
        events = _run_concurrently(
            ctx, self._tracker, self.calls, self._runnable, self._results, self._observation_tokens
        )
        async with aclosing(events):
            async for event in events:
                yield event

    async def _run_direct(self) -> list[Event]:
        """Await the lone call; its nested events, then its result."""
        ctx = self._ctx
        (i, tool), call = self._runnable[0], self.calls[self._runnable[0][0]]
        out = self._results[i] = await _invoke(tool, call, ctx)
        if delegates(tool):  # an ordinary tool was counted when it started
            tally(ctx, tool, out)
        events = ctx.drain() if ctx.pending else []
        events.append(record_result(ctx, call, out, self._observation_tokens))
        return events


async def _run_concurrently(
    ctx: RunContext,
    tracker: BudgetTracker,
    calls: Sequence[PlannedCall],
    runnable: list[tuple[int, Tool]],
    results: list[ToolOutput | None],
    observation_tokens: int,
) -> AsyncIterator[Event]:
    if not runnable:
        return
    tasks: dict[asyncio.Task[ToolOutput], int] = {}
    for i, tool in runnable:
        call = calls[i]
        tasks[asyncio.create_task(_invoke(tool, call, ctx))] = i
    if ctx._wake is None:
        ctx._wake = asyncio.Event()
    wake = ctx._wake
    ctx._wake_users += 1
    # One waiter for nested events, replaced only once it fires (and awaited at the end):
    # a waiter cancelled on every round would outlive the round as a cancelling task.
    waiter = asyncio.create_task(wake.wait())
    try:
        pending = set(tasks)
        while pending:
            left = tracker.time_left()
            if left is not None and left <= 0:
                break
            done, _ = await asyncio.wait({*pending, waiter}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            if waiter in done:
                wake.clear()
                waiter = asyncio.create_task(wake.wait())
            for event in ctx.drain():
                yield event
            for task in done:
                if task in tasks:
                    pending.discard(task)
                    i = tasks[task]
                    results[i] = task.result()
                    tally(ctx, ctx.tools[calls[i].tool], results[i])
                    yield record_result(ctx, calls[i], results[i], observation_tokens)
        for task in pending:  # the run's deadline passed
            task.cancel()
            i = tasks[task]
            tracker.hit("timeout")
            results[i] = failure(calls[i].tool, ToolTimeout("stopped: the run's time budget ran out"))
            yield record_result(ctx, calls[i], results[i], observation_tokens)
    finally:
        ctx._wake_users -= 1
        if ctx._wake_users == 0:
            ctx._wake = None
        leftovers = [t for t in tasks if not t.done()]
        if not waiter.done():
            leftovers.append(waiter)
        for task in leftovers:
            task.cancel()
        if leftovers:
            await asyncio.gather(*leftovers, return_exceptions=True)
    for event in ctx.drain():
        yield event


def _invoke(tool: Tool, call: PlannedCall, ctx: RunContext) -> Awaitable[ToolOutput]:
    """The tool call, inside its span while tracing is on."""
    work = tool.invoke(call.arguments, ctx.tool_context(call.call_id))
    traced = telemetry.tracing
    return work if traced is None else traced.tool(tool.name, call.call_id, call.arguments, work)


def record_result(ctx: RunContext, call: PlannedCall, out: ToolOutput, observation_tokens: int) -> ToolResult:
    """Trim the observation, keep the citations and the step, and make the result event."""
    if out.error is not None:
        out.text = json.dumps({k: out.error[k] for k in ("tool", "error", "type")}, ensure_ascii=False)
    if len(out.text) > observation_tokens:  # fewer characters than the budget's tokens always fit
        out.text = trim_to_tokens(out.text, observation_tokens)
    if out.citations:
        log = ctx.scope.evidence_log()
        for citation in out.citations:
            log.add_citation(citation)
    ctx.steps.append(
        Step(
            action=call.tool,
            action_input=call.raw_input if call.raw_input is not None else call.arguments,
            observation=out.text,
            error=out.error,
            planned_input=call.planned_input,
        )
    )
    return ToolResult(
        call_id=call.call_id, tool=call.tool, output=out.text, error=out.error, citations=out.citations, depth=ctx.depth
    )
