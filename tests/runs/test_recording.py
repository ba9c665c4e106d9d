"""How the run manager records events: in batches, and published only once the store holds them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from reasonloop.config import RunsSettings
from reasonloop.events import AnswerDelta, ErrorEvent, Event, RunStarted, event_adapter
from reasonloop.runs import manager as manager_module
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
        keep = [item for item in items if item[1].seq not in self.refuse]
        results = iter(await self.store.append_events(keep))
        return [ValueError("refused") if item[1].seq in self.refuse else next(results) for item in items]


async def start(store, runner, **settings) -> tuple[RunManager, str]:
    manager = RunManager(store, runner, RunsSettings(**settings))
    await manager.open()
    record = await manager.start(RunRequest(question="q"))
    return manager, record.run_id


async def test_events_reach_readers_only_once_the_store_holds_them(store):
    gated = GatedStore(store)
    gated.gate.clear()
    runner = GatedRunner(steps=2)
    manager, run_id = await start(gated, runner)
    try:
        live = await manager.live_run(run_id)
        seen: list[Event] = []
        assert live.attach(lambda payload, terminal: seen.append(event_adapter.validate_json(payload)))
        await runner.entered_event(run_id).wait()  # the run streams on while its events wait for the store
        await asyncio.sleep(0.01)
        assert seen == [] and await store.events(run_id) == []
        gated.gate.set()
        runner.finish(run_id)
        await asyncio.wait_for(live.task, 10)
        stored = await store.events(run_id)
        assert [e.seq for e in seen] == [e.seq for e in stored] == list(range(1, 5))
        assert isinstance(seen[0], RunStarted) and seen[-1].type == "answer"
        assert (await store.get_run(run_id)).status == "completed"
    finally:
        await manager.close()


async def test_events_of_many_runs_are_recorded_in_few_store_calls(store):
    gated = GatedStore(store)
    runner = GatedRunner(steps=1)
    manager = RunManager(gated, runner, RunsSettings(max_concurrent=50))
    await manager.open()
    try:
        gated.gate.clear()  # a slow store: what the runs emit meanwhile goes out together
        records = [await manager.start(RunRequest(question="q")) for _ in range(40)]
        for record in records:
            runner.finish(record.run_id)
        await asyncio.sleep(0.05)
        gated.gate.set()
        await asyncio.gather(*(manager._live[r.run_id].task for r in records))
        assert sum(gated.batches) == 40 * 3
        assert len(gated.batches) <= 3  # the one in flight, then one for everything emitted meanwhile
    finally:
        await manager.close()


async def test_a_sink_gets_the_replay_then_each_event_until_detached(store):
    runner = GatedRunner(steps=3)
    manager, run_id = await start(store, runner)
    try:
        await runner.entered_event(run_id).wait()
        live = await manager.live_run(run_id)
        await anext(live.follow())  # RunStarted is recorded
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
        await asyncio.wait_for(live.task, 10)
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
        events: AsyncIterator[Event] = await manager.subscribe(run_id)
        runner.finish(run_id)
        got = [e async for e in events]
        assert [e.seq for e in got] == [1, 2, 3]
        assert isinstance(got[-1], ErrorEvent) and got[-1].code == "run.store_unavailable"
        assert "refused" in got[-1].message
        assert [e.text for e in got if isinstance(e, AnswerDelta)] == ["part0 "]
    finally:
        await manager.close()


async def test_a_run_far_ahead_of_the_store_waits_for_it(store, monkeypatch):
    monkeypatch.setattr(manager_module, "_MAX_UNRECORDED", 5)
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
        live = manager._live[run_id]
        await asyncio.wait_for(live.task, 10)
        assert len(produced) == 20 and [e.seq for e in await store.events(run_id)] == list(range(1, 23))
    finally:
        await manager.close()
