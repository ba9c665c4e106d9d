"""The event stream: what a run says while it works, and what it returns at the end.

A run is an async iterator of :data:`Event`. Strategies create events without ``run_id``
and ``seq``; the runner stamps them (see :class:`EventStamper`), so every event a surface
sees carries ``run_id``, a per-run ``seq`` starting at 1, and ``ts`` (Unix seconds).

Events are plain dataclasses; every surface serialises them with ``to_json()`` and reads
them back through :data:`event_adapter`, so the JSON on SSE, WebSocket and in the run
store is one format::

    >>> ev = Thought(text="look it up")
    >>> event_adapter.validate_json(ev.to_json()) == ev
    True
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_serializer
from pydantic_core import SchemaSerializer

__all__ = [
    "Answer",
    "AnswerDelta",
    "Citation",
    "ErrorEvent",
    "Event",
    "EventStamper",
    "Progress",
    "Resumed",
    "RunMeta",
    "RunResult",
    "RunStarted",
    "Step",
    "StopReason",
    "Thought",
    "ToolCall",
    "ToolResult",
    "Usage",
    "ends_run",
    "event_adapter",
    "event_list_adapter",
]

StopReason = Literal[
    "final",
    "max_rounds",
    "max_tool_calls",
    "max_tokens",
    "timeout",
    "length",
    "stopped",
    "guard",
    "error",
    "interrupted",
]
"""Why a run ended. ``final``: the strategy answered on its own; a budget name: that
budget ran out and a last tool-less call answered; ``length``: the answer's model call hit its
output limit (``max_tokens`` of the model or of the run), so the answer may be cut short; ``stopped``: a stop request;
``guard``: a policy replaced the answer; ``error``: the run failed; ``interrupted``:
the process running it died (set by run stores on recovery)."""


# A plain dataclass: its counters are bumped several times per step; pydantic validates
# and serialises it wherever it is part of a model (Answer, RunResult).
@dataclass(slots=True)
class Usage:
    """What a run (or one LLM call) consumed.

    ``llm_calls`` and the token counts include the models the run's tools called (a
    sub-agent's calls); ``tool_calls`` counts the tool calls this run itself executed.
    """

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: int = 0

    def copy(self) -> Usage:
        """A snapshot that later counting does not change."""
        return Usage(self.llm_calls, self.prompt_tokens, self.completion_tokens, self.tool_calls)

    def add(self, other: Usage, *, tool_calls: bool = True) -> None:
        """Accumulate ``other`` into this one in place (its model usage only, without ``tool_calls``)."""
        self.llm_calls += other.llm_calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        if tool_calls:
            self.tool_calls += other.tool_calls

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Citation(BaseModel):
    """A piece of evidence an answer rests on: data, not markup."""

    marker: int | None = None
    """The number used inline in the answer, as in ``[1]``."""
    chunk_id: str | None = None
    document_id: str | None = None
    source: str = ""
    """Path or URL of the document."""
    title: str | None = None
    page: int | None = None
    start: int | None = None
    """Character offset of the quote in the text of its page (``GET /v1/documents/{id}/pages/{page}``),
    or in the document's text when it has no pages (``page`` null: the text is page 1). In an
    answer's citations the quote is the exact supporting sentence(s): ``page_text[start:end] == quote``."""
    end: int | None = None
    quote: str = ""
    """The quoted text: in an answer, the sentence(s) the answer rests on; in a search result, the
    passage's opening (trimmed)."""
    chunk_start: int | None = None
    """Where the passage (chunk) holding the quote starts in the same text, so a viewer can show the
    quote highlighted inside its passage."""
    chunk_end: int | None = None
    score: float | None = None


@dataclass(slots=True, kw_only=True)
class _EventBase:
    # Plain dataclasses, not validating models: a run makes several events per step and
    # validating what our own code just built is pure cost. Pydantic validates events that
    # come from outside (event_adapter.validate_json) and serialises every one of them.
    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    run_id: str = ""
    """Id of the run this event belongs to (set by the runner)."""
    seq: int = 0
    """1, 2, 3, ... within a run (set by the runner). Resume points refer to it."""
    ts: float = field(default_factory=time.time)
    """Wall-clock time the event was made, Unix seconds."""
    depth: int = 0
    """0 for the run itself; 1 for the events of a sub-agent it called, and so on."""
    parent_call_id: str | None = None
    """For nested events: the tool call of the parent run that started the sub-agent."""

    def to_json(self) -> str:
        """The event as JSON, the one format of every surface and store."""
        return _serializer(type(self)).to_json(self).decode()  # type: ignore[no-any-return]

    def to_dict(self) -> dict[str, Any]:
        """The event as JSON-ready Python data."""
        return _serializer(type(self)).to_python(self, mode="json")  # type: ignore[no-any-return]


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


