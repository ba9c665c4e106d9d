"""Driving one run: its runner's events stamped, handed to the recorder, and the run ended.

:class:`Execution` is what this process holds of a run it executes: the readers' side
(:class:`~reasonloop.runs.live.LiveRun`), the recording side
(it is a :class:`~reasonloop.runs.recording.progress.RunRecording`), the request and the task's flags.
:class:`RunDriver` takes the runner's events one by one: each is stamped with the run id and
the next ``seq``, serialised once and given to the recorder (which publishes it), and the run's
terminal event ends it: its record updated, its conversation turn stored. A run that stops,
fails or loses its store ends the same way, with its partial answer kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from reasonloop.errors import RunStoreUnavailable
from reasonloop.events import Answer, AnswerDelta, ErrorEvent, Event, Report, Resumed, RunStarted, Usage, number
from reasonloop.runs.live import LiveRun
from reasonloop.runs.models import RunRecord, RunRequest, answer_status, conversation_turn, is_terminal_event
from reasonloop.runs.recording.progress import RunRecording
from reasonloop.runs.recording.recorder import EventRecorder
from reasonloop.runs.recovery import ended_fields
from reasonloop.runs.repeats import Repeats
from reasonloop.runs.replay.steps import StepJournal
from reasonloop.runs.stores.protocol import RunStore, features_of, together

__all__ = ["Execution", "RunDriver", "Runner", "Stop"]

Runner = Callable[[RunRequest], AsyncIterator[Event]]
"""Turns a request into its events (RunStarted first, Answer or ErrorEvent last), unstamped: the
run manager stamps them. A runner may also have ``validate(request)``, raising
:class:`~reasonloop.errors.RequestInvalid`; ``counts_usage = True``, when it takes a
``usage=`` keyword (a :class:`~reasonloop.events.Usage` it counts the run's consumption into),
so that a run stopped or failed outside the runner still reports what it consumed; and
``keeps_steps = True``, when it takes a ``journal=`` keyword (the run's
:class:`~reasonloop.runs.replay.StepJournal`, around its model and tool calls), so that the run
can resume in another process if this one dies (:mod:`reasonloop.runs.resume`), with
``resumable(request) -> bool`` to refuse that for some runs; and ``asks_approval = True``, when
it takes an ``approvals=`` keyword (the run's :class:`~reasonloop.runs.approvals.RunApprovals`),
through which its tool calls wait for a person (:mod:`reasonloop.tools.approval`)."""

Notify = Callable[[str, RunRecord, Event | None], None]
"""Tells the run manager's observers: ``("event", record, event)`` or ``("status", record, None)``."""

_END_FIELDS = ("status", "content", "stop_reason", "error", "last_seq", "ended_at")
"""Record fields a run's end sets in the store."""
_MAX_UNRECORDED = 256
"""A run with this many events not yet recorded waits for the store before taking the next."""


class Stop(Exception):
    """Raised inside a run task at an event boundary when a stop was requested mid-write."""


@dataclass(eq=False, slots=True)
class Execution(RunRecording):
    """One run this process executes: its recording (what the recorder tracks of it, the fields
    of :class:`RunRecording`), its request and its task's flags. One object per run: under load
    thousands of runs execute at once, and each object is one more for the garbage collector."""

    request: RunRequest = None  # type: ignore[assignment]  # always given (see of())
    task: asyncio.Task[None] | None = None
    cancellable: bool = True
    """True while the task waits for a slot or for the runner (never mid-write)."""
    started: bool = False
    """The task has begun (a task cancelled before its first step would skip all clean-up)."""
    stop_requested: bool = False
    shutting_down: bool = False
    emitted: int = 0
    """The seq of the last event stamped (published or not yet)."""
    parts: list[str] = field(default_factory=list)
    """Text of every top-level answer delta stamped (published or not yet)."""
    draft: str = ""
    """The latest draft report of a research run (a :class:`~reasonloop.events.Report`): its answer
    should it stop before it writes one."""
    usage: Usage | None = None
    """What the run has consumed so far, when its runner counts into it (``counts_usage``)."""
    journal: StepJournal | None = None
    """The run's finished steps, when its runner keeps them (``keeps_steps``)."""
    resumed: Resumed | None = None
    """For a run resumed here: the event that says so, sent before anything else."""
    repeats: Repeats | None = None
    """For a run resumed here: what its stream already has (not sent again)."""
    earlier: str = ""
    """For a run resumed here: its partial answer before (kept should it stop before saying more)."""
    parked: bool = False
    """The server stops while the run waits for approval: it is left in flight in the store, not
    ended, and the next server (or another instance) resumes it with its approval pending."""
    holds_slot: bool = False
    """The run holds one of the manager's execution slots (it gives it back while it waits for a person)."""
    approvals: Any = None
    """The run's approver (a :class:`~reasonloop.runs.approvals.RunApprovals`), for a runner that
    ``asks_approval``."""

    @classmethod
    def of(cls, record: RunRecord, request: RunRequest) -> Execution:
        return cls(live=LiveRun(record=record), run_id=record.run_id, request=request)

    @property
    def recording(self) -> RunRecording:
        """What the recorder tracks of the run (the run itself, seen as its recording)."""
        return self

    @property
    def record(self) -> RunRecord:
        return self.live.record


class RunDriver:
    """Drives runs' events into the recorder and ends the runs (see the module docstring).

    Args:
        store: Where the runs' ends are recorded.
        recorder: Records and publishes every event.
        notify: Tells the run manager's observers of each event.
    """

    def __init__(self, store: RunStore, recorder: EventRecorder, notify: Notify) -> None:
        self.store = store
        self.recorder = recorder
        self.notify = notify

    async def drive(self, run: Execution, runner: Runner) -> None:
        """Take the runner's events until the run's terminal one, and end the run with it.

        Raises:
            Stop: a stop was requested (or the manager is shutting down) between two events.
            RunStoreUnavailable: the store (or journal) failed one of the run's events.
        """
        options: dict[str, object] = {}
        if getattr(runner, "counts_usage", False):
            run.usage = options["usage"] = Usage()
        if run.journal is not None and getattr(runner, "keeps_steps", False):
            options["journal"] = run.journal
        if run.approvals is not None and getattr(runner, "asks_approval", False):
            options["approvals"] = run.approvals
        stream = runner(run.request, **options) if options else runner(run.request)  # type: ignore[call-arg]
        repeats = run.repeats
        try:
            while True:
                if run.stop_requested or run.shutting_down:
                    raise Stop
                run.cancellable = True
                try:
                    event = await anext(stream)
                except StopAsyncIteration:
                    break
                finally:
                    run.cancellable = False
                if repeats is not None and repeats.seen(event):  # a resumed run's readers have it
                    continue
                self.emit(run, event)
                if is_terminal_event(event):
                    await self.finish(run, event)
                    return
                if run.recording.unrecorded >= _MAX_UNRECORDED:
                    await self.recorder.all_recorded(run.recording)
        finally:
            with contextlib.suppress(Exception):
                await stream.aclose()  # type: ignore[attr-defined]
        await self.fail(run, "run.error", "the run ended without an answer")

    def emit(self, run: Execution, event: Event) -> None:
        """Stamp ``event``, serialise it once and hand it to the recorder.

        Raises:
            RunStoreUnavailable: the store failed an earlier event of the run, or the journal
                could not take this one (it is not published).
        """
        if run.recording.store_error is not None:
            raise run.recording.store_error
        record = run.record
        if run.emitted == 0 and not isinstance(event, RunStarted):  # a runner that did not start it
            self.emit(run, RunStarted(reasoning=record.reasoning, question=record.question))
        if event.depth == 0:
            event.run_id = record.run_id
        run.emitted += 1
        number(event, run.emitted)
        if isinstance(event, AnswerDelta) and event.depth == 0:
            run.parts.append(event.text)
        elif isinstance(event, Report) and event.depth == 0:
            run.draft = event.text
        self.recorder.add(run.recording, event, event.to_json())
        self.notify("event", record, event)

    async def finish(self, run: Execution, event: Event) -> None:
        """Record the run's end once its terminal ``event`` is recorded: its turn, then its status."""
        await self.recorder.all_recorded(run.recording)  # the terminal event is stored before the status says so
        record = run.record
        if isinstance(event, Answer):
            record.content, record.stop_reason = event.text, event.stop_reason
            record.status = answer_status(event)
        else:
            assert isinstance(event, ErrorEvent)
            record.content = _partial(run)
            record.status, record.stop_reason = "failed", "error"
            record.error = {"code": event.code, "message": event.message}
        record.ended_at = time.time()
        record.last_seq = run.emitted
        # The turn before the status: a process dying between the two leaves a run still in flight,
        # which recovery ends (adding the turn only if it is missing), never a finished run without
        # its turn. A store that commits writes started together in one transaction takes both at once.
        writes: list[Callable[[], Awaitable[None]]] = []
        turn = conversation_turn(record, record.content, time.time())
        if turn is not None and record.conversation_id:
            writes.append(functools.partial(self.store.add_messages, record.conversation_id, turn))
        fields = {name: getattr(record, name) for name in _END_FIELDS}
        writes.append(functools.partial(self.store.update_run, record.run_id, **fields))
        if features_of(self.store).commits_together:
            await together([write() for write in writes])
        else:
            for write in writes:
                await write()

    async def finish_stopped(self, run: Execution) -> None:
        """End a stopped (or, shutting down, interrupted) run with its partial answer."""
        reason = "stopped" if run.stop_requested else "interrupted"
        answer = Answer(text=_partial(run), stop_reason=reason, usage=_so_far(run))
        try:
            self.emit(run, answer)
            await self.finish(run, answer)
        except RunStoreUnavailable as exc:
            self.end_locally(run, ErrorEvent(code=exc.code, message=f"run store lost: {exc.message}"))

    async def fail(self, run: Execution, code: str, message: str) -> None:
        """End the run with an error."""
        error = ErrorEvent(code=code, message=message, usage=_so_far(run))
        try:
            self.emit(run, error)
            await self.finish(run, error)
        except RunStoreUnavailable as exc:
            self.end_locally(run, ErrorEvent(code=exc.code, message=f"{message}; run store lost: {exc.message}"))

    def end_locally(self, run: Execution, event: ErrorEvent) -> None:
        """End the run for its live readers only (the store is gone), right after what they were
        given; the store gets the end once it is back (:meth:`EventRecorder.record_lost_ends`)."""
        record, live, recording = run.record, run.live, run.recording
        if recording.store_error is None:  # events still being recorded are not published after this one
            recording.store_error = RunStoreUnavailable(event.message)
        self.recorder.lost_ends.append(live)
        if live.ended:  # readers have the run's end already (its answer): the record says that end
            events = live.published_events()
            for name, value in ended_fields(events[-1], events).items():
                setattr(record, name, value)
            return
        event.run_id = record.run_id
        number(event, live.last_seq + 1)
        record.last_seq = run.emitted = event.seq
        record.status, record.stop_reason, record.ended_at = "failed", "error", time.time()
        record.content = "".join(live.delivered)
        record.error = {"code": event.code, "message": event.message}
        self.recorder.publish_unrecorded(recording, event, event.to_json())
        self.notify("event", record, event)


def _partial(run: Execution) -> str:
    """The run's answer so far: what it has said (since it resumed, if it did), else its draft
    report, else what it had said before."""
    return "".join(run.parts) or run.draft or run.earlier


def _so_far(run: Execution) -> Usage:
    return Usage() if run.usage is None else run.usage.copy()
