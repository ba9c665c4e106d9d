"""The readers' side of a run this process executes: its published events, and who reads them.

A run's events reach :class:`LiveRun` only once nothing a crash could do would lose them (the
recorder publishes each once it is journaled, or once the store holds it). Readers come in
two kinds, both served by :class:`~reasonloop.runs.reading.RunFeed`:

* iterators, each a task that reads the shared lists by index and sleeps until the next event
  (a slow reader costs the others nothing);
* sinks (:meth:`LiveRun.attach`), plain functions called with each event's JSON as it is
  published, for surfaces that can hand a frame on without waiting (a WebSocket whose
  socket accepts writes): no task is woken per event.

Only the events' JSON and type are kept (strings, which the garbage collector never scans),
not the event objects: thousands of streaming runs would otherwise keep hundreds of thousands
of objects alive for every full collection to walk.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from reasonloop.events import AnswerDelta, Event, Resumed, event_adapter
from reasonloop.runs.models import RunRecord, is_terminal_event

__all__ = ["LiveRun", "Sink"]

log = logging.getLogger(__name__)

Sink = Callable[[str, bool], None]
"""Called with each published event's JSON and whether it ends the run, in order; must not wait."""


@dataclass(eq=False, slots=True)
class LiveRun:
    """One executing run of this process: its published events' JSON in order, and its readers."""

    record: RunRecord
    payloads: list[str] = field(default_factory=list)
    """The published events, as JSON (serialised once for the store and every reader);
    ``payloads[i]`` is the event with seq ``i + 1``."""
    kinds: list[str] = field(default_factory=list)
    """The type of each published event (``kinds[i]`` for ``payloads[i]``): readers that name
    events (SSE) need not decode them."""
    delivered: list[str] = field(default_factory=list)
    """Text of the top-level answer deltas published: the partial answer readers have."""
    sinks: tuple[Sink, ...] = ()
    """Replaced, never changed in place: :meth:`publish` may be iterating the old one."""
    changed: asyncio.Event | None = None
    done: bool = False
    """The run is over: nothing more will be published."""
    ended: bool = False
    """The run's terminal event (answer or error) has been published: nothing follows it."""

    def publish(self, event: Event, payload: str) -> None:
        """Hand an event to every reader."""
        self.payloads.append(payload)
        self.kinds.append(event.type)
        if isinstance(event, AnswerDelta) and event.depth == 0:
            self.delivered.append(event.text)
        elif isinstance(event, Resumed):  # the answer starts over (readers drop what they have)
            self.delivered.clear()
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
        """The seq of the last published event (0 before the first)."""
        return len(self.payloads)

    def published_events(self) -> list[Event]:
        """The published events, decoded."""
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
