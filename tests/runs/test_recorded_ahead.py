"""A run waiting for its own events (at its end) has them recorded ahead of the batch they are in,
while every other run's events go on gathering for ``record_interval_s``: with runs ending many
times a second, nobody else's events are cut into pieces (and rows) of one or two."""

from __future__ import annotations

import asyncio

from reasonloop.errors import RunStoreUnavailable
from reasonloop.events import AnswerDelta
from reasonloop.runs.live import LiveRun
from reasonloop.runs.models import RunRecord
from reasonloop.runs.recording.journal import Journal
from reasonloop.runs.recording.progress import RunRecording
from reasonloop.runs.recording.recorder import EventRecorder
from tests.runs.test_recording import GatedStore
from tests.waiting import DEFAULT_TIMEOUT_S


class Runs:
    """Runs fed straight to an :class:`EventRecorder` with a journal, as the run manager feeds it
    (which journals, publishes, then queues them)."""

    def __init__(self, store, journal_dir: str, interval_s: float) -> None:
        self.journal = Journal(journal_dir, "me:1:x")
        self.journal.open()
        self.recorder = EventRecorder(store, self.journal, interval_s)
        self.lives: dict[str, RunRecording] = {}

    def emit(self, run_id: str, count: int = 1) -> RunRecording:
        run = self.lives.get(run_id)
        if run is None:
            run = self.lives[run_id] = RunRecording(live=LiveRun(record=RunRecord(run_id=run_id)), run_id=run_id)
        for _ in range(count):
            seq = run.live.last_seq + 1
            event = AnswerDelta(text=f"t{seq} ")
            event.run_id, event.seq = run_id, seq
            self.recorder.add(run, event, event.to_json())
        return run

    async def close(self) -> None:
        await self.recorder.drain()
        assert self.journal.current.pending == 0  # every journaled event settled once
        assert all(live.unrecorded == 0 for live in self.lives.values())
        self.journal.close()


async def seqs(store, run_id: str) -> list[int]:
    return [e.seq for e in await store.events(run_id)]


async def chunk_rows(store) -> int:
    return await store._run(lambda c: c.execute("SELECT COUNT(*) FROM event_chunks").fetchone()[0])


async def test_a_waiting_run_has_its_own_events_recorded_at_once_and_no_one_elses(store, tmp_path):
    gated = GatedStore(store)
    runs = Runs(gated, str(tmp_path / "j"), interval_s=3600)  # a batch that never falls due here
    ending = runs.emit("run_a", 3)
    runs.emit("run_b", 2)
    await asyncio.wait_for(runs.recorder.all_recorded(ending), DEFAULT_TIMEOUT_S)  # not held back for the batch
    assert gated.batches == [3]
    assert await seqs(store, "run_a") == [1, 2, 3] and await seqs(store, "run_b") == []
    await runs.close()  # the batch, without run_a's events a second time
    assert gated.batches == [3, 2]
    assert await seqs(store, "run_a") == [1, 2, 3] and await seqs(store, "run_b") == [1, 2]


async def test_under_load_each_run_keeps_its_events_in_one_row_however_many_runs_end(store, tmp_path):
    gated = GatedStore(store)
    # No batch falls due while the ten end (on a busy machine half a second did): only the endings record.
    runs = Runs(gated, str(tmp_path / "j"), interval_s=3600)
    for n in range(100):
        runs.emit(f"run_{n:03d}", 3)
    for n in range(0, 100, 10):  # ten runs end, one after the other
        await asyncio.wait_for(runs.recorder.all_recorded(runs.lives[f"run_{n:03d}"]), DEFAULT_TIMEOUT_S)
    assert gated.batches == [3] * 10
    runs.emit("run_000", 2)  # a run recorded ahead goes on (as one held back by unrecorded events does)
    await runs.close()
    assert gated.batches == [3] * 10 + [90 * 3 + 2]
    assert await seqs(store, "run_000") == [1, 2, 3, 4, 5]
    assert await seqs(store, "run_099") == [1, 2, 3]
    assert await chunk_rows(store) == 100 + 1  # one row per run, and run_000's later two in one more


async def test_a_run_status_queued_before_its_end_is_recorded_before_the_end_is(store, tmp_path):
    await store.create_run(RunRecord(run_id="run_a", status="queued"))
    runs = Runs(store, str(tmp_path / "j"), interval_s=3600)
    runs.recorder.add_status("run_a", {"status": "running", "started_at": 123.0})
    ending = runs.emit("run_a", 2)
    await asyncio.wait_for(runs.recorder.all_recorded(ending), DEFAULT_TIMEOUT_S)
    await store.update_run("run_a", status="completed")  # the run's end, as the manager records it
    await runs.close()
    stored = await store.get_run("run_a")
    assert stored.started_at == 123.0  # the queued status was recorded,
    assert stored.status == "completed"  # and not over the end that came after it


async def test_a_refused_event_recorded_ahead_fails_only_its_run_and_settles_everything(store, tmp_path):
    gated = GatedStore(store)
    gated.refuse = {2}
    runs = Runs(gated, str(tmp_path / "j"), interval_s=3600)
    ending = runs.emit("run_a", 3)
    try:
        await asyncio.wait_for(runs.recorder.all_recorded(ending), DEFAULT_TIMEOUT_S)
    except RunStoreUnavailable as exc:
        assert "refused event 2" in exc.message
    else:
        raise AssertionError("the refused event went unnoticed")
    gated.refuse = set()
    runs.emit("run_b", 2)
    segment = runs.journal.current
    await runs.close()
    assert ending.store_error is not None and ending.stored_through == 1  # counted up to the refusal
    assert gated.batches == [3, 2]  # nothing of run_a a second time
    assert await seqs(store, "run_b") == [1, 2]
    assert segment.failed  # kept for recovery: the store lacks some of its events
