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

Every name is imported from here (``from reasonloop.events import ToolCall``); the modules of the
package hold the kinds of events by concept: :mod:`~reasonloop.events.base` (the common fields, the
wire format, usage and citations), :mod:`~reasonloop.events.core` (what every run sends),
:mod:`~reasonloop.events.structure` (plans, searches, routes), :mod:`~reasonloop.events.research`,
:mod:`~reasonloop.events.approvals`, :mod:`~reasonloop.events.stream` (the union, reading and
numbering) and :mod:`~reasonloop.events.results` (what a run returns).
"""

from __future__ import annotations

from reasonloop.events.approvals import ApprovalDecided, ApprovalRequested
from reasonloop.events.base import EVENT_SCHEMA, Citation, StopReason, Usage
from reasonloop.events.base import _EventBase as _EventBase
from reasonloop.events.core import (
    Answer,
    AnswerDelta,
    ErrorEvent,
    Progress,
    Resumed,
    RunStarted,
    Thought,
    ToolCall,
    ToolResult,
)
from reasonloop.events.research import Judged, Report, ReportSection, ResearchTask
from reasonloop.events.research import JudgeOutcome as JudgeOutcome
from reasonloop.events.research import ResearchStatus as ResearchStatus
from reasonloop.events.results import RunMeta, RunResult, Step
from reasonloop.events.stream import Event, EventStamper, ends_run, event_adapter, event_list_adapter, number
from reasonloop.events.structure import Plan, PlannedStep, Route, RouteName, Searched

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
