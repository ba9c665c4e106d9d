"""Reading a run: one feed of its events after a seq, whether this process executes it or not.

:meth:`RunManager.read <reasonloop.runs.manager.RunManager.read>` gives a :class:`RunFeed`.
Every surface reads runs through it, in one of two ways:

* iterate it: :class:`Delivery` items (seq, type, JSON, whether it ends the run), or
  :meth:`RunFeed.events` for decoded events;
* :meth:`RunFeed.attach` a sink, called with each event's JSON as it is published; for a run
  executed here no task wakes per event, for one executed elsewhere a task of the feed reads
  the store and calls the sink, pacing itself on the reader when it is given ``pace``.

The JSON is the one serialised for the store, shared by every reader: nothing is decoded per
reader unless it asks for events.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import NamedTuple

from reasonloop.errors import ReasonLoopError, RunError
from reasonloop.events import Event, event_adapter
from reasonloop.runs.live import LiveRun, Sink
from reasonloop.runs.models import is_terminal_event

__all__ = ["Delivery", "Following", "RunFeed"]

log = logging.getLogger(__name__)


class Delivery(NamedTuple):
    """One event as a reader gets it."""

    seq: int
    type: str
    payload: str
    """The event's JSON."""
    terminal: bool
    """It ends the run's stream (nothing follows it)."""


class Following:
    """A sink attached to a run; :meth:`cancel` stops following (the run goes on)."""

    __slots__ = ("live", "sink", "task")

    def __init__(self, live: LiveRun | None, sink: Sink | None, task: asyncio.Task[None] | None) -> None:
        self.live = live
        self.sink = sink
        self.task = task

    @property
    def active(self) -> bool:
        """The sink may still be called (False once the run had ended when it was attached)."""
        return self.sink is not None or (self.task is not None and not self.task.done())

    def cancel(self) -> None:
        if self.live is not None and self.sink is not None:
            self.live.detach(self.sink)
        self.sink = None
        if self.task is not None:
            self.task.cancel()


class RunFeed:
    """A run's events with ``seq > after_seq``: those published so far, then live ones until the
    run's terminal event.

    Args:
        after_seq: The last seq the reader has.
        live: The run, when this process executes it.
        stored: Otherwise, its events from the run store (replayed, then followed).
    """

    __slots__ = ("after_seq", "live", "stored")

    def __init__(
        self, after_seq: int, *, live: LiveRun | None = None, stored: AsyncIterator[Event] | None = None
    ) -> None:
        assert (live is None) != (stored is None), "a feed reads a live run or a stored one"
        self.after_seq = after_seq
        self.live = live
        self.stored = stored

    @property
    def local(self) -> bool:
        """This process executes the run."""
        return self.live is not None

    def __aiter__(self) -> AsyncIterator[Delivery]:
        return self._live() if self.live is not None else self._stored()

    async def _live(self) -> AsyncIterator[Delivery]:
        live = self.live
        assert live is not None
        index = max(0, self.after_seq)
        while True:
            payloads, kinds = live.payloads, live.kinds
            while index < len(payloads):
                index += 1
                terminal = live.ended and index == len(payloads)
                yield Delivery(index, kinds[index - 1], payloads[index - 1], terminal)
            if live.done:
                return
            await live.wait()

    async def _stored(self) -> AsyncIterator[Delivery]:
        assert self.stored is not None
        async for event in self.stored:
            terminal = event.final = is_terminal_event(event)  # an event stored before event schema 2 lacks it
            yield Delivery(event.seq, event.type, event.to_json(), terminal)

    async def events(self) -> AsyncIterator[Event]:
        """The events, decoded."""
        if self.stored is not None:
            async for event in self.stored:
                yield event
            return
        async for delivery in self:
            yield event_adapter.validate_json(delivery.payload)

    def attach(
        self,
        sink: Sink,
        *,
        pace: Callable[[], Awaitable[None]] | None = None,
        failed: Callable[[ReasonLoopError], None] | None = None,
    ) -> Following:
        """Call ``sink`` with each event's JSON and whether it ends the run, from ``after_seq`` on.

        Args:
            sink: Must not wait.
            pace: For a run read from the store: awaited after each event but the last, so the
                store is read no faster than the reader takes what it is given.
            failed: Called with the store's error when reading a stored run fails midway.
        """
        if self.live is not None:
            attached = self.live.attach(sink, self.after_seq)
            return Following(self.live, sink if attached else None, None)
        task = asyncio.create_task(self._feed(sink, pace, failed), name="run-feed")
        return Following(None, None, task)

    async def _feed(
        self,
        sink: Sink,
        pace: Callable[[], Awaitable[None]] | None,
        failed: Callable[[ReasonLoopError], None] | None,
    ) -> None:
        try:
            async for delivery in self._stored():
                sink(delivery.payload, delivery.terminal)
                if delivery.terminal:
                    return
                if pace is not None:
                    await pace()
            problem: ReasonLoopError = RunError("the run's stored events ended before its end")
        except ReasonLoopError as exc:
            problem = exc
        except Exception as exc:  # nobody awaits this task: say what went wrong, and to whom
            log.exception("reading run events from the store failed")
            problem = RunError(f"reading the run's events failed: {type(exc).__name__}: {exc}")
        if failed is not None:
            failed(problem)
