"""What the runs layer records: the request that starts a run, and the run's record.

A run moves ``queued -> running -> completed | failed | stopped``; a run whose process died
becomes ``interrupted`` when a server next starts. :class:`RunRecord` is what the run store
keeps and what ``GET /v1/runs/{id}`` returns (with the :class:`~reasonloop.events.RunResult`).
"""

from __future__ import annotations

import os
import secrets
import time
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from reasonloop.events import (
    Answer,
    AnswerDelta,
    ErrorEvent,
    Event,
    Report,
    Resumed,
    RunMeta,
    RunResult,
    RunStarted,
    Searched,
    Step,
    ToolCall,
    ToolResult,
    Usage,
    ends_run,
)
from reasonloop.llm.base import Message
from reasonloop.llm.sampling import Sampling
from reasonloop.reasoning.base import Budget
from reasonloop.unicode_text import CheckedText

__all__ = [
    "MAX_SEQ",
    "TERMINAL",
    "ConversationRecord",
    "RunAsk",
    "RunRecord",
    "RunRequest",
    "RunStatus",
    "answer_status",
    "check_record_fields",
    "is_terminal_event",
    "new_id",
    "partial_content",
    "result_from_events",
]

RunStatus = Literal["queued", "running", "awaiting_approval", "completed", "failed", "stopped", "interrupted"]
"""``awaiting_approval``: a tool call waits for a person (:mod:`reasonloop.runs.approvals`); the run
is in flight, as ``running``."""
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "stopped", "interrupted"})
"""Statuses a run never leaves."""


MAX_SEQ = 2**63
"""Seqs are below this: every store keeps them as 64-bit signed integers."""


def new_id(prefix: str) -> str:
    """An id such as ``run_19ad3c5e2f1b6e0c4a9d27f3e81`` (the prefix says what it names): the
    creation time in milliseconds (11 hex digits), then 64 random bits.

    Why time first: the events of the runs in flight then sit together at the end of the store's
    index (benchmarks/README.md, "Design notes: time-ordered ids").
    """
    try:
        random_part = _RANDOM_HEX.pop()  # one atomic step: no two callers (threads) get the same
    except IndexError:
        _RANDOM_HEX.extend(_random_hex_batch())
        random_part = _RANDOM_HEX.pop()
    return f"{prefix}_{time.time_ns() // 1_000_000:011x}{random_part}"


_RANDOM_HEX: list[str] = []
"""64 random bits each, in hex, read from the OS 512 at a time. Emptied in a forked child,
which must not reuse its parent's."""
os.register_at_fork(after_in_child=_RANDOM_HEX.clear)


def _random_hex_batch() -> list[str]:
    digits = secrets.token_hex(8 * 512)
    return [digits[i : i + 16] for i in range(0, len(digits), 16)]


is_terminal_event = ends_run
"""Whether an event ends its run's stream (the answer or the error of the top-level run)."""


class RunAsk(CheckedText):
    """What a caller asks for: the body of ``POST /v1/runs`` and of a WebSocket ``ask`` frame."""

    question: str = Field(json_schema_extra={"minLength": 1, "pattern": r"\S"})
    """Refused when empty or only whitespace."""
    reasoning: str | None = None
    """Strategy id; ``None`` lets the runner choose its default."""
    mode: str | None = None
    """A thinking mode (``fast``, ``balanced``, ``deep``, ``research``, ``auto``) instead of
    ``reasoning``: naming both is refused (docs/reasoning.md, "Thinking modes")."""
    budget: Budget | None = None
    """The run's limits (``max_tokens``, ``timeout_s``, ``max_rounds``, ``max_tool_calls``) over the
    strategy's own; the ``auto`` mode routes within them."""
    agent: str | None = None
    """A configured agent id (wins over ``reasoning`` and ``mode``)."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """Strategy settings, validated against the strategy's settings schema."""
    conversation_id: str | None = None
    """Continue this conversation (its messages become the history); ``None`` starts one."""
    sampling: Sampling | None = None
    """The run's own ``max_tokens`` / ``temperature`` for its model calls (unset: the model's configuration)."""
    model: str | None = None
    """A model served on the server's machine, by the ``id`` ``GET /v1/llm`` lists (``None``: the
    server's model). Offered only while ``[llm] provider = "auto"`` looks for served models."""

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the question is empty")
        return value


class RunRequest(RunAsk):
    """A run to start: what was asked, and what the server and the run manager fill in."""

    run_id: str = ""
    tenant: str = "default"
    reader: dict[str, Any] | None = None
    """Who the run reads the knowledge base as (:meth:`reasonloop.kb.access.Reader.to_dict`, set by
    the server from the caller's key; kept with the run, so a resumed run reads as its caller).
    ``None``: every document of the tenant (a run asked through the library or the CLI, or one
    recorded before runs kept their reader)."""
    history: list[Message] = Field(default_factory=list)
    trace_context: dict[str, str] | None = None
    """The W3C trace headers (``traceparent``, ``tracestate``) of the request that asked: a traced
    run is a child of the caller's trace."""


