"""The default run store: one SQLite file in WAL mode, written by one dedicated thread.

Every call becomes a job for the writer thread, which takes all jobs waiting, runs them in
one transaction and commits, so thousands of appended events per second cost a handful of
commits and the event loop never waits on the disk. Events are committed before
:meth:`SQLiteRunStore.append_event` returns. The run manager normally journals each event
first (in :attr:`SQLiteRunStore.journal_dir`, see :mod:`reasonloop.runs.recording.journal`) and records
them here in batches behind it; either way, whatever a client was sent survives a crash.
Several server processes may share the file: cross-process subscribers and stop requests
are served by polling (see :meth:`follow` and :meth:`stop_requests`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar

from reasonloop.config import RunsSettings
from reasonloop.errors import RunStoreUnavailable
from reasonloop.events import Event, event_list_adapter
from reasonloop.runs.instance import instance_alive
from reasonloop.runs.models import TERMINAL, ConversationRecord, RunRecord, check_record_fields, is_terminal_event
from reasonloop.runs.stores.event_rows import EventRows
from reasonloop.runs.stores.protocol import StoreFeatures
from reasonloop.runs.stores.sqlite import events as sqlite_events
from reasonloop.runs.stores.sqlite.writer import Checkpointer, Writer

__all__ = ["SQLiteRunStore"]

T = TypeVar("T")


def default_sqlite_path(runs: RunsSettings, kb_path: str) -> str:
    """``[runs] sqlite_path``, or ``runs.sqlite`` beside the knowledge base."""
    return runs.sqlite_path or os.path.join(kb_path, "runs.sqlite")


TAKE_STOP_REQUESTS = "UPDATE runs SET stop_requested=2 WHERE stop_requested=1 AND instance=? RETURNING run_id"
"""Polled by every instance a few times a second: found through the partial index of pending
stop requests, not by scanning every run ever recorded."""

# Events are kept in chunks: see reasonloop.runs.stores.sqlite.events.
_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, tenant TEXT NOT NULL, conversation_id TEXT, data TEXT NOT NULL,
    status TEXT NOT NULL, created_at REAL NOT NULL, instance TEXT NOT NULL DEFAULT '',
    stop_requested INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS runs_tenant ON runs (tenant, created_at);
CREATE INDEX IF NOT EXISTS runs_status ON runs (status);
CREATE INDEX IF NOT EXISTS runs_stop_requested ON runs (instance) WHERE stop_requested = 1;
CREATE INDEX IF NOT EXISTS runs_conversation_in_flight_v2 ON runs (conversation_id)
    WHERE status IN ('queued', 'running', 'awaiting_approval');
CREATE TABLE IF NOT EXISTS conversations (
    conversation_id TEXT PRIMARY KEY, tenant TEXT NOT NULL, title TEXT NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS conversations_tenant ON conversations (tenant, updated_at);
CREATE TABLE IF NOT EXISTS messages (
    conversation_id TEXT NOT NULL, idx INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (conversation_id, idx));
CREATE TABLE IF NOT EXISTS feedback (id INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS run_steps (
    run_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (run_id, key)) WITHOUT ROWID;
"""
    + sqlite_events.SCHEMA
)


_INSERT_RUN = (
    "INSERT INTO runs (run_id, tenant, conversation_id, data, status, created_at, instance) VALUES (?,?,?,?,?,?,?)"
)
_IN_FLIGHT = "('queued', 'running', 'awaiting_approval')"
"""The statuses of runs in flight."""
_RUN_IN_FLIGHT = f"SELECT run_id FROM runs WHERE conversation_id=? AND status IN {_IN_FLIGHT} AND run_id<>? LIMIT 1"
"""A run of the conversation in flight, found through the partial index of such runs."""


def _run_row(record: RunRecord) -> tuple[Any, ...]:
    return (
        record.run_id,
        record.tenant,
        record.conversation_id,
        record.model_dump_json(),
        record.status,
        record.created_at,
        record.instance,
    )


