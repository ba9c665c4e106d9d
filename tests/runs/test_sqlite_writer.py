"""The SQLite writer's group commit: appends of one loop turn share a transaction and its outcome."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import threading

import pytest

from reasonloop.config import RunsSettings
from reasonloop.errors import RunStoreUnavailable
from reasonloop.events import AnswerDelta
from reasonloop.runs.stores.event_rows import EventRows
from reasonloop.runs.stores.sqlite import events as sqlite_events
from reasonloop.runs.stores.sqlite import writer as sqlite_writer
from reasonloop.runs.stores.sqlite.store import SQLiteRunStore
from reasonloop.runs.stores.sqlite.writer import Checkpointer, Writer, WriterClosed
from tests.waiting import await_until

SCHEMA = sqlite_events.SCHEMA
COUNT = "SELECT COUNT(*) FROM event_chunks"
INSERT_ONE = "INSERT INTO event_chunks (run_id, first_seq, last_seq, data) VALUES ('run_x', 1, 1, '[{}]')"


@pytest.fixture
async def writer(tmp_path):
    w = Writer(str(tmp_path / "w.sqlite"), SCHEMA)
    w.start()
    await asyncio.to_thread(w.ready.wait)
    yield w
    w.stop()
    await asyncio.to_thread(w.join, 5)


async def test_one_loop_turn_is_one_transaction_that_wakes_every_waiter(writer, monkeypatch):
    transactions: list[int] = []
    original = Writer._transaction

    def counting(conn, jobs, chunks):
        transactions.append(sum(len(batch.rows) for batch in jobs))
        return original(conn, jobs, chunks)

    monkeypatch.setattr(Writer, "_transaction", staticmethod(counting))
    futures = [writer.append(f"run_{i}", 1, "{}") for i in range(50)]  # one loop turn
    count = writer.submit(lambda c: c.execute(COUNT).fetchone()[0])
    await asyncio.gather(*futures)
    assert await count == 50  # the job saw the rows appended in its turn
    assert transactions == [50]


async def test_a_failed_transaction_fails_everything_in_it(writer, monkeypatch):
    def broken(*args):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(sqlite_writer, "_insert", broken)
    futures = [writer.append(f"run_{i}", 1, "{}") for i in range(5)]
    futures.append(writer.submit(lambda c: c.execute(INSERT_ONE)))
    results = await asyncio.gather(*futures, return_exceptions=True)
    assert [str(r) for r in results] == ["disk I/O error"] * 6  # the job of the same turn too
    assert await writer.submit(lambda c: c.execute(COUNT).fetchone()[0]) == 0
    monkeypatch.undo()
    await writer.append("run_after", 1, "{}")  # the writer keeps going after a failed batch


async def test_a_cancelled_waiter_does_not_disturb_the_rest_of_its_batch(writer):
    futures = [writer.append(f"run_{i}", 1, "{}") for i in range(3)]
    futures[1].cancel()
    await asyncio.gather(futures[0], futures[2])
    count = await writer.submit(lambda c: c.execute(COUNT).fetchone()[0])
    assert count == 3  # cancelling a wait does not withdraw the row


async def test_appends_after_the_writer_stopped_fail_clearly(tmp_path):
    w = Writer(str(tmp_path / "w.sqlite"), SCHEMA)
    w.start()
    await asyncio.to_thread(w.ready.wait)
    pending = w.append("run_a", 1, "{}")
    w.stop()  # the open batch is handed over before the stop, so it is still written
    await pending
    await asyncio.to_thread(w.join, 5)
    with pytest.raises(WriterClosed):
        await w.append("run_a", 2, "{}")
    with pytest.raises(WriterClosed):
        await w.submit(lambda c: None)


async def test_store_reports_a_failed_batch_as_unavailable(tmp_path, monkeypatch):
    store = SQLiteRunStore(RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite")))
    await store.open()
    try:

        def broken(*args):
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(sqlite_writer, "_insert", broken)
        results = await asyncio.gather(
            *(store.append_event(f"run_{i}", AnswerDelta(text="x", run_id=f"run_{i}", seq=1)) for i in range(3)),
            return_exceptions=True,
        )
        assert all(isinstance(r, RunStoreUnavailable) and "disk is full" in r.message for r in results)
    finally:
        await store.close()


async def test_append_many_reports_each_row_and_goes_out_with_the_jobs_before_it(writer):
    await writer.append("run_a", 1, "{}")
    job = writer.submit(lambda c: c.execute(INSERT_ONE.replace("run_x", "run_z")))
    errors = await writer.append_many(EventRows.of([("run_a", 1, "{}"), ("run_a", 2, "{}"), ("run_b", 1, "{}")]))
    assert job.done()  # handed over, committed and resolved together
    assert [type(e) for e in errors] == [sqlite3.IntegrityError, type(None), type(None)]
    assert await writer.submit(lambda c: c.execute(COUNT).fetchone()[0]) == 4


def _stored(writer):
    return writer.submit(
        lambda c: c.execute("SELECT run_id, first_seq, last_seq, data FROM event_chunks ORDER BY id").fetchall()
    )


async def test_each_runs_consecutive_events_go_in_as_one_chunk_in_index_order(writer):
    """172 runs of 3 events, interleaved: 172 chunks, one statement of each size (128 + 32 + 8 +
    2 + 1) and a second single; each chunk holds its run's events in order. The same runs' next
    3 events each: 172 more chunks, the same way."""
    runs = [f"run_{(i * 37) % 172:03d}" for i in range(172)]
    rows = [(run, seq, f'{{"run":"{run}","seq":{seq}}}') for seq in (1, 2, 3) for run in runs]
    assert sum(sqlite_events.STATEMENT_ROWS) == 171
    assert await writer.append_many(EventRows.of(rows)) == [None] * len(rows)
    expected = [
        (run, 1, 3, "[" + ",".join(f'{{"run":"{run}","seq":{seq}}}' for seq in (1, 2, 3)) + "]") for run in sorted(runs)
    ]
    assert await _stored(writer) == expected
    # Again, for runs the writer knows: no look at the table, a statement at a time.
    more = [(run, seq, f'{{"run":"{run}","seq":{seq}}}') for seq in (4, 5, 6) for run in runs]
    assert await writer.append_many(EventRows.of(more)) == [None] * len(more)
    expected += [
        (run, 4, 6, "[" + ",".join(f'{{"run":"{run}","seq":{seq}}}' for seq in (4, 5, 6)) + "]") for run in sorted(runs)
    ]
    assert await _stored(writer) == expected


async def test_a_run_ahead_of_its_seqs_or_behind_them_gets_chunks_of_its_own_and_no_duplicate(writer):
    assert (
        await writer.append_many(EventRows.of([("run_a", 1, "1"), ("run_a", 2, "2"), ("run_a", 3, "3")])) == [None] * 3
    )
    later = [
        ("run_new", 1, "n1"),
        ("run_a", 3, "again"),  # a duplicate, and a new seq right after it
        ("run_a", 4, "4"),
        ("run_a", 2, "again"),  # behind: a duplicate
        ("run_a", 7, "7"),  # ahead, leaving a gap
        ("run_new", 2, "n2"),
    ]
    errors = await writer.append_many(EventRows.of(later))
    assert [e is None for e in errors] == [True, False, True, False, True, True]
    assert "run run_a already has an event with seq 3" in str(errors[1])
    assert await writer.append_many(EventRows.of([("run_a", 5, "5"), ("run_a", 6, "6")])) == [None, None]  # the gap
    both_there = await writer.append_many(EventRows.of([("run_a", 6, "x"), ("run_a", 7, "x")]))
    assert [isinstance(e, sqlite3.IntegrityError) for e in both_there] == [True, True]
    chunks = await writer.submit(lambda c: sqlite_events.read_chunks(c, "run_a", 0))
    assert chunks == ["[1,2,3]", "[4]", "[5,6]", "[7]"]
    assert await writer.submit(lambda c: sqlite_events.read_chunks(c, "run_a", 5)) == ["[5,6]", "[7]"]
    assert await writer.submit(lambda c: sqlite_events.read_chunks(c, "run_new", 0)) == ["[n1,n2]"]


async def test_a_long_stretch_of_one_run_is_cut_into_chunks_of_bounded_size(writer):
    n = sqlite_events.MAX_CHUNK_EVENTS + 1
    assert await writer.append_many(EventRows.of([("run_a", seq, str(seq)) for seq in range(1, n + 1)])) == [None] * n
    assert [(first, last) for _, first, last, _ in await _stored(writer)] == [(1, n - 1), (n, n)]


async def test_a_chunk_the_table_refuses_all_the_same_starts_the_transaction_over_checked(writer, tmp_path):
    """Another connection writing a run this writer already wrote (which the store never does):
    the writer's memory of the run's last seq is then too low, the table refuses the chunk, and
    the transaction starts over with every chunk checked, so only the duplicate fails."""
    assert await writer.append_many(EventRows.of([("run_a", 1, "1"), ("run_b", 1, "1")])) == [None, None]
    other = sqlite3.connect(writer.path, isolation_level=None)
    try:
        other.execute("INSERT INTO event_chunks (run_id, first_seq, last_seq, data) VALUES ('run_a', 2, 2, '[2]')")
    finally:
        other.close()
    errors = await writer.append_many(EventRows.of([("run_b", 2, "2"), ("run_a", 2, "dup"), ("run_a", 3, "3")]))
    assert [e is None for e in errors] == [True, False, True]
    assert await writer.submit(lambda c: sqlite_events.read_chunks(c, "run_a", 0)) == ["[1]", "[2]", "[3]"]
    assert await writer.submit(lambda c: sqlite_events.read_chunks(c, "run_b", 0)) == ["[1]", "[2]"]


async def test_append_many_fails_whole_when_its_transaction_fails(writer, monkeypatch):
    def broken(*args):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(sqlite_writer, "_insert", broken)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        await writer.append_many(EventRows.of([("run_a", 1, "{}")]))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread scheduling policy is set on Linux only")
async def test_low_priority_writer_threads_keep_a_share_of_the_cpu(tmp_path):
    store = SQLiteRunStore(RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite"), writer_priority="low"))
    await store.open()
    try:
        policy, nice = await store._writer.submit(
            lambda c: (
                os.sched_getscheduler(threading.get_native_id()),
                os.getpriority(os.PRIO_PROCESS, threading.get_native_id()),
            )
        )
        assert policy == os.SCHED_OTHER and nice == 19
    finally:
        await store.close()


async def test_the_writer_gives_the_core_back_after_each_statement_and_commit(writer, monkeypatch):
    statements: list[str] = []
    given: list[str] = []
    monkeypatch.setattr(sqlite_events, "give_way", lambda: given.append("statement"))
    monkeypatch.setattr(sqlite_writer, "give_way", lambda: given.append("transaction"))
    await writer.submit(lambda c: c.set_trace_callback(statements.append))
    for seq in (1, 2):  # a run's first chunk is checked against the table; its next ones are not
        statements.clear()
        given.clear()
        rows = EventRows()
        for i in range(300):
            rows.append(f"run_{i:03}", seq, "{}")
        await writer.append_many(rows)
        inserts = [sql for sql in statements if sql.startswith("INSERT INTO event_chunks")]
        assert len(inserts) == (300 if seq == 1 else 6)  # then 128 + 128 + 32 + 8 + 2 + 2 chunks
        assert given.count("statement") == len(inserts)
        assert given[-1] == "transaction"  # after the commit


def _db_size(path) -> int:
    return os.path.getsize(path)


async def _write_events(writer: Writer, nbytes: int) -> None:
    rows = EventRows()
    payload = '{"text":"' + "x" * 990 + '"}'
    for i in range(nbytes // len(payload) + 1):
        rows.append(f"run_{i:04}", 1, payload)
    await writer.append_many(rows)


@pytest.mark.parametrize("step_bytes", [20_000, 10**9])
async def test_a_checkpoint_follows_each_step_of_committed_events_not_only_the_interval(tmp_path, step_bytes):
    path = tmp_path / "c.sqlite"
    writer = Writer(str(path), SCHEMA)
    writer.start()
    await asyncio.to_thread(writer.ready.wait)
    checkpointer = Checkpointer(str(path), interval_s=3600, step_bytes=step_bytes)
    writer.checkpointer = checkpointer
    checkpointer.start()
    try:
        before = _db_size(path)
        await _write_events(writer, 100_000)  # the WAL holds them; the database file does not yet
        if step_bytes < 100_000:  # a step reached: copied back without waiting an hour
            await await_until(lambda: _db_size(path) > before + 50_000, what="the WAL copied back")
        else:  # no step reached: nothing wakes the checkpointer before its hour
            assert not checkpointer.due.is_set()
            assert _db_size(path) < before + 50_000
    finally:
        checkpointer.stop()
        await asyncio.to_thread(checkpointer.join, 5)
        writer.stop()
        await asyncio.to_thread(writer.join, 5)
    assert not checkpointer.is_alive()  # stopping does not wait for the interval either


async def test_a_checkpoint_waits_for_the_writers_transaction_to_end(tmp_path):
    """A checkpoint never runs beside a transaction, while the writer may hold the interpreter lock."""
    path = tmp_path / "c.sqlite"
    writer = Writer(str(path), SCHEMA)
    writer.start()
    await asyncio.to_thread(writer.ready.wait)
    checkpointer = Checkpointer(str(path), interval_s=3600, step_bytes=10**9, writing=writer.writing)
    checkpointer.start()
    try:
        before = _db_size(path)
        await _write_events(writer, 100_000)  # in the WAL, not yet in the database file
        writer.writing.acquire()  # as a transaction holds it
        try:
            checkpointer.due.set()
            await asyncio.sleep(0.3)
            assert _db_size(path) < before + 50_000  # the checkpoint waits
        finally:
            writer.writing.release()
        await await_until(lambda: _db_size(path) > before + 50_000, what="the checkpoint after the transaction")
    finally:
        checkpointer.stop()
        await asyncio.to_thread(checkpointer.join, 5)
        writer.stop()
        await asyncio.to_thread(writer.join, 5)
