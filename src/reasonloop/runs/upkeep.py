"""A run manager's background work: heartbeats, stop requests, recovery, and lost ends retried.

Every instance sends a heartbeat, watches for stop requests made through the store (by another
instance), resumes or ends the runs of dead instances (:mod:`reasonloop.runs.recovery`, after
importing their journals) and gives a store that came back the ends it missed. The loops outlive any
failure: an instance whose heartbeat stopped would have its live runs marked interrupted by
the others, and one no longer polling would miss stops.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from reasonloop.errors import RunStoreUnavailable
from reasonloop.runs.execution import Execution
from reasonloop.runs.recording.journal import Journal, file_prefix
from reasonloop.runs.recording.journal_recovery import recover_journals, unrecovered
from reasonloop.runs.recording.recorder import EventRecorder
from reasonloop.runs.recovery import recover_interrupted
from reasonloop.runs.resume import Resume
from reasonloop.runs.stores.protocol import RunStore, features_of

__all__ = ["Upkeep"]

log = logging.getLogger(__name__)

_HEARTBEAT_S = 3.0
_RETRY_S = 1.0
"""Pause before watching stop requests again after a failure."""


class Upkeep:
    """The background loops of one run manager.

    Args:
        store: The run store.
        instance: This process's instance id.
        journal: This process's journal (None without one).
        recorder: Holds the ends of runs the store missed.
        executing: The runs this process executes, by id.
        request_stop: Stops one of them.
        resume: Resumes the runs of dead instances that can go on (None: they all end interrupted).
    """

    def __init__(
        self,
        store: RunStore,
        instance: str,
        journal: Journal | None,
        recorder: EventRecorder,
        executing: dict[str, Execution],
        request_stop: Callable[[Execution], None],
        resume: Resume | None = None,
    ) -> None:
        self.store = store
        self.instance = instance
        self.journal = journal
        self.recorder = recorder
        self.executing = executing
        self.request_stop = request_stop
        self.resume = resume

    def start(self) -> list[asyncio.Task[None]]:
        return [
            asyncio.create_task(self._watch_stops(), name="run-manager-stops"),
            asyncio.create_task(self._housekeeping(), name="run-manager-housekeeping"),
        ]

    async def recover(self) -> list[str]:
        """Events journaled by dead processes into the store, then their runs resumed or marked
        interrupted (not those of a process whose segments are still on disk: being imported by
        another process, or whose import failed; a later round takes them).

        Returns:
            The ids of the runs marked interrupted.
        """
        if self.journal is None:
            return await recover_interrupted(self.store, me=self.instance, resume=self.resume)
        await recover_journals(self.journal.directory, self.store)
        waiting = unrecovered(self.journal.directory)
        return await recover_interrupted(
            self.store,
            me=self.instance,
            wait_for=lambda instance: file_prefix(instance) in waiting,
            resume=self.resume,
        )

    async def _watch_stops(self) -> None:
        while True:
            try:
                async for run_id in self.store.stop_requests(self.instance):
                    run = self.executing.get(run_id)
                    if run is not None and not run.live.done:
                        self.request_stop(run)
            except RunStoreUnavailable as exc:
                log.warning("stop requests unavailable, retrying: %s", exc.message)
            except Exception:
                log.exception("watching stop requests failed, retrying")
            await asyncio.sleep(_RETRY_S)

    async def _housekeeping(self) -> None:
        while True:
            await asyncio.sleep(_HEARTBEAT_S)
            try:
                await self.store.heartbeat(self.instance)
                await self.recorder.record_lost_ends()
                await self.recover()
                await self.check_stop_keys()
            except RunStoreUnavailable as exc:
                log.warning("run store unavailable: %s", exc.message)
            except Exception:
                log.exception("run housekeeping failed; trying again in %g s", _HEARTBEAT_S)

    async def check_stop_keys(self) -> None:
        """A stop published while this instance was not yet listening is still seen here."""
        if not features_of(self.store).stop_keys:
            return
        waiting = [run for run in self.executing.values() if not run.live.done and not run.stop_requested]
        if not waiting:
            return
        stopped = await self.store.stops_requested([run.record.run_id for run in waiting])  # type: ignore[attr-defined]
        for run in waiting:
            if run.record.run_id in stopped and not run.live.done:
                self.request_stop(run)