_ENDED = "(" + ",".join(f"'{status}'" for status in sorted(TERMINAL)) + ")"
_PUT_STEP = (
    "INSERT OR REPLACE INTO run_steps (run_id, key, value) SELECT ?1, ?2, ?3"
    f" WHERE NOT EXISTS (SELECT 1 FROM runs WHERE run_id=?1 AND status IN {_ENDED})"
)
"""A step of a run that has not ended (one that has keeps none: its end dropped them)."""
_ADD_STEP = (
    "INSERT OR IGNORE INTO run_steps (run_id, key, value) SELECT ?1, ?2, ?3"
    f" WHERE NOT EXISTS (SELECT 1 FROM runs WHERE run_id=?1 AND status IN {_ENDED})"
)
"""A step kept only when the run has none of that key and has not ended."""
_CLAIM_RUN = (
    "UPDATE runs SET instance=?3, data=json_set(data, '$.instance', ?3)"
    f" WHERE run_id=?1 AND instance=?2 AND status IN {_IN_FLIGHT}"
)


@functools.lru_cache(maxsize=64)
def _update_sql(names: tuple[str, ...]) -> str:
    """The UPDATE that sets record fields ``names`` (a few sets of names recur: made once each).

    One JSON object carries all the values; json_extract keeps strings strings and objects objects.
    """
    setters = ", ".join(f"'$.{name}', json_extract(:v, '$.{name}')" for name in names)
    columns = "".join(f", {name}=:{name}" for name in ("status", "instance") if name in names)
    return f"UPDATE runs SET data=json_set(data, {setters}){columns} WHERE run_id=:run_id"


