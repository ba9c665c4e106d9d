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

A research question's state and its checkpoint are :mod:`.research_tasks`; the draft and the written
report are :mod:`.research_report`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import ClassVar, Literal

from pydantic import Field

from reasonloop.errors import ReasonLoopError
from reasonloop.events import (
    Answer,
    Event,
    Judged,
    Plan,
    PlannedStep,
    Progress,
    Report,
    ResearchTask,
    Searched,
    Step,
    ToolCall,
    ToolResult,
)
from reasonloop.llm.base import Message
from reasonloop.plugin_table import field_text
from reasonloop.reasoning.base import Budget, Reasoning, ReasoningSettings, RunContext
from reasonloop.reasoning.formats.language import detect_language
from reasonloop.reasoning.formats.prompts import render, system_prompt
from reasonloop.reasoning.formats.research_replies import (
    Judgement,
    parse_judgement,
    parse_questions,
)
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.reasoning.steps.citations import markers
from reasonloop.reasoning.steps.finish import close
from reasonloop.reasoning.steps.intent import needs_no_retrieval
from reasonloop.reasoning.steps.llmcall import Turn, llm_turn
from reasonloop.reasoning.steps.retrieval import direct_answer
from reasonloop.reasoning.strategies.research_report import draft_report, findings_text, write_report
from reasonloop.reasoning.strategies.research_report import render_not_established as render_not_established
from reasonloop.reasoning.strategies.research_tasks import TaskState, keep_finished, restore_finished
from reasonloop.registry import PluginInfo

__all__ = ["ResearchReasoning", "ResearchSettings"]

_JUDGE_EXAMPLE = '{"decision": "answer", "reason": "...", "gaps": [], "contradiction": ""}'
_PLAN_EXAMPLE = '{"questions": ["..."]}'


class ResearchSettings(ReasoningSettings):
    max_rounds: int = Field(
        default=3,
        ge=1,
        le=8,
        **field_text(
            en=("Research rounds", "Most rounds of research; after each one a judge decides whether it is enough."),
            zh=("研究轮数上限", "最多的研究轮数；每轮之后由评判决定是否足够。"),
        ),
    )
    max_agents: int = Field(
        default=4,
        ge=1,
        le=12,
        **field_text(
            en=("Questions per round", "Most research questions (one sub-agent each) in one round."),
            zh=("每轮问题上限", "一轮中最多的研究问题数（每个一个子代理）。"),
        ),
    )
    max_concurrency: int = Field(
        default=3,
        ge=1,
        le=12,
        **field_text(
            en=("Parallel sub-agents", "Most sub-agents researching at once."),
            zh=("并行子代理上限", "同时研究的子代理最多数量。"),
        ),
    )
    agent: Literal["react", "toolcall"] = Field(
        default="react",
        **field_text(
            en=("Sub-agent", "How each sub-agent uses tools: react (any model) or toolcall (native tool calls)."),
            zh=("子代理", "子代理如何使用工具：react（任何模型）或 toolcall（原生工具调用）。"),
        ),
    )
    agent_rounds: int = Field(
        default=4,
        ge=1,
        le=20,
        **field_text(
            en=("Sub-agent rounds", "Most model turns of one sub-agent before it must answer."),
            zh=("子代理轮数上限", "单个子代理必须作答之前最多的模型轮次。"),
        ),
    )
    max_tool_calls: int = Field(
        default=24,
        ge=1,
        **field_text(
            en=("Tool calls", "Most tool calls of the whole run, shared by its sub-agents."),
            zh=("工具调用上限", "整个运行最多的工具调用次数，由子代理分享。"),
        ),
    )
    max_tokens: int | None = Field(
        default=None,
        ge=1,
        **field_text(
            en=("Token budget", "Tokens of the whole run, sub-agents included; empty: no limit."),
            zh=("词元预算", "整个运行（含子代理）的词元数；留空表示不限。"),
        ),
    )
    timeout_s: float | None = Field(
        default=None,
        gt=0,
        **field_text(
            en=("Time limit (s)", "Seconds the whole run may take; the report is written in time; empty: no limit."),
            zh=("时间上限（秒）", "整个运行可用的秒数；报告会按时写出；留空表示不限。"),
        ),
    )
    report_share: float = Field(
        default=0.15,
        ge=0,
        lt=1,
        **field_text(
            en=("Report reserve", "Share of the time and token budgets held back for judging and the report."),
            zh=("报告预留", "为评判和写报告预留的时间与词元预算比例。"),
        ),
    )


