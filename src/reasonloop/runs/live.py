"""The in-memory side of a run being executed: its recorded events and who reads them.

A run's events reach :class:`LiveRun` only once the run store holds them, so nothing a
reader is given can be lost. Readers come in two kinds:

* iterators (:meth:`LiveRun.follow`, :meth:`LiveRun.follow_json`), each a task that reads
  the shared lists by index and sleeps until the next event (a slow reader costs the others
  nothing);
* sinks (:meth:`LiveRun.attach`), plain functions called with each event's JSON as it is
  published, for surfaces that can hand a frame on without waiting (a WebSocket whose
  socket accepts writes): no task is woken per event.

Only the events' JSON is kept (strings, which the garbage collector never scans), not the
event objects: thousands of streaming runs would otherwise keep hundreds of thousands of
objects alive for every full collection to walk. Iterators decode what they yield.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from reasonloop.errors import ReasonLoopError
from reasonloop.events import AnswerDelta, Event, event_adapter
from reasonloop.runs.models import RunRecord, RunRequest
from reasonloop.runs.store import is_terminal_event

__all__ = ["LiveRun", "Sink", "with_json"]

log = logging.getLogger(__name__)

Sink = Callable[[str, bool], None]
"""Called with each recorded event's JSON and whether it ends the run, in order; must not wait."""


@dataclass(eq=False, slots=True)
class LiveRun:
    """One executing run of this process: its recorded events' JSON in order, and its readers."""

    record: RunRecord
    request: RunRequest
    payloads: list[str] = field(default_factory=list)
    """The events the store holds, as JSON (serialised once for the store and every reader);
    ``payloads[i]`` is the event with seq ``i + 1``."""
    parts: list[str] = field(default_factory=list)
    """Text of every top-level answer delta emitted (recorded or not yet)."""
    delivered: list[str] = field(default_factory=list)
    """Text of the top-level answer deltas recorded: the partial answer readers have."""
    sinks: tuple[Sink, ...] = ()
    """Replaced, never changed in place: :meth:`publish` may be iterating the old one."""
    emitted: int = 0
    """The seq of the last event stamped (published or not yet)."""
    task: asyncio.Task[None] | None = None
    changed: asyncio.Event | None = None
    cancellable: bool = True
    """True while the task waits for a slot or for the runner (never mid-write)."""
    started: bool = False
    """The task has begun (a task cancelled before its first step would skip all clean-up)."""
    stop_requested: bool = False
    shutting_down: bool = False
    done: bool = False
    ended: bool = False
    """The run's terminal event (answer or error) has been published: nothing follows it."""
    unrecorded: int = 0
    """Events stamped and handed to the store whose commit has not been reported yet."""
    store_error: ReasonLoopError | None = None
    """Set when the store failed to record one of the run's events: nothing after it is published."""
    recorded: asyncio.Future[None] | None = None
    """Resolved when ``unrecorded`` drops to zero (or failed with ``store_error``), for a task waiting on it."""
    queued_in: int = -1
    """The recorder's batch (its number) holding this run's latest queued events."""
    queued_from: int = 0
    """The seq of this run's first event in that batch."""
    stored_through: int = 0
    """The last seq recorded ahead of its batch (:meth:`reasonloop.runs.recorder.EventRecorder.all_recorded`)."""

    def publish(self, event: Event, payload: str | None = None) -> None:
        """Hand a recorded event to every reader."""
        if payload is None:
            payload = event.to_json()
        self.payloads.append(payload)
        if isinstance(event, AnswerDelta) and event.depth == 0:
            self.delivered.append(event.text)
        terminal = is_terminal_event(event)
        if terminal:
            self.ended = True
        for sink in self.sinks:
            try:
                sink(payload, terminal)
            except Exception:  # a broken reader must never break the run or the other readers
                log.exception("run event sink failed; detaching it")
                self.detach(sink)
        self.wake()

    @property
    def last_seq(self) -> int:
        """The seq of the last recorded event (0 before the first)."""
        return len(self.payloads)

    def recorded_events(self) -> list[Event]:
        """The recorded events, decoded."""
        return [event_adapter.validate_json(payload) for payload in self.payloads]

    def attach(self, sink: Sink, after_seq: int = 0) -> bool:
        """Call ``sink`` with the events after ``after_seq`` now, then with each new one.

        Returns:
            False when the run has already ended (every event was replayed; nothing is attached).
        """
        payloads = self.payloads
        last = len(payloads) - 1
        ended = self.done or self.ended
        for index in range(max(0, after_seq), len(payloads)):
            sink(payloads[index], ended and index == last)
        if ended:
            return False
        self.sinks = (*self.sinks, sink)
        return True

    def detach(self, sink: Sink) -> None:
        if sink in self.sinks:
            self.sinks = tuple(s for s in self.sinks if s is not sink)

    def end(self) -> None:
        """The run is over: iterators finish and sinks are let go."""
        self.done = True
        self.sinks = ()
        self.wake()

    def wake(self) -> None:
        changed, self.changed = self.changed, None
        if changed is not None:
            changed.set()

    async def wait(self) -> None:
        """Until the next event (or the end). Each waiter has its own future inside the
        Event, so a cancelled subscriber never disturbs the others."""
        if self.changed is None:
            self.changed = asyncio.Event()
        await self.changed.wait()

    def settle(self) -> None:
        """Wake a task waiting for every event to be recorded, if they are (or recording failed)."""
        waiter = self.recorded
        if waiter is None or waiter.done():
            return
        if self.store_error is not None:
            self.recorded = None
            waiter.set_exception(self.store_error)
        elif self.unrecorded == 0:
            self.recorded = None
            waiter.set_result(None)

    async def all_recorded(self) -> None:
        """Until the store holds every event handed to it.

        Raises:
            ReasonLoopError: the store failed to record one of them (``store_error``).
        """
        if self.store_error is not None:
            raise self.store_error
        if self.unrecorded == 0:
            return
        if self.recorded is None or self.recorded.done():  # done: a cancelled earlier wait
            self.recorded = asyncio.get_running_loop().create_future()
        await self.recorded

    async def follow(self, after_seq: int = 0) -> AsyncIterator[Event]:
        """Events after ``after_seq``, then new ones until the run ends."""
        async for event, _ in self.follow_json(after_seq):
            yield event

    async def follow_json(self, after_seq: int = 0) -> AsyncIterator[tuple[Event, str]]:
        """Like :meth:`follow`, with each event's JSON."""
        index = max(0, after_seq)
        while True:
            payloads = self.payloads
            while index < len(payloads):
                payload = payloads[index]
                index += 1
                yield event_adapter.validate_json(payload), payload
            if self.done:
                return
            await self.wait()


async def with_json(events: AsyncIterator[Event]) -> AsyncIterator[tuple[Event, str]]:
    async for event in events:
        yield event, event.to_json()
