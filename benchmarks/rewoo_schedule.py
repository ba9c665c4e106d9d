"""ReWOO plan scheduling: reasonloop's worker beside a level-by-level barrier and the critical path.

Each synthetic plan is written as ReWOO planner text (``#E3 = sleep[40 #E1 #E2]``: sleep
40 ms, after #E1 and #E2), parsed by :func:`reasonloop.reasoning.formats.rewoo_plan.parse_plan`
and run three ways:

- **ours**: :func:`reasonloop.reasoning.formats.rewoo_plan.execute`, the worker ReWOO uses — a step
  starts the moment its own dependencies are done;
- **barrier**: the plan cut into levels (a step's level is one more than its deepest
  dependency) and each level run with ``asyncio.gather`` before the next one starts;
- **critical path**: the longest latency-weighted dependency chain, computed. No schedule
  can finish sooner, so ``ours / critical`` is the scheduler's overhead (goal: <= 1.05).

The tool is ``asyncio.sleep``, so latencies are exact and the machine's load hardly
matters; steps are not limited in concurrency. Each plan runs ``--repeats`` times per
scheduler (ours and barrier alternate) and the median is shown.

Usage::

    python benchmarks/rewoo_schedule.py            # 5 repeats
    python benchmarks/rewoo_schedule.py --quick    # 3 repeats, fewer random plans
    python benchmarks/rewoo_schedule.py --scale 3 --quick   # latencies x3: the timer's share shrinks
    python benchmarks/rewoo_schedule.py --json schedule.json

Rows over the goal are flagged in the table; the exit status is 0 unless a plan failed to run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reasonloop.agents import Agent
from reasonloop.events import ToolCall, ToolResult
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.reasoning.formats.rewoo_plan import Plan, PlanStep, StepResult, execute, parse_plan, substitute
from reasonloop.tools.base import tool

GOAL = 1.05
"""Our wall time should stay within this factor of the critical path."""
SCALE = 1.0
"""Multiplies every latency (``--scale``)."""

RunStep = Callable[[PlanStep, str], Awaitable[str]]


@dataclass(frozen=True)
class Shape:
    """A synthetic plan: per step its latency (ms) and dependencies; step ``i`` is ``#E<i+1>``."""

    name: str
    latency_ms: tuple[float, ...]
    deps: tuple[tuple[int, ...], ...]

    def plan_text(self) -> str:
        """The plan as a ReWOO planner would write it, one ``Plan:`` line per step."""
        lines = []
        for i, (ms, deps) in enumerate(zip(self.latency_ms, self.deps, strict=True)):
            refs = "".join(f" #E{d + 1}" for d in deps)
            lines.append(f"Plan: step {i + 1}\n#E{i + 1} = sleep[{ms:g}{refs}]")
        return "\n".join(lines)


# -- plan shapes ----------------------------------------------------------------------------------
def chain(n: int, ms: float) -> Shape:
    return Shape(f"chain-{n}", (ms,) * n, ((), *((i - 1,) for i in range(1, n))))


def fan(width: int, latencies: Sequence[float], head: float = 20, tail: float = 20) -> Shape:
    """One step, ``width`` parallel steps using it, one step joining them."""
    mids = tuple(latencies[i % len(latencies)] for i in range(width))
    deps = ((),) + ((0,),) * width + (tuple(range(1, width + 1)),)
    return Shape(f"fan-{width}", (head, *mids, tail), deps)


def diamonds(count: int, fast: float, slow: float) -> Shape:
    """``count`` diamonds in series: top -> (fast, slow) -> bottom, the bottom is the next top."""
    lat: list[float] = [20]
    deps: list[tuple[int, ...]] = [()]
    for _ in range(count):
        top = len(lat) - 1
        lat += [fast, slow, 20]
        deps += [(top,), (top,), (top + 1, top + 2)]
    return Shape("diamond" if count == 1 else f"diamonds-{count}", tuple(lat), tuple(deps))


def lopsided_diamond(fast: float, slow: float, side: int) -> Shape:
    """Top -> slow -> bottom beside top -> ``side`` fast steps in a row -> bottom."""
    lat = [20, slow] + [fast] * side + [20]
    deps: list[tuple[int, ...]] = [(), (0,), (0,)] + [(i,) for i in range(2, side + 1)]
    deps.append((1, side + 1))
    return Shape(f"diamond+chain-{side}", tuple(lat), tuple(deps))


