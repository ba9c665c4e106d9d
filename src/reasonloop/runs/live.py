"""The in-memory side of a run being executed: its event list and the wake-up of its subscribers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from reasonloop.events import Event
from reasonloop.runs.models import RunRecord, RunRequest

__all__ = ["LiveRun", "with_json"]


@dataclass(eq=False)
class LiveRun:
    """One executing run of this process: its events (and their JSON) in order, and who waits for more.

    Subscribers share the lists and read by index, so a slow reader costs the others nothing.
    """

    record: RunRecord
    request: RunRequest
    events: list[Event] = field(default_factory=list)
    payloads: list[str] = field(default_factory=list)
    """``events[i]`` as JSON, serialised once for the store and every subscriber."""
    parts: list[str] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    changed: asyncio.Event | None = None
    cancellable: bool = True
    """True while the task waits for a slot or for the runner (never mid-write)."""
    started: bool = False
    """The task has begun (a task cancelled before its first step would skip all clean-up)."""
    stop_requested: bool = False
    shutting_down: bool = False
    done: bool = False

    def publish(self, event: Event, payload: str | None = None) -> None:
        self.payloads.append(payload if payload is not None else event.model_dump_json())
        self.events.append(event)
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
