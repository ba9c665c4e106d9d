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

A run's structure is data: a :class:`Plan` lists the steps a strategy means to take (ReWOO's
plan, decompose's sub-questions) and the calls that carry them out name their step; a search the
strategy makes itself, outside a tool round, is a :class:`Searched`, not a tool call. The event
that ends a run's stream says so (``final``). :data:`EVENT_SCHEMA` numbers this format
(docs/server.md lists every event and its fields).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_serializer
from pydantic_core import SchemaSerializer

__all__ = [
    "EVENT_SCHEMA",
    "Answer",
    "AnswerDelta",
    "ApprovalDecided",
    "ApprovalRequested",
    "Citation",
    "ErrorEvent",
    "Event",
    "EventStamper",
    "Judged",
    "Plan",
    "PlannedStep",
    "Progress",
    "Report",
    "ReportSection",
    "ResearchTask",
    "Resumed",
    "Route",
    "RouteName",
    "RunMeta",
    "RunResult",
    "RunStarted",
    "Searched",
    "Step",
    "StopReason",
    "Thought",
    "ToolCall",
    "ToolResult",
    "Usage",
    "ends_run",
    "event_adapter",
    "event_list_adapter",
    "number",
]

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


@dataclass(slots=True)
class PlannedStep:
    """One step of a :class:`Plan`."""

    id: str
    """The step's id as the plan names it: ``E1`` (ReWOO), ``1`` (decompose's first sub-question)."""
    tool: str
    """The tool the step calls, or ``search`` for a search the strategy makes itself (a
    decompose sub-question's, reported by a :class:`Searched` event)."""
    input: str
    """The input as planned: references to earlier steps (``#E1``, ``#1``) are filled in with
    their results when the step runs."""
    depends_on: list[str] = field(default_factory=list)
    """The ids of the earlier steps whose results the input uses: the step runs after them."""
    reason: str = ""
    """What the step is for, when the plan says (ReWOO's ``Plan:`` line)."""
    problem: str | None = None
    """Why the step cannot run (an unknown tool, a reference to a later step): it fails unrun."""

    def line(self) -> str:
        """The step in one line, as a trace shows it: ``#E2 lookup: #E1 and sea (after #E1)``."""
        after = f" (after {', '.join('#' + d for d in self.depends_on)})" if self.depends_on else ""
        return f"#{self.id} {self.tool}: {self.input}{after}"


@dataclass(slots=True, kw_only=True)
class Plan(_EventBase):
    """The steps a strategy means to take, before it takes them: ReWOO's plan, decompose's
    sub-questions. Each step is carried out by a :class:`ToolCall` (or a :class:`Searched`)
    naming it in ``step``."""

    type: Literal["plan"] = "plan"
    steps: list[PlannedStep] = field(default_factory=list)
    attempt: int = 1
    """1 for the first plan; 2 for a plan written again (ReWOO replans after failed steps): its
    steps replace the earlier plan's, and may reuse their ids."""


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
class Searched(_EventBase):
    """A search of the knowledge base the strategy made itself, outside a tool round (qa's
    retrieval, a decompose sub-question's): not a tool call, and not counted as one
    (:attr:`Usage.searches` counts it)."""

    type: Literal["searched"] = "searched"
    query: str
    step: str | None = None
    """The id of the :class:`Plan` step it carries out (a decompose sub-question's ``1``)."""
    queries: list[str] = field(default_factory=list)
    """Other phrasings of the query searched with it (multi-query)."""
    hypothetical: list[str] = field(default_factory=list)
    """Hypothetical answers searched by their meaning (HyDE)."""
    top_k: int = 0
    hits: int = 0
    """How many passages were found (the hit lists of every query fused)."""
    hit_ids: list[str] = field(default_factory=list)
    """Their chunk ids, best first."""
    evidence: str = ""
    """The passages as the model was shown them, numbered (trimmed to the evidence budget)."""
    citations: list[Citation] = field(default_factory=list)
    """The passages shown, as citations (their ``marker`` is their number in ``evidence``)."""

    def request(self) -> dict[str, Any]:
        """What was searched, as a step's ``action_input``: ``query`` and ``top_k``, with the other
        phrasings (``queries``) and the hypothetical answer (``hyde``) when there were any."""
        out: dict[str, Any] = {"query": self.query, "top_k": self.top_k}
        if self.queries:
            out["queries"] = self.queries
        if self.hypothetical:
            out["hyde"] = self.hypothetical[0]
        return out


