"""RunManager: start runs as tasks, fan their events out, stop them, record everything.

The caller that starts a run never waits on it: :meth:`RunManager.start` records the run,
creates its task and returns. The task takes a slot (at most ``max_concurrent`` runs execute;
the rest queue), iterates the runner's events and stamps each with the run id and the next
``seq``. A subscriber can never have seen an event that a crash would lose:

* with a journal (``[runs] journal`` and a store that has a ``journal_dir``, as SQLite
  does), each event is written to this process's journal and handed to subscribers in the
  same step; the store records the events of all runs behind, one transaction every
  ``record_interval_s`` (see :mod:`reasonloop.runs.journal`);
* without one, stamped events of all runs are recorded together (what the runs emit while
  one store call is in flight goes out in the next: one transaction or round trip for
  hundreds of events), and only once the store holds them are they handed to subscribers.

Recording is :class:`~reasonloop.runs.recorder.EventRecorder`'s job. A run does not wait for
each event's record (the model keeps streaming); it waits before its status changes, and
when too many of its events are still unrecorded.

Subscribers read one shared in-memory list per run (no per-subscriber queue, so a slow
reader costs nothing to the others) or attach a sink called with each event as it is
recorded, and resume after any ``seq``; runs executed by another instance, or finished long
ago, are read through the store instead.

Example::

    manager = RunManager(store, runner)
    await manager.open()
    record = await manager.start(RunRequest(question="what is WAL?"))
    async for event in await manager.subscribe(record.run_id):
        print(event.type)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from reasonloop.config import RunsSettings
from reasonloop.errors import (
    ConversationBusy,
    ReasonLoopError,
    RequestInvalid,
    RunFinished,
    RunNotFound,
    RunQueueFull,
    RunStoreUnavailable,
)
from reasonloop.events import Answer, AnswerDelta, ErrorEvent, Event, RunResult, RunStarted
from reasonloop.llm.base import Message
from reasonloop.runs.journal import Journal, file_prefix
from reasonloop.runs.journal_recovery import recover_journals, unrecovered
from reasonloop.runs.live import LiveRun, with_json
from reasonloop.runs.models import (
    ConversationRecord,
    RunRecord,
    RunRequest,
    answer_status,
    conversation_turn,
    new_id,
    result_from_events,
)
from reasonloop.runs.recorder import EventRecorder
from reasonloop.runs.store import (
    RunStore,
    ended_fields,
    is_terminal_event,
    new_instance_id,
    recover_interrupted,
    together,
)

__all__ = ["RunManager", "Runner"]

log = logging.getLogger(__name__)

Runner = Callable[[RunRequest], AsyncIterator[Event]]
"""Turns a request into its events (RunStarted first, Answer or ErrorEvent last). A runner may
also have ``validate(request)``, raising :class:`~reasonloop.errors.RequestInvalid`."""

Observer = Callable[[str, RunRecord, Event | None], None]
"""Called with ``("event", record, event)`` for each event and ``("status", record, None)``."""

_HEARTBEAT_S = 3.0
_END_FIELDS = ("status", "content", "stop_reason", "error", "last_seq", "ended_at")
"""Record fields a run's end sets in the store."""
_RETRY_S = 1.0
"""Pause before watching stop requests again after a failure."""
_TURN_WAIT_S = 0.25
"""How long a question waits for a run of its conversation on another instance (one that has
answered may still be storing its turn) before it is refused as busy."""
_MAX_UNRECORDED = 256
"""A run with this many events not yet recorded waits for the store before taking the next."""


class _Stop(Exception):
    """Raised inside a run task at an event boundary when a stop was requested mid-write."""


