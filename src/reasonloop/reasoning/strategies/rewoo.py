"""ReWOO: plan once, work in parallel, solve (Xu et al., 2023).

The planner writes the whole plan up front (``#E1 = tool[input]``, inputs may use earlier
results ``#En``); the worker runs every step as soon as its own dependencies are done,
independent ones in parallel (:mod:`reasonloop.reasoning.formats.rewoo_plan`); the solver answers
from the plan and the evidence, with citations. Since observations never go back to the
planner, the prompt does not grow with every step as in ReAct. If evidence failed, the
planner may write one new plan that knows what failed. A plan with no step that can be read
is no plan: the planner is asked once more, and a second such plan ends the run with
:class:`~reasonloop.errors.FormatNotFollowed`, never with an answer made without evidence.
A ``#En`` reference in a later input is replaced by a bounded piece of ``En``'s result
(:func:`~reasonloop.reasoning.formats.rewoo_plan.reference_text`). Planner and solver may be
different models.

Each plan that has steps is sent as a :class:`~reasonloop.events.Plan` event (its steps, their
tools, inputs and dependencies), and each step's tool call names its step. The planner's text is
also sent as a ``Thought`` marked ``plan_text``: the plan's form before event schema 2, kept for
one release.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import ClassVar

from pydantic import Field

from reasonloop.errors import PlanStepFailed
from reasonloop.events import Event, PlannedStep, Progress, Thought, ToolCall
from reasonloop.events import Plan as PlanEvent
from reasonloop.llm.base import Message
from reasonloop.plugin_table import field_text
from reasonloop.reasoning.base import LoopSettings, Reasoning
from reasonloop.reasoning.formats.format_watch import format_error
from reasonloop.reasoning.formats.language import detect_language
from reasonloop.reasoning.formats.planned_call import PlannedCall, coerce_input
from reasonloop.reasoning.formats.prompts import describe_tools, render, system_prompt
from reasonloop.reasoning.formats.rewoo_plan import (
    Plan,
    PlanStep,
    StepFailed,
    StepResult,
    execute,
    parse_plan,
    reference_text,
    substitute,
)
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.reasoning.steps.finish import close, guard_armed
from reasonloop.reasoning.steps.intent import needs_no_retrieval
from reasonloop.reasoning.steps.llmcall import Turn, llm_turn
from reasonloop.reasoning.steps.retrieval import direct_answer
from reasonloop.reasoning.steps.toolexec import ToolRound, failure, record_result
from reasonloop.registry import PluginInfo
from reasonloop.tokens import trim_to_tokens

__all__ = ["ReWOOReasoning", "ReWOOSettings"]


class ReWOOSettings(LoopSettings):
    replan: bool = Field(
        default=True,
        **field_text(
            en=("Replan", "When a step's evidence failed, let the planner write one new plan."),
            zh=("重新规划", "有步骤的证据失败时，让规划器重写一次计划。"),
        ),
    )
    max_concurrency: int = Field(
        default=8,
        ge=1,
        **field_text(
            en=("Parallel steps", "Most plan steps running at once."),
            zh=("并行步骤上限", "同时运行的计划步骤最多数量。"),
        ),
    )
    # What replaces a reference: :func:`~reasonloop.reasoning.formats.rewoo_plan.reference_text`.
    reference_tokens: int = Field(
        default=40,
        ge=10,
        **field_text(
            en=("Reference tokens", "Most tokens of an earlier result that replace a #En reference in a later input."),
            zh=("引用词元上限", "在后续输入中替换 #En 引用的前一步结果最多的词元数。"),
        ),
    )


REPLAN_EVIDENCE_TOKENS = 300
"""Tokens of each good result shown to the planner when it replans."""


class ReWOOReasoning(Reasoning):
    """Plan all steps once, run them as their inputs become ready, then solve with citations."""

    info: ClassVar[PluginInfo] = PluginInfo.declared("reasoning", "rewoo")
    Settings = ReWOOSettings
    uses_tools = True

    async def stream(self, question: str) -> AsyncIterator[Event]:
        ctx, settings = self.ctx, self.settings
        language = ctx.language or detect_language(question)
        tracker = self.tracker = BudgetTracker(ctx.budget or settings.budget(), ctx.usage, ctx.scope.pauses)
        planner = ctx.planner_llm or ctx.llm
        solver = ctx.solver_llm or ctx.llm
        answer = Turn()
        if needs_no_retrieval(question):
            system = system_prompt("chat", language, ctx.instructions)
            async for event in direct_answer(ctx, tracker, solver, system, ctx.history, question, answer):
                yield event
            yield close(ctx, settings, tracker, answer.text, language)
            return

        system = system_prompt("rewoo_planner", language, ctx.instructions, tools=describe_tools(ctx.tools.values()))
        messages = [Message.system(system), *ctx.history, Message.user(question)]
        sections: list[str] = []
        read_any = False
        doing = "planning"
        for attempt in (1, 2):
            # Plan.
            tracker.start_round()
            yield Progress(message=doing)
            planned = Turn()
            async for event in llm_turn(planner, messages, planned, tracker):
                yield event
            plan = parse_plan(planned.text, tools=ctx.tools.keys())
            if planned.text.strip():
                yield Thought(text=planned.text.strip(), plan_text=bool(plan.steps))
            if plan.steps:
                yield PlanEvent(steps=[_planned(step) for step in plan.steps], attempt=attempt)
            if not plan.steps:
                if read_any:  # the first plan's evidence stands
                    break
                problem = "the reply is empty" if not planned.text.strip() else "no line like '#E1 = tool[input]'"
                if attempt == 2 or not settings.replan or tracker.exhausted() is not None:
                    plans = "plans" if attempt == 2 else "plan"
                    raise format_error(
                        "rewoo", planner, f"wrote no step that could be read in {attempt} {plans}", problem
                    )
                doing = f"planning again: no step of the plan could be read ({problem})"
                retry = render("rewoo_unreadable", language, tool_names=", ".join(ctx.tools))
                messages = [
                    *messages,
                    Message.assistant(planned.text.strip() or "(an empty reply)"),
                    Message.user(retry),
                ]
                continue
            read_any = True

            # Work.
            results: dict[str, StepResult] = {}
            async for event in self._work(plan, attempt, results):
                yield event
            sections.append(self._section(plan, results, len(sections) + 1))

            failures = [r for r in results.values() if not r.ok]
            if not (failures and settings.replan and attempt == 1 and tracker.exhausted() is None):
                break
            doing = "replanning after failed steps"
            listing = "\n".join(f"#{r.step.id} = {r.step.tool}[{r.step.input}]: {r.error}" for r in failures)
            kept = (
                "\n".join(
                    f"#{sid}: {trim_to_tokens(r.output, REPLAN_EVIDENCE_TOKENS)}" for sid, r in results.items() if r.ok
                )
                or "(none)"
            )
            messages = [
                *messages,
                Message.assistant(planned.text),
                Message.user(render("rewoo_replan", language, failures=listing, evidence=kept)),
            ]

        # Solve.
        yield Progress(message="solving")
        user = render("rewoo_solver_user", language, plan="\n\n".join(sections), question=question)
        system = system_prompt("rewoo_solver", language, ctx.instructions)
        async for event in direct_answer(
            ctx, tracker, solver, system, ctx.history, user, answer, stream=not guard_armed(settings, ctx)
        ):
            yield event
        yield close(ctx, settings, tracker, answer.text, language)

    async def _work(self, plan: Plan, attempt: int, results: dict[str, StepResult]) -> AsyncIterator[Event]:
        """Run the plan's steps as the scheduler releases them, each as a one-call
        :class:`ToolRound`; yield the rounds' events and the failures of steps that never ran.

        The scheduler and the rounds feed one queue, so a step's ToolCall goes out when the
        step starts and its result when it ends, whichever other steps are running.
        """
        ctx, settings = self.ctx, self.settings
        queue: asyncio.Queue[Event | StepResult | None] = asyncio.Queue()
        rounds: dict[str, ToolRound] = {}
        """Step id -> the round that ran it (steps that never ran have none)."""

        async def run_step(step: PlanStep, text: str) -> str:
            tool = ctx.tools[step.tool]
            call = PlannedCall(
                call_id=self._cid(attempt, step),
                tool=step.tool,
                arguments=coerce_input(tool, text),
                planned_input=step.input,
                step=step.id,
            )
            tools = rounds[step.id] = ToolRound(ctx, self.tracker, [call], settings.max_evidence_tokens)
            async with aclosing(tools.run()) as events:
                async for event in events:
                    queue.put_nowait(event)
            [out] = tools.outputs
            if out.error is not None:
                raise StepFailed(out.error["error"])
            return out.text

        def resolve(text: str, done: dict[str, str]) -> str:
            inputs = {s.id: s.input for s in plan.steps}
            return substitute(
                text, {k: reference_text(v, settings.reference_tokens, inputs.get(k, "")) for k, v in done.items()}
            )

        async def schedule() -> None:
            try:
                async for update in execute(
                    plan,
                    run_step,
                    max_concurrency=settings.max_concurrency,
                    timeout_s=self.tracker.time_left(),
                    resolve=resolve,
                ):
                    if isinstance(update, StepResult):
                        queue.put_nowait(update)
            finally:
                queue.put_nowait(None)

        scheduler = asyncio.create_task(schedule(), name="rewoo-schedule")
        try:
            while (item := await queue.get()) is not None:
                if not isinstance(item, StepResult):
                    yield item
                    continue
                step = item.step
                results[step.id] = item
                if item.timed_out:
                    self.tracker.hit("timeout")
                tools = rounds.get(step.id)
                if tools is not None and tools.done:  # ran: its round gave its result
                    if item.ok:
                        item.output = tools.outputs[0].text
                    continue
                # Never ran (a problem, a cycle, a failed dependency, the time budget), or stopped mid-call.
                call = PlannedCall(call_id=self._cid(attempt, step), tool=step.tool, raw_input=step.input, step=step.id)
                call.planned_input = step.input
                if tools is None:
                    yield ToolCall(call_id=call.call_id, tool=step.tool, input={"input": step.input}, step=step.id)
                else:
                    call.arguments, call.raw_input = tools.calls[0].arguments, None
                yield record_result(
                    ctx, call, failure(step.tool, PlanStepFailed(item.error or "failed")), settings.max_evidence_tokens
                )
            await scheduler  # its failure, if it failed
        finally:
            if not scheduler.done():
                scheduler.cancel()
                await asyncio.gather(scheduler, return_exceptions=True)

    @staticmethod
    def _cid(attempt: int, step: PlanStep) -> str:
        return f"rewoo_{attempt}_{step.id}"

    @staticmethod
    def _section(plan: Plan, results: dict[str, StepResult], attempt: int) -> str:
        lines = [f"Plan {attempt}:"] if attempt > 1 else []
        for step in plan.steps:
            if step.reason:
                lines.append(f"Plan: {step.reason}")
            lines.append(f"#{step.id} = {step.tool}[{step.input}]")
            r = results.get(step.id)
            if r is not None and r.ok:
                lines.append(f"Evidence #{step.id}: {r.output}")
            else:
                lines.append(f"Evidence #{step.id}: (failed: {r.error if r else 'not run'})")
        return "\n".join(lines) if lines else "(no plan steps)"


def _planned(step: PlanStep) -> PlannedStep:
    """A parsed step as the :class:`~reasonloop.events.Plan` event shows it."""
    return PlannedStep(
        id=step.id,
        tool=step.tool,
        input=step.input,
        depends_on=list(step.deps),
        reason=step.reason,
        problem=step.problem,
    )