RouteName = Literal["none", "single", "multi_hop", "research"]
"""How much searching a question needs: none, one search, several hops, a research run."""


@dataclass(slots=True, kw_only=True)
class Route(_EventBase):
    """The route the ``auto`` mode chose for the question, and why, before the chosen strategy's
    events (which follow in the same run)."""

    type: Literal["route"] = "route"
    route: RouteName
    strategy: str
    """The strategy id that answers (``""`` for the route ``none``: one answer without searching)."""
    reason: str = ""
    """Why, in a few words: the model's own reason, or the features the rule saw."""
    decided_by: Literal["model", "rule"] = "rule"
    """``model``: the model's JSON decision; ``rule``: the fallback rule (the model did not answer
    in the format, refused, or was not asked)."""
    wanted: RouteName | None = None
    """The route decided before the budget was applied, when the budget ruled it out."""


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


ResearchStatus = Literal["running", "done", "failed", "cancelled"]
"""Where a research sub-agent is: ``running`` (it has its budget and works), ``done`` (its findings
are in), ``failed`` (it ended without findings: ``note`` says why) or ``cancelled`` (the run's time
ran out, or it was stopped, before it finished)."""

JudgeOutcome = Literal["answer", "caveat", "gap", "reconcile", "unanswerable"]
"""What the sufficiency judge decided after a round of research."""


@dataclass(slots=True, kw_only=True)
class ResearchTask(_EventBase):
    """One research question of a ``research`` run and its sub-agent's state, sent as it changes.

    The question is a step of the run's :class:`Plan` (``step``); the sub-agent's own events (its
    tool calls, its answer) follow at ``depth + 1`` with ``parent_call_id`` equal to ``call_id``."""

    type: Literal["research_task"] = "research_task"
    step: str
    """The plan step this question is (``1.2``: round 1, question 2)."""
    question: str
    round: int = 1
    status: ResearchStatus = "running"
    call_id: str = ""
    """The ``parent_call_id`` of the sub-agent's events."""
    findings: str = ""
    """``done``: what the sub-agent found, with ``[n]`` markers of the run's evidence."""
    citations: list[Citation] = field(default_factory=list)
    """``done``: the evidence the findings cite, each quoting its supporting sentence."""
    budget_tokens: int | None = None
    """The tokens this sub-agent may spend: its share of what the run had left (None: no limit)."""
    budget_tool_calls: int = 0
    """The tool calls it may make: its share of the run's."""
    usage: Usage | None = None
    """``done``/``failed``/``cancelled``: what it consumed."""
    note: str = ""
    """Why it failed or was cancelled."""


@dataclass(slots=True, kw_only=True)
class Judged(_EventBase):
    """The sufficiency judge's decision after a round of research."""

    type: Literal["judged"] = "judged"
    round: int
    outcome: JudgeOutcome
    """``answer``: the findings answer the question; ``caveat``: they answer it with a stated
    limitation; ``gap``: named pieces are missing and are researched next; ``reconcile``: findings
    contradict each other and the contradiction is researched next; ``unanswerable``: the documents
    cannot answer it."""
    reason: str = ""
    gaps: list[str] = field(default_factory=list)
    """The missing pieces (``gap``), each researched as a follow-up question."""
    contradiction: str = ""
    """What contradicts what (``reconcile``)."""
    fallback: str = ""
    """Non-empty when the judge's reply could not be read (even when asked again): what the run did
    instead. Empty for a decision the judge made."""


@dataclass(slots=True)
class ReportSection:
    """One section of a research :class:`Report`."""

    title: str
    text: str
    """Its text with ``[n]`` markers (the report's ``citations``)."""


