"""How the SQLite run store keeps events: a run's consecutive events in one row.

A row of ``event_chunks`` holds the events ``first_seq`` to ``last_seq`` of one run as a JSON
array, in the order they were emitted. A transaction of the writer takes every event queued
for the store (with the journal, ``record_interval_s`` of every streaming run's tokens) and
writes each run's share of it as one row: at 30 tokens a second and the default 100 ms, one
row where there were three. Most of what a row costs the writer (its index entry, its values
bound to the statement, its share of the pages a commit writes) does not grow with the
events it holds.
Chunks of one run never overlap, so the chunk that could hold a ``seq`` is the one with the
largest ``first_seq`` not above it: duplicates are still refused event by event.

Files written before chunks kept one row per event in ``events``; :func:`migrate` turns that
table into chunks of one event the first time a newer store opens the file.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from reasonloop._threads import give_way
from reasonloop.runs.stores.event_rows import EventRows

__all__ = ["SCHEMA", "ChunkWriter", "migrate", "read_chunks"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS event_chunks (
    id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL,
    data TEXT NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS event_chunks_run_seq ON event_chunks (run_id, first_seq);
"""
"""Chunks go to the end of the table in arrival order (a commit dirties few table pages) and are
found through the (run_id, first_seq) index."""

MAX_CHUNK_EVENTS = 512
"""Events per row at most (a run emitting very fast still makes rows of moderate size)."""

STATEMENT_ROWS = (128, 32, 8, 2, 1)
"""Rows per INSERT statement: chunks go in as a few statements of these sizes (at most 512
parameters each, under every SQLite's limit), each prepared once and cached."""

_COLUMNS = "INSERT INTO event_chunks (run_id, first_seq, last_seq, data) "
_INSERT = {n: _COLUMNS + "VALUES " + ",".join(["(?,?,?,?)"] * n) for n in STATEMENT_ROWS}
_COVERING = "SELECT last_seq FROM event_chunks WHERE run_id=? AND first_seq<=? ORDER BY first_seq DESC LIMIT 1"
"""The last seq of the chunk that could hold seqs up to ``?`` (chunks of a run never overlap)."""
_READ = (
    "SELECT data FROM event_chunks WHERE run_id=?1 AND first_seq >= COALESCE("
    "(SELECT MAX(first_seq) FROM event_chunks WHERE run_id=?1 AND first_seq<=?2), 0) ORDER BY first_seq"
)
"""A run's chunks from the one that could hold seq ``?2`` on."""

KNOWN_RUNS_LIMIT = 100_000
"""Runs whose last written seq :class:`ChunkWriter` remembers before it starts over."""

Chunk = tuple[str, int, int, str]


