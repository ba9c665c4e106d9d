"""How far the run store has recorded one run's events: kept by the recorder, awaited by the run.

The recorder counts each event it takes and each the store reports recorded (or refused); a run
waits on :meth:`RunRecording.all_recorded` before its status changes, and when too many of its
events are still unrecorded.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from reasonloop.errors import ReasonLoopError
from reasonloop.runs.live import LiveRun

__all__ = ["RunRecording"]


@dataclass(eq=False, slots=True)
class RunRecording:
    """The recording side of one run: what is not yet recorded, and the store's failure, if any."""

    live: LiveRun
    """The run's readers' side: the recorder publishes to it."""
    run_id: str
    unrecorded: int = 0
    """Events taken by the recorder whose commit the store has not reported yet."""
    store_error: ReasonLoopError | None = None
    """Set when the store failed to record one of the run's events: nothing after it is published."""
    waiter: asyncio.Future[None] | None = None
    """Resolved when ``unrecorded`` drops to zero (or failed with ``store_error``), for a task waiting on it."""
    queued_in: int = -1
    """The recorder's batch (its number) holding this run's latest queued events."""
    queued_from: int = 0
    """The seq of this run's first event in that batch."""
    stored_through: int = 0
    """The last seq recorded ahead of its batch (see :meth:`EventRecorder.all_recorded`)."""

    def settle(self) -> None:
        """Wake a task waiting for every event to be recorded, if they are (or recording failed)."""
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        if self.store_error is not None:
            self.waiter = None
            waiter.set_exception(self.store_error)
        elif self.unrecorded == 0:
            self.waiter = None
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
        if self.waiter is None or self.waiter.done():  # done: a cancelled earlier wait
            self.waiter = asyncio.get_running_loop().create_future()
        await self.waiter
