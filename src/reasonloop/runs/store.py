"""The run store contract, and what every store shares: instance ids, recovery, choosing one.

A run store keeps runs, their events (appended as they happen, addressed by ``seq``),
conversations with their messages, feedback, and carries stop requests between server
instances. Two implementations ship: :class:`~reasonloop.runs.sqlite_store.SQLiteRunStore`
(one file, default) and :class:`~reasonloop.runs.redis_store.RedisRunStore` (scale-out).
Third-party stores register under the ``reasonloop.run_store`` entry-point group and are
constructed with the ``[runs]`` settings.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, Protocol, runtime_checkable

from reasonloop.config import RunsSettings, Settings
from reasonloop.eager import first_step, resume
from reasonloop.events import Answer, ErrorEvent, Event, event_adapter
from reasonloop.runs.event_rows import EventRows
from reasonloop.runs.models import ConversationRecord, RunRecord, answer_status, conversation_turn, partial_content

__all__ = [
    "RunStore",
    "append_events",
    "ended_fields",
    "instance_alive",
    "is_terminal_event",
    "new_instance_id",
    "open_store",
    "recover_interrupted",
    "restore_turn",
    "together",
    "update_runs",
]


@runtime_checkable
class RunStore(Protocol):
    """Persistence for runs, events, conversations and stop requests.

    Every method raises :class:`~reasonloop.errors.RunStoreUnavailable` when the backend
    cannot be reached.

    A store may also have ``async append_events(rows) -> list[Exception | None]``, recording
    many stamped events at once, given as :class:`~reasonloop.runs.event_rows.EventRows`
    (see :func:`append_events`); both built-in stores do. It may have ``async
    update_runs(updates)``, setting the fields of several records at once (``(run_id, fields)``
    pairs; the Redis store has it; see :func:`update_runs`), and ``async
    create_continuing_run(record) -> str | None``, recording a run that continues its
    conversation only if no other run of the conversation is in flight in any process using the
    store (else that run's id); both built-in stores do, and
    with it a conversation answers one question at a time across instances, not only within one.
    """

    async def open(self) -> None:
        """Connect (and create tables); raises RunStoreUnavailable with the reason."""

    async def close(self) -> None: ...

    async def create_run(self, record: RunRecord) -> None: ...

    async def update_run(self, run_id: str, **fields: Any) -> None:
        """Set fields of a run record (status, content, last_seq, ...)."""

    async def get_run(self, run_id: str) -> RunRecord | None: ...

    async def list_runs(self, tenant: str, limit: int = 50) -> list[RunRecord]:
        """The tenant's most recent runs, newest first."""

    async def inflight_runs(self, exclude_instance: str | None = None) -> list[RunRecord]:
        """Runs recorded as queued or running, by any instance but ``exclude_instance``."""

    async def append_event(self, run_id: str, event: Event, payload: str | None = None) -> None:
        """Record ``event`` (already stamped; ``payload`` is its JSON when the caller has it).

        A duplicate seq raises ValueError."""

    async def events(self, run_id: str, after_seq: int = 0) -> list[Event]:
        """Stored events with ``seq > after_seq``, in order."""

    def follow(self, run_id: str, after_seq: int = 0) -> AsyncIterator[Event]:
        """Stored events after ``after_seq``, then new ones as other instances append them,
        ending after the run's terminal event."""
        ...

    async def request_stop(self, run_id: str) -> None:
        """Ask whichever instance runs ``run_id`` to stop it."""

    def stop_requests(self, instance: str) -> AsyncIterator[str]:
        """Run ids whose stop was requested (through this store) while ``instance`` runs them."""
        ...

    async def heartbeat(self, instance: str) -> None:
        """Tell other instances that ``instance`` is alive."""

    async def instance_alive(self, instance: str) -> bool:
        """Whether ``instance`` has sent a heartbeat recently (same-host pids are checked directly)."""
        ...

    async def create_conversation(self, record: ConversationRecord) -> None: ...

    async def get_conversation(self, conversation_id: str) -> ConversationRecord | None:
        """The conversation with its messages."""

    async def list_conversations(self, tenant: str, limit: int = 50) -> list[ConversationRecord]: ...

    async def add_messages(self, conversation_id: str, messages: list[dict[str, Any]]) -> None: ...

    async def add_turn(self, conversation_id: str, run_id: str, messages: list[dict[str, Any]]) -> bool:
        """Add run ``run_id``'s turn unless the conversation has it; True when added. Atomic:
        instances recovering the same run at once add its turn once."""

    async def delete_conversation(self, conversation_id: str) -> bool: ...

    async def add_feedback(self, feedback: dict[str, Any]) -> None: ...


async def append_events(store: RunStore, rows: EventRows) -> list[Exception | None]:
    """Record stamped events given as rows ``(run_id, seq, payload)``, in one call when the store can.

    Rows, not event objects: under load thousands wait for the store at once, and rows kept
    column by column are nothing for the garbage collector to walk (see
    :mod:`reasonloop.runs.event_rows`).

    Returns:
        One entry per item: ``None``, or the ValueError of an event whose seq was taken.

    Raises:
        RunStoreUnavailable: the store could not record them.
    """
    batch = getattr(store, "append_events", None)
    if batch is not None:
        return await batch(rows)
    out: list[Exception | None] = []
    for run_id, _, payload in rows:
        try:
            await store.append_event(run_id, event_adapter.validate_json(payload), payload)
            out.append(None)
        except ValueError as exc:
            out.append(exc)
    return out


async def update_runs(store: RunStore, updates: list[tuple[str, dict[str, Any]]]) -> None:
    """Set fields of several runs' records: in one call when the store can (``update_runs``),
    else with one ``update_run`` each, started together."""
    batch = getattr(store, "update_runs", None)
    if batch is not None:
        await batch(updates)
    else:
        await together([store.update_run(run_id, **fields) for run_id, fields in updates])


async def together(writes: list[Coroutine[Any, Any, Any]]) -> list[Any]:
    """Await store writes started at once (the SQLite store commits them in one transaction,
    with one thread hand-off), in order; their results, or the first failure once all have ended."""
    started: list[tuple[bool, Any]] = []
    try:
        for write in writes:
            started.append(first_step(write))
    except BaseException:
        for write in writes[len(started) + 1 :]:
            write.close()
        raise
    failure: BaseException | None = None
    results: list[Any] = []
    for done, value in started:
        if not done:
            try:
                value = await resume(*value)
            except Exception as exc:
                failure = failure or exc
        results.append(value)
    if failure is not None:
        raise failure
    return results


def is_terminal_event(event: Event) -> bool:
    """Whether ``event`` ends its run's stream (the answer or the error of the top-level run)."""
    return isinstance(event, (Answer, ErrorEvent)) and event.depth == 0  # a tuple: a union checks slower


def new_instance_id() -> str:
    """``host:pid:started:random``: unique per server process, and checkable on the same host.

    ``started`` is when the process started (in the kernel's clock ticks since boot; empty where
    that cannot be read): a pid is reused, and a restarted container's server is often PID 1
    again under the same host name, which the pid alone would take for its dead predecessor.
    """
    return f"{socket.gethostname()}:{os.getpid()}:{_started(os.getpid())}:{uuid.uuid4().hex[:8]}"


def _started(pid: int) -> str:
    """When process ``pid`` started, from ``/proc`` (Linux); empty when that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return ""
    fields = stat.rpartition(")")[2].split()  # after the command name, which may hold anything
    return fields[19] if len(fields) > 19 else ""  # field 22: starttime


def instance_alive(instance: str) -> bool | None:
    """``True``/``False`` for a process on this host, ``None`` when only a heartbeat can tell."""
    parts = instance.split(":")
    host, pid_text = parts[0], parts[1] if len(parts) > 1 else ""
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if len(parts) == 4 and parts[2]:  # the pid is in use: by the same process, if it started then
        now = _started(int(pid_text))
        return not now or now == parts[2]
    return True


async def recover_interrupted(store: RunStore, *, me: str, wait_for: Callable[[str], bool] | None = None) -> list[str]:
    """Mark runs left in flight by dead instances as ``interrupted``, keeping their partial answer.

    The partial answer is appended as a last :class:`~reasonloop.events.Answer` with
    ``stop_reason="interrupted"``, so streams of the run end like any other. Runs of an
    instance for which ``wait_for(instance)`` is true are left for a later call (their events
    are not all in the store yet).

    The run's turn (its question and the answer, partial or whole) is added to its
    conversation as a finished run's would be, unless the conversation has it already.

    Returns:
        The ids of the runs marked.
    """
    marked: list[str] = []
    # Not this instance's own runs: they are alive, and reading them all (every few seconds, with
    # thousands streaming) would cost more than the rest of recovery together.
    for record in await store.inflight_runs(exclude_instance=me):
        if wait_for is not None and wait_for(record.instance):
            continue
        if await store.instance_alive(record.instance):
            continue
        events = await store.events(record.run_id)
        if events and is_terminal_event(events[-1]):  # it ended, but died before saying so
            fields = ended_fields(events[-1], events)
            await store.update_run(record.run_id, **fields)
            await restore_turn(store, record, fields["content"], fields["status"], fields["ended_at"])
            continue
        content = partial_content(events)
        last = events[-1].seq if events else record.last_seq
        final = Answer(run_id=record.run_id, seq=last + 1, text=content, stop_reason="interrupted")
        try:
            await store.append_event(record.run_id, final)
        except ValueError:  # another instance recovered it first
            continue
        await store.update_run(
            record.run_id,
            status="interrupted",
            content=content,
            last_seq=last + 1,
            stop_reason="interrupted",
            ended_at=final.ts,
        )
        await restore_turn(store, record, content, "interrupted", final.ts)
        marked.append(record.run_id)
    return marked


async def restore_turn(store: RunStore, record: RunRecord, content: str, status: str, ended_at: float) -> None:
    """Add the turn of a run that ended without its turn stored (its process died, or the store
    was lost when it ended), unless the conversation has it already."""
    turn = conversation_turn(record.model_copy(update={"status": status}), content, ended_at)
    if turn is None or record.conversation_id is None:
        return
    await store.add_turn(record.conversation_id, record.run_id, turn)


def ended_fields(terminal: Event, events: list[Event]) -> dict[str, Any]:
    """The record fields of a run whose last event is ``terminal`` (its answer or error)."""
    if isinstance(terminal, Answer):
        return {
            "status": answer_status(terminal),
            "content": terminal.text,
            "stop_reason": terminal.stop_reason,
            "last_seq": terminal.seq,
            "ended_at": terminal.ts,
        }
    assert isinstance(terminal, ErrorEvent)
    return {
        "status": "failed",
        "content": partial_content(events),
        "stop_reason": "error",
        "error": {"code": terminal.code, "message": terminal.message},
        "last_seq": terminal.seq,
        "ended_at": terminal.ts,
    }


def open_store(settings: Settings, registry: Any = None) -> RunStore:
    """The run store named by ``[runs] store``, constructed (not yet opened).

    Looks the id up in the ``run_store`` registry (the built-in ids resolve everywhere).
    """
    from reasonloop.registry import resolve

    factory: Callable[..., RunStore] = resolve("run_store", settings.runs.store, registry)
    return factory(settings.runs, kb_path=settings.kb.path)


def default_sqlite_path(runs: RunsSettings, kb_path: str) -> str:
    """``[runs] sqlite_path``, or ``runs.sqlite`` beside the knowledge base."""
    return runs.sqlite_path or os.path.join(kb_path, "runs.sqlite")
