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
from reasonloop.runs import sqlite_writer
from reasonloop.runs.event_rows import EventRows
from reasonloop.runs.sqlite_store import SQLiteRunStore
from reasonloop.runs.sqlite_writer import Writer, WriterClosed

SCHEMA = "CREATE TABLE IF NOT EXISTS events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL);"


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

    def counting(conn, jobs):
        transactions.append(sum(len(batch.rows) for batch in jobs))
        return original(conn, jobs)

    monkeypatch.setattr(Writer, "_transaction", staticmethod(counting))
    futures = [writer.append(f"run_{i}", 1, "{}") for i in range(50)]  # one loop turn
    count = writer.submit(lambda c: c.execute("SELECT COUNT(*) FROM events").fetchone()[0])
    await asyncio.gather(*futures)
    assert await count == 50  # the job saw the rows appended in its turn
    assert transactions == [50]


async def test_a_failed_transaction_fails_everything_in_it(writer, monkeypatch):
    def broken(conn, appends):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(sqlite_writer, "_insert", broken)
    futures = [writer.append(f"run_{i}", 1, "{}") for i in range(5)]
    futures.append(writer.submit(lambda c: c.execute("INSERT INTO events VALUES ('run_x', 1, '{}')")))
    results = await asyncio.gather(*futures, return_exceptions=True)
    assert [str(r) for r in results] == ["disk I/O error"] * 6  # the job of the same turn too
    assert await writer.submit(lambda c: c.execute("SELECT COUNT(*) FROM events").fetchone()[0]) == 0
    monkeypatch.undo()
    await writer.append("run_after", 1, "{}")  # the writer keeps going after a failed batch


async def test_a_cancelled_waiter_does_not_disturb_the_rest_of_its_batch(writer):
    futures = [writer.append(f"run_{i}", 1, "{}") for i in range(3)]
    futures[1].cancel()
    await asyncio.gather(futures[0], futures[2])
    count = await writer.submit(lambda c: c.execute("SELECT COUNT(*) FROM events").fetchone()[0])
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

        def broken(conn, appends):
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
    await writer.submit(lambda c: c.execute("CREATE UNIQUE INDEX IF NOT EXISTS u ON events (run_id, seq)"))
    await writer.append("run_a", 1, "{}")
    job = writer.submit(lambda c: c.execute("INSERT INTO events VALUES ('run_z', 1, '{}')"))
    errors = await writer.append_many(EventRows.of([("run_a", 1, "{}"), ("run_a", 2, "{}"), ("run_b", 1, "{}")]))
    assert job.done()  # handed over, committed and resolved together
    assert [type(e) for e in errors] == [sqlite3.IntegrityError, type(None), type(None)]
    assert await writer.submit(lambda c: c.execute("SELECT COUNT(*) FROM events").fetchone()[0]) == 4


async def test_a_large_batch_goes_in_whole_across_statements_each_run_in_seq_order(writer):
    """341 rows take one statement of each size (256 + 64 + 16 + 4 + 1); 342 a second single.
    Rows go in grouped by run (in index order), each run's in the order given."""
    await writer.submit(lambda c: c.execute("CREATE UNIQUE INDEX IF NOT EXISTS u ON events (run_id, seq)"))
    rows = [(f"run_{(i * 5) % 7}", i, f'{{"n":{i}}}') for i in range(342)]
    assert sum(sqlite_writer.CHUNK_ROWS) == 341
    assert await writer.append_many(EventRows.of(rows)) == [None] * 342
    stored = await writer.submit(lambda c: c.execute("SELECT run_id, seq, data FROM events ORDER BY rowid").fetchall())
    assert stored == sorted(rows, key=lambda row: row[0])
    again = [("run_new", 1, "{}"), *rows[300:303], ("run_new", 2, "{}")]  # duplicates inside a later batch
    errors = await writer.append_many(EventRows.of(again))
    assert [e is None for e in errors] == [True, False, False, False, True]
    assert await writer.submit(lambda c: c.execute("SELECT COUNT(*) FROM events").fetchone()[0]) == 344


async def test_append_many_fails_whole_when_its_transaction_fails(writer, monkeypatch):
    def broken(conn, rows):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(sqlite_writer, "_insert", broken)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        await writer.append_many(EventRows.of([("run_a", 1, "{}")]))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread scheduling policy is set on Linux only")
async def test_the_writer_and_checkpointer_threads_give_way_to_the_event_loop(tmp_path):
    store = SQLiteRunStore(RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite")))
    await store.open()
    try:
        threads = [store._writer, store._checkpointer]
        policy = await store._writer.submit(lambda c: os.sched_getscheduler(threading.get_native_id()))
        assert policy == os.SCHED_IDLE
        for thread in threads:  # read from outside: the thread sets it first thing, maybe not yet
            for _ in range(200):
                if thread.native_id is not None and os.sched_getscheduler(thread.native_id) == os.SCHED_IDLE:
                    break
                await asyncio.sleep(0.01)
            assert os.sched_getscheduler(thread.native_id) == os.SCHED_IDLE, thread.name
        assert os.sched_getscheduler(threading.get_native_id()) != os.SCHED_IDLE  # the caller's own is untouched
    finally:
        await store.close()


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
