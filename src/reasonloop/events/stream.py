"""A run's stream as a whole: the :data:`Event` union of every kind of event, the adapters that read
events back from JSON, and the numbering that gives each event its place and marks the one that ends
the run.

Its own module because it is the one place that knows every kind of event: adding one is adding it
to the union here (and to docs/server.md).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, TypeAdapter

from reasonloop.events.approvals import ApprovalDecided, ApprovalRequested
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
from reasonloop.events.research import Judged, Report, ResearchTask
from reasonloop.events.structure import Plan, Route, Searched

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
