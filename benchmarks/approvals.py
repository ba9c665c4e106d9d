"""What approvals cost a run: the gate on a call answered at once, and how soon an answer moves a waiting run.

Two measurements, side by side in one run (rounds alternate the settings, so that a change in the
machine's load falls on all of them):

* **the gate**: one toolcall agent (a scripted model that answers at once, a tool that does
  nothing) making ``--steps`` tool calls, without approvals (``never``, the default: no tool is
  wrapped), and with ``always`` answered at once by an approver that confirms (the gate's own
  work: its two events, the pause of the time budget). Wall time per step, and the ratio.
* **answer to resume**: a served run (run manager, SQLite store) waits for approval; an answer is
  given through the run manager of the same process (the waiting call is woken at once) and through
  a second run manager on the same store (it finds the answer when it next looks,
  ``[approvals] poll_interval_s``). Time from the answer to the call's ``approval_decided`` event.

Usage::

    python benchmarks/approvals.py             # 200 runs x 5 steps for the gate; 20 answers each way; 3 rounds
    python benchmarks/approvals.py --quick
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from reasonloop.agents import Agent, AgentRunner
from reasonloop.approval_answers import Decision
from reasonloop.config import AgentSettings, ApprovalSettings, KBSettings, RunsSettings, Settings
from reasonloop.events import ApprovalDecided, ApprovalRequested
from reasonloop.llm.base import Message
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.registry import Registry
from reasonloop.runs.manager import RunManager
from reasonloop.runs.models import RunRequest
from reasonloop.runs.stores.sqlite.store import SQLiteRunStore
from reasonloop.tools.approval import ApprovalPolicies, FixedApprover
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
        return "done"

    return reply


async def gate_round(runs: int, steps: int, asks: bool) -> float:
    """Seconds per step of ``runs`` runs one after another."""
    agent = Agent("toolcall", llm=ScriptedProvider(replies=script(steps)), tools=[noop])
    if asks:
        agent.approve_with(FixedApprover("confirm", "bench"), ApprovalPolicies(ApprovalSettings(default="always")))
    await agent.run("warm up")
    started = time.perf_counter()
    for _ in range(runs):
        result = await agent.run("count")
        assert result.content == "done", result
    return (time.perf_counter() - started) / (runs * steps)


async def answer_round(tmp: Path, answers: int, across: bool) -> list[float]:
    """Seconds from each answer to the run's ``approval_decided`` event."""
    runs = RunsSettings(sqlite_path=str(tmp / "runs.sqlite"))
    approvals = ApprovalSettings(default="always")
    settings = Settings(runs=runs, kb=KBSettings(path=str(tmp / "kb")), approvals=approvals)
    settings.agents = {"bench": AgentSettings(reasoning="toolcall", tools=["noop"], kb=False)}
    registry = Registry(use_entry_points=False)
    registry.register("tool", "noop", noop)
    stores = [SQLiteRunStore(runs), SQLiteRunStore(runs)]
    managers = []
    for store in stores:
        await store.open()
        runner = AgentRunner(settings, registry=registry, llm=ScriptedProvider(replies=script(1)))
        managers.append(RunManager(store, runner, runs, approvals=approvals))
        await managers[-1].open()
    executing, other = managers
    answering = other if across else executing
    delays = []
    try:
        for _ in range(answers):
            run_id = (await executing.start(RunRequest(question="count", agent="bench"))).run_id
            feed = await executing.read(run_id)
            events = feed.events()
            async for event in events:
                if isinstance(event, ApprovalRequested):
                    break
            await asyncio.sleep(0.05)  # the run is waiting, not about to look
            answered = time.perf_counter()
            await answering.answer_approval(run_id, event.approval_id, Decision(decision="confirm"))
            async for event in events:
                if isinstance(event, ApprovalDecided):
                    delays.append(time.perf_counter() - answered)
                    break
            async for _ in events:  # to the run's end
                pass
    finally:
        for manager in managers:
            await manager.close()
        for store in stores:
            await store.close()
    return delays


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--answers", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="50 runs, 8 answers, 2 rounds")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.answers, args.rounds = 50, 8, 2
    gate: dict[bool, list[float]] = {False: [], True: []}
    answer: dict[bool, list[float]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(args.rounds):
            for asks in (False, True) if n % 2 == 0 else (True, False):
                gate[asks].append(await gate_round(args.runs, args.steps, asks))
            for across in (False, True) if n % 2 == 0 else (True, False):
                where = Path(tmp) / f"r{n}-{int(across)}"
                where.mkdir()
                answer[across] += await answer_round(where, args.answers, across)
    never, always = statistics.median(gate[False]), statistics.median(gate[True])
    print(f"the gate ({args.runs} runs x {args.steps} steps, median of {args.rounds} rounds)")
    print(f"  {'policy':<34}{'µs/step':>10}{'ratio':>8}")
    print(f"  {'never (no tool wrapped)':<34}{never * 1e6:>10.0f}{1.0:>8.2f}")
    print(f"  {'always, confirmed at once':<34}{always * 1e6:>10.0f}{always / never:>8.2f}")
    print(f"answer to resume ({len(answer[False])} answers each, SQLite, poll_interval_s = 0.5)")
    print(f"  {'answered':<34}{'p50 ms':>10}{'max ms':>8}")
    for across, label in ((False, "on the run's own instance"), (True, "on another instance")):
        values = answer[across]
        print(f"  {label:<34}{statistics.median(values) * 1e3:>10.1f}{max(values) * 1e3:>8.1f}")


if __name__ == "__main__":
    asyncio.run(main())