class ChunkWriter:
    """Writes event rows as chunks (in the writer thread, inside its transaction).

    It remembers the last seq it wrote for each run: a chunk that starts after it cannot
    duplicate anything and is written without a look at the table. Any other (a run it has
    not written yet, or a seq it has passed) is checked against the table first. Only this
    process writes the events of its own runs, so the memory can be too high (a rolled-back
    transaction), which costs a check, but never too low.
    """

    def __init__(self) -> None:
        self.last_seq: dict[str, int] = {}

    def insert(self, conn: sqlite3.Connection, rows: EventRows) -> list[sqlite3.IntegrityError | None]:
        """Write ``rows`` (``(run_id, seq, payload)``), each run's consecutive seqs as one chunk.

        Returns:
            One entry per row: ``None`` when written, else the error of a row whose run already
            has its seq (every other row is written).
        """
        run_ids, seqs, payloads = rows.run_ids, rows.seqs, rows.payloads
        total = len(rows)
        errors: list[sqlite3.IntegrityError | None] = [None] * total
        if not total:
            return errors
        if len(self.last_seq) > KNOWN_RUNS_LIMIT:
            self.last_seq.clear()
        # Grouped by run (the sort is stable: a run's rows keep their order), which also puts
        # the chunks in index order: each one's place in the index is next to the last one's.
        # Ready chunks go in a statement at a time, and each statement lets go of the GIL: the
        # event loop waits on this thread for one statement's worth of chunks at most, not for
        # all of a transaction's.
        order = sorted(range(total), key=run_ids.__getitem__) if total > 1 else [0]
        ready: list[Chunk] = []
        last_seq = self.last_seq
        full = STATEMENT_ROWS[0]
        start = 0
        while start < total:
            first = order[start]
            run_id, seq = run_ids[first], seqs[first]
            end = start + 1
            while (
                end < total
                and end - start < MAX_CHUNK_EVENTS
                and run_ids[order[end]] == run_id
                and seqs[order[end]] == seq + end - start
            ):
                end += 1
            last = seq + end - start - 1
            known = last_seq.get(run_id)
            if known is not None and seq > known:
                ready.append((run_id, seq, last, _array(payloads, order[start:end])))
                last_seq[run_id] = last
                if len(ready) == full:
                    _write(conn, ready)
                    ready = []
            else:
                _write(conn, ready)  # what came before, so the check sees it
                ready = []
                self._insert_checked(conn, rows, order[start:end], errors)
            start = end
        _write(conn, ready)
        return errors

    def _insert_checked(
        self, conn: sqlite3.Connection, rows: EventRows, indexes: list[int], errors: list[sqlite3.IntegrityError | None]
    ) -> None:
        """Write the rows at ``indexes`` (one run, consecutive seqs) after a look at the table:
        whole when none of their seqs is there, else one by one, each duplicate refused."""
        run_id = rows.run_ids[indexes[0]]
        first, last = rows.seqs[indexes[0]], rows.seqs[indexes[-1]]
        if not _overlaps(conn, run_id, first, last):
            _write(conn, [(run_id, first, last, _array(rows.payloads, indexes))])
        else:
            for i in indexes:
                seq = rows.seqs[i]
                if _overlaps(conn, run_id, seq, seq):
                    errors[i] = sqlite3.IntegrityError(f"run {run_id} already has an event with seq {seq}")
                else:
                    _write(conn, [(run_id, seq, seq, "[" + rows.payloads[i] + "]")])
        self.last_seq[run_id] = max(last, self.last_seq.get(run_id, last))


def _overlaps(conn: sqlite3.Connection, run_id: str, first: int, last: int) -> bool:
    row = conn.execute(_COVERING, (run_id, last)).fetchone()
    return row is not None and row[0] >= first


def _array(payloads: list[str], indexes: list[int]) -> str:
    return "[" + ",".join([payloads[i] for i in indexes]) + "]"


def _write(conn: sqlite3.Connection, chunks: list[Chunk]) -> None:
    """Insert ``chunks`` as a few multi-row statements.

    The thread lets go of the GIL while SQLite runs a statement and takes it back after it,
    and on one core each of those hand-offs can stall the event loop: ``executemany`` would
    make one per row.
    """
    done, total = 0, len(chunks)
    for size in STATEMENT_ROWS:
        sql = _INSERT[size]
        while total - done >= size:
            params: list[Any] = []
            for chunk in chunks[done : done + size]:
                params += chunk
            conn.execute(sql, params)
            give_way()  # a busy event loop on this core has it back after each statement
            done += size


def read_chunks(conn: sqlite3.Connection, run_id: str, after_seq: int) -> list[str]:
    """The JSON arrays of the chunks of ``run_id`` that may hold events after ``after_seq``, in
    order (the first may start at or before it: the caller drops what it does not want)."""
    return [row[0] for row in conn.execute(_READ, (run_id, after_seq + 1))]


def migrate(conn: sqlite3.Connection) -> None:
    """Turn a file's table of one row per event (``events``, before chunks) into chunks of one
    event each, in one transaction; nothing when there is no such table."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='events'").fetchone()
        if found is not None:
            conn.execute(_COLUMNS + "SELECT run_id, seq, seq, '[' || data || ']' FROM events ORDER BY run_id, seq")
            conn.execute("DROP TABLE events")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
