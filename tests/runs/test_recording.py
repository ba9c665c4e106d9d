"""How the run manager records events without a journal: in batches, and published only once the store holds them.

(With a journal, the default on SQLite, events are published once journaled: tests/runs/test_journal.py.)
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from reasonloop.config import RunsSettings
from reasonloop.events import AnswerDelta, ErrorEvent, Event, RunStarted, event_adapter
from reasonloop.runs import execution as execution_module
from reasonloop.runs.manager import RunManager
from reasonloop.runs.models import RunRequest
from tests.runs.helpers import GatedRunner


class GatedStore:
    """Wraps a real store: batch appends wait on ``gate`` and can refuse chosen seqs."""

    def __init__(self, store) -> None:
        self.store = store
        self.gate = asyncio.Event()
        self.gate.set()
        self.batches: list[int] = []
        self.refuse: set[int] = set()

    def __getattr__(self, name):
        return getattr(self.store, name)

    async def append_events(self, items):
        await self.gate.wait()
        self.batches.append(len(items))
        from reasonloop.runs.stores.event_rows import EventRows

        keep = EventRows.of(row for row in items if row[1] not in self.refuse)  # rows: (run_id, seq, payload)
        results = iter(await self.store.append_events(keep))
        return [ValueError("refused") if row[1] in self.refuse else next(results) for row in items]


async def start(store, runner, **settings) -> tuple[RunManager, str]:
    manager = RunManager(store, runner, RunsSettings(journal=False, **settings))
    await manager.open()
    record = await manager.start(RunRequest(question="q"))
    return manager, record.run_id


async def test_events_reach_readers_only_once_the_store_holds_them(store):
    gated = GatedStore(store)
    gated.gate.clear()
    runner = GatedRunner(steps=2)
    manager, run_id = await start(gated, runner)
    try:
        run = manager.execution(run_id)
        live = run.live
        seen: list[Event] = []
        assert live.attach(lambda payload, terminal: seen.append(event_adapter.validate_json(payload)))
        await runner.entered_event(run_id).wait()  # the run streams on while its events wait for the store
        await asyncio.sleep(0.01)
        assert seen == [] and await store.events(run_id) == []
        gated.gate.set()
        runner.finish(run_id)
        await asyncio.wait_for(run.task, 10)
        stored = await store.events(run_id)
        assert [e.seq for e in seen] == [e.seq for e in stored] == list(range(1, 5))
        assert isinstance(seen[0], RunStarted) and seen[-1].type == "answer"
        assert (await store.get_run(run_id)).status == "completed"
    finally:
        await manager.close()


async def test_events_of_many_runs_are_recorded_in_few_store_calls(store):
    gated = GatedStore(store)
    runner = GatedRunner(steps=1)
    manager = RunManager(gated, runner, RunsSettings(max_concurrent=50, journal=False))
    await manager.open()
    try:
        gated.gate.clear()  # a slow store: what the runs emit meanwhile goes out together
        records = [await manager.start(RunRequest(question="q")) for _ in range(40)]
        for record in records:
            runner.finish(record.run_id)
        await asyncio.sleep(0.05)
        gated.gate.set()
        await asyncio.gather(*(manager.execution(r.run_id).task for r in records))
        assert sum(gated.batches) == 40 * 3
        assert len(gated.batches) <= 3  # the one in flight, then one for everything emitted meanwhile
    finally:
        await manager.close()


async def test_a_sink_gets_the_replay_then_each_event_until_detached(store):
    runner = GatedRunner(steps=3)
    manager, run_id = await start(store, runner)
    try:
        await runner.entered_event(run_id).wait()
        run = manager.execution(run_id)
        live = run.live
        await anext((await manager.read(run_id)).events())  # RunStarted is recorded
        late: list[int] = []
        early: list[int] = []
        three = asyncio.Event()

        def early_sink(payload, terminal):
            early.append(json.loads(payload)["seq"])
            assert not terminal
            if len(early) == 3:
                three.set()

        assert live.attach(early_sink)
        ends: list[bool] = []

        def late_sink(payload, terminal):
            late.append(json.loads(payload)["seq"])
            ends.append(terminal)

        assert live.attach(late_sink, after_seq=1)
        runner.gate(run_id).set()
        await asyncio.wait_for(three.wait(), 10)
        live.detach(early_sink)
        runner.finish(run_id)
        await asyncio.wait_for(run.task, 10)
        assert early == [1, 2, 3]
        assert late == list(range(2, live.last_seq + 1)) and ends == [False] * (len(late) - 1) + [True]
        replayed: list[bool] = []
        assert not live.attach(lambda payload, terminal: replayed.append(terminal))  # ended: replayed only
        assert replayed == [False] * (live.last_seq - 1) + [True]
    finally:
        await manager.close()


async def test_an_event_the_store_refuses_ends_the_run_right_after_what_was_delivered(store):
    gated = GatedStore(store)
    gated.refuse = {3}
    runner = GatedRunner(steps=4)
    manager, run_id = await start(gated, runner)
    try:
        events: AsyncIterator[Event] = (await manager.read(run_id)).events()
        runner.finish(run_id)
        got = [e async for e in events]
        assert [e.seq for e in got] == [1, 2, 3]
        assert isinstance(got[-1], ErrorEvent) and got[-1].code == "run.store_unavailable"
        assert "refused" in got[-1].message
        assert [e.text for e in got if isinstance(e, AnswerDelta)] == ["part0 "]
    finally:
        await manager.close()


async def test_a_run_far_ahead_of_the_store_waits_for_it(store, monkeypatch):
    monkeypatch.setattr(execution_module, "_MAX_UNRECORDED", 5)
    gated = GatedStore(store)
    gated.gate.clear()
    produced: list[int] = []

    async def fast(request) -> AsyncIterator[Event]:
        yield RunStarted(reasoning="fast", question=request.question)
        for i in range(20):
            produced.append(i)
            yield AnswerDelta(text=f"{i} ")
        from reasonloop.events import Answer

        yield Answer(text="done")

    manager, run_id = await start(gated, fast)
    try:
        await asyncio.sleep(0.05)
        assert 0 < len(produced) <= 5  # paused with five events unrecorded, not all twenty
        gated.gate.set()
        await asyncio.wait_for(manager.execution(run_id).task, 10)
        assert len(produced) == 20 and [e.seq for e in await store.events(run_id)] == list(range(1, 23))
    finally:
        await manager.close()


class FlakyStore(GatedStore):
    """Fails chosen batch calls (by number, from 1) with ``error``, once ``gate`` opens; the others go through."""

    def __init__(self, store, failing: set[int], error: BaseException) -> None:
        super().__init__(store)
        self.failing, self.error, self.calls = failing, error, 0
        self.failing_call = asyncio.Event()
        """Set when a failing call has begun (and waits on ``gate``)."""

    async def append_events(self, items):
        self.calls += 1
        if self.calls in self.failing:
            self.failing_call.set()
            await self.gate.wait()
            raise self.error
        return await super().append_events(items)


async def test_after_a_failed_batch_the_run_records_nothing_more(store):
    from reasonloop.errors import RunStoreUnavailable

    flaky = FlakyStore(store, {2}, RunStoreUnavailable("store hiccup"))
    runner = GatedRunner(steps=6)
    manager, run_id = await start(flaky, runner)
    try:
        events: AsyncIterator[Event] = (await manager.read(run_id)).events()
        got = [await anext(events), await anext(events)]  # run_started and part0: the first batch
        flaky.gate.clear()
        runner.gate(run_id).set()  # part1: the second batch takes it and waits, then fails
        await asyncio.sleep(0.02)
        runner.gate(run_id).set()  # part2: queued behind that batch
        await asyncio.sleep(0.02)
        flaky.gate.set()
        runner.finish(run_id)
        got += [e async for e in events]
        assert got[-1].type == "error" and [e.seq for e in got] == list(range(1, len(got) + 1))
        stored = [e.seq for e in await store.events(run_id)]
        assert stored == [e.seq for e in got[:-1]]  # what the client got before the error: no gap, nothing after
    finally:
        await manager.close()


async def test_a_store_bug_fails_its_batch_and_the_recorder_goes_on(store):
    flaky = FlakyStore(store, {2}, RuntimeError("store bug"))
    runner = GatedRunner(steps=1)
    manager = RunManager(flaky, runner, RunsSettings(max_concurrent=5, journal=False))
    await manager.open()
    try:
        first = await manager.start(RunRequest(question="q"))
        await runner.entered_event(first.run_id).wait()
        await manager.execution(first.run_id).recording.all_recorded()  # the first batch went through
        flaky.gate.clear()
        runner.finish(first.run_id)  # its next batch waits, then fails with a bug
        await flaky.failing_call.wait()
        second = await manager.start(RunRequest(question="q"))  # queued behind that batch
        runner.finish(second.run_id)
        await asyncio.sleep(0.01)
        flaky.gate.set()
        await asyncio.wait_for(manager.execution(second.run_id).task, 5)  # not stuck behind a dead recorder
        assert (await manager.get(second.run_id)).status == "completed"
        assert (await manager.get(first.run_id)).status != "completed"
    finally:
        await asyncio.wait_for(manager.close(), 10)


async def test_get_shows_what_the_store_holds_not_what_is_still_being_recorded(store):
    gated = GatedStore(store)
    runner = GatedRunner(steps=3)
    manager, run_id = await start(gated, runner)
    try:
        await runner.entered_event(run_id).wait()
        await asyncio.sleep(0.01)
        gated.gate.clear()  # from here the store holds nothing new
        held = await manager.get(run_id)
        runner.gate(run_id).set()  # one more delta is emitted, not recorded
        await asyncio.sleep(0.01)
        now = await manager.get(run_id)
        assert (now.content, now.last_seq) == (held.content, held.last_seq)
        gated.gate.set()
        runner.finish(run_id)
        await asyncio.wait_for(manager.execution(run_id).task, 10)
    finally:
        await manager.close()


async def test_a_recorder_stopped_mid_batch_fails_every_event_it_holds():
    """Cancelled while the store holds a batch (shutting down), the recorder fails that batch and
    what was queued behind it: no run waits forever for events that will never be recorded."""
    from reasonloop.errors import RunStoreUnavailable
    from reasonloop.runs.execution import Execution
    from reasonloop.runs.models import RunRecord
    from reasonloop.runs.recording.recorder import EventRecorder
    from reasonloop.runs.stores import StoreFeatures

    class StuckStore:
        features = StoreFeatures(batch_appends=True)

        def __init__(self) -> None:
            self.called = asyncio.Event()

        async def append_events(self, rows):
            self.called.set()
            await asyncio.Event().wait()

    store = StuckStore()
    recorder = EventRecorder(store, None, 0.0)  # type: ignore[arg-type]
    first, second = (Execution.of(RunRecord(run_id=f"run_{n}"), RunRequest(question="q")).recording for n in "ab")
    recorder.add(first, AnswerDelta(text="x", run_id="run_a", seq=1), "{}")
    await asyncio.wait_for(store.called.wait(), 5)  # the first batch is with the store
    recorder.add(second, AnswerDelta(text="y", run_id="run_b", seq=1), "{}")
    waits = [asyncio.create_task(run.all_recorded()) for run in (first, second)]
    await asyncio.sleep(0)
    recorder._recorder.cancel()
    done, _ = await asyncio.wait(waits, timeout=5)
    assert len(done) == 2
    for wait in waits:
        assert isinstance(wait.exception(), RunStoreUnavailable)
    assert first.unrecorded == second.unrecorded == 0 and first.live.payloads == second.live.payloads == []
