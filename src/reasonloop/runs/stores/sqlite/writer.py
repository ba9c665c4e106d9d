"""The SQLite run store's writer thread: group commit of everything asked of it, gathered per loop turn.

All writes (and reads, which then see every write before them) go to one thread that owns
the connection. What the event loop asks during one turn (appended events and other jobs)
is gathered in one :class:`Batch` and handed to the thread once, at the end of the turn.
The thread takes every batch waiting, runs them in one transaction (all appended rows as
chunks, see :mod:`reasonloop.runs.stores.sqlite.events`) and commits, then resolves their futures
with one wake-up per event loop. When hundreds of runs emit a token in the same turn, the
thread is woken once, not once per token. A transaction that fails fails every append and
job in it with the error.

The writer never checkpoints the WAL itself (a checkpoint syncs the database file and would
hold every pending append behind a disk flush); :class:`Checkpointer` does it from its own
connection, which SQLite lets run beside the writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

from reasonloop._threads import give_way, yield_cpu_to_event_loop
from reasonloop.runs.stores.event_rows import EventRows
from reasonloop.runs.stores.sqlite.events import ChunkWriter

__all__ = ["Batch", "Checkpointer", "Writer", "WriterClosed"]

MAX_BATCHES = 100
"""Batches (loop turns) per transaction: bounds how long one commit takes."""

Result = tuple[asyncio.Future[Any], asyncio.AbstractEventLoop, Any, BaseException | None]


class WriterClosed(sqlite3.OperationalError):
    """The writer thread has stopped: the job was not run."""


class Batch:
    """What one turn of an event loop asked of the writer: event rows (with the futures their
    callers await) and other jobs."""

    __slots__ = ("appends", "jobs", "loop", "rows")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.rows = EventRows()
        self.appends: list[tuple[asyncio.Future[Any], int, int, bool]] = []
        """``(future, first row, end row, many)``: one per :meth:`Writer.append` or :meth:`Writer.append_many`."""
        self.jobs: list[tuple[Callable[[sqlite3.Connection], Any], asyncio.Future[Any]]] = []

    def futures(self) -> list[asyncio.Future[Any]]:
        return [*(fut for fut, _, _, _ in self.appends), *(fut for _, fut in self.jobs)]


class Writer(threading.Thread):
    """Owns the connection; runs the batches handed to it in as few transactions as it can.

    Args:
        path: The database file.
        schema: SQL run once at start (``CREATE TABLE IF NOT EXISTS ...``).
        migrate: Run once at start, after ``schema``: brings an older file's tables up to date.
    """

    def __init__(
        self,
        path: str,
        schema: str,
        priority: str = "idle",
        migrate: Callable[[sqlite3.Connection], None] | None = None,
    ) -> None:
        super().__init__(name=f"sqlite-run-store:{path}", daemon=True)
        self.path = path
        self.schema = schema
        self.migrate = migrate
        self.priority = priority
        """CPU priority of the thread: ``idle`` or ``low`` (see :func:`yield_cpu_to_event_loop`)."""
        self.queue: queue.SimpleQueue[Batch | None] = queue.SimpleQueue()
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self.closed = False
        self._open_batch: Batch | None = None
        self.checkpointer: Checkpointer | None = None
        """Told how much each transaction wrote, to checkpoint before the WAL grows long."""
        self.writing = threading.Lock()
        """Held while a transaction runs (see :class:`Checkpointer`)."""

    # -- event loop side ----------------------------------------------------------------------
    def submit(self, fn: Callable[[sqlite3.Connection], Any]) -> asyncio.Future[Any]:
        """Queue ``fn(conn)`` for the next transaction; the future gets its result once committed."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        if self.closed:
            fut.set_exception(WriterClosed("the run store's writer has stopped"))
        else:
            self._batch(loop).jobs.append((fn, fut))
        return fut

    def append(self, run_id: str, seq: int, payload: str) -> asyncio.Future[None]:
        """Add an event row to this loop turn's batch; the future resolves once it is committed.

        The future fails with :class:`sqlite3.IntegrityError` if the row duplicates a ``seq``
        (the rest of the batch is still written), or with the error that failed the transaction.
        """
        row = EventRows()
        row.append(run_id, seq, payload)
        return self._add(row, many=False)

    def append_many(self, rows: EventRows) -> asyncio.Future[list[BaseException | None]]:
        """Hand ``rows`` (with what this loop turn asked before them) to the thread now.

        The future resolves once they are committed, with one entry per row: ``None``, or the
        :class:`sqlite3.IntegrityError` of a row that duplicates a ``seq`` (the others are still
        written). It fails with the error that failed the whole transaction.
        """
        fut = self._add(rows, many=True)
        batch = self._open_batch
        if batch is not None and not fut.done():
            self._hand_over(batch)
        return fut

    def _add(self, rows: EventRows, *, many: bool) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        if self.closed:
            fut.set_exception(WriterClosed("the run store's writer has stopped"))
            return fut
        batch = self._batch(loop)
        start = len(batch.rows)
        batch.rows.extend(rows)
        batch.appends.append((fut, start, len(batch.rows), many))
        return fut

    def _batch(self, loop: asyncio.AbstractEventLoop) -> Batch:
        batch = self._open_batch
        if batch is None or batch.loop is not loop:
            batch = self._open_batch = Batch(loop)
            loop.call_soon(self._hand_over, batch)
        return batch

    def _hand_over(self, batch: Batch) -> None:
        if self._open_batch is not batch:  # already handed over by stop()
            return
        self._open_batch = None
        if self.closed:
            _fail_batch(batch, WriterClosed("the run store's writer has stopped"))
        else:
            self.queue.put(batch)

    def stop(self) -> None:
        """Hand over the open batch, then ask the thread to finish the queue and stop."""
        batch = self._open_batch
        if batch is not None:
            self._hand_over(batch)
        self.queue.put(None)

    # -- writer thread ------------------------------------------------------------------------
    def run(self) -> None:
        yield_cpu_to_event_loop(self.priority)
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=5000")
            conn.execute("PRAGMA wal_autocheckpoint=0")
            conn.executescript(self.schema)
            if self.migrate is not None:
                self.migrate(conn)
        except Exception as exc:
            self.error = exc
            self.closed = True
            self.ready.set()
            return
        self.ready.set()
        chunks = ChunkWriter()
        stop = False
        while not stop:
            taken = [self.queue.get()]
            while len(taken) < MAX_BATCHES:
                try:
                    taken.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(batch is None for batch in taken)
            batches = [batch for batch in taken if batch is not None]
            with self.writing:
                _deliver(self._transaction(conn, batches, chunks))
            if self.checkpointer is not None:
                self.checkpointer.committed(sum(len(payload) for batch in batches for payload in batch.rows.payloads))
        self.closed = True
        with contextlib.suppress(sqlite3.Error):
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        self._fail_leftovers()

    def _fail_leftovers(self) -> None:
        error = WriterClosed("the run store's writer has stopped")
        while True:
            try:
                batch = self.queue.get_nowait()
            except queue.Empty:
                return
            if batch is not None:
                _deliver([(fut, batch.loop, None, error) for fut in batch.futures()])

    @staticmethod
    def _transaction(conn: sqlite3.Connection, batches: list[Batch], chunks: ChunkWriter) -> list[Result]:
        rows = EventRows()
        for batch in batches:
            rows.extend(batch.rows)
        results: list[Result] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            if rows:
                errors = _insert(conn, rows, chunks)
                offset = 0
                for batch in batches:
                    for fut, start, end, many in batch.appends:
                        if many:
                            results.append((fut, batch.loop, errors[offset + start : offset + end], None))
                        else:
                            results.append((fut, batch.loop, None, errors[offset + start]))
                    offset += len(batch.rows)
            for batch in batches:
                for fn, fut in batch.jobs:
                    try:
                        results.append((fut, batch.loop, fn(conn), None))
                    except Exception as exc:
                        results.append((fut, batch.loop, None, exc))
                    give_way()
            conn.execute("COMMIT")
            give_way()
        except Exception as exc:  # the commit itself failed: every job of the batch failed
            results = [(fut, batch.loop, None, exc) for batch in batches for fut in batch.futures()]
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        return results


