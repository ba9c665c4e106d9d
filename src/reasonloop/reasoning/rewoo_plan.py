"""ReWOO plans: parsing ``#E1 = tool[input]`` lines and running steps as soon as they can run.

:func:`parse_plan` reads a planner's text into a :class:`Plan` and marks every step that
cannot run (unknown tool, a reference to a step that does not exist, to itself or to a
later step) with a ``problem``. :func:`execute` runs a plan: each step starts the moment
its own dependencies have finished (no level-by-level barrier), independent steps run in
parallel, a failed step fails its dependents, and dependency cycles are reported up front,
so no plan can hang. The scheduler knows nothing about tools or models: it calls
``run_step(step, resolved_input)``, which makes it usable on synthetic plans.

Example::

    plan = parse_plan("#E1 = search[x]\\n#E2 = search[#E1 y]", tools={"search"})
    async for update in execute(plan, run_step):
        print(update)
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field

__all__ = ["Plan", "PlanStep", "StepFailed", "StepResult", "StepStarted", "execute", "parse_plan", "substitute"]

REF = re.compile(r"#E(\d+)(?!\d)")
_STEP = re.compile(
    r"^\s*(?:[-*]\s*)?(?:\*\*)?#E(?P<n>\d+)(?:\*\*)?\s*[=:：]\s*(?P<tool>[A-Za-z_][\w.\-]*)\s*(?P<rest>.*)$"
)
_REASON = re.compile(
    r"^\s*(?:[-*]\s*)?(?:\*\*)?(?:plan|计划)(?:\s*\d+)?(?:\*\*)?\s*[:：](?:\*\*)?\s*(?P<text>.*)$", re.I
)


@dataclass(slots=True)
class PlanStep:
    """One evidence step: ``#E<n> = tool[input]``."""

    id: str
    """``E1``, ``E2``, ..."""
    tool: str
    input: str
    """The input as written; ``#En`` references are replaced by results before the call."""
    deps: tuple[str, ...] = ()
    reason: str = ""
    """The ``Plan:`` line above the step."""
    problem: str | None = None
    """Why the step cannot run (it becomes failed evidence without running)."""


@dataclass
class Plan:
    steps: list[PlanStep] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Plan-level remarks (duplicate step ids, dropped lines)."""


@dataclass(slots=True)
class StepStarted:
    step: PlanStep
    input: str
    """The input with references replaced."""


@dataclass(slots=True)
class StepResult:
    step: PlanStep
    ok: bool
    output: str = ""
    error: str | None = None
    started: float | None = None
    ended: float | None = None
    timed_out: bool = False
    """The plan's time budget ran out before the step could finish (it did not fail by itself)."""


class StepFailed(Exception):
    """Raised by ``run_step`` to fail a step with a message (no traceback needed)."""


def _strip_input(rest: str) -> str:
    rest = rest.strip().removeprefix(":").removeprefix("：").strip()
    if rest[:1] in "[(":
        closer = "]" if rest[0] == "[" else ")"
        rest = rest[1:]
        if rest.endswith(closer):
            rest = rest[:-1]
    rest = rest.strip()
    if len(rest) >= 2 and rest[0] == rest[-1] and rest[0] in "\"'":
        rest = rest[1:-1]
    return rest.strip()


def parse_plan(text: str, tools: Collection[str] | None = None, *, allow_forward_refs: bool = False) -> Plan:
    """Read a planner's output.

    Args:
        text: Lines ``Plan: ...`` and ``#E<n> = tool[input]`` (``tool(input)`` also works).
        tools: Known tool names; a step naming another tool gets a problem. ``None`` skips the check.
        allow_forward_refs: Let a step use a later step's result (synthetic plans);
            planners must only use earlier results.
    """
    plan = Plan()
    reason = ""
    order: dict[str, int] = {}
    for line in text.splitlines():
        if m := _REASON.match(line):
            reason = m.group("text").strip()
            continue
        m = _STEP.match(line)
        if not m:
            continue
        step_id = f"E{int(m.group('n'))}"
        raw_input = _strip_input(m.group("rest"))
        deps = tuple(dict.fromkeys(f"E{int(n)}" for n in REF.findall(raw_input)))
        step = PlanStep(id=step_id, tool=m.group("tool"), input=raw_input, deps=deps, reason=reason)
        reason = ""
        if step_id in order:
            plan.notes.append(f"#{step_id} is defined twice; the first definition is used")
            continue
        order[step_id] = len(plan.steps)
        plan.steps.append(step)
    for step in plan.steps:
        if tools is not None and step.tool not in tools:
            known = ", ".join(sorted(tools)) or "none"
            step.problem = f"unknown tool {step.tool!r} (tools: {known})"
            continue
        for dep in step.deps:
            if dep == step.id:
                step.problem = f"#{step.id} uses its own result"
            elif dep not in order:
                step.problem = f"#{step.id} uses #{dep}, which the plan does not define"
            elif order[dep] > order[step.id] and not allow_forward_refs:
                step.problem = (
                    f"#{step.id} uses #{dep}, which comes later in the plan (only earlier results can be used)"
                )
            if step.problem:
                break
    return plan


def substitute(text: str, outputs: Mapping[str, str]) -> str:
    """Replace ``#En`` in ``text`` by the output of step ``En`` (unknown references stay)."""
    return REF.sub(lambda m: outputs.get(f"E{int(m.group(1))}", m.group(0)), text)


