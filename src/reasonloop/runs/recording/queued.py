"""A batch of events waiting for the run store, kept column by column.

No object per event: under load thousands of events wait here, and every object among them
would be one more for the garbage collector to walk.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import compress

from reasonloop.events import Event
from reasonloop.runs.recording.journal import Segment
from reasonloop.runs.recording.progress import RunRecording
from reasonloop.runs.stores.event_rows import EventRows

__all__ = ["Queued"]


class Queued:
    """Events handed to the recorder, in order, as parallel lists: the store's row of each, its
    run, its journal segment, and the event itself only while it waits to be published (no
    journal). No object per event: under load thousands of events wait here, and every object
    among them would be one more for the garbage collector to walk."""

    __slots__ = ("events", "rows", "runs", "segments")

    def __init__(self) -> None:
        self.rows = EventRows()
        self.runs: list[RunRecording] = []
        self.segments: list[Segment | None] = []
        self.events: list[Event | None] = []

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, run: RunRecording, event: Event, payload: str, segment: Segment | None) -> None:
        self.rows.append(run.run_id, event.seq, payload)
        self.runs.append(run)
        self.segments.append(segment)
        self.events.append(event if segment is None else None)

    def extend(self, other: Queued) -> None:
        self.rows.extend(other.rows)
        self.runs += other.runs
        self.segments += other.segments
        self.events += other.events

    def drop_recorded_ahead(self, ahead: set[RunRecording]) -> list[Segment | None]:
        """Remove the events of ``ahead`` that were recorded ahead of this batch (seq up to their
        run's ``stored_through``); returns their segments, to be settled."""
        seqs, runs = self.rows.seqs, self.runs
        keep = [run not in ahead or seq > run.stored_through for run, seq in zip(runs, seqs, strict=True)]
        dropped = list(compress(self.segments, [not k for k in keep]))
        rows = self.rows
        rows.run_ids = list(compress(rows.run_ids, keep))
        rows.seqs = list(compress(seqs, keep))
        rows.payloads = list(compress(rows.payloads, keep))
        self.runs = list(compress(runs, keep))
        self.segments = list(compress(self.segments, keep))
        self.events = list(compress(self.events, keep))
        return dropped

    def split(self, keep: Callable[[RunRecording], bool]) -> Queued:
        """Keep the events of the runs ``keep`` accepts; returns the others."""
        kept, dropped = Queued(), Queued()
        for row, run, segment, event in zip(self.rows, self.runs, self.segments, self.events, strict=True):
            into = kept if keep(run) else dropped
            into.rows.append(*row)
            into.runs.append(run)
            into.segments.append(segment)
            into.events.append(event)
        self.rows, self.runs, self.segments, self.events = kept.rows, kept.runs, kept.segments, kept.events
        return dropped