class RunManager:
    """Runs, subscriptions and stops for one server process.

    Args:
        store: Where runs, events and conversations are recorded (opened by the caller).
        runner: Makes a run's events from its request.
        settings: ``[runs]`` settings (concurrency, queue, retention).
        instance: This process's id in the store (generated when omitted).
    """

    def __init__(
        self, store: RunStore, runner: Runner, settings: RunsSettings | None = None, *, instance: str | None = None
    ) -> None:
        self.store = store
        self.runner = runner
        self.settings = settings or RunsSettings()
        self.instance = instance or new_instance_id()
        self.observers: list[Observer] = []
        self._live: dict[str, LiveRun] = {}
        self._conversations: dict[str, str] = {}
        """conversation id -> the run of it in flight here (a conversation answers one question at a time)."""
        self._slots = asyncio.Semaphore(self.settings.max_concurrent)
        self._waiting = 0
        self._background: list[asyncio.Task[Any]] = []
        journal_dir = getattr(store, "journal_dir", None) if self.settings.journal else None
        self.journal = Journal(journal_dir, self.instance) if journal_dir else None
        """Where events are made durable before subscribers see them (None: the store, event by event)."""
        self.recorder = EventRecorder(store, self.journal, self.settings.record_interval_s)

    # -- lifecycle ------------------------------------------------------------------------------
    async def open(self) -> list[str]:
        """Mark runs orphaned by dead instances ``interrupted`` and start the background loops.

        Returns:
            Ids of the runs marked interrupted.
        """
        await self.store.heartbeat(self.instance)
        if self.journal is not None:
            self.journal.open()
        try:
            marked = await self._recover()
        except BaseException:
            if self.journal is not None:
                self.journal.close()
            raise
        if marked:
            log.warning("marked %d run(s) interrupted: %s", len(marked), ", ".join(marked))
        self._background = [
            asyncio.create_task(self._watch_stops(), name="run-manager-stops"),
            asyncio.create_task(self._housekeeping(), name="run-manager-housekeeping"),
        ]
        return marked

    async def close(self) -> None:
        """Cancel the background loops and interrupt runs still executing (their partial answer is kept)."""
        for task in self._background:
            task.cancel()
        unstarted = []
        for live in list(self._live.values()):
            if live.task is not None and not live.done:
                live.shutting_down = True
                if live.started:
                    self._cancel(live)
                else:  # cancelled before its first step, the task runs none of its clean-up: do it here
                    live.task.cancel()
                    unstarted.append(live)
        tasks = [t for t in (*self._background, *(lv.task for lv in self._live.values())) if t is not None]
        await asyncio.gather(*tasks, return_exceptions=True)
        for live in unstarted:
            self._waiting -= 1
            await self._finish_stopped(live)
            live.end()
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

    async def _recover(self) -> list[str]:
        """Events journaled by dead processes into the store, then their runs marked interrupted
        (not those of a process whose segments are still on disk: being imported by another
        process, or whose import failed; a later round takes them)."""
        if self.journal is None:
            return await recover_interrupted(self.store, me=self.instance)
        await recover_journals(self.journal.directory, self.store)
        waiting = unrecovered(self.journal.directory)
        return await recover_interrupted(
            self.store, me=self.instance, wait_for=lambda instance: file_prefix(instance) in waiting
        )

    # The background loops outlive any failure: an instance whose heartbeat stopped would have
    # its live runs marked interrupted by the others, and one no longer polling would miss stops.
    async def _watch_stops(self) -> None:
        while True:
            try:
                async for run_id in self.store.stop_requests(self.instance):
                    live = self._live.get(run_id)
                    if live is not None and not live.done:
                        self._request_stop(live)
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
                await self._recover()
                await self._check_stop_keys()
            except RunStoreUnavailable as exc:
                log.warning("run store unavailable: %s", exc.message)
            except Exception:
                log.exception("run housekeeping failed; trying again in %g s", _HEARTBEAT_S)

    async def _check_stop_keys(self) -> None:
        # A stop published while this instance was not yet listening is still seen here.
        check = getattr(self.store, "stops_requested", None)
        if check is None:
            return
        waiting = [live for live in self._live.values() if not live.done and not live.stop_requested]
        if not waiting:
            return
        stopped = await check([live.record.run_id for live in waiting])
        for live in waiting:
            if live.record.run_id in stopped and not live.done:
                self._request_stop(live)

    # -- starting ---------------------------------------------------------------------------------
    def active_counts(self) -> dict[str, int]:
        """Runs of this process that are ``queued`` and ``running`` now."""
        counts = {"queued": 0, "running": 0}
        for live in self._live.values():
            if live.record.status in counts:
                counts[live.record.status] += 1
        return counts

    async def start(self, request: RunRequest) -> RunRecord:
        """Record and launch a run; returns at once with its record (status ``queued``).

        Raises:
            RequestInvalid: the runner rejected the request (unknown strategy, bad settings).
            RunQueueFull: every slot is busy and the queue is full.
        """
        validate = getattr(self.runner, "validate", None)
        if validate is not None:
            validate(request)
        if self._slots.locked() and self._waiting >= self.settings.max_queued:
            raise RunQueueFull(
                f"{self.settings.max_concurrent} runs are executing and {self._waiting} are queued; retry later",
                queued=self._waiting,
            )
        run_id = request.run_id or new_id("run")
        continued = request.conversation_id
        if continued is not None:
            while (holder := self._conversations.get(continued)) is not None:
                live = self._live.get(holder)
                if live is None or not live.ended or live.task is None:
                    raise ConversationBusy(
                        f"conversation {continued} is still answering run {holder}: wait for its end, or stop it",
                        run_id=holder,
                        conversation_id=continued,
                    )
                # Answered, its turn being stored: the next question waits for that, not the client.
                await asyncio.wait({live.task}, timeout=self.settings.stop_wait_s)
                if not live.task.done():
                    raise ConversationBusy(
                        f"conversation {continued} is still storing the turn of run {holder}; try again",
                        run_id=holder,
                        conversation_id=continued,
                    )
            self._conversations[continued] = run_id  # taken before any other wait: one question at a time
        try:
            return await self._record_and_launch(request, run_id)
        except BaseException:
            if continued is not None and run_id not in self._live and self._conversations.get(continued) == run_id:
                del self._conversations[continued]
            raise

    async def _record_and_launch(self, request: RunRequest, run_id: str) -> RunRecord:
        conversation_id, new_conversation = await self._conversation(request)
        request = request.model_copy(update={"run_id": run_id, "conversation_id": conversation_id})
        record = RunRecord(
            run_id=run_id,
            tenant=request.tenant,
            conversation_id=conversation_id,
            reasoning=request.agent or request.reasoning or "",
            question=request.question,
            instance=self.instance,
        )
        sole = getattr(self.store, "create_continuing_run", None) if new_conversation is None else None
        if sole is not None:  # continues a conversation: other instances may be answering it
            recording = asyncio.ensure_future(self._record_continuing(sole, record))
            try:
                await asyncio.shield(recording)
            except asyncio.CancelledError:  # as below, launched once the store has it
                recording.add_done_callback(lambda done: self._launch_recorded(done, record, request))
                raise
            self._launch(record, request)
            return record.model_copy()
        writes = [self.store.create_run(record)]
        if new_conversation is not None:
            writes.insert(0, self.store.create_conversation(new_conversation))
        try:
            await together(writes)
        except asyncio.CancelledError:
            # The caller went away (a socket closed right after its ask) once the run was handed to
            # the store, which records it all the same: launched, it runs and ends like any other
            # (its readers may resume it). Not launched, it would stay queued for good.
            self._launch(record, request)
            raise
        self._launch(record, request)
        return record.model_copy()

    async def _record_continuing(self, create: Callable[[RunRecord], Awaitable[str | None]], record: RunRecord) -> None:
        """Record a run that continues its conversation, unless a run of the conversation is in
        flight on another instance. One that has answered and is storing its turn is given
        :data:`_TURN_WAIT_S` to finish.

        Raises:
            ConversationBusy: another run of the conversation is in flight.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _TURN_WAIT_S
        while (holder := await create(record)) is not None:
            if loop.time() >= deadline:
                raise ConversationBusy(
                    f"conversation {record.conversation_id} is still answering run {holder} on another"
                    " instance: wait for its end, or stop it",
                    run_id=holder,
                    conversation_id=record.conversation_id,
                )
            await asyncio.sleep(_TURN_WAIT_S / 5)

    def _launch_recorded(self, done: asyncio.Future[None], record: RunRecord, request: RunRequest) -> None:
        if not done.cancelled() and done.exception() is None:
            self._launch(record, request)

    def _launch(self, record: RunRecord, request: RunRequest) -> None:
        live = LiveRun(record=record, request=request)
        self._live[record.run_id] = live
        if record.conversation_id:
            self._conversations[record.conversation_id] = record.run_id
        self._waiting += 1
        live.task = asyncio.create_task(self._execute(live), name=f"run:{record.run_id}")
        self._notify("status", record, None)

    async def _conversation(self, request: RunRequest) -> tuple[str, ConversationRecord | None]:
        """The request's conversation id, and the conversation to create when it starts one."""
        if request.conversation_id is None:
            conv = ConversationRecord(
                conversation_id=new_id("conv"), tenant=request.tenant, title=request.question[:80]
            )
            return conv.conversation_id, conv
        conv = await self.store.get_conversation(request.conversation_id)
        if conv is None or conv.tenant != request.tenant:
            raise RequestInvalid(f"no conversation {request.conversation_id!r}", field="conversation_id")
        if not request.history:
            request.history = [
                Message(role=m["role"], content=m.get("content", ""))
                for m in conv.messages
                if m.get("role") in ("user", "assistant")
            ]
        return conv.conversation_id, None

    # -- executing --------------------------------------------------------------------------------
    async def _execute(self, live: LiveRun) -> None:
        record = live.record
        live.started = True
        try:
            try:
                if live.stop_requested:
                    raise _Stop
                # acquire/release rather than `async with`: the context manager's bound __aexit__
                # would stay referenced from this frame for the whole run
                await self._slots.acquire()
                try:
                    self._waiting -= 1
                    live.cancellable = False
                    record.status, record.started_at = "running", time.time()
                    self._notify("status", record, None)
                    # Recorded with the run's first events, in their transaction (one thread hand-off
                    # fewer per run); the run's end waits for those, so the order is kept.
                    self.recorder.add_status(record.run_id, {"status": "running", "started_at": record.started_at})
                    await self._drive(live)
                finally:
                    self._slots.release()
            finally:
                if record.status == "queued":
                    self._waiting -= 1
        except (asyncio.CancelledError, _Stop) as exc:
            live.cancellable = False  # a stop arriving now must not cancel the run's end
            task = asyncio.current_task()
            if isinstance(exc, asyncio.CancelledError) and task is not None and live.stop_requested:
                task.uncancel()
            await self._finish_stopped(live)
            if not live.stop_requested and isinstance(exc, asyncio.CancelledError):
                raise
        except RunStoreUnavailable as exc:
            # The store is gone: tell live subscribers; what they already received stays theirs.
            self._terminal_local(live, ErrorEvent(code=exc.code, message=f"run failed, run store lost: {exc.message}"))
        except ReasonLoopError as exc:
            await self._fail(live, exc.code, exc.message)
        except Exception as exc:
            log.exception("run %s crashed", record.run_id)
            await self._fail(live, "run.error", f"{type(exc).__name__}: {exc}")
        finally:
            live.end()
            if record.conversation_id and self._conversations.get(record.conversation_id) == record.run_id:
                del self._conversations[record.conversation_id]
            self._notify("status", record, None)
            asyncio.get_running_loop().call_later(self.settings.keep_finished_s, self._forget, record.run_id, live)

    async def _drive(self, live: LiveRun) -> None:
        stream = self.runner(live.request)
        try:
            while True:
                if live.stop_requested or live.shutting_down:
                    raise _Stop
                live.cancellable = True
                try:
                    event = await anext(stream)
                except StopAsyncIteration:
                    break
                finally:
                    live.cancellable = False
                self._emit(live, event)
                if is_terminal_event(event):
                    await self._finish(live, event)
                    return
                if live.unrecorded >= _MAX_UNRECORDED:
                    await self.recorder.all_recorded(live)
        finally:
            with contextlib.suppress(Exception):
                await stream.aclose()  # type: ignore[attr-defined]
        await self._fail(live, "run.error", "the run ended without an answer")

    def _emit(self, live: LiveRun, event: Event) -> None:
        """Stamp ``event``, serialise it once, journal and publish it (or, with no journal, queue
        it for recording, then publishing).

        Raises:
            RunStoreUnavailable: the store failed an earlier event of the run, or the journal
                could not take this one (it is not published).
        """
        if live.store_error is not None:
            raise live.store_error
        record = live.record
        if live.emitted == 0 and not isinstance(event, RunStarted):
            self._emit(live, RunStarted(reasoning=record.reasoning, question=record.question))
        if event.depth == 0:
            event.run_id = record.run_id
        event.seq = live.emitted = live.emitted + 1
        if isinstance(event, AnswerDelta) and event.depth == 0:
            live.parts.append(event.text)
        payload = event.to_json()
        segment = None
        if self.journal is not None:
            try:
                segment = self.journal.write(record.run_id, payload)
            except OSError as exc:
                raise RunStoreUnavailable(f"run journal {self.journal.path}: {exc}") from exc
            live.publish(event, payload)
        self.recorder.add(live, event, payload, segment)
        self._notify("event", record, event)

    async def _finish(self, live: LiveRun, event: Event) -> None:
        await self.recorder.all_recorded(live)  # the terminal event is stored before the status says so
        record = live.record
        if isinstance(event, Answer):
            record.content, record.stop_reason = event.text, event.stop_reason
            record.status = answer_status(event)
        else:
            assert isinstance(event, ErrorEvent)
            record.content = "".join(live.parts)
            record.status, record.stop_reason = "failed", "error"
            record.error = {"code": event.code, "message": event.message}
        record.ended_at = time.time()
        record.last_seq = live.emitted
        # The turn before the status: a process dying between the two leaves a run still in flight,
        # which recovery ends (adding the turn only if it is missing), never a finished run without
        # its turn. A store that commits writes started together in one transaction takes both at once.
        writes: list[Callable[[], Awaitable[None]]] = []
        turn = conversation_turn(record, record.content, time.time())
        if turn is not None and record.conversation_id:
            writes.append(functools.partial(self.store.add_messages, record.conversation_id, turn))
        fields = {name: getattr(record, name) for name in _END_FIELDS}
        writes.append(functools.partial(self.store.update_run, record.run_id, **fields))
        if getattr(self.store, "commits_together", False):
            await together([write() for write in writes])
        else:
            for write in writes:
                await write()

    async def _finish_stopped(self, live: LiveRun) -> None:
        reason = "stopped" if live.stop_requested else "interrupted"
        answer = Answer(text="".join(live.parts), stop_reason=reason)
        try:
            self._emit(live, answer)
            await self._finish(live, answer)
        except RunStoreUnavailable as exc:
            self._terminal_local(live, ErrorEvent(code=exc.code, message=f"run store lost: {exc.message}"))

    async def _fail(self, live: LiveRun, code: str, message: str) -> None:
        error = ErrorEvent(code=code, message=message)
        try:
            self._emit(live, error)
            await self._finish(live, error)
        except RunStoreUnavailable as exc:
            self._terminal_local(live, ErrorEvent(code=exc.code, message=f"{message}; run store lost: {exc.message}"))

    def _terminal_local(self, live: LiveRun, event: ErrorEvent) -> None:
        """End the run for its live readers only (the store is gone), right after what they were
        given; the store gets the end once it is back (:meth:`EventRecorder.record_lost_ends`)."""
        record = live.record
        if live.store_error is None:  # events still being recorded are not published after this one
            live.store_error = RunStoreUnavailable(event.message)
        self.recorder.lost_ends.append(live)
        if live.ended:  # readers have the run's end already (its answer): the record says that end
            events = live.recorded_events()
            for name, value in ended_fields(events[-1], events).items():
                setattr(record, name, value)
            return
        event.run_id, event.seq = record.run_id, live.last_seq + 1
        record.last_seq = live.emitted = event.seq
        record.status, record.stop_reason, record.ended_at = "failed", "error", time.time()
        record.content = "".join(live.delivered)
        record.error = {"code": event.code, "message": event.message}
        payload = event.to_json()
        if self.journal is not None:  # on disk if the disk still takes it: recovery finds the run's end
            with contextlib.suppress(OSError):
                self.journal.settle(self.journal.write(record.run_id, payload), recorded=False)
        live.publish(event, payload)
        self._notify("event", record, event)

    def _forget(self, run_id: str, live: LiveRun) -> None:
        if self._live.get(run_id) is live:
            del self._live[run_id]

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
        live = self._live.get(run_id)
        if live is not None:
            record = live.record.model_copy()
            if not record.finished:  # what the store holds, not what is still being recorded
                record.content, record.last_seq = "".join(live.delivered), live.last_seq
        else:
            found = await self.store.get_run(run_id)
            if found is None:
                raise RunNotFound(f"no run {run_id!r}", run_id=run_id)
            record = found
        if tenant is not None and record.tenant != tenant:
            raise RunNotFound(f"no run {run_id!r}", run_id=run_id)
        return record

    async def result(self, run_id: str, tenant: str | None = None) -> tuple[RunRecord, RunResult]:
        """The record and the :class:`RunResult` rebuilt from the run's events so far."""
        record = await self.get(run_id, tenant)
        live = self._live.get(run_id)
        events = live.recorded_events() if live is not None else await self.store.events(run_id)
        return record, result_from_events(record, events)

    async def subscribe(self, run_id: str, after_seq: int = 0, tenant: str | None = None) -> AsyncIterator[Event]:
        """Check access, then return an iterator over the run's events with ``seq > after_seq``.

        The iterator replays what exists and follows live events until the terminal one.

        Raises:
            RunNotFound: no such run, or another tenant's.
        """
        await self.get(run_id, tenant)
        live = self._live.get(run_id)
        if live is None:
            return self.store.follow(run_id, after_seq)
        return live.follow(after_seq)

    async def live_run(self, run_id: str, tenant: str | None = None) -> LiveRun | None:
        """Check access; the run's :class:`LiveRun` while this process executes it (to attach a
        sink), else None (read it through :meth:`subscribe`).

        Raises:
            RunNotFound: no such run, or another tenant's.
        """
        live = self._live.get(run_id)
        if live is None:
            await self.get(run_id, tenant)  # raises RunNotFound unless the store has it
        elif tenant is not None and live.record.tenant != tenant:
            raise RunNotFound(f"no run {run_id!r}", run_id=run_id)
        return live

    async def subscribe_json(
        self, run_id: str, after_seq: int = 0, tenant: str | None = None
    ) -> AsyncIterator[tuple[Event, str]]:
        """Like :meth:`subscribe`, with each event's JSON (serialised once per event, not per subscriber)."""
        await self.get(run_id, tenant)
        live = self._live.get(run_id)
        if live is None:
            return with_json(self.store.follow(run_id, after_seq))
        return live.follow_json(after_seq)

    # -- stopping ---------------------------------------------------------------------------------
    def _cancel(self, live: LiveRun) -> None:
        """Cancel the run's task where it waits on its runner or for a slot; once only, so the
        run's own end (which then runs) is never cancelled by a later stop."""
        if live.task is not None and live.started and live.cancellable and not live.task.done():
            live.cancellable = False
            live.task.cancel()

    def _request_stop(self, live: LiveRun) -> None:
        live.stop_requested = True
        self._cancel(live)

    async def stop(self, run_id: str, tenant: str | None = None) -> RunRecord:
        """Stop a run (on this instance or, through the store, on another); returns its record.

        Raises:
            RunNotFound: no such run, or another tenant's.
            RunFinished: the run had already ended (``status`` in the error's details).
        """
        record = await self.get(run_id, tenant)
        if record.finished:
            raise RunFinished(f"run {run_id} already ended: {record.status}", run_id=run_id, status=record.status)
        live = self._live.get(run_id)
        if live is not None and live.task is not None:
            self._request_stop(live)
            await asyncio.wait({live.task}, timeout=self.settings.stop_wait_s)
            return await self.get(run_id, tenant)
        await self.store.request_stop(run_id)
        deadline = time.monotonic() + self.settings.stop_wait_s
        while time.monotonic() < deadline:
            record = await self.get(run_id, tenant)
            if record.finished:
                break
            await asyncio.sleep(0.02)
        return record
