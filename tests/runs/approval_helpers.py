"""A served agent whose ``count`` tool calls may wait for approval, for tests in this process and in others."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from reasonloop.agents import AgentRunner
from reasonloop.config import AgentSettings, ApprovalSettings, KBSettings, RunsSettings, Settings
from reasonloop.events import ApprovalRequested, Event
from reasonloop.llm.base import Message
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.registry import Registry
from reasonloop.runs.manager import RunManager
from reasonloop.runs.models import RunRequest
from tests.runs.resume_helpers import Tally

ANSWER = "Counted."


class AskingModel(ScriptedProvider):
    """Calls ``count`` with n = 0, 1 (one call per model turn), then answers; every request it serves
    is kept (in ``seen``, and as a line in ``log`` when given: other processes count them too)."""

    def __init__(self, calls: int = 2, log: Path | None = None) -> None:
        self.n_calls = calls
        self.seen: list[list[Message]] = []
        self.log = log
        super().__init__(replies=self._script, chunk_size=8)

    def _script(self, messages: list[Message], tools: Any) -> dict | str:
        self.seen.append(list(messages))
        if self.log is not None:
            with self.log.open("a") as f:
                f.write(f"{len(messages)}\n")
        done = sum(1 for m in messages if m.role == "tool")
        if done < self.n_calls:
            return {"tool_calls": [{"id": f"call{done}", "name": "count", "arguments": {"n": done}}]}
        return ANSWER

    def observations(self) -> list[str]:
        """What the model read as tool results, in its last request."""
        return [str(m.content) for m in self.seen[-1] if m.role == "tool"]


def approving_runner(
    tmp: Path,
    runs: RunsSettings,
    tally: Tally,
    model: ScriptedProvider,
    approvals: ApprovalSettings,
    agent_approvals: dict[str, str] | None = None,
    settings: dict[str, Any] | None = None,
    reasoning: str = "toolcall",
) -> AgentRunner:
    registry = Registry(use_entry_points=False)
    registry.register("tool", "count", tally.tool)
    conf = Settings(runs=runs, kb=KBSettings(path=str(tmp / "kb")), approvals=approvals)
    conf.agents = {
        "counter": AgentSettings(
            reasoning=reasoning,
            tools=["count"],
            kb=False,
            approvals=agent_approvals or {},
            settings=settings or {},
        )
    }
    return AgentRunner(conf, registry=registry, llm=model)


def request(question: str = "count for me", tenant: str = "default") -> RunRequest:
    return RunRequest(question=question, agent="counter", tenant=tenant)


async def next_request(
    manager: RunManager, run_id: str, after_seq: int = 0, timeout_s: float = 20
) -> ApprovalRequested:
    """The run's next approval request after ``after_seq``."""
    feed = await manager.read(run_id, after_seq)
    async with asyncio.timeout(timeout_s):
        async for event in feed.events():
            if isinstance(event, ApprovalRequested):
                return event
    raise AssertionError("the run ended without asking for approval")


async def until_end(manager: RunManager, run_id: str, timeout_s: float = 20) -> list[Event]:
    feed = await manager.read(run_id)
    async with asyncio.timeout(timeout_s):
        return [e async for e in feed.events()]


def logged(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
