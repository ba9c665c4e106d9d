"""The research's tasks: one research question and what its sub-agent produced, and what of a
finished one the run's checkpoints keep so that a resumed run takes it from there.

Its own module because the sub-agents fill the tasks, the report is written from them, and the
checkpoint is their durable form: all three read the same record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from reasonloop.events import Citation, ResearchTask, Step, event_adapter
from reasonloop.kb.base import Hit
from reasonloop.reasoning.base import RunContext

__all__ = ["TaskState", "keep_finished", "restore_finished"]


@dataclass(slots=True)
class TaskState:
    """One research question and what its sub-agent produced."""

    step: str
    question: str
    round: int
    status: str = "queued"
    findings: str = ""
    citations: list[Citation] = field(default_factory=list)
    note: str = ""
    abstained: bool = False

    @property
    def call_id(self) -> str:
        return f"research_{self.step}"

    def cancel(self, note: str) -> ResearchTask:
        """Mark the task cancelled (``note`` says why) and return the event that says so."""
        self.status, self.note = "cancelled", note
        return ResearchTask(
            step=self.step,
            question=self.question,
            round=self.round,
            status="cancelled",
            call_id=self.call_id,
            note=note,
        )


def keep_finished(
    ctx: RunContext,
    key: str,
    task: TaskState,
    running: ResearchTask,
    done: ResearchTask,
    numbers: set[int],
    real_tool_calls: int,
) -> None:
    """Keep a finished sub-research under ``key`` in the run's checkpoints: its two events, the
    passages it numbered (``numbers``) and the real tool calls it made."""
    if ctx.checkpoints is None:
        return
    log = ctx.scope.evidence_log()
    evidence = [[n, log.hits[n].model_dump(mode="json")] for n in sorted(numbers) if n in log.hits]
    value = {
        "running": running.to_dict(),
        "done": done.to_dict(),
        "evidence": evidence,
        "real_tool_calls": real_tool_calls,
        "abstained": task.abstained,
    }
    ctx.checkpoints.keep(key, json.dumps(value, ensure_ascii=False))


def restore_finished(ctx: RunContext, task: TaskState, kept: str) -> list[ResearchTask] | None:
    """The events of a sub-research finished before the run resumed, its evidence numbered again
    and its usage counted (None when the checkpoint cannot be read: it is done again)."""
    try:
        data = json.loads(kept)
        running = event_adapter.validate_python(data["running"])
        done = event_adapter.validate_python(data["done"])
        evidence = [(int(n), Hit.model_validate(hit)) for n, hit in data["evidence"]]
        real = int(data.get("real_tool_calls", 0))
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(running, ResearchTask) or not isinstance(done, ResearchTask):
        return None
    log = ctx.scope.evidence_log()
    for number, hit in evidence:
        log.restore(number, hit)
    if done.usage is not None:
        ctx.usage.add(done.usage)
    ctx.real_tool_calls += real
    task.status, task.findings, task.citations, task.note = done.status, done.findings, done.citations, done.note
    task.abstained = bool(data.get("abstained"))
    ctx.steps.append(Step(action="research", action_input=task.question, observation=task.findings or task.note))
    return [running, done]
