"""Recording runs' events in the run store: all runs' events together, in few store calls.

Stamped events of every run of a process are queued here and recorded in batches, one store
call per batch. Without a journal, what the runs emit while one store call is in flight goes
out in the next, and each event is published to readers once the store holds it. With a
journal (:mod:`reasonloop.runs.journal`), events are published before they reach the recorder,
which then gathers them for ``record_interval_s`` per store transaction and tells the journal
when its segments can go. A run waits for its own events (:meth:`EventRecorder.all_recorded`)
before its status changes, and when too many of them are still unrecorded.

A run whose store failed records nothing more: its later events would leave a gap after the
last one delivered, and its readers end at the error that follows it. Once the store is back,
:meth:`EventRecorder.record_lost_ends` gives it what it missed of such runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Callable
from itertools import compress
from typing import Any

from reasonloop.errors import RunStoreUnavailable
from reasonloop.events import Event, event_adapter
from reasonloop.runs.event_rows import EventRows
from reasonloop.runs.journal import Journal, Segment
from reasonloop.runs.live import LiveRun
from reasonloop.runs.store import (
    RunStore,
    append_events,
    ended_fields,
    is_terminal_event,
    restore_turn,
    together,
    update_runs,
)

__all__ = ["EventRecorder", "record_lost_end"]

log = logging.getLogger(__name__)


class Queued:
    """Events handed to the recorder, in order, as parallel lists: the store's row of each, its
    run, its journal segment, and the event itself only while it waits to be published (no
    journal). No object per event: under load thousands of events wait here, and every object
    among them would be one more for the garbage collector to walk."""

    __slots__ = ("events", "lives", "rows", "segments")

    def __init__(self) -> None:
        self.rows = EventRows()
        self.lives: list[LiveRun] = []
        self.segments: list[Segment | None] = []
        self.events: list[Event | None] = []

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, live: LiveRun, event: Event, payload: str, segment: Segment | None) -> None:
        self.rows.append(live.record.run_id, event.seq, payload)
        self.lives.append(live)
        self.segments.append(segment)
        self.events.append(event if segment is None else None)

    def extend(self, other: Queued) -> None:
        self.rows.extend(other.rows)
        self.lives += other.lives
        self.segments += other.segments
        self.events += other.events

    def drop_recorded_ahead(self, ahead: set[LiveRun]) -> list[Segment | None]:
        """Remove the events of ``ahead`` that were recorded ahead of this batch (seq up to their
        run's ``stored_through``); returns their segments, to be settled."""
        seqs, lives = self.rows.seqs, self.lives
        keep = [live not in ahead or seq > live.stored_through for live, seq in zip(lives, seqs, strict=True)]
        dropped = list(compress(self.segments, [not k for k in keep]))
        rows = self.rows
        rows.run_ids = list(compress(rows.run_ids, keep))
        rows.seqs = list(compress(seqs, keep))
        rows.payloads = list(compress(rows.payloads, keep))
        self.lives = list(compress(lives, keep))
        self.segments = list(compress(self.segments, keep))
        self.events = list(compress(self.events, keep))
        return dropped

    def split(self, keep: Callable[[LiveRun], bool]) -> Queued:
        """Keep the events of the runs ``keep`` accepts; returns the others."""
        kept, dropped = Queued(), Queued()
        for row, live, segment, event in zip(self.rows, self.lives, self.segments, self.events, strict=True):
            into = kept if keep(live) else dropped
            into.rows.append(*row)
            into.lives.append(live)
            into.segments.append(segment)
            into.events.append(event)
        self.rows, self.lives, self.segments, self.events = kept.rows, kept.lives, kept.segments, kept.events
        return dropped


async def record_lost_end(store: RunStore, live: LiveRun) -> None:
    """Give the store the end of a run that ended while the store was lost: the events its
    readers were sent that the store lacks, the end they were given, the run's final status
    and its conversation turn. A run left ``running`` in the store would otherwise stay so
    for as long as its process lives, and readers on other instances would wait for it.

    Nothing is added after an end the store already has (recorded before the loss, or by
    another instance's recovery meanwhile): the store's end stands.

    Raises:
        RunStoreUnavailable: the store is still unavailable (try again later).
    """
    record = live.record
    stored_record = await store.get_run(record.run_id)
    if stored_record is None:  # the store came back empty (a Redis without persistence): the run as it ran
        running = {"status": "running", "content": "", "stop_reason": None, "error": None, "ended_at": None}
        await store.create_run(record.model_copy(update={**running, "last_seq": 0}))
    elif stored_record.finished:
        await restore_turn(
            store, stored_record, stored_record.content, stored_record.status, stored_record.ended_at or 0
        )
        return
    stored = await store.events(record.run_id)
    if stored and is_terminal_event(stored[-1]):  # the end is there, its status is not
        fields = ended_fields(stored[-1], stored)
        await store.update_run(record.run_id, **fields)
        await restore_turn(store, record, fields["content"], fields["status"], fields["ended_at"])
        return
    last_stored = stored[-1].seq if stored else 0
    missing = [event_adapter.validate_json(payload) for payload in live.payloads[last_stored:]]
    if not missing:  # stored past what was sent: the end goes after
        final = event_adapter.validate_json(live.payloads[-1])
        final.seq = last_stored + 1
        missing = [final]
    for event in missing:
        with contextlib.suppress(ValueError):  # recorded meanwhile (a journal import)
            await store.append_event(record.run_id, event)
    # The status last: a reader that sees the run finished finds its end stored (follow() relies on it).
    await store.update_run(
        record.run_id,
        status=record.status,
        content=record.content,
        stop_reason=record.stop_reason,
        error=record.error,
        last_seq=missing[-1].seq,
        ended_at=record.ended_at,
    )
    await restore_turn(store, record, record.content, record.status, record.ended_at or 0.0)


class EventRecorder:
    """Records the events of every run of one process (see the module docstring).

    Args:
        store: The run store.
        journal: This process's journal, when events are journaled before they are published.
        interval_s: With a journal, how long events gather before one store call records them.
    """

    def __init__(self, store: RunStore, journal: Journal | None, interval_s: float) -> None:
        self.store = store
        self.journal = journal
        self.interval_s = interval_s
        self._recording = Queued()
        self._status_updates: list[tuple[str, dict[str, Any]]] = []
        self._recorder: asyncio.Task[None] | None = None
        self._record_now = asyncio.Event()
        self._batch_number = 0
        """Number of the batch being gathered (``_recording``)."""
        self._waiting: list[LiveRun] = []
        """Runs waiting for their events (:meth:`all_recorded`): theirs are recorded ahead of the batch."""
        self._ahead: set[LiveRun] = set()
        """Runs with events of the batch being gathered recorded ahead of it."""
        self._flush_all = False
        self.lost_ends: list[LiveRun] = []
        """Runs that ended while the store was lost, whose end the store has yet to be given."""

    def add(self, live: LiveRun, event: Event, payload: str, segment: Segment | None) -> None:
        """Queue a stamped event of ``live`` (journaled in ``segment``, or not journaled: then it
        is published once recorded)."""
        live.unrecorded += 1
        if live.queued_in != self._batch_number:
            live.queued_in, live.queued_from = self._batch_number, event.seq
        self._recording.add(live, event, payload, segment)
        self._start()

    def add_status(self, run_id: str, fields: dict[str, Any]) -> None:
        """Store record ``fields`` with the next batch of events (before them)."""
        self._status_updates.append((run_id, fields))
        self._start()

    async def all_recorded(self, live: LiveRun) -> None:
        """Until the store holds every event of ``live`` handed over (recorded without delay).

        With a journal, only ``live``'s own events are recorded at once, ahead of their batch;
        the other runs' go on gathering. Under load runs end many times a second, and each end
        taking every queued event with it would cut every other run's events into pieces of one
        or two, each a row and each batch a transaction of its own.

        Raises:
            ReasonLoopError: the store failed one of them.
        """
        if self.journal is not None and live.unrecorded and live.store_error is None:
            self._waiting.append(live)
        self._record_now.set()
        await live.all_recorded()

    async def drain(self) -> None:
        """Record what is queued now and wait for it (shutting down)."""
        if self._recorder is not None:
            self._flush_all = True
            self._record_now.set()
            await asyncio.gather(self._recorder, return_exceptions=True)

    async def record_lost_ends(self) -> None:
        """Give the store the ends of :attr:`lost_ends`, in order (:func:`record_lost_end`).

        Raises:
            RunStoreUnavailable: the store still cannot take them (the rest wait for a later call).
        """
        while self.lost_ends:
            live = self.lost_ends[0]
            try:
                await record_lost_end(self.store, live)
            except RunStoreUnavailable:
                raise
            except Exception:  # never retried: it would block the runs behind it
                log.exception("the end of run %s could not be recorded", live.record.run_id)
            del self.lost_ends[0]

    def _start(self) -> None:
        if self._recorder is None or self._recorder.done():
            self._recorder = asyncio.create_task(self._record(), name="run-event-recorder")

    async def _record(self) -> None:
        """Record every queued event, one store call per batch (publishing each once it is held
        when there is no journal; with one, batches gather for ``record_interval_s``).

        A run whose store failed records nothing more: its later events would leave a gap
        after the last one delivered, and its readers end at the error that follows it.
        """
        journal = self.journal
        loop = asyncio.get_running_loop()
        due = loop.time() + self.interval_s
        """When the batch being gathered goes (recording runs' events ahead of it does not move it)."""
        while self._recording or self._status_updates:
            if journal is not None and not self._record_now.is_set() and (wait := due - loop.time()) > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._record_now.wait(), wait)
            self._record_now.clear()
            ahead = bool(self._waiting) and not self._flush_all and loop.time() < due
            batch = Queued()
            if not ahead:
                batch, self._recording = self._recording, batch
                self._batch_number += 1
                self._waiting.clear()  # their events are in this batch
                self._flush_all = False
                due = loop.time() + self.interval_s
                if self._ahead:
                    self._settle_ahead(batch)
            # Recorded with the events (one transaction where the store commits writes started
            # together), and before any run waiting on them is settled: a run's end, written
            # once its events are recorded, then comes after them.
            updates, self._status_updates = self._status_updates, []
            if ahead:
                await self._record_ahead(updates)
                continue
            if any(live.store_error is not None for live in batch.lives):
                skipped = batch.split(lambda live: live.store_error is None)
                for live, segment in zip(skipped.lives, skipped.segments, strict=True):
                    live.unrecorded -= 1
                    if segment is not None and journal is not None:
                        journal.settle(segment, recorded=False)
                    live.settle()
            await self._append(batch, updates)

    async def _record_ahead(self, updates: list[tuple[str, dict[str, Any]]]) -> None:
        """Record the queued events of the runs waiting for theirs, ahead of the batch they are
        in (journaled, so published already: a run's queued events are the last of its
        ``payloads``, from its ``queued_from``). They stay in the batch, which drops them when
        it is taken (:meth:`_settle_ahead`)."""
        waiting, self._waiting = self._waiting, []
        rows = EventRows()
        spans: list[tuple[LiveRun, int, int]] = []
        for live in dict.fromkeys(waiting):
            if live.store_error is not None or live.queued_in != self._batch_number:
                continue  # nothing of it is being gathered: its events are in a batch already taken
            first, last = max(live.queued_from, live.stored_through + 1), len(live.payloads)
            if first > last:
                continue
            rows.run_ids += [live.record.run_id] * (last - first + 1)
            rows.seqs += range(first, last + 1)
            rows.payloads += live.payloads[first - 1 : last]
            spans.append((live, first, last))
        try:
            results = await self._store_rows(rows, updates)
        except asyncio.CancelledError:  # shutting down: no run may wait on these forever
            self._fail_queued(Queued(), "the run manager stopped recording")
            raise
        start = 0
        for live, first, last in spans:
            for seq, error in zip(range(first, last + 1), results[start : start + last - first + 1], strict=True):
                if error is not None:  # this one and the rest stay in the batch, which skips them (store_error)
                    if live.store_error is None:
                        live.store_error = _store_error(seq, error)
                    break
                live.unrecorded -= 1
                live.stored_through = seq
                self._ahead.add(live)
            start += last - first + 1
            live.settle()

    def _settle_ahead(self, batch: Queued) -> None:
        """Drop from ``batch`` the events recorded ahead of it, settling their journal segments
        (their runs counted them off when they were recorded)."""
        ahead, self._ahead = self._ahead, set()
        self._segments_recorded(batch.drop_recorded_ahead(ahead))

    async def _store_rows(self, rows: EventRows, updates: list[tuple[str, dict[str, Any]]]) -> list[Exception | None]:
        """Record ``rows`` and the status ``updates``, started together (one transaction where the
        store commits such writes together); the store's result for each row (a failure of the
        whole call, for every one), once both have ended."""
        writes = [self._record_status(updates)] if updates else []
        writes.append(self._record_rows(rows))
        results: list[list[Exception | None]] = await together(writes)
        return results[-1]

    async def _record_status(self, updates: list[tuple[str, dict[str, Any]]]) -> None:
        """A status not recorded is logged: the events' own results decide whether their runs go on."""
        try:
            await update_runs(self.store, updates)
        except Exception as exc:
            log.warning("run status not recorded: %s", exc)

    async def _record_rows(self, rows: EventRows) -> list[Exception | None]:
        if not rows:
            return []
        try:
            results: list[Exception | None] = await append_events(self.store, rows)
            if len(results) != len(rows):
                raise RunStoreUnavailable(f"the run store answered {len(results)} results for {len(rows)} events")
        except RunStoreUnavailable as exc:
            return [exc] * len(rows)
        except Exception as exc:  # a store bug fails these events; the recorder goes on with the next
            log.exception("run store failed a batch of %d events", len(rows))
            return [RunStoreUnavailable(f"run events not recorded: {type(exc).__name__}: {exc}")] * len(rows)
        return results

    async def _append(self, batch: Queued, updates: list[tuple[str, dict[str, Any]]]) -> None:
        """Record one batch of events (with ``updates``) and settle each with its result."""
        journal = self.journal
        try:
            results = await self._store_rows(batch.rows, updates)
        except asyncio.CancelledError:  # shutting down: no run may wait on these forever
            self._fail_queued(batch, "the run manager stopped recording")
            raise
        if not batch:
            return
        if journal is not None and not any(results):  # all recorded, all already published
            self._settle_recorded(batch)
            return
        for (_, seq, payload), live, segment, event, error in zip(
            batch.rows, batch.lives, batch.segments, batch.events, results, strict=True
        ):
            live.unrecorded -= 1
            if segment is not None and journal is not None:
                journal.settle(segment, recorded=error is None)
            if live.store_error is None:
                if error is None:
                    if event is not None:  # not journaled: published now that the store holds it
                        live.publish(event, payload)
                else:
                    live.store_error = _store_error(seq, error)
            live.settle()

    def _settle_recorded(self, batch: Queued) -> None:
        """The store holds every event of ``batch`` (journaled ones, published already): count them
        off their runs and segments, then wake what waits, once per run and segment."""
        lives: dict[LiveRun, None] = {}
        for live in batch.lives:
            live.unrecorded -= 1
            lives[live] = None
        for live in lives:
            live.settle()
        self._segments_recorded(batch.segments)

    def _segments_recorded(self, segments: list[Segment | None]) -> None:
        """The store holds the events journaled in ``segments`` (one entry per event, ``None``
        for one not journaled): settle each segment once, for all of its events."""
        if self.journal is not None:
            for segment, count in Counter(segment for segment in segments if segment is not None).items():
                self.journal.settle(segment, recorded=True, count=count)

    def _fail_queued(self, batch: Queued, reason: str) -> None:
        """Fail ``batch`` and everything queued after it (the recorder is stopping)."""
        if self._ahead:
            self._settle_ahead(self._recording)
        batch.extend(self._recording)
        self._recording = Queued()
        lost = RunStoreUnavailable(reason)
        for live, segment in zip(batch.lives, batch.segments, strict=True):
            live.unrecorded -= 1
            if segment is not None and self.journal is not None:
                self.journal.settle(segment, recorded=False)
            live.store_error = live.store_error or lost
            live.settle()


def _store_error(seq: int, error: Exception) -> RunStoreUnavailable:
    """What stops a run whose event ``seq`` the store did not record."""
    if isinstance(error, RunStoreUnavailable):
        return error
    return RunStoreUnavailable(f"the run store refused event {seq}: {error}")
