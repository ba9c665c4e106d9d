"""A served agent whose runs call a counting tool, for resume tests in this process and in others."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from reasonloop.agents import AgentRunner
from reasonloop.config import AgentSettings, KBSettings, RunsSettings, Settings
from reasonloop.events import AnswerDelta
from reasonloop.llm.base import Message
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.registry import Registry
from reasonloop.runs.models import RunRequest
from reasonloop.runs.stores.protocol import RunStore
from reasonloop.runs.stores.redis.store import RedisRunStore
from reasonloop.runs.stores.sqlite.store import SQLiteRunStore
from reasonloop.tools.base import ToolContext, tool

STEPS = 3
"""Tool calls a run makes before it answers."""
ANSWER = "Counted three times."


def script(messages: list[Message], tools) -> dict | str:
    """The model's reply, read from the request (the same request always gets the same reply, in any
    process): a ``count`` call per tool result so far, then the answer."""
    done = sum(1 for m in messages if m.role == "tool")
    if done < STEPS:
        return {"tool_calls": [{"id": f"call{done}", "name": "count", "arguments": {"n": done}}]}
    return ANSWER


class Tally:
    """The counting tool, with its runs written to ``log`` (one line per run, every process appends)
    and a gate: a call with ``n == block_n`` (in any run) waits for ``release``."""

    def __init__(self, log: Path, block_n: int | None = None, speak: bool = False) -> None:
        self.log = log
        self.runs = 0
        self.block_n = block_n
        self.blocked_runs = 0
        """Calls waiting at the gate."""
        self.release = asyncio.Event()
        self._arrived = asyncio.Event()

        @tool
        async def count(n: int, ctx: ToolContext) -> str:
            """Count once (a side effect: each run is logged)."""
            self.runs += 1
            with self.log.open("a") as f:
                f.write(f"{n}\n")
            if speak and ctx.emit is not None:  # a tool that writes part of the answer as it goes
                await ctx.emit(AnswerDelta(text=f"step {n}; ", depth=ctx.depth))
            if n == self.block_n:
                self.blocked_runs += 1
                self._arrived.set()
                await self.release.wait()
            return f"counted {n}"

        self.tool = count

    async def wait_blocked(self, runs: int = 1, timeout_s: float = 10.0) -> None:
        """Until ``runs`` calls wait at the gate."""
        async with asyncio.timeout(timeout_s):
            while self.blocked_runs < runs:
                self._arrived.clear()
                await self._arrived.wait()

    def logged(self) -> list[str]:
        return self.log.read_text().split() if self.log.exists() else []


class CountingModel(ScriptedProvider):
    """The scripted model, each request it serves written to ``log``."""

    def __init__(self, log: Path, delay_s: float = 0.0) -> None:
        super().__init__(replies=script, chunk_size=6, delay_s=delay_s)
        self.log = log

    async def _stream(self, request):  # type: ignore[override]
        with self.log.open("a") as f:
            f.write(json.dumps(len(request.messages)) + "\n")
        async for chunk in super()._stream(request):
            yield chunk


def counting_runner(tmp: Path, runs: RunsSettings, tally: Tally, model: ScriptedProvider) -> AgentRunner:
    """The served runner, its agent ``counter`` a toolcall agent with the ``count`` tool."""
    registry = Registry(use_entry_points=False)
    registry.register("tool", "count", tally.tool)
    settings = Settings(runs=runs, kb=KBSettings(path=str(tmp / "kb")))
    settings.agents = {"counter": AgentSettings(reasoning="toolcall", tools=["count"], kb=False)}
    return AgentRunner(settings, registry=registry, llm=model)


def request(question: str = "count for me") -> RunRequest:
    return RunRequest(question=question, agent="counter")


def worker_store(args: argparse.Namespace) -> tuple[RunsSettings, RunStore]:
    """The run settings and the (unopened) store a worker process is pointed at by its arguments
    (``--sqlite PATH`` or ``--redis URL --prefix P``; see :func:`worker_arguments`)."""
    if args.redis:
        runs = RunsSettings(store="redis", redis_url=args.redis, redis_prefix=args.prefix)
        return runs, RedisRunStore(runs)
    runs = RunsSettings(sqlite_path=args.sqlite)
    return runs, SQLiteRunStore(runs)


def worker_arguments() -> argparse.Namespace:
    """A worker process's arguments: ``--dir DIR (--sqlite PATH | --redis URL --prefix P)``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--sqlite", default="")
    parser.add_argument("--redis", default="")
    parser.add_argument("--prefix", default="")
    return parser.parse_args()
