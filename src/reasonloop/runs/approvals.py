"""Approvals of served runs: asked and answered through the run store, so they outlive processes.

A run whose tool call needs a person (:mod:`reasonloop.tools.approval`) asks through its
:class:`RunApprovals`, which keeps two steps in the run's step journal:

* ``approval:{id}``: the ask (tool, arguments, why, the tool's schema, when it was asked), kept
  once: a run that resumes elsewhere asks again and finds it, with its first time;
* ``approval:{id}:decision``: the answer, kept by whoever answers first (``add_step``: of answers
  given at once, on any instance, one wins; the timeout's rejection is one of them).

The approval's id is made from the run, the tool, the arguments and how many equal calls came
before, so the replay of a resumed run asks for the same id. While it waits the run is
``awaiting_approval``, gives back its execution slot, and looks for the answer: at once when it is
given in this process, else every ``poll_interval_s`` in the store. An answer given on an instance
whose run's own instance is dead is kept there, and the run resumes wherever recovery takes it
(:mod:`reasonloop.runs.resume`), finding the answer.

The audit, ``GET /v1/runs/{id}/approvals``, is read from the run's events (:func:`audit`): every
:class:`~reasonloop.events.ApprovalRequested` and its :class:`~reasonloop.events.ApprovalDecided`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reasonloop.approval_answers import Announce, ApprovalAsk, Decision, check_answer
from reasonloop.config.tools import ApprovalSettings
from reasonloop.errors import ApprovalAnswered, ApprovalNotFound
from reasonloop.events import ApprovalDecided, ApprovalRequested, Event
from reasonloop.runs.replay.steps import digest
from reasonloop.runs.stores.protocol import RunStore, features_of

__all__ = ["ApprovalAnswer", "ApprovalDesk", "ApprovalView", "RunApprovals", "audit"]


_PREFIX = "approval:"
"""The keys of approval steps in a run's journal."""


def _asked_key(approval_id: str) -> str:
    return f"approval:{approval_id}"


def _decision_key(approval_id: str) -> str:
    return f"approval:{approval_id}:decision"


