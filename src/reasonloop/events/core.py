"""The events every run sends, whatever its strategy: its start, what it thinks and does (status lines,
thoughts, tool calls and their results), its answer as it streams and at the end, or its error, and the
takeover of a run whose process died.

The events that give a run's structure (:mod:`reasonloop.events.structure`), a research run's
(:mod:`reasonloop.events.research`) and a person's approval (:mod:`reasonloop.events.approvals`) have
modules of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from reasonloop.events.base import EVENT_SCHEMA, Citation, StopReason, Usage, _EventBase


@dataclass(slots=True, kw_only=True)
class RunStarted(_EventBase):
    type: Literal["run_started"] = "run_started"
    reasoning: str
    """Id of the strategy (or agent) asked for."""
    question: str
    ran: str = ""
    """What actually answers when it differs from ``reasoning`` (for example
    ``"react → evidence answer: base model"``): the model's profile decides it once, when the agent
    is built."""
    event_schema: int = EVENT_SCHEMA
    """The version of the event format the run's events follow (:data:`EVENT_SCHEMA`)."""


@dataclass(slots=True, kw_only=True)
class Progress(_EventBase):
    """A status line for the 'thinking' lane (retrieving, planning, ...)."""

    type: Literal["progress"] = "progress"
    message: str
    level: Literal["info", "warning"] = "info"
    """``warning``: something went wrong and the run went on without it (a reranker that failed)."""


@dataclass(slots=True, kw_only=True)
class Thought(_EventBase):
    type: Literal["thought"] = "thought"
    text: str
    plan_text: bool = False
    """True when ``text`` is a plan also sent as a :class:`Plan` event: the plan's form before event
    schema 2, kept for one release. A reader that draws :class:`Plan` events skips it."""


@dataclass(slots=True, kw_only=True)
class ToolCall(_EventBase):
    type: Literal["tool_call"] = "tool_call"
    call_id: str
    tool: str
    input: dict[str, Any] = field(default_factory=dict)
    step: str | None = None
    """The id of the :class:`Plan` step this call carries out (``E1``), when it follows a plan."""


@dataclass(slots=True, kw_only=True)
class ToolResult(_EventBase):
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    tool: str = ""
    output: str = ""
    """What the model was shown (already trimmed)."""
    error: dict[str, Any] | None = None
    """``{"tool", "error", "type"}`` when the call failed; the run goes on."""
    citations: list[Citation] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class AnswerDelta(_EventBase):
    """A piece of the final answer as it streams."""

    type: Literal["answer_delta"] = "answer_delta"
    text: str


@dataclass(slots=True, kw_only=True)
class Answer(_EventBase):
    """The final answer: exactly one per run that was not stopped or failed."""

    type: Literal["answer"] = "answer"
    text: str
    citations: list[Citation] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    stop_reason: StopReason = "final"
    abstained: bool = False
    """True when the answer does not decide the question: the documents do not say it, or their
    sentences are quoted without a decision."""


@dataclass(slots=True, kw_only=True)
class ErrorEvent(_EventBase):
    """The run failed; ``code`` is a stable error code (see :mod:`reasonloop.errors`)."""

    type: Literal["error"] = "error"
    code: str
    message: str
    usage: Usage = field(default_factory=Usage)
    """What the run consumed before it failed."""


@dataclass(slots=True, kw_only=True)
class Resumed(_EventBase):
    """The process running the run died and ``instance`` took it over: the run goes on from the
    steps it had finished, which are replayed, not done again.

    The answer starts over here: a reader drops the partial answer text it holds (the run's own,
    ``depth`` 0) and builds it again from the answer deltas that follow. Other events the replay
    makes again are not sent twice."""

    type: Literal["resumed"] = "resumed"
    instance: str
    """The server instance that resumed the run."""
    reused_steps: int = 0
    """Finished model and tool calls recorded before the crash, which the run replays."""
