"""RunManager: start runs as tasks, let anyone read them, stop them; every event recorded.

The caller that starts a run never waits on it: :meth:`RunManager.start` records the run,
creates its task and returns. The task takes a slot (at most ``max_concurrent`` runs execute;
the rest queue: :mod:`reasonloop.runs.scheduler`) and drives the runner's events
(:mod:`reasonloop.runs.execution`): each is stamped with the run id and the next ``seq`` and
handed to the recorder, which publishes it to readers only once a crash could not lose it:

* with a journal (``[runs] journal`` and a store whose features include ``local_journal``, as
  SQLite's do), as soon as it is in this process's journal; the store records the events of
  all runs behind, one transaction every ``record_interval_s`` (see
  :mod:`reasonloop.runs.recording.journal`);
* without one, once the store holds it (what the runs emit while one store call is in flight
  goes out in the next: one transaction or round trip for hundreds of events).

A run does not wait for each event's record (the model keeps streaming); it waits before its
status changes, and when too many of its events are still unrecorded.

With ``[runs] resume_interrupted`` (and a runner that keeps steps), each run's request and
finished steps are kept in the store while it is in flight, and a run of an instance that died
goes on here (:mod:`reasonloop.runs.resume`): :meth:`RunManager.open` and the background upkeep
claim such runs and drive them again.

Readers get a :class:`~reasonloop.runs.reading.RunFeed` from :meth:`RunManager.read`, for a
run this process executes (one shared in-memory list per run: a slow reader costs nothing to
the others) or one executed by another instance, or finished long ago (read through the store).

Example::

    manager = RunManager(store, runner)
    await manager.open()
    record = await manager.start(RunRequest(question="what is WAL?"))
    async for delivery in await manager.read(record.run_id):
        print(delivery.type)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from reasonloop.approval_answers import Decision
from reasonloop.config import ApprovalSettings, RunsSettings
from reasonloop.errors import (
    ApprovalNotFound,
    RunFinished,
    RunNotFound,
    RunStoreUnavailable,
)
from reasonloop.events import Event, RunResult
from reasonloop.runs.approvals import ApprovalDesk, ApprovalView, audit
from reasonloop.runs.conversations import ConversationTurns
from reasonloop.runs.execution import Execution, Runner
from reasonloop.runs.instance import new_instance_id
from reasonloop.runs.models import RunRecord, RunRequest, new_id, result_from_events
from reasonloop.runs.reading import RunFeed
from reasonloop.runs.recording.journal import Journal
from reasonloop.runs.recording.recorder import EventRecorder
from reasonloop.runs.records import Records
from reasonloop.runs.replay import REQUEST_KEY
from reasonloop.runs.resume import Resume, resumed
from reasonloop.runs.scheduler import RunScheduler
from reasonloop.runs.stores.protocol import RunStore, features_of, together
from reasonloop.runs.upkeep import Upkeep
from reasonloop.unicode_text import lone_surrogate

__all__ = ["RunManager", "Runner"]

log = logging.getLogger(__name__)

Observer = Callable[[str, RunRecord, Event | None], None]
"""Called with ``("event", record, event)`` for each event and ``("status", record, None)``."""


class RunManager:
    """Runs, readers and stops for one server process.

    Args:
        store: Where runs, events and conversations are recorded (opened by the caller).
        runner: Makes a run's events from its request.
        settings: ``[runs]`` settings (concurrency, queue, retention).
        instance: This process's id in the store (generated when omitted).
        approvals: ``[approvals]`` settings (how long a tool call waits for a person).
    """

    def __init__(
        self,
        store: RunStore,
        runner: Runner,
        settings: RunsSettings | None = None,
        *,
        instance: str | None = None,
        approvals: ApprovalSettings | None = None,
    ) -> None:
        self.store = store
        self.runner = runner
        self.settings = settings or RunsSettings()
        self.instance = instance or new_instance_id()
        self.observers: list[Observer] = []
        self.records = Records(store)
        """A tenant's runs, conversations and feedback, for surfaces (they never reach the store)."""
        self._turns = ConversationTurns(store, self.settings.stop_wait_s)
        self._background: list[asyncio.Task[Any]] = []
        journaled = self.settings.journal and features_of(store).local_journal
        self.journal = Journal(store.journal_dir, self.instance) if journaled else None  # type: ignore[attr-defined]
        """Where events are made durable before readers see them (None: the store, event by event)."""
        self.recorder = EventRecorder(store, self.journal, self.settings.record_interval_s)
        self.keeps_steps = bool(
            self.settings.resume_interrupted
            and features_of(store).step_journal
            and getattr(runner, "keeps_steps", False)
        )
        """Runs keep their request and finished steps in the store, and runs of dead instances
        resume here (see :mod:`reasonloop.runs.resume`)."""
        self.approvals = ApprovalDesk(store, approvals)
        """Tool calls of runs waiting for a person, and the answers to them (:mod:`reasonloop.runs.approvals`)."""
        self.scheduler = RunScheduler(
            store,
            runner,
            self.settings,
            self.recorder,
            self._turns,
            self.approvals,
            self._notify,
            keeps_steps=self.keeps_steps,
        )
        """The runs this process executes, in its slots (:mod:`reasonloop.runs.scheduler`)."""
        self._executing = self.scheduler.executing
        self.resume = Resume(store, self.instance, runner, self._resume) if self.keeps_steps else None
        stop = self.scheduler.request_stop
        self.upkeep = Upkeep(store, self.instance, self.journal, self.recorder, self._executing, stop, self.resume)

    # -- lifecycle ------------------------------------------------------------------------------
    async def open(self) -> list[str]:
        """Resume runs orphaned by dead instances (or mark those that cannot go on
        ``interrupted``) and start the background loops.

        Returns:
            Ids of the runs marked interrupted (those resumed are in ``resume.resumed``).
        """
        await self.store.heartbeat(self.instance)
        if self.journal is not None:
            self.journal.open()
        try:
            marked = await self.upkeep.recover()
        except BaseException:
            if self.journal is not None:
                self.journal.close()
            raise
        if marked:
            log.warning("marked %d run(s) interrupted: %s", len(marked), ", ".join(marked))
        if self.resume is not None and self.resume.resumed:
            log.warning(
                "resumed %d run(s) of dead instances: %s", len(self.resume.resumed), ", ".join(self.resume.resumed)
            )
        self._background = self.upkeep.start()
        return marked

    async def close(self) -> None:
        """Cancel the background loops and interrupt runs still executing (their partial answer is kept)."""
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self.interrupt()
        ending = [run.task for run in self._executing.values() if run.task is not None]  # interrupted earlier
        await asyncio.gather(*ending, return_exceptions=True)
        for run in self._executing.values():  # their last steps' writes, which nothing waited for
            if run.journal is not None:
                await run.journal.flush()
        await self.recorder.drain()
        try:  # the store may be back by now
            await self.recorder.record_lost_ends()
        except RunStoreUnavailable as exc:
            log.warning(
                "%d run(s) ended while the run store was lost and stay unrecorded: %s",
                len(self.recorder.lost_ends),
                exc.message,
            )
        if self.journal is not None:
            self.journal.close()
        self._background = []

    async def interrupt(self) -> None:
        """Interrupt the runs this process executes, as a server that is stopping does: each ends
        ``interrupted`` with its partial answer, and its readers get that end. Called as soon as the
        server begins to stop, its open event streams end with it rather than being cut."""
        await self.scheduler.interrupt()

    async def check_ready(self) -> None:
        """Whether runs can start: the store answers a read and takes a write (a store that answers
        reads may refuse writes).

        Raises:
            RunStoreUnavailable: it does not (or another failure of the store, as it raised it).
        """
        await self.store.get_run("readyz-probe")
        await self.store.heartbeat(self.instance)

    def rate_buckets(self) -> Callable[[str, float, int], Awaitable[float]] | None:
        """Takes a token from a rate bucket every process using the store shares (``await
        take(key, rate, burst)``, see :class:`~reasonloop.runs.stores.protocol.StoreFeatures`);
        None when the store keeps none."""
        return self.store.take_token if features_of(self.store).rate_buckets else None  # type: ignore[attr-defined]

    # -- starting ---------------------------------------------------------------------------------
    def active_counts(self) -> dict[str, int]:
        """Runs of this process that are ``queued``, ``running`` and ``awaiting_approval`` now."""
        return self.scheduler.active_counts()

    async def start(self, request: RunRequest) -> RunRecord:
        """Record and launch a run; returns at once with its record (status ``queued``).

        Raises:
            RequestInvalid: the runner rejected the request (unknown strategy, bad settings).
            RunQueueFull: every slot is busy and the queue is full.
            ConversationBusy: a run of the request's conversation is still in flight.
        """
        validate = getattr(self.runner, "validate", None)  # optional in the Runner contract
        if validate is not None:
            validate(request)
        self.scheduler.check_room()
        run_id = request.run_id or new_id("run")
        continued = request.conversation_id
        if continued is not None:
            await self._turns.claim(continued, run_id, self.scheduler.answered_task)
        try:
            return await self._record_and_launch(request, run_id)
        except BaseException:
            if continued is not None and run_id not in self._executing:
                self._turns.release(continued, run_id)
            raise

    async def _record_and_launch(self, request: RunRequest, run_id: str) -> RunRecord:
        conversation_id, new_conversation = await self._turns.resolve(request)
        request = request.model_copy(update={"run_id": run_id, "conversation_id": conversation_id})
        record = RunRecord(
            run_id=run_id,
            tenant=request.tenant,
            conversation_id=conversation_id,
            reasoning=request.agent or request.reasoning or request.mode or "",
            question=request.question,
            instance=self.instance,
            reader=request.reader,
        )
        if new_conversation is None and features_of(self.store).continuing_runs:
            # continues a conversation: other instances may be answering it
            create = self.store.create_continuing_run  # type: ignore[attr-defined]
            if self.keeps_steps:
                create = functools.partial(self._create_continuing, create, request)
            recording = asyncio.ensure_future(self._turns.record_continuing(create, record))
            try:
                await asyncio.shield(recording)
            except asyncio.CancelledError:  # as below, launched once the store has it
                recording.add_done_callback(lambda done: self._launch_recorded(done, record, request))
                raise
            self.scheduler.launch(record, request)
            return record.model_copy()
        writes = [self.store.create_run(record)]
        if new_conversation is not None:
            writes.insert(0, self.store.create_conversation(new_conversation))
        if self.keeps_steps:  # in the run's transaction: a run that can resume has its request
            writes.append(self.store.put_step(run_id, REQUEST_KEY, request.model_dump_json()))  # type: ignore[attr-defined]
        try:
            await together(writes)
        except asyncio.CancelledError:
            # The caller went away (a socket closed right after its ask) once the run was handed to
            # the store, which records it all the same: launched, it runs and ends like any other
            # (its readers may resume it). Not launched, it would stay queued for good.
            self.scheduler.launch(record, request)
            raise
        self.scheduler.launch(record, request)
        return record.model_copy()

    async def _create_continuing(self, create: Any, request: RunRequest, record: RunRecord) -> str | None:
        """``create(record)``, then the run's request kept (when it was recorded)."""
        holder: str | None = await create(record)
        if holder is None:
            await self.store.put_step(record.run_id, REQUEST_KEY, request.model_dump_json())  # type: ignore[attr-defined]
        return holder

    def _launch_recorded(self, done: asyncio.Future[None], record: RunRecord, request: RunRequest) -> None:
        if not done.cancelled() and done.exception() is None:
            self.scheduler.launch(record, request)

    def _resume(self, record: RunRecord, request: RunRequest, events: list[Event], steps: dict[str, str]) -> None:
        """Execute again a run this instance claimed from a dead one (see :mod:`reasonloop.runs.resume`)."""
        self.scheduler.launch(record, request, resumed(self.store, self.instance, record, request, events, steps))

    # -- approvals --------------------------------------------------------------------------------
    async def answer_approval(
        self, run_id: str, approval_id: str, decision: Decision, tenant: str | None = None
    ) -> None:
        """Answer a tool call of run ``run_id`` waiting for approval (the run may execute on any
        instance; one whose instance died resumes where recovery takes it, with this answer).

        Raises:
            RunNotFound: no such run, or another tenant's.
            ApprovalNotFound: the run has no such approval waiting (or has ended).
            ApprovalAnswered: it was decided already.
            ApprovalInvalid: the decision does not fit (modified arguments against the tool's schema).
        """
        record = await self.get(run_id, tenant)
        if record.finished:
            raise ApprovalNotFound(f"run {run_id} has ended: no approval of it waits", run_id=run_id)
        await self.approvals.answer(run_id, approval_id, decision)
        if run_id not in self._executing and self.resume is not None:
            with contextlib.suppress(Exception):  # the answer is kept: recovery takes the run up later anyway
                if not await self.store.instance_alive(record.instance):
                    task = asyncio.create_task(self.upkeep.recover(), name=f"recover-after-answer:{run_id}")
                    self._background.append(task)
                    task.add_done_callback(self._background_done)

    def _background_done(self, task: asyncio.Task[Any]) -> None:
        with contextlib.suppress(ValueError):
            self._background.remove(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("recovering a run after its approval failed: %s", task.exception())

    async def approvals_of(self, run_id: str, tenant: str | None = None) -> list[ApprovalView]:
        """Every approval the run asked for, with who decided what and when (from its events).

        Raises:
            RunNotFound: no such run, or another tenant's.
        """
        record = await self.get(run_id, tenant)
        run = self._executing.get(run_id)
        events = run.live.published_events() if run is not None else await self.store.events(run_id)
        return audit(events, record.finished)

    def _notify(self, kind: str, record: RunRecord, event: Event | None) -> None:
        for observer in self.observers:
            try:
                observer(kind, record, event)
            except Exception:  # an observer must never break a run
                log.exception("run observer failed")

    # -- reading ----------------------------------------------------------------------------------
    async def get(self, run_id: str, tenant: str | None = None) -> RunRecord:
        """The run's record (live when this process executes it).

        Raises:
            RunNotFound: no such run, or it belongs to another tenant.
        """
        run = self._executing.get(run_id)
        if run is None and lone_surrogate(run_id) is not None:  # no store could hold such an id
            raise RunNotFound(f"no run {run_id!r}", run_id=run_id)
        if run is not None:
            record = run.record.model_copy()
            if not record.finished:  # what readers have, not what is still being recorded
                record.content, record.last_seq = "".join(run.live.delivered), run.live.last_seq
        else:
            found = await self.store.get_run(run_id)
            if found is None:
                raise RunNotFound(f"no run {run_id!r}", run_id=run_id)
            record = found
        if tenant is not None and record.tenant != tenant:
            raise RunNotFound(f"no run {run_id!r}", run_id=run_id)
        return record

    def execution(self, run_id: str) -> Execution | None:
        """The run while this process executes it (and for ``keep_finished_s`` after), else None."""
        return self._executing.get(run_id)

    async def result(self, run_id: str, tenant: str | None = None) -> tuple[RunRecord, RunResult]:
        """The record and the :class:`RunResult` rebuilt from the run's events so far."""
        record = await self.get(run_id, tenant)
        run = self._executing.get(run_id)
        events = run.live.published_events() if run is not None else await self.store.events(run_id)
        return record, result_from_events(record, events)

    async def read(self, run_id: str, after_seq: int = 0, tenant: str | None = None) -> RunFeed:
        """Check access, then the run's events with ``seq > after_seq``: what exists, then live
        ones until the terminal one (iterate the feed, or attach a sink to it).

        Raises:
            RunNotFound: no such run, or another tenant's.
        """
        run = self._executing.get(run_id)
        if run is None:
            await self.get(run_id, tenant)  # raises RunNotFound unless the store has it
            return RunFeed(after_seq, stored=self.store.follow(run_id, after_seq))
        if tenant is not None and run.record.tenant != tenant:
            raise RunNotFound(f"no run {run_id!r}", run_id=run_id)
        return RunFeed(after_seq, live=run.live)

    # -- stopping ---------------------------------------------------------------------------------
    async def stop(self, run_id: str, tenant: str | None = None) -> RunRecord:
        """Stop a run (on this instance or, through the store, on another); returns its record.

        Raises:
            RunNotFound: no such run, or another tenant's.
            RunFinished: the run had already ended (``status`` in the error's details).
        """
        record = await self.get(run_id, tenant)
        if record.finished:
            raise RunFinished(f"run {run_id} already ended: {record.status}", run_id=run_id, status=record.status)
        run = self._executing.get(run_id)
        if run is not None and run.task is not None:
            self.scheduler.request_stop(run)
            await asyncio.wait({run.task}, timeout=self.settings.stop_wait_s)
            return await self.get(run_id, tenant)
        await self.store.request_stop(run_id)
        deadline = time.monotonic() + self.settings.stop_wait_s
        while time.monotonic() < deadline:
            record = await self.get(run_id, tenant)
            if record.finished:
                break
            await asyncio.sleep(0.02)
        return record
