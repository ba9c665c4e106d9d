"""How an agent answers a question: the run's events and its result.

:meth:`AgentRuns.stream` and :meth:`AgentRuns.events` give a run's events, RunStarted first and
exactly one Answer or ErrorEvent last (a failure anywhere in the strategy becomes the
ErrorEvent); :meth:`AgentRuns.run` collects them into a :class:`~reasonloop.events.RunResult`.
What runs is the strategy the model's profile calls for (:meth:`AgentRuns.plan`). Before the
strategy starts, tools still to load are loaded and the feedback guidance joins the instructions.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import astuple
from typing import Any

from pydantic import BaseModel

from reasonloop import telemetry
from reasonloop.agents.model_profile import StrategyPlan, plan_strategy
from reasonloop.agents.toolbox import ToolSource
from reasonloop.errors import ReasonLoopError, RunError
from reasonloop.events import (
    Answer,
    AnswerDelta,
    ErrorEvent,
    Event,
    EventStamper,
    Progress,
    RunMeta,
    RunResult,
    RunStarted,
)
from reasonloop.llm.base import LLM, Message
from reasonloop.llm.sampling import Sampling
from reasonloop.reasoning.base import Reasoning, RunContext
from reasonloop.tools.base import Tool
from reasonloop.tools.feedback import FeedbackStore

__all__ = ["AgentRuns", "HistoryItem"]

log = logging.getLogger(__name__)

HistoryItem = Message | Mapping[str, Any]


class AgentRuns:
    """The runs of an :class:`~reasonloop.agents.agent.Agent`, its base class.

    The agent sets the attributes below and provides ``context()`` (a fresh
    :class:`~reasonloop.reasoning.base.RunContext`) and ``prepare()`` (loading tools still to load).
    """

    strategy: type[Reasoning]
    settings: BaseModel
    reasoning_id: str
    name: str | None
    tools: dict[str, Tool]
    feedback_recent: int
    _sources: list[ToolSource]
    _plans: dict[tuple[Any, ...], StrategyPlan]

    async def _before_run(self, ctx: RunContext) -> AsyncIterator[Event]:
        """Load pending tools and add the feedback guidance to the run's instructions."""
        if self._sources:
            for note in await self.prepare():
                yield Progress(message=note, depth=ctx.depth)
            for tool_name, tool in self.tools.items():
                ctx.tools.setdefault(tool_name, tool)
        store = ctx.scope.feedback
        if isinstance(store, FeedbackStore) and self.feedback_recent > 0:
            try:
                text = await store.recent_guidance(ctx.scope.user, ctx.scope.conversation or None, self.feedback_recent)
            except Exception as exc:  # a broken store must not break the run
                log.warning("feedback guidance unavailable: %s", exc)
                text = ""
            if text:
                ctx.instructions = [*ctx.instructions, text]

    def stream(
        self,
        question: str,
        history: Sequence[HistoryItem] | None = None,
        *,
        run_id: str | None = None,
        user_id: str | None = None,
        conversation_id: str | None = None,
        sampling: Sampling | None = None,
    ) -> AsyncIterator[Event]:
        """The run's events, stamped: RunStarted first, then Answer or ErrorEvent last.

        Use as ``async for event in agent.stream(question): ...``; ``aclose()`` the iterator
        (or cancel the consuming task) to stop the run. ``sampling``: see :meth:`context`.
        """
        ctx = self.context(history, run_id=run_id, user_id=user_id, conversation_id=conversation_id, sampling=sampling)
        return self._traced(self._events(question, ctx, EventStamper(ctx.run_id)), ctx, None, None)

    def events(
        self,
        question: str,
        ctx: RunContext,
        *,
        tenant: str | None = None,
        trace_parent: Mapping[str, str] | None = None,
    ) -> AsyncIterator[Event]:
        """Run the strategy in ``ctx``: its events, each with its run's id but not yet numbered
        (``seq`` is given once, by whoever streams them: :meth:`stream`, the run manager, or the
        run of which this is a sub-agent). RunStarted first, Answer or ErrorEvent last.

        While tracing is on (:mod:`reasonloop.telemetry`), a top-level run is one span, a child of
        ``trace_parent`` (the caller's W3C trace headers) when given, labelled with ``tenant``."""
        return self._traced(self._events(question, ctx, None), ctx, tenant, trace_parent)

    def _traced(
        self,
        events: AsyncIterator[Event],
        ctx: RunContext,
        tenant: str | None,
        parent: Mapping[str, str] | None,
    ) -> AsyncIterator[Event]:
        traced = telemetry.tracing
        if traced is None or ctx.depth:  # a sub-agent's calls nest below its tool call's span
            return events
        return traced.run(
            events,
            run_id=ctx.run_id,
            strategy=self.reasoning_id,
            agent=self.name or "",
            conversation_id=ctx.scope.conversation or None,
            tenant=tenant,
            parent=parent,
        )

    async def _events(self, question: str, ctx: RunContext, stamp: EventStamper | None) -> AsyncIterator[Event]:
        """:meth:`events`, numbered by ``stamp`` when given (as it goes: no generator of its own)."""
        run_id, depth = ctx.run_id, ctx.depth
        plan = self.plan(ctx.llm)
        started = RunStarted(reasoning=self.reasoning_id, question=question, ran=plan.ran, depth=depth, run_id=run_id)
        yield started if stamp is None else stamp(started)
        chosen_by = getattr(ctx.llm, "chosen_by", "")
        if chosen_by and depth == 0:  # a model nobody configured: say which, and how to change it
            note = Progress(message=f"{ctx.llm.name}: {chosen_by}", depth=depth, run_id=run_id)
            yield note if stamp is None else stamp(note)
        answered = False
        try:
            if self._sources or ctx.scope.feedback is not None:  # most runs have nothing to prepare
                async for event in self._before_run(ctx):
                    event.run_id = run_id
                    yield event if stamp is None else stamp(event)
            strategy = self._strategy(ctx, plan)
            async with aclosing(strategy.stream(question)) as events:
                async for event in events:
                    if ctx.pending:  # emitted outside a tool round (rounds yield their own as they go)
                        for nested in ctx.drain():
                            yield nested if stamp is None else stamp(nested)
                    if event.depth < depth:  # the strategy's own events, in a sub-run
                        event.depth = depth
                    if not event.run_id:  # nested events keep their sub-run's
                        event.run_id = run_id
                    yield event if stamp is None else stamp(event)
                    if isinstance(event, Answer) and event.depth == depth:
                        answered = True
                        break
            if not answered:
                raise RunError(f"strategy {self.reasoning_id!r} ended without an answer")
        except ReasonLoopError as exc:
            ctx.error = exc.to_dict()
            error = ErrorEvent(code=exc.code, message=exc.message, depth=depth, run_id=run_id, usage=ctx.usage.copy())
            yield error if stamp is None else stamp(error)
        except Exception as exc:  # a defect in a plugin: report it as the run's error
            ctx.error = {"code": RunError.code, "message": f"{type(exc).__name__}: {exc}"}
            error = ErrorEvent(
                code=RunError.code, message=ctx.error["message"], depth=depth, run_id=run_id, usage=ctx.usage.copy()
            )
            yield error if stamp is None else stamp(error)

    def plan(self, llm: LLM) -> StrategyPlan:
        """What runs on ``llm`` for this agent's strategy, read from the model's profile once per
        profile (:mod:`reasonloop.agents.model_profile`)."""
        capabilities = llm.capabilities
        key = astuple(capabilities)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = plan_strategy(self.strategy, self.settings, capabilities)
        return plan

    def _strategy(self, ctx: RunContext, plan: StrategyPlan) -> Reasoning:
        if plan.strategy is self.strategy:
            return self.strategy(plan.settings, ctx)
        return plan.strategy(plan.settings, ctx, asked_for=self.reasoning_id)  # type: ignore[call-arg]

    async def run(
        self,
        question: str,
        history: Sequence[HistoryItem] | None = None,
        *,
        run_id: str | None = None,
        user_id: str | None = None,
        conversation_id: str | None = None,
        sampling: Sampling | None = None,
    ) -> RunResult:
        """Run to the end and return the answer, citations, steps, usage and metadata."""
        ctx = self.context(history, run_id=run_id, user_id=user_id, conversation_id=conversation_id, sampling=sampling)
        started = time.time()
        answer: Answer | None = None
        partial: list[str] = []
        async for event in self.events(question, ctx):
            if event.depth != ctx.depth:  # a sub-agent's events: its answer went to this run's model
                continue
            if isinstance(event, AnswerDelta):
                partial.append(event.text)
            elif isinstance(event, Answer):
                answer = event
        return RunResult(
            content=answer.text if answer else "".join(partial),
            citations=answer.citations if answer else [],
            steps=ctx.steps,
            usage=ctx.usage,
            stop_reason=answer.stop_reason if answer else "error",
            abstained=answer.abstained if answer else False,
            meta=RunMeta(
                run_id=ctx.run_id,
                reasoning=self.reasoning_id,
                ran=self.plan(ctx.llm).ran,
                model=getattr(ctx.llm, "name", ""),
                model_chosen_by=getattr(ctx.llm, "chosen_by", ""),
                started_at=started,
                ended_at=time.time(),
            ),
            error=ctx.error,
        )