@dataclass(slots=True, kw_only=True)
class ToolCall(_EventBase):
    type: Literal["tool_call"] = "tool_call"
    call_id: str
    tool: str
    input: dict[str, Any] = field(default_factory=dict)


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


Event = Annotated[
    RunStarted | Progress | Thought | ToolCall | ToolResult | AnswerDelta | Answer | ErrorEvent | Resumed,
    Field(discriminator="type"),
]
event_adapter: TypeAdapter[Event] = TypeAdapter(Event)
"""Validates events from JSON (stored, or received) into their classes."""
event_list_adapter: TypeAdapter[list[Event]] = TypeAdapter(list[Event])
"""Validates a JSON array of events in one call."""

_SERIALIZERS: dict[type, SchemaSerializer] = {}


def _serializer(cls: type) -> SchemaSerializer:
    # One serialiser per event class, called directly: a union's serialiser would first work
    # out which member it has, and TypeAdapter.dump_json adds a layer of keyword handling.
    serializer = _SERIALIZERS.get(cls)
    if serializer is None:
        serializer = _SERIALIZERS[cls] = TypeAdapter(cls).serializer
    return serializer


def ends_run(event: Event, depth: int = 0) -> bool:
    """Whether ``event`` ends the stream of the run at ``depth``: its answer or its error (a
    sub-agent's, at a greater depth, ends only the sub-run)."""
    return isinstance(event, (Answer, ErrorEvent)) and event.depth == depth  # a tuple: a union checks slower


class EventStamper:
    """Gives each event of one run its ``run_id`` and next ``seq``.

    Nested (sub-agent) events keep their own run id but get a seq in the parent's
    sequence, so a subscriber sees one gap-free numbering per stream.
    """

    def __init__(self, run_id: str, start: int = 0) -> None:
        self.run_id = run_id
        self.seq = start

    def __call__(self, event: Event) -> Event:
        self.seq = seq = self.seq + 1
        if not event.run_id:
            event.run_id = self.run_id
        event.seq = seq
        return event


# A plain dataclass: strategies make one per tool call; pydantic validates and serialises
# it wherever it is part of a model (RunResult).
@dataclass(slots=True)
class Step:
    """One action a strategy took and what it observed."""

    action: str
    action_input: Any = None
    """What the tool received."""
    observation: str = ""
    error: dict[str, Any] | None = None
    planned_input: Any = None
    """The input as a plan wrote it, before earlier steps' evidence was put in (ReWOO's
    ``#E1`` references); None when the strategy had no plan."""


class RunMeta(BaseModel):
    run_id: str
    reasoning: str
    ran: str = ""
    """What actually answered, when it differs from ``reasoning`` (see :attr:`RunStarted.ran`)."""
    model: str = ""
    """The model that answered, ``provider:model``."""
    model_chosen_by: str = ""
    """Set when ``[llm] provider = "auto"`` picked a model served on this machine: which, and how
    to choose another."""
    started_at: float
    ended_at: float | None = None


class RunResult(BaseModel):
    """Everything a caller needs after a run: the answer, its evidence and the trace."""

    content: str
    citations: list[Citation] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason = "final"
    abstained: bool = False
    """The answer says the documents do not decide the question (see :attr:`Answer.abstained`)."""
    meta: RunMeta
    error: dict[str, Any] | None = None

    @field_serializer("steps")
    def _steps(self, steps: list[Step]) -> list[dict[str, Any]]:
        """Each step as ``{action, action_input, observation, error}``, with ``planned_input`` only
        where a plan wrote the input."""
        out = []
        for step in steps:
            item = {"action": step.action, "action_input": step.action_input, "observation": step.observation}
            item["error"] = step.error
            if step.planned_input is not None:
                item["planned_input"] = step.planned_input
            out.append(item)
        return out
