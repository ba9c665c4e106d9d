"""Which of this process's runs execute when: at most ``max_concurrent`` at once, the rest queued.

:class:`RunScheduler` holds the runs this process executes, each an
:class:`~reasonloop.runs.execution.Execution` with its task: it launches them, gives each a slot
when one is free, lends the slot to a queued run while a run waits for a person and takes one
again once it is answered, cancels the runs that are stopped, and interrupts them all when the
server stops. Its own module because that is one process's business, where the run manager
records, reads and stops runs through the store for every instance.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable

from reasonloop.config import RunsSettings
from reasonloop.errors import ReasonLoopError, RunQueueFull, RunStoreUnavailable
from reasonloop.events import ErrorEvent, Event
from reasonloop.runs.approvals import ApprovalDesk
from reasonloop.runs.conversations import ConversationTurns
from reasonloop.runs.execution import Execution, RunDriver, Runner, Stop
from reasonloop.runs.models import RunRecord, RunRequest
from reasonloop.runs.recording.recorder import EventRecorder
from reasonloop.runs.replay import StepJournal
from reasonloop.runs.stores.protocol import RunStore

__all__ = ["RunScheduler"]

log = logging.getLogger("reasonloop.runs.manager")
"""The run manager's logger: what its runs log is found where it always was."""