def _cycles(steps: dict[str, PlanStep]) -> dict[str, str]:
    """Steps that can never run because of a dependency cycle -> why (Kahn's algorithm)."""
    indegree = {sid: sum(1 for d in s.deps if d in steps) for sid, s in steps.items()}
    dependents: dict[str, list[str]] = {sid: [] for sid in steps}
    for sid, s in steps.items():
        for d in s.deps:
            if d in steps:
                dependents[d].append(sid)
    queue = [sid for sid, n in indegree.items() if n == 0]
    while queue:
        sid = queue.pop()
        for nxt in dependents[sid]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                queue.append(nxt)
    stuck = sorted((sid for sid, n in indegree.items() if n > 0), key=lambda s: int(s[1:]))
    return {
        sid: f"#{sid} is part of, or depends on, a dependency cycle among {', '.join('#' + s for s in stuck)}"
        for sid in stuck
    }


RunStep = Callable[[PlanStep, str], Awaitable[str]]


async def execute(
    plan: Plan,
    run_step: RunStep,
    *,
    max_concurrency: int | None = None,
    timeout_s: float | None = None,
    resolve: Callable[[str, Mapping[str, str]], str] = substitute,
) -> AsyncIterator[StepStarted | StepResult]:
    """Run ``plan``; yield :class:`StepStarted` and :class:`StepResult` as things happen.

    A step starts as soon as all its dependencies succeeded; when one fails, the step fails
    without running. Steps with problems or in cycles fail up front. Every step yields
    exactly one :class:`StepResult`. Cancelling the consumer cancels running steps.

    Args:
        run_step: ``(step, input with references replaced) -> output``; raise to fail the step.
        max_concurrency: Most steps running at once (``None``: no limit).
        timeout_s: Wall time for the whole plan; unfinished steps then fail.
        resolve: How references are replaced (default: :func:`substitute`).
    """
    steps = {s.id: s for s in plan.steps}
    failed: dict[str, str] = {s.id: s.problem for s in plan.steps if s.problem}
    failed.update({sid: why for sid, why in _cycles(steps).items() if sid not in failed})
    outputs: dict[str, str] = {}
    waiting: dict[str, set[str]] = {}
    dependents: dict[str, list[str]] = {sid: [] for sid in steps}
    for s in plan.steps:
        for d in s.deps:
            if d in dependents:
                dependents[d].append(s.id)
    ready: list[str] = []
    done_ids: set[str] = set()
    pending_results: list[StepResult] = []

    def fail(sid: str, why: str, timed_out: bool = False) -> None:
        # Fail a step and, transitively, everything waiting on it.
        stack = [(sid, why)]
        while stack:
            current, reason = stack.pop()
            if current in done_ids:
                continue
            done_ids.add(current)
            waiting.pop(current, None)
            result = StepResult(step=steps[current], ok=False, error=reason, timed_out=timed_out and current == sid)
            pending_results.append(result)
            for nxt in dependents[current]:
                if nxt not in done_ids:
                    stack.append((nxt, f"skipped: #{nxt} needs #{current}, which failed"))

    for s in plan.steps:
        if s.id in failed or s.id in done_ids:
            continue
        deps = {d for d in s.deps if d in steps}
        if deps:
            waiting[s.id] = deps
        else:
            ready.append(s.id)
    for sid, why in failed.items():
        fail(sid, why)
    ready = [sid for sid in ready if sid not in done_ids]

    limit = max_concurrency or len(steps) or 1
    running: dict[asyncio.Task[str], tuple[str, float]] = {}
    deadline = time.monotonic() + timeout_s if timeout_s else None

    def launch() -> list[StepStarted]:
        started = []
        while ready and len(running) < limit:
            sid = ready.pop(0)
            text = resolve(steps[sid].input, outputs)
            running[asyncio.ensure_future(run_step(steps[sid], text))] = (sid, time.monotonic())
            started.append(StepStarted(step=steps[sid], input=text))
        return started

    try:
        for update in pending_results:
            yield update
        pending_results.clear()
        for update in launch():
            yield update
        while running:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            finished, _ = await asyncio.wait(running, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            for task in finished:
                sid, began = running.pop(task)
                exc = task.exception()
                if exc is None:
                    outputs[sid] = task.result()
                    done_ids.add(sid)
                    pending_results.append(StepResult(steps[sid], True, outputs[sid], None, began, time.monotonic()))
                    for nxt in dependents[sid]:
                        deps = waiting.get(nxt)
                        if deps is not None:
                            deps.discard(sid)
                            if not deps:
                                del waiting[nxt]
                                ready.append(nxt)
                else:
                    message = str(exc) if isinstance(exc, StepFailed) else f"{type(exc).__name__}: {exc}"
                    first = len(pending_results)
                    fail(sid, message)
                    pending_results[first].started, pending_results[first].ended = began, time.monotonic()
            started = launch()  # dependents start before anyone reads the results
            for update in pending_results:
                yield update
            pending_results.clear()
            for update in started:
                yield update
        for task, (sid, _) in list(running.items()):  # the deadline passed
            task.cancel()
            fail(sid, f"#{sid} stopped: the plan's time budget ran out", timed_out=True)
        for sid in list(waiting) + ready:
            fail(sid, f"#{sid} not run: the plan's time budget ran out", timed_out=True)
        ready.clear()
        for update in pending_results:
            yield update
        pending_results.clear()
    finally:
        leftovers = [t for t in running if not t.done()]
        for task in leftovers:
            task.cancel()
        if leftovers:
            await asyncio.gather(*leftovers, return_exceptions=True)
