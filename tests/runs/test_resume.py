"""Runs of a dead instance resumed by another run manager, over both stores against their real backends.

The dead instance is a run manager of this process whose id names a dead process and whose store
is closed under it mid-run: nothing more of it reaches the store, as with a process killed there.
(tests/runs/test_resume_processes.py kills real processes.)
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from reasonloop.config import RunsSettings
from reasonloop.errors import RunStoreUnavailable
from reasonloop.events import Answer, AnswerDelta, Event, Resumed, ToolCall, ToolResult
from reasonloop.runs.manager import RunManager
from reasonloop.runs.replay import REQUEST_KEY
from reasonloop.runs.resume import MAX_RESUMES
from reasonloop.runs.stores.redis.store import RedisRunStore
from reasonloop.runs.stores.sqlite.store import SQLiteRunStore
from tests.runs.resume_helpers import ANSWER, CountingModel, Tally, counting_runner, request
from tests.runs.test_stores import dead_instance

MakeStore = Callable[[], Awaitable[SQLiteRunStore | RedisRunStore]]


@pytest.fixture(params=["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
async def make_store(request, tmp_path) -> AsyncIterator[MakeStore]:
    """Opens stores on one backend (one SQLite file, or one Redis key prefix), each as a process would."""
    opened: list[SQLiteRunStore | RedisRunStore] = []
    prefix = f"r{uuid.uuid4().hex[:8]}:"

    async def make() -> SQLiteRunStore | RedisRunStore:
        if request.param == "sqlite":
            store = SQLiteRunStore(RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite")))
        else:
            url = request.getfixturevalue("redis_server").url
            store = RedisRunStore(RunsSettings(store="redis", redis_url=url, redis_prefix=prefix))
        await store.open()
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.close()


class Lives:
    """The managers of a test: the one that dies, and those that take over."""

    def __init__(self, tmp_path, make_store: MakeStore) -> None:
        self.tmp = tmp_path
        self.make_store = make_store
        self.managers: list[RunManager] = []
        self.dead: list[RunManager] = []

    async def dying(self, *, block_n: int, speak: bool = False, **settings) -> RunManager:
        """A manager whose runs block in their tool call ``n == block_n`` (it dies there: :meth:`die`)."""
        store = await self.make_store()
        runs = RunsSettings(journal=False, **settings)  # each event in the store before readers see it
        tally = Tally(self.tmp / "tool.log", block_n=block_n, speak=speak)
        model = CountingModel(self.tmp / "model.log")
        manager = RunManager(store, counting_runner(self.tmp, runs, tally, model), runs, instance=dead_instance())
        manager.tally, manager.model = tally, model  # type: ignore[attr-defined]
        await manager.open()
        self.dead.append(manager)
        return manager

    @staticmethod
    async def die(manager: RunManager, runs: int = 1) -> None:
        """Wait for ``runs`` runs to block, let the store take what they did, then cut the store away."""
        await manager.tally.wait_blocked(runs)  # type: ignore[attr-defined]
        for run in list(manager._executing.values()):
            await manager.recorder.all_recorded(run.recording)
            if run.journal is not None:
                await run.journal.flush()
        for task in manager._background:  # a dead process has no background loops (nor their connections)
            task.cancel()
        await asyncio.gather(*manager._background, return_exceptions=True)
        await manager.store.close()

    async def survivor(self, *, block_n: int | None = None, speak: bool = False, **settings) -> RunManager:
        store = await self.make_store()
        runs = RunsSettings(journal=False, **settings)
        tally = Tally(self.tmp / "tool.log", block_n=block_n, speak=speak)
        model = CountingModel(self.tmp / "model.log")
        manager = RunManager(store, counting_runner(self.tmp, runs, tally, model), runs)
        manager.tally, manager.model = tally, model  # type: ignore[attr-defined]
        self.managers.append(manager)
        return manager

    async def close(self) -> None:
        for manager in self.managers:
            await manager.close()
        for manager in self.dead:  # its process is gone: nothing of it may run on
            tasks = [*manager._background, *(r.task for r in manager._executing.values() if r.task)]
            if manager.recorder._recorder is not None:
                tasks.append(manager.recorder._recorder)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


@pytest.fixture
async def lives(tmp_path, make_store) -> AsyncIterator[Lives]:
    found = Lives(tmp_path, make_store)
    yield found
    await found.close()


async def until_end(manager: RunManager, run_id: str) -> list[Event]:
    feed = await manager.read(run_id)
    return await asyncio.wait_for(_all(feed.events()), 20)


async def _all(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


def content_of(event: Event) -> str:
    data = event.to_dict()
    for name in ("seq", "ts", "final"):
        data.pop(name, None)
    return str(sorted(data.items()))


async def test_a_dead_instances_run_goes_on_here_without_doing_its_finished_steps_again(lives):
    dying = await lives.dying(block_n=1)  # dies in the second tool call
    record = await dying.start(request())
    await lives.die(dying)
    assert dying.model.requests == 2 and dying.tally.logged() == ["0", "1"]

    here = await lives.survivor()
    assert await here.open() == []
    assert list(here.resume.resumed) == [record.run_id]
    live = await until_end(here, record.run_id)

    # Only what was not finished: the second tool call again, the third, and the two model calls after them.
    assert here.model.requests == 2 and here.tally.logged() == ["0", "1", "1", "2"]
    stored = await here.store.events(record.run_id)
    assert [e.to_json() for e in live] == [e.to_json() for e in stored]  # the live feed had the first life's too
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
    [resumed] = [e for e in stored if isinstance(e, Resumed)]
    assert resumed.instance == here.instance and resumed.reused_steps == 3  # two replies and one tool result
    before, after = stored[: resumed.seq - 1], stored[resumed.seq :]
    seen = {content_of(e) for e in before}
    assert not [e for e in after if content_of(e) in seen]  # readers get nothing twice
    calls = [e.call_id for e in stored if isinstance(e, ToolCall)]
    results = [e.call_id for e in stored if isinstance(e, ToolResult)]
    assert calls == results == ["call0", "call1", "call2"]
    answer = stored[-1]
    assert isinstance(answer, Answer) and answer.text == ANSWER and answer.stop_reason == "final"
    assert answer.usage.llm_calls == 4 and answer.usage.tool_calls == 3  # the run's, over both lives
    view = await here.get(record.run_id)
    assert view.status == "completed" and view.content == ANSWER and view.instance == here.instance
    assert await here.store.steps(record.run_id) == {}  # its end dropped its journal


async def test_the_resumed_answer_is_the_answer_of_a_run_that_never_died(lives, tmp_path, make_store):
    dying = await lives.dying(block_n=2)
    record = await dying.start(request())
    await lives.die(dying)
    here = await lives.survivor()
    await here.open()
    resumed = await until_end(here, record.run_id)
    calm = await lives.survivor()
    await calm.open()
    other = await calm.start(request())
    whole = await until_end(calm, other.run_id)
    assert resumed[-1].text == whole[-1].text == ANSWER
    assert resumed[-1].usage.llm_calls == whole[-1].usage.llm_calls
    assert resumed[-1].usage.prompt_tokens == whole[-1].usage.prompt_tokens


async def test_two_instances_racing_to_resume_one_run_one_does(lives):
    dying = await lives.dying(block_n=1)
    records = [await dying.start(request(f"count {i}")) for i in range(3)]
    await lives.die(dying, runs=3)
    one, two = await lives.survivor(), await lives.survivor()
    await asyncio.gather(one.open(), two.open())
    assert sorted([*one.resume.resumed, *two.resume.resumed]) == sorted(r.run_id for r in records)
    for record in records:
        owner = one if record.run_id in one.resume.resumed else two
        stored = await until_end(owner, record.run_id)
        assert sum(isinstance(e, Resumed) for e in stored) == 1
        assert sum(isinstance(e, Answer) for e in stored) == 1 and stored[-1].text == ANSWER


async def test_a_run_whose_request_was_not_kept_ends_interrupted_as_before(lives):
    dying = await lives.dying(block_n=1, resume_interrupted=False)
    record = await dying.start(request())
    await lives.die(dying)
    here = await lives.survivor()
    assert await here.open() == [record.run_id]
    assert not here.resume.resumed
    view = await here.get(record.run_id)
    assert view.status == "interrupted" and view.stop_reason == "interrupted"
    assert here.model.requests == 0 and here.tally.runs == 0


async def test_a_run_whose_kept_request_cannot_be_read_ends_interrupted(lives, caplog):
    dying = await lives.dying(block_n=1)
    record = await dying.start(request())
    await lives.die(dying)
    here = await lives.survivor()
    await here.store.put_step(record.run_id, REQUEST_KEY, '{"question": 3}')
    with caplog.at_level(logging.WARNING, logger="reasonloop.runs.resume"):
        assert await here.open() == [record.run_id]
    assert "cannot be read" in caplog.text
    assert (await here.get(record.run_id)).status == "interrupted"


async def test_a_run_resumed_too_often_ends_interrupted(lives):
    dying = await lives.dying(block_n=1)
    record = await dying.start(request())
    await lives.die(dying)
    here = await lives.survivor()
    last = len(await here.store.events(record.run_id))
    for n in range(MAX_RESUMES):  # earlier resumes, each of which died in turn
        resumed = Resumed(instance="gone", run_id=record.run_id, seq=last + n + 1)
        await here.store.append_event(record.run_id, resumed)
    assert await here.open() == [record.run_id]
    stored = await here.store.events(record.run_id)
    assert isinstance(stored[-1], Answer) and stored[-1].stop_reason == "interrupted"
    assert here.model.requests == 0


async def test_a_stop_during_a_resumed_run_keeps_its_partial_answer(lives):
    dying = await lives.dying(block_n=1, speak=True)
    record = await dying.start(request())
    await lives.die(dying)
    here = await lives.survivor(block_n=1, speak=True)  # the tool call it runs again never ends
    await here.open()
    await here.tally.wait_blocked()
    view = await here.stop(record.run_id)
    assert view.status == "stopped"
    assert view.content == "step 0; "  # the replayed call's text, sent again
    stored = await here.store.events(record.run_id)
    assert isinstance(stored[-1], Answer) and stored[-1].stop_reason == "stopped"
    assert stored[-1].text == view.content
    after = stored[[isinstance(e, Resumed) for e in stored].index(True) :]
    assert [e.text for e in after if isinstance(e, AnswerDelta)] == ["step 0; "]


async def test_a_run_that_died_queued_simply_starts_here(lives):
    dying = await lives.dying(block_n=0, max_concurrent=1)
    first = await dying.start(request("first"))
    queued = await dying.start(request("second"))
    await lives.die(dying)
    assert (await dying.get(queued.run_id)).status == "queued"
    here = await lives.survivor()
    await here.open()
    assert sorted(here.resume.resumed) == sorted([first.run_id, queued.run_id])
    stored = await until_end(here, queued.run_id)
    assert not any(isinstance(e, Resumed) for e in stored)  # nothing had been said: it just starts
    assert stored[0].seq == 1 and stored[-1].text == ANSWER


async def test_a_claimed_run_whose_recovery_fails_is_left_for_a_later_one(lives, monkeypatch):
    dying = await lives.dying(block_n=1)
    record = await dying.start(request())
    dead = (await dying.get(record.run_id)).instance
    await lives.die(dying)
    here = await lives.survivor()

    async def unreachable(run_id: str) -> dict[str, str]:
        raise RunStoreUnavailable("the store went away just then")

    monkeypatch.setattr(here.store, "steps", unreachable)
    with pytest.raises(RunStoreUnavailable):
        await here.open()
    assert (await here.store.get_run(record.run_id)).instance == dead  # given back, not left stuck here
    monkeypatch.undo()
    later = await lives.survivor()
    await later.open()
    assert list(later.resume.resumed) == [record.run_id]
    assert (await until_end(later, record.run_id))[-1].text == ANSWER