class RunScheduler:
    """The runs one run manager executes, and its slots.

    Args:
        store: The run store (the runs' step journals write to it).
        runner: Makes a run's events from its request.
        settings: ``[runs]`` settings (``max_concurrent``, ``max_queued``, ``keep_finished_s``).
        recorder: Records and publishes the runs' events.
        turns: Which run of each conversation is in flight here.
        approvals: Where runs of a runner that asks for approval wait for a person.
        notify: Tells the run manager's observers (``("status", record, None)``, and each event).
        keeps_steps: Runs keep their request and finished steps in the store.
    """

    def __init__(
        self,
        store: RunStore,
        runner: Runner,
        settings: RunsSettings,
        recorder: EventRecorder,
        turns: ConversationTurns,
        approvals: ApprovalDesk,
        notify: Callable[[str, RunRecord, Event | None], None],
        *,
        keeps_steps: bool,
    ) -> None:
        self.store = store
        self.runner = runner
        self.settings = settings
        self.recorder = recorder
        self.keeps_steps = keeps_steps
        self.executing: dict[str, Execution] = {}
        """The runs this process executes (and those ended less than ``keep_finished_s`` ago)."""
        self._turns = turns
        self._approvals = approvals
        self._notify = notify
        self._driver = RunDriver(store, recorder, notify)
        self._slots = asyncio.Semaphore(settings.max_concurrent)
        self._waiting = 0
        self._asks_approval = bool(getattr(runner, "asks_approval", False))

    def active_counts(self) -> dict[str, int]:
        """Runs of this process that are ``queued``, ``running`` and ``awaiting_approval`` now."""
        counts = {"queued": 0, "running": 0, "awaiting_approval": 0}
        for run in self.executing.values():
            if run.record.status in counts:
                counts[run.record.status] += 1
        return counts

    def check_room(self) -> None:
        """Raises :class:`~reasonloop.errors.RunQueueFull` when every slot is busy and the queue is full."""
        if self._slots.locked() and self._waiting >= self.settings.max_queued:
            raise RunQueueFull(
                f"{self.settings.max_concurrent} runs are executing and {self._waiting} are queued; retry later",
                queued=self._waiting,
            )

    def answered_task(self, run_id: str) -> asyncio.Task[None] | None:
        """The task of run ``run_id`` of this process when it has answered and is storing its end."""
        run = self.executing.get(run_id)
        return run.task if run is not None and run.live.ended else None

    def launch(self, record: RunRecord, request: RunRequest, run: Execution | None = None) -> None:
        """Start executing the recorded run (``run``, when it resumes one of a dead instance)."""
        if run is None:
            run = Execution.of(record, request)
            if self.keeps_steps:
                run.journal = StepJournal(self.store, record.run_id)
        if self._asks_approval:
            run.approvals = self._approvals.for_run(
                record.run_id, functools.partial(self._awaiting, run), functools.partial(self._answered, run)
            )
        self.executing[record.run_id] = run
        if record.conversation_id:
            self._turns.take(record.conversation_id, record.run_id)
        self._waiting += 1
        run.task = asyncio.create_task(self._execute(run), name=f"run:{record.run_id}")
        self._notify("status", record, None)

    async def _execute(self, run: Execution) -> None:
        record = run.record
        run.started = True
        try:
            try:
                if run.resumed is not None:  # first: readers learn at once that the run goes on
                    self._driver.emit(run, run.resumed)
                if run.stop_requested:
                    raise Stop
                # acquire/release rather than `async with`: the context manager's bound __aexit__
                # would stay referenced from this frame for the whole run
                await self._slots.acquire()
                run.holds_slot = True
                try:
                    self._waiting -= 1
                    run.cancellable = False
                    record.status, record.started_at = "running", record.started_at or time.time()
                    self._notify("status", record, None)
                    # Recorded with the run's first events, in their transaction (one thread hand-off
                    # fewer per run); the run's end waits for those, so the order is kept.
                    self.recorder.add_status(record.run_id, {"status": "running", "started_at": record.started_at})
                    await self._driver.drive(run, self.runner)
                finally:
                    if run.holds_slot:
                        run.holds_slot = False
                        self._slots.release()
            finally:
                if record.status == "queued":
                    self._waiting -= 1
        except (asyncio.CancelledError, Stop) as exc:
            run.cancellable = False  # a stop arriving now must not cancel the run's end
            task = asyncio.current_task()
            if isinstance(exc, asyncio.CancelledError) and task is not None and (run.stop_requested or run.parked):
                task.uncancel()
            if run.parked and not run.stop_requested:
                with contextlib.suppress(ReasonLoopError):  # its events stored (else close() retries); no end
                    await self.recorder.all_recorded(run.recording)
            else:
                await self._driver.finish_stopped(run)
                if not run.stop_requested and isinstance(exc, asyncio.CancelledError):
                    raise
        except RunStoreUnavailable as exc:
            # The store is gone: tell live readers; what they already received stays theirs.
            message = f"run failed, run store lost: {exc.message}"
            self._driver.end_locally(run, ErrorEvent(code=exc.code, message=message))
        except ReasonLoopError as exc:
            await self._driver.fail(run, exc.code, exc.message)
        except Exception as exc:
            log.exception("run %s crashed", record.run_id)
            await self._driver.fail(run, "run.error", f"{type(exc).__name__}: {exc}")
        finally:
            run.live.end()
            self._turns.release(record.conversation_id, record.run_id)
            self._notify("status", record, None)
            asyncio.get_running_loop().call_later(self.settings.keep_finished_s, self._forget, record.run_id, run)

    def _forget(self, run_id: str, run: Execution) -> None:
        if self.executing.get(run_id) is run:
            del self.executing[run_id]
            self._approvals.forget(run_id)

    # -- waiting for a person ---------------------------------------------------------------------
    def _set_status(self, run: Execution, status: str) -> None:
        record = run.record
        if record.finished:
            return
        record.status = status  # type: ignore[assignment]
        self.recorder.add_status(record.run_id, {"status": status})
        self._notify("status", record, None)

    def _awaiting(self, run: Execution) -> None:
        """The run waits for a person: ``awaiting_approval``, and its slot goes to a queued run."""
        self._set_status(run, "awaiting_approval")
        if run.holds_slot:
            run.holds_slot = False
            self._slots.release()

    async def _answered(self, run: Execution) -> None:
        """The run's wait is over: it takes a slot again (waiting behind running ones) and runs."""
        if not run.holds_slot:
            await self._slots.acquire()
            run.holds_slot = True
        self._set_status(run, "running")

    # -- stopping ---------------------------------------------------------------------------------
    def _cancel(self, run: Execution) -> None:
        """Cancel the run's task where it waits on its runner or for a slot; once only, so the
        run's own end (which then runs) is never cancelled by a later stop."""
        if run.task is not None and run.started and run.cancellable and not run.task.done():
            run.cancellable = False
            run.task.cancel()

    def request_stop(self, run: Execution) -> None:
        """Stop the run at its next step (its end, partial answer kept, then runs as any end)."""
        run.stop_requested = True
        self._cancel(run)

    async def interrupt(self) -> None:
        """Interrupt the runs this process executes: each ends ``interrupted`` with its partial
        answer (see :meth:`RunManager.interrupt <reasonloop.runs.manager.RunManager.interrupt>`)."""
        unstarted = []
        ending = []
        for run in list(self.executing.values()):
            if run.task is not None and not run.live.done and not run.shutting_down:
                run.shutting_down = True
                ending.append(run.task)
                # A run waiting for a person is left in flight: it resumes with its approval
                # pending in the server that starts next (or at once in another instance).
                run.parked = self.keeps_steps and run.record.status == "awaiting_approval"
                if run.started:
                    self._cancel(run)
                else:  # cancelled before its first step, the task runs none of its clean-up: do it here
                    run.task.cancel()
                    unstarted.append(run)
        await asyncio.gather(*ending, return_exceptions=True)
        for run in unstarted:
            self._waiting -= 1
            await self._driver.finish_stopped(run)
            run.live.end()
