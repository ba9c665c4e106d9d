"""What every event shares: the common fields and the one wire format, the format's version, and
the values events carry (what a run consumed, a citation, why a run ended).

Its own module because every kind of event builds on it: the modules of the kinds import it, and
it imports none of them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter
from pydantic_core import SchemaSerializer

EVENT_SCHEMA = 3
"""The version of the event format. 2 added :class:`Plan`, :class:`Searched`, ``final``,
``ToolCall.step`` and ``Thought.plan_text`` (:class:`Resumed` and :class:`Route` came within it); 3 added
:class:`ApprovalRequested` and :class:`ApprovalDecided`; a change that a reader written for one version
cannot read raises it (docs/server.md, "Events")."""

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
    sub-agent's calls); ``tool_calls`` counts the tool calls this run itself executed, and
    ``searches`` the knowledge-base searches it made itself, outside a tool round (qa's retrieval,
    decompose's sub-questions: :class:`Searched`), which are not tool calls.
    """

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: int = 0
    searches: int = 0

    def copy(self) -> Usage:
        """A snapshot that later counting does not change."""
        return Usage(self.llm_calls, self.prompt_tokens, self.completion_tokens, self.tool_calls, self.searches)

    def add(self, other: Usage, *, tool_calls: bool = True) -> None:
        """Accumulate ``other`` into this one in place; ``tool_calls=False``: its model usage only
        (a sub-agent's tool calls and searches are its own)."""
        self.llm_calls += other.llm_calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        if tool_calls:
            self.tool_calls += other.tool_calls
            self.searches += other.searches

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
    final: bool = False
    """True on the one event that ends the run's stream (its own answer or error): nothing of the
    run follows it. Set with the seq (:func:`number`), by the rule of :func:`ends_run`."""

    def to_json(self) -> str:
        """The event as JSON, the one format of every surface and store."""
        return _serializer(type(self)).to_json(self).decode()  # type: ignore[no-any-return]

    def to_dict(self) -> dict[str, Any]:
        """The event as JSON-ready Python data."""
        return _serializer(type(self)).to_python(self, mode="json")  # type: ignore[no-any-return]


_SERIALIZERS: dict[type, SchemaSerializer] = {}


def _serializer(cls: type) -> SchemaSerializer:
    # One serialiser per event class, called directly: a union's serialiser would first work
    # out which member it has, and TypeAdapter.dump_json adds a layer of keyword handling.
    serializer = _SERIALIZERS.get(cls)
    if serializer is None:
        serializer = _SERIALIZERS[cls] = TypeAdapter(cls).serializer
    return serializer
