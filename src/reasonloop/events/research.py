"""The events of a ``research`` run: each research question and its sub-agent's state, the
sufficiency judge's decision after a round, and the report.

Their own module because only the research strategy sends them, and no other event depends on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from reasonloop.events.base import Citation, Usage, _EventBase

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
