"""The research's sub-agents: one round of research questions, each researched by a tool-using
strategy of its own, at most ``max_concurrency`` at once, within its share of the run's budget.

Its own module because running sub-agents side by side (their queue, their cancellation when the
research time is up, their events renumbered into the run's) is apart from deciding what to research.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from reasonloop.errors import ReasonLoopError
from reasonloop.events import Answer, Event, Report, ResearchTask, Searched, Step, ToolCall, ToolResult
from reasonloop.reasoning.base import Budget, RunContext
from reasonloop.reasoning.steps.citations import markers
from reasonloop.reasoning.strategies.research.budget import ResearchBudget
from reasonloop.reasoning.strategies.research.report import draft_report
from reasonloop.reasoning.strategies.research.settings import ResearchSettings
from reasonloop.reasoning.strategies.research.tasks import TaskState, keep_finished, restore_finished

__all__ = ["SubAgents"]


class SubAgents:
    """Research a round's tasks with sub-agents; ``tasks`` are all the run's (the drafts report them)."""

    def __init__(
        self,
        ctx: RunContext,
        settings: ResearchSettings,
        budget: ResearchBudget,
        language: str,
        tasks: list[TaskState],
    ) -> None:
        self.ctx, self.settings, self.budget, self.language, self.tasks = ctx, settings, budget, language, tasks

    async def research(self, tasks: list[TaskState]) -> AsyncIterator[Event]:
        """Run the round's sub-agents (those finished before a resume are taken from the checkpoints)."""
        ctx, budget = self.ctx, self.budget
        if budget.out_of_research() is not None:
            for task in tasks:
                yield task.cancel(f"not started: {budget.tracker.stop_reason}")
            return
        # Shares of the whole round, before any is restored: a resumed run's sub-agents get the
        # budgets they had, and their events read as they did.
        shares = budget.shares(len(tasks))
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
                left = budget.research_time_left()
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
                budget.tracker.hit("timeout")
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
        left = self.budget.research_time_left()
        left = None if left is None else max(0.001, left)
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