def _insert(conn: sqlite3.Connection, rows: EventRows, chunks: ChunkWriter) -> list[sqlite3.IntegrityError | None]:
    """All rows, as chunks (:meth:`ChunkWriter.insert`: duplicates are found before they are written).

    Should the table refuse a chunk all the same (another process wrote events of the same run,
    which only this process writes), the transaction starts over with every chunk checked first.

    Returns:
        One entry per row: ``None`` when written, else the row's error.
    """
    try:
        return chunks.insert(conn, rows)
    except sqlite3.IntegrityError:
        conn.execute("ROLLBACK")
        conn.execute("BEGIN IMMEDIATE")
        chunks.last_seq.clear()
        return chunks.insert(conn, rows)


def _deliver(results: list[Result]) -> None:
    """Resolve futures from the writer thread: one wake-up per event loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Any, BaseException | None]]] = {}
    for fut, loop, value, exc in results:
        by_loop.setdefault(loop, []).append((fut, value, exc))
    for loop, items in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the caller's loop has closed
            loop.call_soon_threadsafe(_resolve_all, items)


def _fail_batch(batch: Batch, error: BaseException) -> None:
    _resolve_all([(fut, None, error) for fut in batch.futures()])


def _resolve_all(items: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
    for fut, value, exc in items:
        if fut.done():
            continue
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(value)


CHECKPOINT_STEP_BYTES = 1 << 19
"""Event bytes committed after which the WAL is checkpointed without waiting for the interval."""


class Checkpointer(threading.Thread):
    """Copies the WAL back into the database file from its own connection: every ``interval_s``,
    and sooner once the writer has committed ``step_bytes`` of events since the last time.

    Why in small steps and only between the writer's transactions (given its ``writing`` lock): a
    checkpoint is one SQLite call that cannot stop partway to let the event loop have its core
    (benchmarks/README.md, "Design notes: SQLite checkpoints between transactions").
    """

    def __init__(
        self,
        path: str,
        interval_s: float = 1.0,
        priority: str = "idle",
        step_bytes: int = CHECKPOINT_STEP_BYTES,
        writing: threading.Lock | None = None,
    ) -> None:
        super().__init__(name=f"sqlite-run-store-checkpoint:{path}", daemon=True)
        self.writing = writing
        self.path = path
        self.priority = priority
        self.interval_s = interval_s
        self.step_bytes = step_bytes
        self.stopping = threading.Event()
        self.due = threading.Event()
        """Set to checkpoint now (by :meth:`committed`, or to stop)."""
        self._committed = 0
        """Event bytes committed since ``due`` was last set (the writer thread's only)."""

    def committed(self, nbytes: int) -> None:
        """The writer has committed ``nbytes`` more of events (called from the writer thread)."""
        self._committed += nbytes
        if self._committed >= self.step_bytes:
            self._committed = 0
            self.due.set()

    def stop(self) -> None:
        self.stopping.set()
        self.due.set()

    def run(self) -> None:
        yield_cpu_to_event_loop(self.priority)
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout=1000")
        except sqlite3.Error:
            return
        while True:
            self.due.wait(self.interval_s)
            self.due.clear()
            if self.stopping.is_set():
                break
            with self.writing or contextlib.nullcontext(), contextlib.suppress(sqlite3.Error):
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            give_way()
        conn.close()
