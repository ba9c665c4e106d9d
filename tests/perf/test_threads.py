"""The store's helper threads run at a priority that gives the event loop's core way.

These tests pin how the code is built, not what it does (tests/perf/README.md)."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from reasonloop.config import RunsSettings
from reasonloop.runs.stores.sqlite.store import SQLiteRunStore
from tests.waiting import await_until


def idle(thread: threading.Thread) -> bool:
    return thread.native_id is not None and os.sched_getscheduler(thread.native_id) == os.SCHED_IDLE


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread scheduling policy is set on Linux only")
async def test_the_writer_and_checkpointer_threads_give_way_to_the_event_loop(tmp_path):
    store = SQLiteRunStore(RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite")))
    await store.open()
    try:
        threads = [store._writer, store._checkpointer]
        policy = await store._writer.submit(lambda c: os.sched_getscheduler(threading.get_native_id()))
        assert policy == os.SCHED_IDLE
        for thread in threads:  # read from outside: the thread sets it first thing, maybe not yet
            await await_until(lambda t=thread: idle(t), what=f"{thread.name} at idle priority")
        assert os.sched_getscheduler(threading.get_native_id()) != os.SCHED_IDLE  # the caller's own is untouched
    finally:
        await store.close()
