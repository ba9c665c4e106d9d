"""What keeping a run's steps costs it, and what a resumed run saves by replaying them.

With ``[runs] resume_interrupted`` (on by default) every model call and tool call a served run
finishes is written to the run store, so that another process can resume the run without doing
them again (docs/server.md, "What survives a crash"). Two measurements, side by side in one run:

* **served runs**: ``--runs`` runs at once through the run manager, each a toolcall agent making
  ``--steps`` tool calls (a scripted model that answers at once, a tool that does nothing), with
  the journal on and off, on the SQLite store (and on Redis with ``--redis URL``). Wall time per
  step over all runs, and the ratio: the model costs nothing here, so this is the journal's cost
  beside the framework's own work, not beside a real model (whose calls take seconds).
* **one run driven again**: the same agent run without a journal, recording one, and replaying a
  full one (what a resumed run does with the steps it had finished): wall time per step until the
  answer (the run waits for no write), CPU time per step with the writes done, and the journal's
  size per step.

Rounds alternate the settings so that a change in the machine's load falls on both.

Usage::

    python benchmarks/step_journal.py                      # 50 runs x 10 steps, 5 rounds
    python benchmarks/step_journal.py --quick
    python benchmarks/step_journal.py --redis redis://127.0.0.1:6390/0
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from reasonloop.agents import Agent, AgentRunner
from reasonloop.config import AgentSettings, KBSettings, RunsSettings, Settings
from reasonloop.llm.base import Message
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.registry import Registry
from reasonloop.runs.manager import RunManager
from reasonloop.runs.models import RunRequest
from reasonloop.runs.replay import StepJournal
from reasonloop.runs.replay.context import journaled
from reasonloop.runs.stores.redis.store import RedisRunStore
from reasonloop.runs.stores.sqlite.store import SQLiteRunStore
from reasonloop.tools.base import tool


@tool
async def noop(n: int) -> str:
    """Does nothing."""
    return f"done {n}"


def script(steps: int) -> Any:
    def reply(messages: list[Message], tools: Any) -> dict[str, Any] | str:
        done = sum(1 for m in messages if m.role == "tool")
        if done < steps:
            return {"tool_calls": [{"id": f"c{done}", "name": "noop", "arguments": {"n": done}}]}
        return "All done."

    return reply


def _store(kind: str, root: Path, redis_url: str) -> tuple[Any, RunsSettings]:
    if kind == "redis":
        runs = RunsSettings(store="redis", redis_url=redis_url, redis_prefix=f"b{uuid.uuid4().hex[:8]}:")
        return RedisRunStore(runs), runs
    runs = RunsSettings(sqlite_path=str(root / f"{uuid.uuid4().hex[:8]}.sqlite"))
    return SQLiteRunStore(runs), runs


async def served(kind: str, resume: bool, args: argparse.Namespace, root: Path) -> tuple[float, float]:
    """Seconds per step of ``args.runs`` runs at once: wall time, and CPU time of the process
    (the store's writer thread included)."""
    store, runs = _store(kind, root, args.redis)
    runs = runs.model_copy(update={"resume_interrupted": resume, "max_concurrent": args.runs})
    await store.open()
    registry = Registry(use_entry_points=False)
    registry.register("tool", "noop", noop)
    settings = Settings(runs=runs, kb=KBSettings(path=str(root / "kb")))
    budget = {"max_rounds": args.steps + 2, "max_tool_calls": args.steps + 2}
    settings.agents = {"bench": AgentSettings(reasoning="toolcall", tools=["noop"], kb=False, settings=budget)}
    runner = AgentRunner(settings, registry=registry, llm=ScriptedProvider(replies=script(args.steps)))
    manager = RunManager(store, runner, runs)
    await manager.open()
    try:
        started, cpu = time.perf_counter(), time.process_time()
        records = [await manager.start(RunRequest(question=f"q{i}", agent="bench")) for i in range(args.runs)]
        tasks = [manager.execution(r.run_id).task for r in records]  # type: ignore[union-attr]
        await asyncio.gather(*tasks)  # type: ignore[arg-type]
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        for record in records:
            view = await manager.get(record.run_id)
            if view.status != "completed":
                raise RuntimeError(f"run {record.run_id} ended {view.status}: {view.error}")
    finally:
        await manager.close()
        await store.close()
    steps = args.runs * args.steps
    return elapsed / steps, cpu / steps


async def driven(args: argparse.Namespace, root: Path) -> dict[str, float]:
    """Seconds per step of one run: without a journal, recording one, replaying it; bytes per step."""
    store = SQLiteRunStore(RunsSettings(sqlite_path=str(root / "drive.sqlite")))
    await store.open()
    model = ScriptedProvider(replies=script(args.steps))
    agent = Agent(
        "toolcall", llm=model, tools=[noop], settings={"max_rounds": args.steps + 2, "max_tool_calls": args.steps + 2}
    )
    out: dict[str, float] = {}
    try:

        async def drive(journal: StepJournal | None) -> tuple[float, float]:
            ctx = agent.context(run_id="run_bench")
            if journal is not None:
                journaled(ctx, journal)
            started, cpu = time.perf_counter(), time.process_time()
            events = [e async for e in agent.events("q", ctx)]
            elapsed = time.perf_counter() - started  # what the run took (it waits for no write)
            if journal is not None:
                await journal.flush()  # what writing its steps cost is counted in CPU
            cpu = time.process_time() - cpu
            if events[-1].text != "All done.":
                raise RuntimeError(f"the run did not answer: {events[-1]}")
            return elapsed / args.steps, cpu / args.steps

        out["plain"], out["plain_cpu"] = await drive(None)
        out["record"], out["record_cpu"] = await drive(StepJournal(store, "run_bench"))
        steps = await store.steps("run_bench")
        out["bytes"] = sum(len(k) + len(v) for k, v in steps.items()) / args.steps
        before = model.requests
        out["replay"], out["replay_cpu"] = await drive(StepJournal(store, "run_bench", steps))
        if model.requests != before:
            raise RuntimeError("the replay called the model")
    finally:
        await store.close()
    return out


async def main(args: argparse.Namespace) -> None:
    kinds = ["sqlite"] + (["redis"] if args.redis else [])
    per_step: dict[tuple[str, bool], list[tuple[float, float]]] = {(k, r): [] for k in kinds for r in (False, True)}
    drives: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        await served("sqlite", True, args, root)  # warm-up: imports, first connections
        await driven(args, root)
        for n in range(args.rounds):
            order = [(k, r) for k in kinds for r in ((False, True) if n % 2 == 0 else (True, False))]
            for kind, resume in order:
                per_step[kind, resume].append(await served(kind, resume, args, root))
            for name, value in (await driven(args, root)).items():
                drives.setdefault(name, []).append(value)

    def med(values: list[float]) -> float:
        return statistics.median(values) * 1e6

    print(f"\nserved runs: {args.runs} at once x {args.steps} tool steps, {args.rounds} rounds (median µs per step)")
    print(f"{'store':8} {'wall off':>10} {'wall on':>10} {'on/off':>7} {'CPU off':>10} {'CPU on':>10} {'on/off':>7}")
    for kind in kinds:
        off, on = per_step[kind, False], per_step[kind, True]
        w0, w1 = med([w for w, _ in off]), med([w for w, _ in on])
        c0, c1 = med([c for _, c in off]), med([c for _, c in on])
        print(f"{kind:8} {w0:10.0f} {w1:10.0f} {w1 / w0:7.2f} {c0:10.0f} {c1:10.0f} {c1 / c0:7.2f}")
    print(f"\none run driven again ({args.steps} steps, median µs per step; a step is a model call and a tool call)")
    print(f"{'':6} {'no journal':>11} {'recording':>10} {'replaying':>10} {'rec/none':>9} {'replay/none':>12}")
    for label, suffix in (("wall", ""), ("CPU", "_cpu")):
        plain, record, replay = (med(drives[name + suffix]) for name in ("plain", "record", "replay"))
        print(f"{label:6} {plain:11.0f} {record:10.0f} {replay:10.0f} {record / plain:9.2f} {replay / plain:12.2f}")
    print(f"journal kept per step: {statistics.median(drives['bytes']):.0f} bytes")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--redis", default="", help="a Redis URL: measure the Redis store too")
    parser.add_argument("--quick", action="store_true", help="10 runs x 5 steps, 2 rounds")
    parsed = parser.parse_args()
    if parsed.quick:
        parsed.runs, parsed.steps, parsed.rounds = 10, 5, 2
    asyncio.run(main(parsed))