class ApprovalAnswer(BaseModel):
    """An answer to a tool call waiting for approval, as every surface takes it."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["confirm", "modify", "reject"]
    arguments: dict[str, Any] | None = None
    """With ``modify``: the arguments to run the tool with (they must fit its schema)."""
    reason: str = Field(default="", max_length=4000)
    """Why (with ``reject``, what the model reads as the call's result)."""

    def decision_by(self, by: dict[str, Any]) -> Decision:
        """The decision, taken by ``by`` (who, as the audit records it) now."""
        return Decision(decision=self.decision, arguments=self.arguments, reason=self.reason, by=by)


class ApprovalDesk:
    """The approvals of one run manager's runs, and answers to any run's (see the module docstring).

    Args:
        store: The run store (approvals outlive processes when it keeps steps; else they live in
            this process only).
        settings: ``[approvals]`` (the timeout and the poll interval).
    """

    def __init__(self, store: RunStore, settings: ApprovalSettings | None = None) -> None:
        self.store = store
        self.settings = settings or ApprovalSettings()
        self.durable = features_of(store).step_journal
        self._memory: dict[str, dict[str, str]] = {}
        """Steps of approvals when the store keeps none."""
        self._answered: dict[tuple[str, str], asyncio.Event] = {}
        """Waiting calls of this process, woken when an answer is given here."""

    async def steps(self, run_id: str) -> dict[str, str]:
        """The run's approval steps (asks and answers), not the rest of its journal."""
        if self.durable:
            return await self.store.steps(run_id, _PREFIX)  # type: ignore[attr-defined,no-any-return]
        return dict(self._memory.get(run_id, {}))

    async def _add(self, run_id: str, key: str, value: str) -> bool:
        if self.durable:
            return bool(await self.store.add_step(run_id, key, value))  # type: ignore[attr-defined]
        kept = self._memory.setdefault(run_id, {})
        if key in kept:
            return False
        kept[key] = value
        return True

    def forget(self, run_id: str) -> None:
        """Drop what this process keeps of an ended run."""
        self._memory.pop(run_id, None)

    async def answer(self, run_id: str, approval_id: str, decision: Decision) -> None:
        """Keep ``decision`` for the pending approval ``approval_id`` of run ``run_id`` (whose
        tenant the caller checked) and wake the run when it waits here.

        Raises:
            ApprovalNotFound: the run has no such approval pending (or has ended).
            ApprovalAnswered: it was decided already.
            ApprovalInvalid: the decision does not fit (modified arguments against the tool's schema).
        """
        steps = await self.steps(run_id)
        raw = steps.get(_asked_key(approval_id))
        if raw is None:
            raise ApprovalNotFound(f"run {run_id} has no approval {approval_id!r} waiting", run_id=run_id)
        if _decision_key(approval_id) in steps:
            raise ApprovalAnswered(f"approval {approval_id} was decided already", run_id=run_id)
        check_answer(decision, json.loads(raw).get("schema") or {})
        if not await self._add(run_id, _decision_key(approval_id), decision.model_dump_json()):
            raise ApprovalAnswered(f"approval {approval_id} was decided already", run_id=run_id)
        waiter = self._answered.get((run_id, approval_id))
        if waiter is not None:
            waiter.set()

    async def wait(self, run_id: str, approval_id: str, expires_at: float | None) -> Decision:
        """The decision on approval ``approval_id`` once someone takes it (a rejection once
        ``expires_at`` passes unanswered)."""
        key = _decision_key(approval_id)
        answered = self._answered.setdefault((run_id, approval_id), asyncio.Event())
        try:
            while True:
                answered.clear()
                raw = (await self.steps(run_id)).get(key)
                if raw is not None:
                    return Decision.model_validate_json(raw)
                now = time.time()
                if expires_at is not None and now >= expires_at:
                    timeout = self.settings.timeout_s or 0.0
                    rejection = Decision(
                        decision="reject", reason=f"no answer within {timeout:g}s", by={"via": "timeout"}
                    )
                    if await self._add(run_id, key, rejection.model_dump_json()):
                        return rejection
                    continue  # an answer came first
                pause = self.settings.poll_interval_s if self.durable else None
                if expires_at is not None:
                    pause = min(pause, expires_at - now) if pause is not None else expires_at - now
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(answered.wait(), pause)
        finally:
            self._answered.pop((run_id, approval_id), None)

    def for_run(
        self, run_id: str, on_wait: Callable[[], None], on_answer: Callable[[], Awaitable[None]]
    ) -> RunApprovals:
        """The approver of run ``run_id``: ``on_wait()`` when it starts waiting (the run is then
        ``awaiting_approval``), ``await on_answer()`` once answered (running again)."""
        return RunApprovals(self, run_id, on_wait, on_answer)


class RunApprovals:
    """The :class:`~reasonloop.tools.approval.Approver` of one served run."""

    def __init__(
        self, desk: ApprovalDesk, run_id: str, on_wait: Callable[[], None], on_answer: Callable[[], Awaitable[None]]
    ) -> None:
        self.desk = desk
        self.run_id = run_id
        self.on_wait = on_wait
        self.on_answer = on_answer
        self._asked: Counter[str] = Counter()
        self._waiting = 0

    def _id(self, ask: ApprovalAsk) -> str:
        content = digest([ask.tool, ask.arguments])
        n = self._asked[content]
        self._asked[content] = n + 1
        return "apr_" + digest([self.run_id, content, n])[:24]

    async def decide(self, ask: ApprovalAsk, announce: Announce) -> Decision:
        desk = self.desk
        ask.approval_id = approval_id = self._id(ask)
        steps = await desk.steps(self.run_id)
        raw = steps.get(_asked_key(approval_id))
        asked_at = time.time()
        if raw is None:
            kept = {
                "call_id": ask.call_id,
                "tool": ask.tool,
                "arguments": ask.arguments,
                "reason": ask.reason,
                "schema": ask.schema,
                "asked_at": asked_at,
            }
            if not await desk._add(self.run_id, _asked_key(approval_id), json.dumps(kept, ensure_ascii=False)):
                raw = (await desk.steps(self.run_id)).get(_asked_key(approval_id))
        if raw is not None:  # asked before this process took the run over: its first time holds
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                asked_at = float(json.loads(raw)["asked_at"])
        timeout = desk.settings.timeout_s
        ask.expires_at = round(asked_at + timeout, 3) if timeout else None
        decided = _decision(steps.get(_decision_key(approval_id)))
        await announce(ask)
        if decided is not None:  # answered before this process took the run over
            return decided
        self._waiting += 1
        if self._waiting == 1:
            self.on_wait()
        try:
            decision = await desk.wait(self.run_id, approval_id, ask.expires_at)
        except BaseException:  # stopped, or the server stops: the run's status is its end's business
            self._waiting -= 1
            raise
        self._waiting -= 1
        if self._waiting == 0:
            await self.on_answer()
        return decision


def _decision(raw: str | None) -> Decision | None:
    if raw is None:
        return None
    try:
        return Decision.model_validate_json(raw)
    except ValidationError:
        return None


class ApprovalView(BaseModel):
    """One approval of a run, as the audit shows it."""

    approval_id: str
    call_id: str
    tool: str
    reason: str = ""
    """Why it was asked (the policy)."""
    arguments_asked: dict[str, Any]
    asked_at: float
    expires_at: float | None = None
    arguments_schema: dict[str, Any] = {}
    """The tool's arguments' JSON schema (what a modification must fit)."""
    status: Literal["pending", "confirmed", "modified", "rejected", "unanswered"]
    """``unanswered``: the run ended (stopped, failed) before anyone decided."""
    decision: Literal["confirm", "modify", "reject"] | None = None
    arguments_run: dict[str, Any] | None = None
    decision_reason: str = ""
    by: dict[str, Any] = {}
    decided_at: float | None = None
    depth: int = 0
    """0 for the run's own calls; more for a sub-agent's."""


_STATUS = {"confirm": "confirmed", "modify": "modified", "reject": "rejected"}


def audit(events: Iterable[Event], finished: bool) -> list[ApprovalView]:
    """Every approval in ``events`` (a run's), in the order asked, with its decision."""
    views: dict[str, ApprovalView] = {}
    for event in events:
        if isinstance(event, ApprovalRequested) and event.approval_id not in views:
            views[event.approval_id] = ApprovalView(
                approval_id=event.approval_id,
                call_id=event.call_id,
                tool=event.tool,
                reason=event.reason,
                arguments_asked=event.arguments,
                asked_at=event.ts,
                expires_at=event.expires_at,
                arguments_schema=event.schema,
                status="unanswered" if finished else "pending",
                depth=event.depth,
            )
        elif isinstance(event, ApprovalDecided) and event.approval_id in views:
            view = views[event.approval_id]
            view.status = _STATUS[event.decision]  # type: ignore[assignment]
            view.decision = event.decision
            view.arguments_run = event.arguments_run
            view.decision_reason = event.reason
            view.by = event.by
            view.decided_at = event.decided_at
    return list(views.values())
