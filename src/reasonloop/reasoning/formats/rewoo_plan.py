"""ReWOO plans: parsing ``#E1 = tool[input]`` steps and running them as soon as they can run.

:func:`parse_plan` reads a planner's text into a :class:`Plan` (steps on their own lines or
after their ``Plan:`` on the same line, numbered or not) and marks every step that cannot
run (unknown tool, a reference to a step that does not exist, to itself or to a later step)
with a ``problem``. :func:`reference_text` is the bounded piece of a result that replaces a
``#En`` reference. :func:`execute` runs a plan: each step starts the moment
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

from reasonloop.tokens import count_tokens, trim_to_tokens

__all__ = [
    "Plan",
    "PlanStep",
    "StepFailed",
    "StepResult",
    "StepStarted",
    "execute",
    "parse_plan",
    "reference_text",
    "substitute",
]

REF = re.compile(r"#E(\d+)(?!\d)")
_STEP = re.compile(
    r"(?P<lead>^[ \t]*(?:[-*]\s*)?)?(?:\*\*)?#E(?P<n>\d+)(?:\*\*)?[ \t]*(?P<sep>[=:：])[ \t]*"
    r"(?P<tool>[A-Za-z_][\w.\-]*)[ \t]*",
    re.M,
)
"""A step's head, ``#E<n> = tool``: at a line's start, or after its ``Plan:`` on the same line."""
_REASON = re.compile(r"(?:^|\s|\*)(?:plan|计划)(?:\s*\d+)?(?:\*\*)?\s*[:：](?:\*\*)?", re.I)
_CLOSERS = {"[": "]", "(": ")"}
_PASSAGE_HEADER = re.compile(r"^\[\d+\][^\n]*$", re.M)
_SENTENCE_END = re.compile(r"[.!?。！？](?=\s|$)")


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


def _read_input(text: str, at: int) -> tuple[str, int]:
    """The input that starts at ``text[at]`` and where it ends: a bracketed input up to its
    matching bracket (nested brackets kept), otherwise the rest of the line."""
    opener = text[at : at + 1]
    if opener in _CLOSERS:
        closer, depth = _CLOSERS[opener], 0
        for i in range(at, len(text)):
            if text[i] == opener:
                depth += 1
            elif text[i] == closer:
                depth -= 1
                if depth == 0:
                    return _unquote(text[at + 1 : i]), i + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        return _unquote(text[at + 1 : end].rstrip().removesuffix(closer)), end
    end = text.find("\n", at)
    end = len(text) if end < 0 else end
    return _unquote(text[at:end].strip().removeprefix(":").removeprefix("：")), end


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    return text.strip()


def _reason(segment: str) -> str:
    """The text after the last ``Plan:`` label of ``segment`` (what a step is for)."""
    labels = list(_REASON.finditer(segment))
    return segment[labels[-1].end() :].strip().strip("*").strip() if labels else ""


def parse_plan(text: str, tools: Collection[str] | None = None, *, allow_forward_refs: bool = False) -> Plan:
    """Read a planner's output.

    Args:
        text: ``Plan: ...`` lines and ``#E<n> = tool[input]`` steps (``tool(input)`` also works),
            a step on its own line or on the same line as its ``Plan:`` (numbered or not, in
            bold or not); a step that does not start a line needs its input in brackets.
        tools: Known tool names; a step naming another tool gets a problem (a known name
            written in another case is that tool). ``None`` skips the check.
        allow_forward_refs: Let a step use a later step's result (synthetic plans);
            planners must only use earlier results.
    """
    plan = Plan()
    order: dict[str, int] = {}
    by_case = {name.lower(): name for name in tools} if tools is not None else {}
    pos = 0
    while (m := _STEP.search(text, pos)) is not None:
        at = m.end()
        if m.group("lead") is None and text[at : at + 1] not in _CLOSERS:
            pos = m.end("n")  # "#E1 = the author" inside a sentence is no step
            continue
        raw_input, pos = _read_input(text, at)
        step_id = f"E{int(m.group('n'))}"
        tool = by_case.get(m.group("tool").lower(), m.group("tool"))
        deps = tuple(dict.fromkeys(f"E{int(n)}" for n in REF.findall(raw_input)))
        reason = _reason(text[text.rfind("\n", 0, m.start()) + 1 : m.start()]) or _reason_above(text, m.start())
        step = PlanStep(id=step_id, tool=tool, input=raw_input, deps=deps, reason=reason)
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


def _reason_above(text: str, start: int) -> str:
    """The ``Plan:`` line above a step that starts its own line (blank lines skipped)."""
    line_start = text.rfind("\n", 0, start) + 1
    if text[line_start:start].strip(" \t-*"):
        return ""
    lines = text[: max(0, line_start - 1)].splitlines()
    above = next((line for line in reversed(lines) if line.strip()), "")
    return "" if _STEP.search(above) else _reason(above)


def substitute(text: str, outputs: Mapping[str, str]) -> str:
    """Replace ``#En`` in ``text`` by the output of step ``En`` (unknown references stay)."""
    return REF.sub(lambda m: outputs.get(f"E{int(m.group(1))}", m.group(0)), text)


def reference_text(output: str, max_tokens: int, query: str = "") -> str:
    """What replaces a ``#En`` reference in a later step's input: a bounded piece of ``En``'s result.

    The rule: drop the headers of numbered passages (``[1] Title (source, p. 2)``) and join the
    lines; a result of at most ``max_tokens`` tokens is used whole (a short answer). A longer one
    is cut: given the ``query`` that produced it (``En``'s own input), to the sentence of the
    result that shares the most words with that query (the first such sentence on a tie; the
    second hop of a question is searched with the sentence that names the bridge entity, not with
    whatever passage came first); otherwise, or when no sentence shares a word, to its first
    sentences. Either is cut to ``max_tokens`` tokens, back to the last sentence end within them
    when there is one. A whole evidence block never becomes a search query.
    """
    text = " ".join(_PASSAGE_HEADER.sub("", output).split())
    if count_tokens(text) <= max_tokens:
        return text
    wanted = _words(query)
    if wanted:
        sentences = [s for s in _SENTENCE_SPLIT.split(text) if s.strip()]
        overlap = [len(wanted & _words(s)) for s in sentences]
        if overlap and max(overlap) > 0:
            text = sentences[overlap.index(max(overlap))]
            if count_tokens(text) <= max_tokens:
                return text
    head = trim_to_tokens(text, max_tokens, marker="")
    ends = list(_SENTENCE_END.finditer(head))
    return head[: ends[-1].end()] if ends else head


_SENTENCE_SPLIT = re.compile(r"(?<=[.!?。！？])\s+")
_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    """The lower-cased words of ``text`` longer than two characters (CJK characters one by one)."""
    out = set()
    for w in _WORD.findall(text.lower()):
        if re.search(r"[\u4e00-\u9fff]", w):
            out.update(w)
        elif len(w) > 2:
            out.add(w)
    return out


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
