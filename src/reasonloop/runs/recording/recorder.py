"""The one publisher of runs' events: each is journaled or recorded, then handed to readers.

Stamped events of every run of a process are taken here (:meth:`EventRecorder.add`) and
recorded in batches, one store call per batch. With a journal
(:mod:`reasonloop.runs.recording.journal`), an event is published as soon as it is journaled,
and batches gather for ``record_interval_s`` per store transaction, the journal told when its
segments can go. Without one, what the runs emit while one store call is in flight goes out in
the next, and each event is published once the store holds it. A run waits for its own events
(:meth:`EventRecorder.all_recorded`) before its status changes, and when too many of them are
still unrecorded.

A run whose store failed records nothing more: its later events would leave a gap after the
last one delivered, and its readers end at the error that follows it. Once the store is back,
:meth:`EventRecorder.record_lost_ends` gives it what it missed of such runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from typing import Any

from reasonloop.errors import RunStoreUnavailable
from reasonloop.events import Event
from reasonloop.runs.live import LiveRun
from reasonloop.runs.recording.journal import Journal, Segment
from reasonloop.runs.recording.lost_end import record_lost_end
from reasonloop.runs.recording.progress import RunRecording
from reasonloop.runs.recording.queued import Queued
from reasonloop.runs.stores.event_rows import EventRows
from reasonloop.runs.stores.protocol import RunStore, append_events, together, update_runs

__all__ = ["EventRecorder"]

log = logging.getLogger(__name__)


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
        self._waiting: list[RunRecording] = []
        """Runs waiting for their events (:meth:`all_recorded`): theirs are recorded ahead of the batch."""
        self._ahead: set[RunRecording] = set()
        """Runs with events of the batch being gathered recorded ahead of it."""
        self._flush_all = False
        self.lost_ends: list[LiveRun] = []
        """Runs that ended while the store was lost, whose end the store has yet to be given."""

    def add(self, run: RunRecording, event: Event, payload: str) -> None:
        """Take a stamped event of ``run``, serialised as ``payload``: with a journal, journaled and
        published now; without one, published once the store holds it.

        Raises:
            RunStoreUnavailable: the journal could not take it (it is not published).
        """
        segment = None
        journal = self.journal
        if journal is not None:
            try:
                segment = journal.write(run.run_id, payload)
            except OSError as exc:
                raise RunStoreUnavailable(f"run journal {journal.path}: {exc}") from exc
            run.live.publish(event, payload)
        run.unrecorded += 1
        if run.queued_in != self._batch_number:
            run.queued_in, run.queued_from = self._batch_number, event.seq
        self._recording.add(run, event, payload, segment)
        self._start()

    def publish_unrecorded(self, run: RunRecording, event: Event, payload: str) -> None:
        """Publish the end of a run whose store is lost: journaled if the disk still takes it (a
        recovery then finds it), never recorded by this recorder (see :attr:`lost_ends`)."""
        if self.journal is not None:
            with contextlib.suppress(OSError):
                self.journal.settle(self.journal.write(run.run_id, payload), recorded=False)
        run.live.publish(event, payload)

    def add_status(self, run_id: str, fields: dict[str, Any]) -> None:
        """Store record ``fields`` with the next batch of events (before them)."""
        self._status_updates.append((run_id, fields))
        self._start()

    async def all_recorded(self, run: RunRecording) -> None:
        """Until the store holds every event of ``run`` handed over (recorded without delay).

        With a journal, only ``run``'s own events are recorded at once, ahead of their batch;
        the other runs' go on gathering. Under load runs end many times a second, and each end
        taking every queued event with it would cut every other run's events into pieces of one
        or two, each a row and each batch a transaction of its own.

        Raises:
            ReasonLoopError: the store failed one of them.
        """
        if self.journal is not None and run.unrecorded and run.store_error is None:
            self._waiting.append(run)
        self._record_now.set()
        await run.all_recorded()

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
            run = self.lost_ends[0]
            try:
                await record_lost_end(self.store, run)
            except RunStoreUnavailable:
                raise
            except Exception:  # never retried: it would block the runs behind it
                log.exception("the end of run %s could not be recorded", run.record.run_id)
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
            if any(run.store_error is not None for run in batch.runs):
                skipped = batch.split(lambda run: run.store_error is None)
                for run, segment in zip(skipped.runs, skipped.segments, strict=True):
                    run.unrecorded -= 1
                    if segment is not None and journal is not None:
                        journal.settle(segment, recorded=False)
                    run.settle()
            await self._append(batch, updates)

    async def _record_ahead(self, updates: list[tuple[str, dict[str, Any]]]) -> None:
        """Record the queued events of the runs waiting for theirs, ahead of the batch they are
        in (journaled, so published already: a run's queued events are the last of its
        ``payloads``, from its ``queued_from``). They stay in the batch, which drops them when
        it is taken (:meth:`_settle_ahead`)."""
        waiting, self._waiting = self._waiting, []
        rows = EventRows()
        spans: list[tuple[RunRecording, int, int]] = []
        for run in dict.fromkeys(waiting):
            if run.store_error is not None or run.queued_in != self._batch_number:
                continue  # nothing of it is being gathered: its events are in a batch already taken
            first, last = max(run.queued_from, run.stored_through + 1), len(run.live.payloads)
            if first > last:
                continue
            rows.run_ids += [run.run_id] * (last - first + 1)
            rows.seqs += range(first, last + 1)
            rows.payloads += run.live.payloads[first - 1 : last]
            spans.append((run, first, last))
        try:
            results = await self._store_rows(rows, updates)
        except asyncio.CancelledError:  # shutting down: no run may wait on these forever
            self._fail_queued(Queued(), "the run manager stopped recording")
            raise
        start = 0
        for run, first, last in spans:
            for seq, error in zip(range(first, last + 1), results[start : start + last - first + 1], strict=True):
                if error is not None:  # this one and the rest stay in the batch, which skips them (store_error)
                    if run.store_error is None:
                        run.store_error = _store_error(seq, error)
                    break
                run.unrecorded -= 1
                run.stored_through = seq
                self._ahead.add(run)
            start += last - first + 1
            run.settle()

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
        for (_, seq, payload), run, segment, event, error in zip(
            batch.rows, batch.runs, batch.segments, batch.events, results, strict=True
        ):
            run.unrecorded -= 1
            if segment is not None and journal is not None:
                journal.settle(segment, recorded=error is None)
            if run.store_error is None:
                if error is None:
                    if event is not None:  # not journaled: published now that the store holds it
                        run.live.publish(event, payload)
                else:
                    run.store_error = _store_error(seq, error)
            run.settle()

    def _settle_recorded(self, batch: Queued) -> None:
        """The store holds every event of ``batch`` (journaled ones, published already): count them
        off their runs and segments, then wake what waits, once per run and segment."""
        runs: dict[RunRecording, None] = {}
        for run in batch.runs:
            run.unrecorded -= 1
            runs[run] = None
        for run in runs:
            run.settle()
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
        for run, segment in zip(batch.runs, batch.segments, strict=True):
            run.unrecorded -= 1
            if segment is not None and self.journal is not None:
                self.journal.settle(segment, recorded=False)
            run.store_error = run.store_error or lost
            run.settle()


def _store_error(seq: int, error: Exception) -> RunStoreUnavailable:
    """What stops a run whose event ``seq`` the store did not record."""
    if isinstance(error, RunStoreUnavailable):
        return error
    return RunStoreUnavailable(f"the run store refused event {seq}: {error}")
