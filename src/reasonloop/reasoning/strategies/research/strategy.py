"""Research: plan research questions, research them in parallel, judge, repeat, write a cited report.

1. **Plan.** The model splits the question into research questions (a JSON object, read however a
   small model writes it: :mod:`reasonloop.reasoning.formats.research_replies`; a reply that holds
   none makes the question its own only research question). They are sent as a
   :class:`~reasonloop.events.Plan` (step ``1.2``: round 1, question 2; tool ``research``).
2. **Research.** Each question goes to a sub-agent, a tool-using strategy (``react`` by default,
   ``toolcall`` for models with native tool calls) over the run's tools and knowledge base, at most
   ``max_concurrency`` at once. Each has its own budget drawn from what the run has left: an equal
   share of its tokens and tool calls, and its time up to the round's deadline. Its state is sent as
   :class:`~reasonloop.events.ResearchTask` events, its own events follow nested under it. The
   evidence numbers are the run's, so every finding cites passages the report can cite.
3. **Judge.** After each round the model decides (:class:`~reasonloop.events.Judged`): ``answer``,
   ``caveat`` (answer, saying what is uncertain), ``gap`` (the named missing pieces become the next
   round's questions), ``reconcile`` (the contradiction becomes the next round's question) or
   ``unanswerable``. A reply that cannot be read is asked for once more; a second one is taken as
   ``caveat`` (the event says so in ``fallback``): a malformed judge reply never ends the run.
4. **Report.** The model writes the report from the findings and the passages they cite: sections,
   a ``[n]`` after each claim (each citation quotes the exact supporting sentence), and what could not
   be established (the report's own list, the gaps left open, the questions whose research failed).
   It streams as the answer and is also sent as a :class:`~reasonloop.events.Report`.

Limits: ``max_rounds`` research rounds, ``max_agents`` questions per round, ``max_tool_calls`` and
``max_tokens`` for the whole run (shared by the sub-agents), ``timeout_s`` wall time. A share
``report_share`` of the time and tokens is held back for the judge and the report: when the research
time is up, the running sub-agents are cancelled and the report is written from what was found
(the answer's ``stop_reason`` names the limit); the report call itself is not cut off. After each
finished sub-research a draft report (``partial``, no model call) is sent, so a run stopped at any
point keeps what it found.

Durable: each finished sub-research is kept in the run's checkpoints (``RunContext.checkpoints``,
the step journal of a run store that keeps one) with the passages it numbered and what it consumed.
A resumed run takes it from there and makes no model or tool call for it.

The parts, one module each in this package: :mod:`.settings` (the settings), :mod:`.budget` (the
run's limits, the report's reserve, the sub-agents' shares), :mod:`.tasks` (a research question's
state and its checkpoint), :mod:`.agents` (a round of sub-agents) and :mod:`.report` (the draft and
the written report). This module plans, judges and runs the rounds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import ClassVar

from reasonloop.events import Event, Judged, Plan, PlannedStep, Progress, Step
from reasonloop.llm.base import Message
from reasonloop.reasoning.base import Reasoning
from reasonloop.reasoning.formats.language import detect_language
from reasonloop.reasoning.formats.prompts import render, system_prompt
from reasonloop.reasoning.formats.research_replies import Judgement, parse_judgement, parse_questions
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.reasoning.steps.finish import close
from reasonloop.reasoning.steps.intent import needs_no_retrieval
from reasonloop.reasoning.steps.llmcall import Turn, llm_turn
from reasonloop.reasoning.steps.retrieval import direct_answer
from reasonloop.reasoning.strategies.research.agents import SubAgents
from reasonloop.reasoning.strategies.research.budget import ResearchBudget, run_budget
from reasonloop.reasoning.strategies.research.report import findings_text, write_report
from reasonloop.reasoning.strategies.research.report import render_not_established as render_not_established
from reasonloop.reasoning.strategies.research.settings import ResearchSettings
from reasonloop.reasoning.strategies.research.tasks import TaskState
from reasonloop.registry import PluginInfo

__all__ = ["ResearchReasoning", "ResearchSettings"]

_JUDGE_EXAMPLE = '{"decision": "answer", "reason": "...", "gaps": [], "contradiction": ""}'
_PLAN_EXAMPLE = '{"questions": ["..."]}'


class ResearchReasoning(Reasoning):
    """Plan, research in parallel with a shared budget, judge each round, write a cited report."""

    info: ClassVar[PluginInfo] = PluginInfo.declared("reasoning", "research")
    Settings = ResearchSettings
    uses_tools = True

    async def stream(self, question: str) -> AsyncIterator[Event]:
        ctx, settings = self.ctx, self.settings
        language = self.language = ctx.language or detect_language(question)
        limits = run_budget(settings, ctx.budget)
        tracker = self.tracker = BudgetTracker(limits, ctx.usage, ctx.scope.pauses)
        if needs_no_retrieval(question):
            answer = Turn()
            system = system_prompt("chat", language, ctx.instructions)
            async for event in direct_answer(ctx, tracker, ctx.llm, system, ctx.history, question, answer):
                yield event
            yield close(ctx, settings, tracker, answer.text, language)
            return
        self.budget = ResearchBudget.reserve(limits, tracker, ctx.usage, settings.report_share)
        self.tasks: list[TaskState] = []
        agents = SubAgents(ctx, settings, self.budget, language, self.tasks)
        judged: Judged | None = None
        questions: list[str] = []
        async for event in self._plan(question, questions):
            yield event
        for round_no in range(1, limits.max_rounds + 1):
            tasks = [TaskState(f"{round_no}.{i}", q, round_no) for i, q in enumerate(questions, 1)]
            self.tasks.extend(tasks)
            yield Plan(
                steps=[PlannedStep(id=t.step, tool="research", input=t.question) for t in tasks], attempt=round_no
            )
            judged = None  # the gaps of the last judgement are this round's questions, not yet unanswered
            async for event in agents.research(tasks):
                yield event
            if self.budget.out_of_research() is not None:
                break
            async for event in self._judge(question, round_no):
                if isinstance(event, Judged):
                    judged = event
                yield event
            if judged is None or judged.outcome in ("answer", "caveat", "unanswerable"):
                break
            if round_no == limits.max_rounds:
                tracker.hit("max_rounds")
                break
            questions = judged.gaps or [render("research_reconcile", language, contradiction=judged.contradiction)]
            questions = questions[: settings.max_agents]
        async for event in write_report(ctx, settings, tracker, language, self.tasks, question, judged):
            yield event

    # -- plan -----------------------------------------------------------------------------------

    async def _plan(self, question: str, into: list[str]) -> AsyncIterator[Event]:
        ctx, language, limit = self.ctx, self.language, self.settings.max_agents
        system = system_prompt("research_plan", language, ctx.instructions, max_questions=limit)
        messages = [Message.system(system), *ctx.history, Message.user(question)]
        yield Progress(message="planning the research")
        text = ""
        for attempt in (1, 2):
            turn = Turn()
            async for event in llm_turn(ctx.llm, messages, turn, self.tracker):
                yield event
            found = parse_questions(turn.text, limit)
            if found or self.tracker.exhausted() is not None or turn.cut_short:
                break
            text = turn.text
            if attempt == 1:
                yield Progress(message="the research plan could not be read: asking again", level="warning")
                retry = render("research_retry", language, example=_PLAN_EXAMPLE)
                messages = [*messages, Message.assistant(text.strip() or "(an empty reply)"), Message.user(retry)]
        if not found:
            yield Progress(message="no research plan could be read: researching the question itself", level="warning")
            found = [question]
        ctx.steps.append(Step(action="plan", action_input=question, observation="\n".join(found)))
        into.extend(found)

    # -- judge ----------------------------------------------------------------------------------

    async def _judge(self, question: str, round_no: int) -> AsyncIterator[Event]:
        ctx, language, tracker = self.ctx, self.language, self.tracker
        system = system_prompt("research_judge", language, ctx.instructions)
        user = render(
            "research_judge_user",
            language,
            question=question,
            round=round_no,
            max_rounds=self.budget.limits.max_rounds,
            findings=findings_text(self.tasks),
        )
        messages = [Message.system(system), Message.user(user)]
        judgement: Judgement | None = None
        for attempt in (1, 2):
            turn = Turn()
            async for event in llm_turn(ctx.llm, messages, turn, tracker, bounded=False):
                yield event
            judgement = parse_judgement(turn.text, self.settings.max_agents)
            if judgement is not None:
                break
            if attempt == 1:
                yield Progress(message="the judge's reply could not be read: asking again", level="warning")
                retry = render("research_retry", language, example=_JUDGE_EXAMPLE)
                messages = [*messages, Message.assistant(turn.text.strip() or "(an empty reply)"), Message.user(retry)]
        if judgement is None:
            event = Judged(
                round=round_no,
                outcome="caveat",
                reason="the judge's reply could not be read",
                fallback="the judge's reply could not be read twice: the report is written with a caveat",
            )
        else:
            event = Judged(
                round=round_no,
                outcome=judgement.outcome,
                reason=judgement.reason,
                gaps=judgement.gaps,
                contradiction=judgement.contradiction,
            )
        ctx.steps.append(Step(action="judge", action_input=round_no, observation=event.outcome))
        yield event