class RunRecord(BaseModel):
    """A run as stored: identity, status and what it has produced so far."""

    run_id: str
    tenant: str = "default"
    conversation_id: str | None = None
    reasoning: str = ""
    question: str = ""
    status: RunStatus = "queued"
    created_at: float = Field(default_factory=time.time)
    started_at: float | None = None
    ended_at: float | None = None
    last_seq: int = 0
    content: str = ""
    """The answer so far (partial while running or when stopped/interrupted)."""
    stop_reason: str | None = None
    error: dict[str, Any] | None = None
    instance: str = ""
    """The server instance executing the run."""
    reader: dict[str, Any] | None = None
    """Who asked, as the reader of the knowledge base (:attr:`RunRequest.reader`): a caller who may
    not read everything sees only the runs it asked itself."""

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL


_RECORD_FIELDS = frozenset(RunRecord.model_fields)
"""Looked up once: pydantic's ``model_fields`` is a property that costs microseconds per read."""


def answer_status(answer: Answer) -> RunStatus:
    """The status a run ends in with ``answer``: ``stopped``, ``interrupted`` or ``completed``."""
    if answer.stop_reason == "stopped":
        return "stopped"
    return "interrupted" if answer.stop_reason == "interrupted" else "completed"


def conversation_turn(record: RunRecord, answer: str, answered_at: float) -> list[dict[str, Any]] | None:
    """The messages a run adds to its conversation (its question and ``answer``), or None when
    it adds none: it has no conversation, or ended with no answer text short of completing."""
    if not record.conversation_id or not (answer or record.status == "completed"):
        return None
    return [
        {"role": "user", "content": record.question, "run_id": record.run_id, "ts": record.created_at},
        {"role": "assistant", "content": answer, "run_id": record.run_id, "ts": answered_at},
    ]


def check_record_fields(fields: dict[str, Any]) -> None:
    """Raise ValueError naming any of ``fields`` that :class:`RunRecord` does not have (for ``update_run``)."""
    unknown = fields.keys() - _RECORD_FIELDS
    if unknown:
        raise ValueError(f"RunRecord has no field(s) {', '.join(sorted(unknown))}")


class ConversationRecord(BaseModel):
    """A conversation: an ordered list of messages that runs continue."""

    conversation_id: str
    tenant: str = "default"
    title: str = ""
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)
    messages: list[dict[str, Any]] = Field(default_factory=list)
    """``{"role", "content", "run_id", "ts"}`` in order (only filled when asked for)."""


def partial_content(events: list[Event]) -> str:
    """The answer text the events carry: the final answer if there is one, else the deltas so far.

    A resumed run's answer starts over at each :class:`~reasonloop.events.Resumed`: the deltas
    after the last one that has any (a run stopped right after it was resumed keeps the text it had).
    A research run that has not started writing its report keeps its latest draft
    (:class:`~reasonloop.events.Report`, made from the findings so far).
    """
    for event in reversed(events):
        if isinstance(event, Answer) and event.depth == 0:
            return event.text
    parts: list[str] = []
    for event in reversed(events):
        if isinstance(event, AnswerDelta) and event.depth == 0:
            parts.append(event.text)
        elif isinstance(event, Resumed) and parts:
            break
        elif isinstance(event, Report) and event.depth == 0:
            if parts:  # the report being written after its draft
                break
            return event.text
    return "".join(reversed(parts))


def result_from_events(record: RunRecord, events: list[Event]) -> RunResult:
    """Rebuild a :class:`RunResult` from a run's events (the store keeps events, not results)."""
    steps: list[Step] = []
    calls: dict[str, Step] = {}
    answer: Answer | None = None
    error: dict[str, Any] | None = record.error
    usage = Usage()
    ran = ""
    for event in events:
        if event.depth != 0:
            continue
        if isinstance(event, RunStarted):
            ran = event.ran
        elif isinstance(event, ToolCall):
            step = Step(action=event.tool, action_input=event.input)
            calls[event.call_id] = step
            steps.append(step)
        elif isinstance(event, ToolResult):
            step = calls.get(event.call_id) or Step(action=event.tool)
            if event.call_id not in calls:
                steps.append(step)
            step.observation, step.error = event.output, event.error
        elif isinstance(event, Searched):
            steps.append(Step(action="docsearch", action_input=event.request(), observation=event.evidence))
        elif isinstance(event, Answer):
            answer = event
        elif isinstance(event, ErrorEvent):
            error = {"code": event.code, "message": event.message}
            usage = event.usage
    meta = RunMeta(
        run_id=record.run_id,
        reasoning=record.reasoning,
        ran=ran,
        started_at=record.started_at or record.created_at,
        ended_at=record.ended_at,
    )
    if answer is not None:
        return RunResult(
            content=answer.text,
            citations=answer.citations,
            steps=steps,
            usage=answer.usage,
            stop_reason=answer.stop_reason,
            abstained=answer.abstained,
            meta=meta,
            error=error,
        )
    stop_reason: Any = record.stop_reason or ("error" if error else "final")
    return RunResult(
        content=partial_content(events), steps=steps, usage=usage, stop_reason=stop_reason, meta=meta, error=error
    )