@dataclass(slots=True, kw_only=True)
class Report(_EventBase):
    """A research run's report: sections, what could not be established, the citations.

    A ``partial`` report is a draft made from the findings so far, without a model call, after
    each round: a run stopped or cut short keeps it. The last report (``partial`` false) comes just
    before the run's :class:`Answer`, whose text is the report's."""

    type: Literal["report"] = "report"
    sections: list[ReportSection] = field(default_factory=list)
    unestablished: list[str] = field(default_factory=list)
    """What the research could not establish."""
    citations: list[Citation] = field(default_factory=list)
    outcome: JudgeOutcome | None = None
    """The judge's last decision (None: the report was written before any)."""
    partial: bool = False
    text: str = ""
    """The whole report as markdown (sections, then what could not be established)."""


@dataclass(slots=True, kw_only=True)
class ApprovalRequested(_EventBase):
    """A tool call waits for a person to approve it: the run is ``awaiting_approval`` until someone
    answers (``POST /v1/runs/{id}/approvals/{approval_id}``, a WebSocket ``approve`` frame, MCP,
    the web UI or the CLI), and its time budget does not run meanwhile."""

    type: Literal["approval_requested"] = "approval_requested"
    approval_id: str
    """What an answer names (the same after the run resumes elsewhere)."""
    call_id: str
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    """The arguments the model asked for."""
    reason: str = ""
    """Why approval is needed (the policy that asks for it)."""
    schema: dict[str, Any] = field(default_factory=dict)
    """The tool's arguments' JSON schema: modified arguments must validate against it."""
    expires_at: float | None = None
    """When the call is rejected unanswered (Unix seconds); None: it waits for an answer."""


@dataclass(slots=True, kw_only=True)
class ApprovalDecided(_EventBase):
    """A person (or the timeout) decided on a tool call that waited: who, when, what ran."""

    type: Literal["approval_decided"] = "approval_decided"
    approval_id: str
    call_id: str
    tool: str
    decision: Literal["confirm", "modify", "reject"]
    arguments_asked: dict[str, Any] = field(default_factory=dict)
    arguments_run: dict[str, Any] | None = None
    """The arguments the tool ran with (None when rejected)."""
    reason: str = ""
    """The approver's reason (a rejection's is what the model reads)."""
    by: dict[str, Any] = field(default_factory=dict)
    """Who decided: ``key`` (the API key's name), ``tenant``, ``principal`` (when the key names
    one) and ``via`` (``rest``, ``ws``, ``mcp``, ``web``, ``cli``, ``timeout``)."""
    decided_at: float = 0.0
    """When the decision was taken (Unix seconds; ``ts`` is when the run read it)."""


Event = Annotated[
    RunStarted
    | Progress
    | Thought
    | Plan
    | ToolCall
    | ToolResult
    | Searched
    | Route
    | AnswerDelta
    | Answer
    | ErrorEvent
    | Resumed
    | ResearchTask
    | Judged
    | Report
    | ApprovalRequested
    | ApprovalDecided,
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


_ENDINGS = (Answer, ErrorEvent)
"""The events that end their run's stream (a tuple: a union checks slower)."""


def ends_run(event: Event, depth: int = 0) -> bool:
    """Whether ``event`` ends the stream of the run at ``depth``: its answer or its error (a
    sub-agent's, at a greater depth, ends only the sub-run)."""
    return isinstance(event, _ENDINGS) and event.depth == depth


def number(event: Event, seq: int) -> Event:
    """Give ``event`` its place in its run's stream: ``seq``, and ``final`` when it ends the run.

    Every place that numbers a run's events (the runner, the run manager, recovery) calls this,
    so whether an event ends a run is decided here, by the rule of :func:`ends_run`, for every
    surface."""
    event.seq = seq
    event.final = event.depth == 0 and isinstance(event, _ENDINGS)  # ends_run(event), one call less per event
    return event


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
        return number(event, seq)


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