def skewed_chains(chains: int, length: int, fast: float, slow: float) -> Shape:
    """Independent chains whose slow steps fall on different levels, then one join."""
    lat: list[float] = []
    deps: list[tuple[int, ...]] = []
    ends = []
    for c in range(chains):
        for k in range(length):
            lat.append(slow if (k + c) % chains == 0 else fast)
            deps.append((len(lat) - 2,) if k else ())
        ends.append(len(lat) - 1)
    lat.append(20)
    deps.append(tuple(ends))
    return Shape(f"skewed-chains-{chains}x{length}", tuple(lat), tuple(deps))


def two_hop_qa(search: float, extract: float, slow_search: float) -> Shape:
    """The usual ReWOO HotpotQA plan: two searches, an extraction after each, a comparison."""
    lat = (search, extract, slow_search, extract, extract)
    return Shape("2-hop-qa", lat, ((), (0,), (), (2,), (1, 3)))


def random_dag(seed: int, n: int, edge_p: float) -> Shape:
    """``n`` steps; each depends on each earlier one with probability ``edge_p`` (at most 3).

    Latencies are skewed like real tools: most 5-25 ms, one in five 60-120 ms.
    """
    rng = random.Random(seed)
    lat, deps = [], []
    for i in range(n):
        lat.append(round(rng.uniform(60, 120) if rng.random() < 0.2 else rng.uniform(5, 25)))
        earlier = [j for j in range(i) if rng.random() < edge_p]
        deps.append(tuple(sorted(rng.sample(earlier, min(3, len(earlier))))))
    return Shape(f"random-{n}-s{seed}", tuple(lat), tuple(deps))


def shapes(quick: bool) -> list[Shape]:
    out = [
        chain(8, 20),
        fan(8, (10, 20, 40, 80)),
        diamonds(1, 10, 60),
        diamonds(3, 10, 60),
        lopsided_diamond(20, 70, 3),
        skewed_chains(2, 4, 10, 60),
        skewed_chains(4, 4, 10, 60),
        two_hop_qa(30, 40, 90),
    ]
    seeds = (1, 2) if quick else (1, 2, 3, 4)
    out += [random_dag(seed, 16 if seed % 2 else 24, 0.15) for seed in seeds]
    return out


# -- the limit and the baseline -------------------------------------------------------------------
def latency_s(step: PlanStep) -> float:
    """The latency written first in a step's input, in seconds."""
    return float(step.input.split()[0]) / 1000


def critical_path_s(plan: Plan) -> float:
    """The longest latency-weighted dependency chain of ``plan`` (steps listed after their deps)."""
    finish: dict[str, float] = {}
    for step in plan.steps:
        finish[step.id] = latency_s(step) + max((finish[d] for d in step.deps), default=0.0)
    return max(finish.values(), default=0.0)