class ResearchReasoning(Reasoning):
    """Plan, research in parallel with a shared budget, judge each round, write a cited report."""

    info: ClassVar[PluginInfo] = PluginInfo.declared("reasoning", "research")
    Settings = ResearchSettings
    uses_tools = True

    async def stream(self, question: str) -> AsyncIterator[Event]:
        ctx, settings = self.ctx, self.settings
        language = self.language = ctx.language or detect_language(question)
        self.budget = self._run_budget()
        tracker = self.tracker = BudgetTracker(self.budget, ctx.usage)
        if needs_no_retrieval(question):
            answer = Turn()
            system = system_prompt("chat", language, ctx.instructions)
            async for event in direct_answer(ctx, tracker, ctx.llm, system, ctx.history, question, answer):
                yield event
            yield close(ctx, settings, tracker, answer.text, language)
            return
        reserve = settings.report_share
        self.research_deadline = (
            None if tracker.deadline is None else tracker.deadline - reserve * (self.budget.timeout_s or 0)
        )
        self.token_reserve = int((self.budget.max_tokens or 0) * reserve)
        self.tasks: list[TaskState] = []
        judged: Judged | None = None
        questions: list[str] = []
        async for event in self._plan(question, questions):
            yield event
        for round_no in range(1, self.budget.max_rounds + 1):
            tasks = [TaskState(f"{round_no}.{i}", q, round_no) for i, q in enumerate(questions, 1)]
            self.tasks.extend(tasks)
            yield Plan(
                steps=[PlannedStep(id=t.step, tool="research", input=t.question) for t in tasks], attempt=round_no
            )
            judged = None  # the gaps of the last judgement are this round's questions, not yet unanswered
            async for event in self._research(tasks):
                yield event
            if self._out_of_research() is not None:
                break
            async for event in self._judge(question, round_no):
                if isinstance(event, Judged):
                    judged = event
                yield event
            if judged is None or judged.outcome in ("answer", "caveat", "unanswerable"):
                break
            if round_no == self.budget.max_rounds:
                tracker.hit("max_rounds")
                break
            questions = judged.gaps or [render("research_reconcile", language, contradiction=judged.contradiction)]
            questions = questions[: settings.max_agents]
        async for event in write_report(ctx, settings, tracker, language, self.tasks, question, judged):
            yield event

    # -- budget ---------------------------------------------------------------------------------

    def _run_budget(self) -> Budget:
        s, cap = self.settings, self.ctx.budget
        if cap is None:
            return Budget(
                max_rounds=s.max_rounds, max_tool_calls=s.max_tool_calls, max_tokens=s.max_tokens, timeout_s=s.timeout_s
            )
        return Budget(
            max_rounds=min(s.max_rounds, cap.max_rounds),
            max_tool_calls=min(s.max_tool_calls, cap.max_tool_calls),
            max_tokens=min((t for t in (s.max_tokens, cap.max_tokens) if t is not None), default=None),
            timeout_s=min((t for t in (s.timeout_s, cap.timeout_s) if t is not None), default=None),
        )

    def _out_of_research(self) -> str | None:
        """The limit that ends the research (the report is then written), if one is reached."""
        tracker, usage = self.tracker, self.ctx.usage
        if tracker.stop_reason in ("timeout", "max_tokens"):
            return tracker.stop_reason
        if self.research_deadline is not None and time.monotonic() >= self.research_deadline:
            tracker.hit("timeout")
        elif self.budget.max_tokens is not None and usage.total_tokens >= self.budget.max_tokens - self.token_reserve:
            tracker.hit("max_tokens")
        elif usage.tool_calls >= self.budget.max_tool_calls:
            tracker.hit("max_tool_calls")
        return tracker.stop_reason

    def _shares(self, n: int) -> list[tuple[int | None, int]]:
        """Each of ``n`` sub-agents' (tokens, tool calls): equal shares of what the run has left."""
        usage, budget = self.ctx.usage, self.budget
        tools_left = max(0, budget.max_tool_calls - usage.tool_calls)
        tokens = None
        if budget.max_tokens is not None:
            left = budget.max_tokens - self.token_reserve - usage.total_tokens
            tokens = max(1, left // n)
        return [(tokens, tools_left // n + (1 if i < tools_left % n else 0)) for i in range(n)]

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

    # -- research -------------------------------------------------------------------------------

    async def _research(self, tasks: list[TaskState]) -> AsyncIterator[Event]:
        """Run the round's sub-agents (those finished before a resume are taken from the checkpoints)."""
        ctx = self.ctx
        if self._out_of_research() is not None:
            for task in tasks:
                yield task.cancel(f"not started: {self.tracker.stop_reason}")
            return
        # Shares of the whole round, before any is restored: a resumed run's sub-agents get the
        # budgets they had, and their events read as they did.
        shares = self._shares(len(tasks))
        todo: list[tuple[TaskState, str | None, tuple[int | None, int]]] = []
        for task, share in zip(tasks, shares, strict=True):
            key = None if ctx.checkpoints is None else ctx.checkpoints.key("research", [task.step, task.question])
            kept = None if key is None else ctx.checkpoints.take(key)  # type: ignore[union-attr]
            if kept is not None:
                restored = restore_finished(ctx, task, kept)
                if restored is not None:
                    for event in [*restored, self._draft()]:
                        yield event
                    continue
            if share[1] == 0 and ctx.tools:  # fewer tool calls left than questions
                yield task.cancel("not started: the run's tool calls are spent")
                continue
            todo.append((task, key, share))
        if not todo:
            return
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        gate = asyncio.Semaphore(self.settings.max_concurrency)
        runs = {
            asyncio.create_task(self._sub_research(task, key, share, gate, queue)): task for task, key, share in todo
        }
        running = len(runs)  # each sub-research puts None in the queue when it is over
        try:
            while running:
                left = None if self.research_deadline is None else self.research_deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                try:  # a get cancelled by the timeout leaves its item in the queue
                    event = await asyncio.wait_for(queue.get(), left)
                except TimeoutError:
                    break
                if event is None:
                    running -= 1
                else:
                    yield event
            if running:  # the research time is up: what is still running is cancelled
                self.tracker.hit("timeout")
                late = [run for run in runs if not run.done()]
                for run in late:
                    run.cancel()
                await asyncio.gather(*late, return_exceptions=True)
                while not queue.empty():
                    if (event := queue.get_nowait()) is not None:
                        yield event
                for task in runs.values():
                    if task.status in ("queued", "running"):
                        yield task.cancel("the research time ran out")
            for run in runs:  # a sub-research that broke (not a failed sub-agent: a fault) is raised
                if not run.cancelled() and run.exception() is not None:
                    raise run.exception()  # type: ignore[misc]
        finally:
            leftovers = [r for r in runs if not r.done()]
            for run in leftovers:
                run.cancel()
            if leftovers:
                await asyncio.gather(*leftovers, return_exceptions=True)

    def _draft(self) -> Report:
        return draft_report(self.tasks, self.language)

    def _child(self, tokens: int | None, tool_calls: int) -> RunContext:
        ctx = self.ctx
        left = None if self.research_deadline is None else max(0.001, self.research_deadline - time.monotonic())
        budget = Budget(
            max_rounds=self.settings.agent_rounds, max_tool_calls=tool_calls, max_tokens=tokens, timeout_s=left
        )
        return RunContext(
            llm=ctx.llm,
            tools=ctx.tools,
            retrievers=ctx.retrievers,
            budget=budget,
            instructions=ctx.instructions,
            language=self.language,
            user_id=ctx.user_id,
            conversation_id=ctx.conversation_id,
            run_id=ctx.run_id,
            depth=ctx.depth + 1,
            services=ctx.services,
            scope=ctx.scope,
        )

    async def _sub_research(
        self,
        task: TaskState,
        key: str | None,
        share: tuple[int | None, int],
        gate: asyncio.Semaphore,
        queue: asyncio.Queue[Event | None],
    ) -> None:
        """One sub-agent: its events go to ``queue``, its findings into ``task``, then a checkpoint;
        ``None`` goes to the queue when it is over, however it ended."""
        try:
            await self._run_sub_agent(task, key, share, gate, queue)
        finally:
            queue.put_nowait(None)

    async def _run_sub_agent(
        self,
        task: TaskState,
        key: str | None,
        share: tuple[int | None, int],
        gate: asyncio.Semaphore,
        queue: asyncio.Queue[Event | None],
    ) -> None:
        from reasonloop.reasoning.strategies.react import ReActReasoning  # siblings: one layer
        from reasonloop.reasoning.strategies.toolcall import ToolCallReasoning

        async with gate:
            tokens, tool_calls = share
            running = ResearchTask(
                step=task.step,
                question=task.question,
                round=task.round,
                status="running",
                call_id=task.call_id,
                budget_tokens=tokens,
                budget_tool_calls=tool_calls,
            )
            queue.put_nowait(running)
            task.status = "running"
            child = self._child(tokens, tool_calls)
            kind = ToolCallReasoning if self.settings.agent == "toolcall" else ReActReasoning
            strategy = kind({"max_evidence_tokens": self.settings.max_evidence_tokens}, child)
            numbers: set[int] = set()
            answer: Answer | None = None
            try:
                async for event in strategy.stream(task.question):
                    event.depth = max(event.depth, child.depth)
                    # Call ids made unique in the run (sub-agents number their calls alike), and the
                    # events of an agent a sub-agent called still name the call that started it.
                    if event.depth == child.depth:
                        event.parent_call_id = event.parent_call_id or task.call_id
                        if isinstance(event, (ToolCall, ToolResult)):
                            event.call_id = f"{task.step}:{event.call_id}"
                    elif event.depth == child.depth + 1 and event.parent_call_id:
                        event.parent_call_id = f"{task.step}:{event.parent_call_id}"
                    if isinstance(event, (ToolResult, Searched)):
                        numbers.update(c.marker for c in event.citations if c.marker is not None)
                    if isinstance(event, Answer) and event.depth == child.depth:
                        answer = event
                    queue.put_nowait(event)
            except ReasonLoopError as exc:
                task.status, task.note = "failed", exc.message
            finally:
                self.ctx.usage.add(child.usage)
                self.ctx.real_tool_calls += child.real_tool_calls
            if answer is not None and task.status == "running":
                task.status, task.findings, task.citations = "done", answer.text, answer.citations
                task.abstained = answer.abstained
                numbers.update(markers(answer.text))
            elif task.status == "running":
                task.status, task.note = "failed", "the sub-agent gave no answer"
            done = ResearchTask(
                step=task.step,
                question=task.question,
                round=task.round,
                status="done" if task.status == "done" else "failed",
                call_id=task.call_id,
                findings=task.findings,
                citations=task.citations,
                budget_tokens=tokens,
                budget_tool_calls=tool_calls,
                usage=child.usage.copy(),
                note=task.note,
            )
            self.ctx.steps.append(
                Step(action="research", action_input=task.question, observation=task.findings or task.note)
            )
            queue.put_nowait(done)
            queue.put_nowait(self._draft())
            if key is not None:
                keep_finished(self.ctx, key, task, running, done, numbers, child.real_tool_calls)

    # -- judge ----------------------------------------------------------------------------------

    async def _judge(self, question: str, round_no: int) -> AsyncIterator[Event]:
        ctx, language, tracker = self.ctx, self.language, self.tracker
        system = system_prompt("research_judge", language, ctx.instructions)
        user = render(
            "research_judge_user",
            language,
            question=question,
            round=round_no,
            max_rounds=self.budget.max_rounds,
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