class SQLiteRunStore:
    """Runs, events, conversations, messages and feedback in one SQLite file.

    Args:
        settings: ``[runs]`` settings (``sqlite_path``).
        kb_path: Where the file goes when ``sqlite_path`` is empty.
        poll_s: Polling interval for cross-process followers and stop requests.
    """

    features = StoreFeatures(
        batch_appends=True, continuing_runs=True, commits_together=True, local_journal=True, step_journal=True
    )
    """Writes started in the same turn of the event loop commit in one transaction (see
    :mod:`reasonloop.runs.stores.sqlite.writer`), in the order they were started; the journal
    goes in :attr:`journal_dir`."""

    def __init__(self, settings: RunsSettings | None = None, *, kb_path: str = ".reasonloop", poll_s: float = 0.1):
        self.settings = settings or RunsSettings()
        self.path = default_sqlite_path(self.settings, kb_path)
        self.journal_dir = self.path + ".journal.d"
        """Where run managers on this store keep their write-ahead journals (see :mod:`reasonloop.runs.recording.journal`)."""
        self.poll_s = poll_s
        self._writer: Writer | None = None
        self._checkpointer: Checkpointer | None = None

    async def open(self) -> None:
        try:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RunStoreUnavailable(f"cannot create the run store directory for {self.path}: {exc}") from exc
        writer = Writer(self.path, _SCHEMA, self.settings.writer_priority, migrate=sqlite_events.migrate)
        writer.start()
        await asyncio.to_thread(writer.ready.wait)
        if writer.error is not None:
            raise RunStoreUnavailable(f"cannot open the SQLite run store {self.path}: {writer.error}", path=self.path)
        self._writer = writer
        self._checkpointer = Checkpointer(self.path, priority=self.settings.writer_priority, writing=writer.writing)
        writer.checkpointer = self._checkpointer
        self._checkpointer.start()

    async def close(self) -> None:
        writer, self._writer = self._writer, None
        checkpointer, self._checkpointer = self._checkpointer, None
        if checkpointer is not None:
            checkpointer.stop()
            await asyncio.to_thread(checkpointer.join, 5)
        if writer is not None:
            writer.stop()
            await asyncio.to_thread(writer.join, 5)

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._writer is None:
            raise RunStoreUnavailable(f"the SQLite run store {self.path} is not open")
        try:
            return await self._writer.submit(fn)
        except sqlite3.IntegrityError:
            raise
        except sqlite3.Error as exc:
            raise RunStoreUnavailable(f"SQLite run store {self.path}: {exc}", path=self.path) from exc

    # -- runs -------------------------------------------------------------------------------
    async def create_run(self, record: RunRecord) -> None:
        row = _run_row(record)
        await self._run(lambda c: c.execute(_INSERT_RUN, row))

    async def create_continuing_run(self, record: RunRecord) -> str | None:
        """Record ``record``, which continues its conversation, unless another run of the
        conversation is in flight in any process sharing the file: then nothing is recorded, and
        that run's id is returned. The check and the insert are one transaction."""
        row = _run_row(record)

        def job(c: sqlite3.Connection) -> str | None:
            holder = c.execute(_RUN_IN_FLIGHT, (record.conversation_id, record.run_id)).fetchone()
            if holder is not None:
                return str(holder[0])
            c.execute(_INSERT_RUN, row)
            return None

        return await self._run(job)

    async def update_run(self, run_id: str, **fields: Any) -> None:
        """Set fields of the stored record in place (SQLite's ``json_set``: the record is not
        parsed and re-serialised by the writer thread, which shares the GIL with the event loop)."""
        check_record_fields(fields)
        if not fields:
            return
        sql = _update_sql(tuple(fields))
        params = {"v": json.dumps(fields, ensure_ascii=False), "run_id": run_id}
        params.update((name, fields[name]) for name in ("status", "instance") if name in fields)
        if fields.get("status") not in TERMINAL:
            await self._run(lambda c: c.execute(sql, params))
            return

        def end(c: sqlite3.Connection) -> None:  # an ended run is never resumed: its steps go with its end
            c.execute(sql, params)
            c.execute("DELETE FROM run_steps WHERE run_id=?", (run_id,))

        await self._run(end)

    async def get_run(self, run_id: str) -> RunRecord | None:
        row = await self._run(lambda c: c.execute("SELECT data FROM runs WHERE run_id=?", (run_id,)).fetchone())
        return RunRecord.model_validate_json(row[0]) if row else None

    async def list_runs(self, tenant: str, limit: int = 50) -> list[RunRecord]:
        rows = await self._run(
            lambda c: c.execute(
                "SELECT data FROM runs WHERE tenant=? ORDER BY created_at DESC LIMIT ?", (tenant, limit)
            ).fetchall()
        )
        return [RunRecord.model_validate_json(r[0]) for r in rows]

    async def inflight_runs(self, exclude_instance: str | None = None) -> list[RunRecord]:
        sql = f"SELECT data FROM runs WHERE status IN {_IN_FLIGHT}"
        params: tuple[str, ...] = ()
        if exclude_instance is not None:
            sql, params = sql + " AND instance != ?", (exclude_instance,)
        rows = await self._run(lambda c: c.execute(sql, params).fetchall())
        return [RunRecord.model_validate_json(r[0]) for r in rows]

    async def claim_run(self, run_id: str, instance: str, by: str) -> bool:
        """Record run ``run_id``, in flight on ``instance``, as executed by ``by``; False when it is
        not (any more) in flight on ``instance``. One statement: of claims made at once, one wins."""
        return bool(await self._run(lambda c: c.execute(_CLAIM_RUN, (run_id, instance, by)).rowcount))

    # -- the steps of runs in flight -------------------------------------------------------------
    async def put_step(self, run_id: str, key: str, value: str) -> None:
        """Keep a finished step of run ``run_id`` (committed with the events of the same moment)."""
        await self._run(lambda c: c.execute(_PUT_STEP, (run_id, key, value)))

    async def add_step(self, run_id: str, key: str, value: str) -> bool:
        """Keep step ``key`` of run ``run_id`` unless the run has one of that key or has ended; True
        when kept (one statement: of writers adding it at once, one is)."""
        return bool(await self._run(lambda c: c.execute(_ADD_STEP, (run_id, key, value)).rowcount))

    async def steps(self, run_id: str, prefix: str = "") -> dict[str, str]:
        if prefix:  # the keys' range: the primary key's index finds them
            sql = "SELECT key, value FROM run_steps WHERE run_id=? AND key >= ? AND key < ?"
            params: tuple[str, ...] = (run_id, prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1))
        else:
            sql, params = "SELECT key, value FROM run_steps WHERE run_id=?", (run_id,)
        rows = await self._run(lambda c: c.execute(sql, params).fetchall())
        return dict(rows)

    # -- events -----------------------------------------------------------------------------
    async def append_event(self, run_id: str, event: Event, payload: str | None = None) -> None:
        """Committed before it returns; appends made in the same loop turn share one transaction."""
        if self._writer is None:
            raise RunStoreUnavailable(f"the SQLite run store {self.path} is not open")
        try:
            await self._writer.append(run_id, event.seq, payload or event.to_json())
        except sqlite3.IntegrityError as exc:
            raise ValueError(f"run {run_id} already has an event with seq {event.seq}") from exc
        except sqlite3.Error as exc:
            raise RunStoreUnavailable(f"SQLite run store {self.path}: {exc}", path=self.path) from exc

    async def append_events(self, rows: EventRows) -> list[Exception | None]:
        """Record stamped events (``(run_id, seq, payload)``) in one transaction, committed before it returns.

        Returns:
            One entry per item: ``None``, or a ValueError when the run already has its seq.

        Raises:
            RunStoreUnavailable: the transaction failed; none of the events is recorded.
        """
        if self._writer is None:
            raise RunStoreUnavailable(f"the SQLite run store {self.path} is not open")
        try:
            errors = await self._writer.append_many(rows)
        except sqlite3.Error as exc:
            raise RunStoreUnavailable(f"SQLite run store {self.path}: {exc}", path=self.path) from exc
        if not any(errors):
            return errors  # all None: the common case, with no pass over the items
        return [
            None if error is None else ValueError(f"run {run_id} already has an event with seq {seq}")
            for error, (run_id, seq, _) in zip(errors, rows, strict=True)
        ]

    async def events(self, run_id: str, after_seq: int = 0) -> list[Event]:
        chunks = await self._run(lambda c: sqlite_events.read_chunks(c, run_id, after_seq))
        if not chunks:
            return []
        # One JSON array of every chunk's events, validated in one call.
        events = event_list_adapter.validate_json("[" + ",".join(chunk[1:-1] for chunk in chunks) + "]")
        if events and events[0].seq <= after_seq:  # the first chunk may start before the wanted seq
            events = [event for event in events if event.seq > after_seq]
        return events

    async def follow(self, run_id: str, after_seq: int = 0) -> AsyncIterator[Event]:
        last = after_seq
        while True:
            batch = await self.events(run_id, last)
            for event in batch:
                last = event.seq
                yield event
                if is_terminal_event(event):
                    return
            if not batch:
                record = await self.get_run(run_id)
                if record is None:
                    return
                if record.finished:
                    # The terminal event is written before the status: read once more, then end.
                    for event in await self.events(run_id, last):
                        yield event
                    return
                await asyncio.sleep(self.poll_s)

    # -- stop requests and liveness ------------------------------------------------------------
    async def request_stop(self, run_id: str) -> None:
        await self._run(lambda c: c.execute("UPDATE runs SET stop_requested=1 WHERE run_id=?", (run_id,)))

    async def stop_requests(self, instance: str) -> AsyncIterator[str]:
        while True:
            rows = await self._run(lambda c: c.execute(TAKE_STOP_REQUESTS, (instance,)).fetchall())
            for row in rows:
                yield row[0]
            await asyncio.sleep(max(self.poll_s, 0.25))

    async def heartbeat(self, instance: str) -> None:
        """Nothing to do: instances sharing a SQLite file share a host, and pids are checked directly."""

    async def instance_alive(self, instance: str) -> bool:
        return bool(instance_alive(instance))

    # -- conversations and feedback ---------------------------------------------------------------
    async def create_conversation(self, record: ConversationRecord) -> None:
        row = (record.conversation_id, record.tenant, record.title, record.created_at, record.updated_at)
        await self._run(
            lambda c: c.execute(
                "INSERT INTO conversations (conversation_id, tenant, title, created_at, updated_at) VALUES (?,?,?,?,?)",
                row,
            )
        )

    async def get_conversation(self, conversation_id: str) -> ConversationRecord | None:
        def job(c: sqlite3.Connection) -> tuple[Any, list[Any]]:
            head = c.execute(
                "SELECT conversation_id, tenant, title, created_at, updated_at FROM conversations"
                " WHERE conversation_id=?",
                (conversation_id,),
            ).fetchone()
            msgs = c.execute(
                "SELECT data FROM messages WHERE conversation_id=? ORDER BY idx", (conversation_id,)
            ).fetchall()
            return head, msgs

        head, msgs = await self._run(job)
        if head is None:
            return None
        return ConversationRecord(
            conversation_id=head[0],
            tenant=head[1],
            title=head[2],
            created_at=head[3],
            updated_at=head[4],
            messages=[json.loads(m[0]) for m in msgs],
        )

    async def list_conversations(self, tenant: str, limit: int = 50) -> list[ConversationRecord]:
        rows = await self._run(
            lambda c: c.execute(
                "SELECT conversation_id, tenant, title, created_at, updated_at FROM conversations"
                " WHERE tenant=? ORDER BY updated_at DESC LIMIT ?",
                (tenant, limit),
            ).fetchall()
        )
        return [
            ConversationRecord(conversation_id=r[0], tenant=r[1], title=r[2], created_at=r[3], updated_at=r[4])
            for r in rows
        ]

    async def add_messages(self, conversation_id: str, messages: list[dict[str, Any]]) -> None:
        await self._run(lambda c: _append_messages(c, conversation_id, messages))

    async def add_turn(self, conversation_id: str, run_id: str, messages: list[dict[str, Any]]) -> bool:
        def job(c: sqlite3.Connection) -> bool:  # one transaction holding the write lock: check, then add
            if c.execute("SELECT 1 FROM conversations WHERE conversation_id=?", (conversation_id,)).fetchone() is None:
                return False
            have = c.execute(
                "SELECT 1 FROM messages WHERE conversation_id=? AND json_extract(data, '$.run_id')=? LIMIT 1",
                (conversation_id, run_id),
            ).fetchone()
            if have is not None:
                return False
            _append_messages(c, conversation_id, messages)
            return True

        return await self._run(job)

    async def rename_conversation(self, conversation_id: str, title: str) -> bool:
        def job(c: sqlite3.Connection) -> bool:
            sql = "UPDATE conversations SET title=? WHERE conversation_id=?"
            return c.execute(sql, (title, conversation_id)).rowcount > 0

        return await self._run(job)

    async def delete_conversation(self, conversation_id: str) -> bool:
        def job(c: sqlite3.Connection) -> bool:
            c.execute("DELETE FROM messages WHERE conversation_id=?", (conversation_id,))
            return c.execute("DELETE FROM conversations WHERE conversation_id=?", (conversation_id,)).rowcount > 0

        return await self._run(job)

    async def add_feedback(self, feedback: dict[str, Any]) -> None:
        row = (feedback.get("tenant"), json.dumps(feedback, ensure_ascii=False))
        await self._run(lambda c: c.execute("INSERT INTO feedback (tenant, data) VALUES (?,?)", row))


def _append_messages(c: sqlite3.Connection, conversation_id: str, messages: list[dict[str, Any]]) -> None:
    """Add ``messages`` after the conversation's last one (inside the writer's transaction);
    nothing when the conversation is gone (deleted while a run of it was streaming)."""
    if c.execute("SELECT 1 FROM conversations WHERE conversation_id=?", (conversation_id,)).fetchone() is None:
        return
    start = c.execute(
        "SELECT COALESCE(MAX(idx), -1) + 1 FROM messages WHERE conversation_id=?", (conversation_id,)
    ).fetchone()[0]
    c.executemany(
        "INSERT INTO messages (conversation_id, idx, data) VALUES (?,?,?)",
        [(conversation_id, start + i, json.dumps(m, ensure_ascii=False)) for i, m in enumerate(messages)],
    )
    c.execute("UPDATE conversations SET updated_at=? WHERE conversation_id=?", (time.time(), conversation_id))