def levels(plan: Plan) -> list[list[PlanStep]]:
    """``plan`` cut into levels: a step's level is one more than its deepest dependency's.

    Raises:
        ValueError: a dependency that the plan does not define, or a cycle.
    """
    steps = {s.id: s for s in plan.steps}
    level: dict[str, int] = {}
    for start in plan.steps:
        stack, visiting = [start.id], set()
        while stack:
            sid = stack[-1]
            if sid in level:
                stack.pop()
                continue
            missing = [d for d in steps[sid].deps if d not in steps]
            if missing:
                raise ValueError(f"#{sid} depends on #{missing[0]}, which the plan does not define")
            todo = [d for d in steps[sid].deps if d not in level]
            if not todo:
                level[sid] = 1 + max((level[d] for d in steps[sid].deps), default=-1)
                visiting.discard(sid)
                stack.pop()
            elif sid in visiting:
                raise ValueError(f"dependency cycle through #{sid}")
            else:
                visiting.add(sid)
                stack.extend(todo)
    out: list[list[PlanStep]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for step in plan.steps:
        out[level[step.id]].append(step)
    return out


async def run_barrier(plan: Plan, run_step: RunStep) -> dict[str, str]:
    """Run ``plan`` level by level: every step of a level must finish before the next level starts."""
    outputs: dict[str, str] = {}
    for tier in levels(plan):
        results = await asyncio.gather(*(run_step(s, substitute(s.input, outputs)) for s in tier))
        outputs.update({s.id: r for s, r in zip(tier, results, strict=True)})
    return outputs


async def run_dataflow(plan: Plan, run_step: RunStep) -> dict[str, str]:
    """The floor: one task per step that awaits its dependencies' tasks, then runs.

    Nothing but the event loop stands between a step and its dependents, so this shows what
    the timer granularity and the machine cost on top of the critical path.
    """
    tasks: dict[str, asyncio.Task[str]] = {}

    async def one(step: PlanStep) -> str:
        outputs = {d: await tasks[d] for d in step.deps}
        return await run_step(step, substitute(step.input, outputs))

    for step in plan.steps:  # steps come after their dependencies (parse_plan checks that)
        tasks[step.id] = asyncio.ensure_future(one(step))
    return {sid: await task for sid, task in tasks.items()}


async def sleep_step(step: PlanStep, text: str) -> str:
    """The synthetic tool: sleep the step's latency, return its id."""
    await asyncio.sleep(latency_s(step) * SCALE)
    return step.id


# -- timing ---------------------------------------------------------------------------------------
async def time_ours(plan: Plan) -> float:
    results: list[StepResult] = []
    began = time.perf_counter()
    async for update in execute(plan, sleep_step):
        if isinstance(update, StepResult):
            results.append(update)
    elapsed = time.perf_counter() - began
    if len(results) != len(plan.steps) or not all(r.ok for r in results):
        bad = next((r for r in results if not r.ok), None)
        raise RuntimeError(f"our scheduler did not run every step: {bad.error if bad else len(results)}")
    return elapsed


@tool(name="sleep")
async def sleep_tool(spec: str) -> str:
    """Sleep the milliseconds written first in ``spec`` (times ``--scale``)."""
    await asyncio.sleep(float(spec.split()[0]) / 1000 * SCALE)
    return "done"


async def time_agent(shape: Shape) -> float:
    """The plan through the whole ReWOO strategy: first tool call to last tool result."""
    planner = ScriptedProvider(replies=[shape.plan_text(), "Done."])
    settings = {"max_concurrency": 1000, "max_tool_calls": 1000, "replan": False}
    agent = Agent("rewoo", llm=planner, tools=[sleep_tool], settings=settings)
    first = last = 0.0
    results: list[ToolResult] = []
    async for event in agent.stream("Run the plan."):
        if isinstance(event, ToolCall) and not first:
            first = time.perf_counter()
        elif isinstance(event, ToolResult):
            last = time.perf_counter()
            results.append(event)
    if len(results) != len(shape.deps) or any(r.error for r in results):
        bad = next((r.error for r in results if r.error), None)
        raise RuntimeError(f"{shape.name}: the ReWOO agent did not run every step: {bad or len(results)}")
    return last - first


async def time_other(plan: Plan, scheduler: Callable[[Plan, RunStep], Awaitable[dict[str, str]]]) -> float:
    began = time.perf_counter()
    outputs = await scheduler(plan, sleep_step)
    elapsed = time.perf_counter() - began
    if len(outputs) != len(plan.steps):
        raise RuntimeError(f"{scheduler.__name__} did not run every step")
    return elapsed


async def measure(shape: Shape, repeats: int) -> dict[str, Any]:
    plan = parse_plan(shape.plan_text(), tools={"sleep"})
    problems = [s.problem for s in plan.steps if s.problem]
    if problems:
        raise RuntimeError(f"{shape.name}: the plan does not parse cleanly: {problems[0]}")
    ours, agent, barrier, floor = [], [], [], []
    for _ in range(repeats):
        ours.append(await time_ours(plan))
        agent.append(await time_agent(shape))
        barrier.append(await time_other(plan, run_barrier))
        floor.append(await time_other(plan, run_dataflow))
    critical = critical_path_s(plan) * SCALE
    ours_ms, barrier_ms = statistics.median(ours) * 1000, statistics.median(barrier) * 1000
    floor_ms, agent_ms = statistics.median(floor) * 1000, statistics.median(agent) * 1000
    return {
        "shape": shape.name,
        "steps": len(plan.steps),
        "levels": len(levels(plan)),
        "critical_ms": critical * 1000,
        "ours_ms": ours_ms,
        "agent_ms": agent_ms,
        "barrier_ms": barrier_ms,
        "floor_ms": floor_ms,
        "ours_ms_runs": [t * 1000 for t in ours],
        "agent_ms_runs": [t * 1000 for t in agent],
        "barrier_ms_runs": [t * 1000 for t in barrier],
        "ours_over_critical": ours_ms / (critical * 1000),
        "ours_over_floor": ours_ms / floor_ms,
        "agent_over_critical": agent_ms / (critical * 1000),
        "barrier_over_ours": barrier_ms / ours_ms,
    }


async def per_step_cost(steps: int = 40, runs: int = 15) -> dict[str, float]:
    """Microseconds per step on a chain of zero-latency steps: what each scheduler itself costs."""
    shape = chain(steps, 0)
    plan = parse_plan(shape.plan_text(), tools={"sleep"})
    timings: dict[str, list[float]] = {"ours": [], "agent": [], "floor": []}
    for _ in range(runs):
        timings["ours"].append(await time_ours(plan))
        timings["agent"].append(await time_agent(shape))
        timings["floor"].append(await time_other(plan, run_dataflow))
    return {name: statistics.median(t) / steps * 1e6 for name, t in timings.items()}


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        f"{'plan':<21} {'steps':>5} {'levels':>6} {'critical ms':>11} {'ours ms':>8} {'agent ms':>8}"
        f" {'barrier ms':>10} {'floor ms':>8} {'ours/crit':>9} {'agent/crit':>10} {'ours/floor':>10}"
        f" {'barrier/ours':>12}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        over = r["ours_over_critical"] > GOAL or r["agent_over_critical"] > GOAL
        lines.append(
            f"{r['shape']:<21} {r['steps']:>5} {r['levels']:>6} {r['critical_ms']:>11.1f} {r['ours_ms']:>8.1f}"
            f" {r['agent_ms']:>8.1f} {r['barrier_ms']:>10.1f} {r['floor_ms']:>8.1f}"
            f" {r['ours_over_critical']:>8.3f}x {r['agent_over_critical']:>9.3f}x {r['ours_over_floor']:>9.3f}x"
            f" {r['barrier_over_ours']:>11.2f}x{'  > goal' if over else ''}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats and fewer random plans")
    parser.add_argument("--repeats", type=int, help="timed runs per plan and scheduler (default 5, quick 3)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every latency (default 1)")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    parser.add_argument("--show-plan", metavar="NAME", help="print the plan text of one shape and exit")
    args = parser.parse_args(argv)
    chosen = shapes(args.quick)
    if args.show_plan:
        match = [s for s in chosen if s.name == args.show_plan]
        print(match[0].plan_text() if match else f"no shape {args.show_plan!r}: {', '.join(s.name for s in chosen)}")
        return 0 if match else 2
    repeats = args.repeats or (3 if args.quick else 5)
    global SCALE
    SCALE = args.scale

    async def run_all() -> tuple[list[dict[str, Any]], dict[str, float]]:
        return [await measure(shape, repeats) for shape in chosen], await per_step_cost()

    rows, cost = asyncio.run(run_all())
    print(
        f"ReWOO scheduling, median of {repeats} runs per plan and scheduler"
        f" (tool = asyncio.sleep, latencies x{SCALE:g})"
    )
    print(table(rows))
    worst = max(rows, key=lambda r: r["ours_over_critical"])
    speedups = [r["barrier_over_ours"] for r in rows]
    print(
        f"\nworst ours/critical: {worst['ours_over_critical']:.3f}x ({worst['shape']}; goal <= {GOAL}x);"
        f" worst agent/critical: {max(r['agent_over_critical'] for r in rows):.3f}x;"
        f" worst ours/floor: {max(r['ours_over_floor'] for r in rows):.3f}x;"
        f" barrier/ours: {min(speedups):.2f}x to {max(speedups):.2f}x"
    )
    print(
        "ours = rewoo_plan.execute alone; agent = Agent('rewoo') with a sleep tool, first tool call to last"
        " result;\nfloor = one task per step awaiting its dependencies: the timer's and the machine's share"
    )
    print(
        "per step on a chain of 40 zero-latency steps: " + ", ".join(f"{name} {us:.0f} µs" for name, us in cost.items())
    )
    print(f"python {sys.version.split()[0]}, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "per_step_us": cost}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
