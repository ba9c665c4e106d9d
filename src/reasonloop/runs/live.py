"""The in-memory side of a run being executed: its recorded events and who reads them.

A run's events reach :class:`LiveRun` only once the run store holds them, so nothing a
reader is given can be lost. Readers come in two kinds:

* iterators (:meth:`LiveRun.follow`, :meth:`LiveRun.follow_json`), each a task that reads
  the shared lists by index and sleeps until the next event (a slow reader costs the others
  nothing);
* sinks (:meth:`LiveRun.attach`), plain functions called with each event as it is
  published, for surfaces that can hand a frame on without waiting (a WebSocket whose
  socket accepts writes): no task is woken per event.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from reasonloop.errors import ReasonLoopError
from reasonloop.events import Event
from reasonloop.runs.models import RunRecord, RunRequest

__all__ = ["LiveRun", "Sink", "with_json"]

log = logging.getLogger(__name__)

Sink = Callable[[Event, str], None]
"""Called with each recorded event and its JSON, in order; must not wait."""


@dataclass(eq=False)
class LiveRun:
    """One executing run of this process: its recorded events (and their JSON) in order, and its readers."""

    record: RunRecord
    request: RunRequest
    events: list[Event] = field(default_factory=list)
    """Events the store holds, in seq order."""
    payloads: list[str] = field(default_factory=list)
    """``events[i]`` as JSON, serialised once for the store and every reader."""
    parts: list[str] = field(default_factory=list)
    sinks: list[Sink] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    changed: asyncio.Event | None = None
    cancellable: bool = True
    """True while the task waits for a slot or for the runner (never mid-write)."""
    started: bool = False
    """The task has begun (a task cancelled before its first step would skip all clean-up)."""
    stop_requested: bool = False
    shutting_down: bool = False
    done: bool = False
    unrecorded: int = 0
    """Events stamped and handed to the store whose commit has not been reported yet."""
    store_error: ReasonLoopError | None = None
    """Set when the store failed to record one of the run's events: nothing after it is published."""
    recorded: asyncio.Future[None] | None = None
    """Resolved when ``unrecorded`` drops to zero (or failed with ``store_error``), for a task waiting on it."""

    def publish(self, event: Event, payload: str | None = None) -> None:
        """Hand a recorded event to every reader."""
        if payload is None:
            payload = event.model_dump_json()
        self.payloads.append(payload)
        self.events.append(event)
        for sink in self.sinks:
            try:
                sink(event, payload)
            except Exception:  # a broken reader must never break the run or the other readers
                log.exception("run event sink failed; detaching it")
                self.detach(sink)
        self.wake()

    def attach(self, sink: Sink, after_seq: int = 0) -> bool:
        """Call ``sink`` with the events after ``after_seq`` now, then with each new one.

        Returns:
            False when the run has already ended (every event was replayed; nothing is attached).
        """
        events, payloads = self.events, self.payloads
        for index in range(max(0, after_seq), len(events)):
            sink(events[index], payloads[index])
        if self.done:
            return False
        self.sinks = [*self.sinks, sink]  # a new list: publish may be iterating the old one
        return True

    def detach(self, sink: Sink) -> None:
        if sink in self.sinks:
            self.sinks = [s for s in self.sinks if s is not sink]

    def end(self) -> None:
        """The run is over: iterators finish and sinks are let go."""
        self.done = True
        self.sinks = []
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
        index = max(0, after_seq)
        while True:
            events = self.events
            while index < len(events):
                event = events[index]
                index += 1
                yield event
            if self.done:
                return
            await self.wait()

    async def follow_json(self, after_seq: int = 0) -> AsyncIterator[tuple[Event, str]]:
        """Like :meth:`follow`, with each event's JSON."""
        index = max(0, after_seq)
        while True:
            events, payloads = self.events, self.payloads
            while index < len(events):
                item = (events[index], payloads[index])
                index += 1
                yield item
            if self.done:
                return
            await self.wait()


async def with_json(events: AsyncIterator[Event]) -> AsyncIterator[tuple[Event, str]]:
    async for event in events:
        yield event, event.model_dump_json()
