"""RunManager over the real SQLite store: fan-out, resume, stop, queueing, failures, conversations."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from reasonloop.config import RunsSettings
from reasonloop.errors import (
    ConversationBusy,
    LLMBadRequest,
    RequestInvalid,
    RunFinished,
    RunNotFound,
    RunQueueFull,
    RunStoreUnavailable,
)
from reasonloop.events import Answer, AnswerDelta, ErrorEvent, Event, RunStarted
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.runs import upkeep as upkeep_module
from reasonloop.runs.manager import RunManager
from reasonloop.runs.models import RunRecord, RunRequest
from reasonloop.runs.recovery import recover_interrupted
from reasonloop.runs.stores.redis.store import RedisRunStore
from tests.llm_runner import LLMRunner
from tests.runs.helpers import GatedRunner, RedisServer
from tests.waiting import await_until


async def drain(it: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in it]


@pytest.fixture
async def make_manager(store):
    managers: list[RunManager] = []

    async def make(runner, **settings) -> RunManager:
        m = RunManager(store, runner, RunsSettings(**settings))
        await m.open()
        managers.append(m)
        return m

    yield make
    for m in managers:
        await m.close()


async def test_run_streams_stamped_events_and_records_them(store, make_manager):
    runner = LLMRunner(lambda: ScriptedProvider(replies=["The answer is forty-two."], chunk_size=4))
    manager = await make_manager(runner)
    record = await manager.start(RunRequest(question="what?"))
    assert record.status == "queued"
    events = await drain((await manager.read(record.run_id)).events())
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], Answer)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert {e.run_id for e in events} == {record.run_id}
    assert "".join(e.text for e in events if isinstance(e, AnswerDelta)) == "The answer is forty-two."
    stored = await store.events(record.run_id)
    assert [e.to_dict() for e in stored] == [e.to_dict() for e in events]
    done, result = await manager.result(record.run_id)
    assert done.status == "completed" and result.content == "The answer is forty-two."
    assert (await store.get_run(record.run_id)).status == "completed"


async def test_subscribers_see_the_same_events_and_resume_without_gaps(store, make_manager):
    runner = GatedRunner(steps=4)
    manager = await make_manager(runner)
    record = await manager.start(RunRequest(question="q"))
    first = asyncio.create_task(drain((await manager.read(record.run_id)).events()))
    await runner.entered_event(record.run_id).wait()
    runner.gate(record.run_id).set()  # one more delta
    await asyncio.sleep(0)
    late = asyncio.create_task(drain((await manager.read(record.run_id, after_seq=2)).events()))
    runner.finish(record.run_id)
    full, tail = await first, await late
    assert [e.seq for e in full] == list(range(1, 7))  # started, 4 deltas, answer
    assert [e.to_dict() for e in tail] == [e.to_dict() for e in full[2:]]


async def test_finished_run_is_read_from_the_store_once_forgotten(store, make_manager):
    manager = await make_manager(LLMRunner(ScriptedProvider(replies=["abc def"], chunk_size=2)), keep_finished_s=0)
    record = await manager.start(RunRequest(question="q"))
    live = await drain((await manager.read(record.run_id)).events())
    await await_until(lambda: manager.execution(record.run_id) is None)
    again = await drain((await manager.read(record.run_id, after_seq=1)).events())
    assert [e.to_dict() for e in again] == [e.to_dict() for e in live[1:]]


async def test_stop_keeps_partial_content(store, make_manager):
    runner = GatedRunner(steps=5)
    manager = await make_manager(runner)
    record = await manager.start(RunRequest(question="q"))
    await runner.entered_event(record.run_id).wait()
    stopped = await manager.stop(record.run_id)
    assert stopped.status == "stopped"
    assert stopped.content == "part0 "
    assert runner.cancelled == [record.run_id]
    events = await drain((await manager.read(record.run_id)).events())
    assert isinstance(events[-1], Answer) and events[-1].stop_reason == "stopped"
    assert events[-1].text == "part0 "
    assert (await store.get_run(record.run_id)).status == "stopped"
    with pytest.raises(RunFinished) as info:
        await manager.stop(record.run_id)
    assert info.value.details["status"] == "stopped"


async def test_stop_of_a_queued_run(store, make_manager):
    runner = GatedRunner(steps=1)
    manager = await make_manager(runner, max_concurrent=1)
    first = await manager.start(RunRequest(question="one"))
    second = await manager.start(RunRequest(question="two"))
    await runner.entered_event(first.run_id).wait()
    assert (await manager.get(second.run_id)).status == "queued"
    stopped = await manager.stop(second.run_id)
    assert stopped.status == "stopped" and stopped.content == ""
    events = await drain((await manager.read(second.run_id)).events())
    assert [type(e) for e in events] == [RunStarted, Answer]
    runner.finish(first.run_id)
    assert (await drain((await manager.read(first.run_id)).events()))[-1].stop_reason == "final"


async def _stop_twice(manager: RunManager, run_id: str) -> list:
    """Two stops of one run: at once, then one more while the first is being turned into the run's end."""
    at_once = asyncio.gather(manager.stop(run_id), manager.stop(run_id))
    await asyncio.sleep(0)
    await asyncio.sleep(0)  # the run's task is now recording its end
    later = asyncio.create_task(manager.stop(run_id))
    first, second = await asyncio.wait_for(at_once, 5)
    try:
        third = await asyncio.wait_for(later, 5)
    except RunFinished as exc:  # the run's end was recorded before this stop looked
        assert exc.details["status"] == "stopped"
        third = first
    assert first.status == second.status == third.status
    return [first, third]


async def test_two_stops_at_once_of_a_queued_run_end_it_once(store, make_manager):
    runner = GatedRunner(steps=1)
    manager = await make_manager(runner, max_concurrent=1)
    first = await manager.start(RunRequest(question="one"))
    second = await manager.start(RunRequest(question="two"))
    await runner.entered_event(first.run_id).wait()
    stops = await _stop_twice(manager, second.run_id)
    assert [s.status for s in stops] == ["stopped", "stopped"]
    assert (await store.get_run(second.run_id)).status == "stopped"
    events = await drain((await manager.read(second.run_id)).events())
    assert [type(e) for e in events] == [RunStarted, Answer] and events[-1].stop_reason == "stopped"
    assert manager.execution(second.run_id).task.cancelling() == 0
    runner.finish(first.run_id)
    assert (await drain((await manager.read(first.run_id)).events()))[-1].stop_reason == "final"


async def test_two_stops_at_once_of_a_running_run_end_it_once(store, make_manager):
    runner = GatedRunner(steps=5)
    manager = await make_manager(runner)
    record = await manager.start(RunRequest(question="q"))
    await runner.entered_event(record.run_id).wait()
    stops = await _stop_twice(manager, record.run_id)
    assert [s.status for s in stops] == ["stopped", "stopped"]
    stored = await store.get_run(record.run_id)
    assert stored.status == "stopped" and stored.content == "part0 "
    assert manager.execution(record.run_id).task.cancelling() == 0


async def test_a_run_whose_starter_was_cancelled_while_recording_it_still_runs(store, make_manager):
    # A WebSocket that closes right after its ask cancels the task starting the run, after the run
    # was handed to the store: a run recorded but never executed would stay queued for good.
    manager = await make_manager(LLMRunner(lambda: ScriptedProvider(replies=["done"])))
    starting = asyncio.create_task(manager.start(RunRequest(question="q", run_id="run_cancelled_starter")))
    await asyncio.sleep(0)  # the run is handed to the store; start() waits for the commit
    starting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starting
    events = await asyncio.wait_for(drain((await manager.read("run_cancelled_starter")).events()), 5)
    assert isinstance(events[-1], Answer) and events[-1].text == "done"
    assert (await store.get_run("run_cancelled_starter")).status == "completed"


async def test_a_continuing_run_whose_starter_was_cancelled_while_recording_it_still_runs(
    store, make_manager, monkeypatch
):
    # The same for a question that continues a conversation, recorded only if the conversation is
    # free: the run is launched once the store has said it is recorded.
    manager = await make_manager(LLMRunner(lambda: ScriptedProvider(replies=["done"], repeat_last=True)))
    first = await manager.start(RunRequest(question="q"))
    await drain((await manager.read(first.run_id)).events())
    recorded, release = asyncio.Event(), asyncio.Event()
    create = store.create_continuing_run

    async def held(record):
        holder = await create(record)
        recorded.set()
        await release.wait()
        return holder

    monkeypatch.setattr(store, "create_continuing_run", held)
    again = RunRequest(question="again", conversation_id=first.conversation_id, run_id="run_again")
    starting = asyncio.create_task(manager.start(again))
    await recorded.wait()
    starting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starting
    release.set()
    events = await asyncio.wait_for(drain((await manager.read("run_again")).events()), 5)
    assert isinstance(events[-1], Answer) and events[-1].text == "done"
    assert (await store.get_run("run_again")).status == "completed"


async def test_background_loops_outlive_an_unforeseen_failure(store, make_manager, monkeypatch):
    # Heartbeats and stop polling must go on: on Redis, an instance whose heartbeat stops has its
    # live runs marked interrupted by the others.
    monkeypatch.setattr(upkeep_module, "_HEARTBEAT_S", 0.01)
    monkeypatch.setattr(upkeep_module, "_RETRY_S", 0.01)
    calls = {"heartbeat": 0, "stops": 0}
    real_heartbeat = store.heartbeat

    async def flaky_heartbeat(instance):
        calls["heartbeat"] += 1
        if calls["heartbeat"] == 2:
            raise RuntimeError("unexpected")
        await real_heartbeat(instance)

    async def flaky_stop_requests(instance):
        calls["stops"] += 1
        if calls["stops"] == 1:
            raise RuntimeError("unexpected")
        await asyncio.sleep(3600)
        yield ""

    monkeypatch.setattr(store, "heartbeat", flaky_heartbeat)
    monkeypatch.setattr(store, "stop_requests", flaky_stop_requests)
    manager = await make_manager(LLMRunner(ScriptedProvider(replies=["x"])))
    await await_until(lambda: calls["heartbeat"] >= 4 and calls["stops"] >= 2, what=f"retries {calls}")
    assert not any(task.done() for task in manager._background)


@pytest.mark.redis
async def test_a_process_dying_between_a_runs_end_writes_never_loses_its_turn(redis_server, monkeypatch):
    # Redis takes the run's end (status, conversation turn) in separate round trips. A process
    # killed between them must leave something recovery completes, never a finished run
    # without its turn.
    store = RedisRunStore(RunsSettings(store="redis", redis_url=redis_server.url, redis_prefix="die:"))
    await store.open()
    manager = RunManager(store, LLMRunner(ScriptedProvider(replies=["the answer"])), RunsSettings(store="redis"))
    await manager.open()
    real = {"update_run": store.update_run, "add_messages": store.add_messages}
    ended: list[str] = []
    killed = asyncio.Event()

    def dies_after_the_first_end_write(name):
        async def write(*args, **kwargs):
            if name == "add_messages" or kwargs.get("status") == "completed":
                if ended:  # the process is killed here: nothing more reaches the store
                    killed.set()
                    await asyncio.sleep(3600)
                ended.append(name)
            return await real[name](*args, **kwargs)

        return write

    try:
        for name in real:
            monkeypatch.setattr(store, name, dies_after_the_first_end_write(name))
        record = await manager.start(RunRequest(question="q"))
        await asyncio.wait_for(killed.wait(), 5)
        monkeypatch.undo()

        async def dead(instance: str) -> bool:
            return False

        monkeypatch.setattr(store, "instance_alive", dead)
        await recover_interrupted(store, me="another instance")
        stored = await store.get_run(record.run_id)
        assert stored.status == "completed" and stored.content == "the answer"
        conversation = await store.get_conversation(record.conversation_id)
        assert [m["content"] for m in conversation.messages] == ["q", "the answer"]
    finally:
        running = manager.execution(record.run_id)
        if running is not None and running.task is not None:
            running.task.cancel()
        await manager.close()
        await store.close()


async def test_a_conversation_takes_one_run_at_a_time(store, make_manager):
    # A second question while the first is still being answered would read a history without the
    # first turn, and the turns would be stored in whichever order the runs end.
    runner = GatedRunner(steps=1)
    manager = await make_manager(runner)
    first = await manager.start(RunRequest(question="first?"))
    with pytest.raises(ConversationBusy) as busy:
        await manager.start(RunRequest(question="second?", conversation_id=first.conversation_id))
    assert busy.value.details["run_id"] == first.run_id
    runner.finish(first.run_id)
    await drain((await manager.read(first.run_id)).events())
    # Two at once (each start waits on the store before its run exists): one gets the conversation.
    racing = [manager.start(RunRequest(question="second?", conversation_id=first.conversation_id)) for _ in range(2)]
    results = await asyncio.gather(*racing, return_exceptions=True)
    assert sorted(type(r).__name__ for r in results) == ["ConversationBusy", "RunRecord"], results
    second = next(r for r in results if not isinstance(r, BaseException))
    runner.finish(second.run_id)
    await drain((await manager.read(second.run_id)).events())
    conversation = await store.get_conversation(first.conversation_id)
    assert [m["content"] for m in conversation.messages if m["role"] == "user"] == ["first?", "second?"]


async def test_a_conversation_takes_one_run_at_a_time_across_instances(any_store, monkeypatch):
    # Two instances on one store (two processes on one SQLite file, or on one Redis): the second
    # may not answer a conversation the first is still answering, and may once it has answered,
    # even while the first is still storing that run's end.
    storing = asyncio.Event()
    record_end = any_store.update_run

    async def slow_end(run_id: str, **fields) -> None:
        if fields.get("status") == "completed":
            storing.set()
            await asyncio.sleep(0.05)
        await record_end(run_id, **fields)

    monkeypatch.setattr(any_store, "update_run", slow_end)
    other_store = type(any_store)(any_store.settings)
    await other_store.open()
    runners = GatedRunner(steps=1), GatedRunner(steps=1)
    first_instance = RunManager(any_store, runners[0], RunsSettings())
    second_instance = RunManager(other_store, runners[1], RunsSettings())
    await first_instance.open()
    await second_instance.open()
    try:
        first = await first_instance.start(RunRequest(question="first?"))
        ask_again = RunRequest(question="second?", conversation_id=first.conversation_id)
        with pytest.raises(ConversationBusy) as busy:
            await second_instance.start(ask_again)
        assert busy.value.details["run_id"] == first.run_id
        assert [r.run_id for r in await any_store.inflight_runs()] == [first.run_id]  # nothing recorded
        runners[0].finish(first.run_id)
        await storing.wait()  # answered, and its end is being stored
        assert (await any_store.get_run(first.run_id)).status == "running"
        second = await second_instance.start(ask_again)
        assert (await any_store.get_run(first.run_id)).status == "completed"
        runners[1].finish(second.run_id)
        await drain((await second_instance.read(second.run_id)).events())
        conversation = await any_store.get_conversation(first.conversation_id)
        assert [m["content"] for m in conversation.messages if m["role"] == "user"] == ["first?", "second?"]
    finally:
        await second_instance.close()
        await first_instance.close()
        await other_store.close()


async def test_unknown_run_and_other_tenant_are_not_found(store, make_manager):
    manager = await make_manager(LLMRunner(ScriptedProvider(replies=["x"])))
    with pytest.raises(RunNotFound):
        await manager.get("run_nope")
    with pytest.raises(RunNotFound):
        await manager.stop("run_nope")
    record = await manager.start(RunRequest(question="q", tenant="acme"))
    with pytest.raises(RunNotFound):
        (await manager.read(record.run_id, tenant="other")).events()
    with pytest.raises(RunNotFound):
        await manager.stop(record.run_id, tenant="other")
    assert (await manager.get(record.run_id, tenant="acme")).tenant == "acme"


async def test_concurrency_limit_queues_runs(store, make_manager):
    runner = GatedRunner(steps=1)
    manager = await make_manager(runner, max_concurrent=2, max_queued=3)
    records = [await manager.start(RunRequest(question=f"q{i}")) for i in range(5)]
    with pytest.raises(RunQueueFull):
        await manager.start(RunRequest(question="one too many"))
    for r in records:
        runner.finish(r.run_id)
    for r in records:
        assert (await drain((await manager.read(r.run_id)).events()))[-1].type == "answer"
    assert runner.max_running == 2


async def test_runner_failure_becomes_an_error_event(store, make_manager):
    async def failing(request: RunRequest) -> AsyncIterator[Event]:
        yield AnswerDelta(text="half an ")
        raise LLMBadRequest("model refused the prompt")

    manager = await make_manager(failing)
    record = await manager.start(RunRequest(question="q"))
    events = await drain((await manager.read(record.run_id)).events())
    assert isinstance(events[0], RunStarted)  # synthesised when the runner does not start with one
    assert isinstance(events[-1], ErrorEvent) and events[-1].code == "llm.bad_request"
    failed = await manager.get(record.run_id)
    assert failed.status == "failed" and failed.content == "half an "
    assert failed.error["code"] == "llm.bad_request"


async def test_runner_ending_without_answer_fails(store, make_manager):
    async def mute(request: RunRequest) -> AsyncIterator[Event]:
        yield RunStarted(reasoning="mute", question=request.question)

    manager = await make_manager(mute)
    record = await manager.start(RunRequest(question="q"))
    events = await drain((await manager.read(record.run_id)).events())
    assert isinstance(events[-1], ErrorEvent) and "without an answer" in events[-1].message


async def test_runner_validation_rejects_before_anything_is_recorded(store, make_manager):
    class Picky(GatedRunner):
        def validate(self, request: RunRequest) -> None:
            if "temperature" in request.settings:
                raise RequestInvalid("settings.temperature: not allowed", field="settings.temperature")

    manager = await make_manager(Picky())
    with pytest.raises(RequestInvalid) as info:
        await manager.start(RunRequest(question="q", settings={"temperature": 3}))
    assert info.value.details["field"] == "settings.temperature"
    assert await store.list_runs("default") == []


async def test_conversation_history_reaches_the_next_run(store, make_manager):
    llm = ScriptedProvider(replies=["Paris.", "About 2 million."])
    manager = await make_manager(LLMRunner(llm))
    first = await manager.start(RunRequest(question="Capital of France?"))
    await drain((await manager.read(first.run_id)).events())
    second = await manager.start(RunRequest(question="Population?", conversation_id=first.conversation_id))
    await drain((await manager.read(second.run_id)).events())
    assert [m.content for m in llm.prompts[1]] == ["Capital of France?", "Paris.", "Population?"]
    conv = await store.get_conversation(first.conversation_id)
    assert [m["content"] for m in conv.messages] == ["Capital of France?", "Paris.", "Population?", "About 2 million."]
    with pytest.raises(RequestInvalid):
        await manager.start(RunRequest(question="x", conversation_id=first.conversation_id, tenant="other"))


async def test_store_lost_mid_run_fails_the_run_with_a_clear_event(store, make_manager):
    runner = GatedRunner(steps=3)
    manager = await make_manager(runner, journal=False)  # events reach readers once the store has them
    record = await manager.start(RunRequest(question="q"))
    sub = (await manager.read(record.run_id)).events()
    first = [await anext(sub), await anext(sub)]  # run_started and part0: stored, then delivered
    await store.close()
    runner.finish(record.run_id)
    events = first + await drain(sub)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert isinstance(events[-1], ErrorEvent) and events[-1].code == "run.store_unavailable"
    assert events[1].text == "part0 "  # delivered before the loss, still there
    await store.open()


@pytest.mark.redis
async def test_two_instances_share_runs_through_redis(redis_server):
    import uuid

    from reasonloop.runs.stores.redis.store import RedisRunStore

    settings = RunsSettings(store="redis", redis_url=redis_server.url, redis_prefix=f"m{uuid.uuid4().hex[:6]}:")
    stores = [RedisRunStore(settings), RedisRunStore(settings)]
    for s in stores:
        await s.open()
    runner = GatedRunner(steps=50)
    a, b = RunManager(stores[0], runner, settings), RunManager(stores[1], runner, settings)
    await a.open()
    await b.open()
    try:
        record = await a.start(RunRequest(question="q"))
        await runner.entered_event(record.run_id).wait()
        runner.gate(record.run_id).set()
        from_b = (await b.read(record.run_id)).events()
        first = [await anext(from_b), await anext(from_b)]
        assert [e.seq for e in first] == [1, 2]
        stopped = await b.stop(record.run_id)
        assert stopped.status == "stopped"
        rest = [e async for e in from_b]
        assert isinstance(rest[-1], Answer) and rest[-1].stop_reason == "stopped"
        resumed = [e async for e in (await a.read(record.run_id, after_seq=1)).events()]
        assert [e.to_dict() for e in resumed] == [e.to_dict() for e in first[1:] + rest]
    finally:
        await a.close()
        await b.close()
        for s in stores:
            await s.close()


@pytest.mark.redis
async def test_a_stop_whose_message_was_missed_is_found_by_housekeeping(redis_server):
    import uuid

    from reasonloop.runs.stores.redis.store import RedisRunStore

    settings = RunsSettings(store="redis", redis_url=redis_server.url, redis_prefix=f"k{uuid.uuid4().hex[:6]}:")
    store = RedisRunStore(settings)
    await store.open()
    runner = GatedRunner(steps=50)
    manager = RunManager(store, runner, settings)
    await manager.open()
    try:
        records = [await manager.start(RunRequest(question=f"q{i}")) for i in range(3)]
        for record in records:
            await runner.entered_event(record.run_id).wait()
        target = records[1].run_id
        await store.r.set(f"{store.p}stop:{target}", "1")  # requested, but the message never came
        await manager.upkeep.check_stop_keys()  # one housekeeping round
        await asyncio.wait_for(manager.execution(target).task, 10)
        assert (await manager.get(target)).status == "stopped"
        assert all(not manager.execution(r.run_id).live.done for r in records if r.run_id != target)
        for record in records:
            runner.finish(record.run_id)
    finally:
        await manager.close()
        await store.close()


async def test_a_cancelled_subscriber_does_not_disturb_the_others(store, make_manager):
    runner = GatedRunner(steps=2)
    manager = await make_manager(runner)
    record = await manager.start(RunRequest(question="q"))
    await runner.entered_event(record.run_id).wait()
    doomed = asyncio.create_task(drain((await manager.read(record.run_id)).events()))
    await asyncio.sleep(0.01)  # both now wait for the next event
    survivor = asyncio.create_task(drain((await manager.read(record.run_id)).events()))
    await asyncio.sleep(0.01)
    doomed.cancel()
    await asyncio.sleep(0)
    runner.finish(record.run_id)
    events = await asyncio.wait_for(survivor, 10)
    assert events[-1].type == "answer"


async def test_stop_right_after_start_before_the_task_ran(store, make_manager):
    manager = await make_manager(GatedRunner())
    record = await manager.start(RunRequest(question="q"))
    stopped = await manager.stop(record.run_id)  # no await in between: the task has not taken a step
    assert stopped.status == "stopped"
    events = await drain((await manager.read(record.run_id)).events())
    assert [e.type for e in events] == ["run_started", "answer"] and events[-1].stop_reason == "stopped"


async def test_shutdown_interrupts_runs_keeping_partial_content(store):
    runner = GatedRunner(steps=3)
    manager = RunManager(store, runner, RunsSettings(max_concurrent=1))
    await manager.open()
    running = await manager.start(RunRequest(question="q"))
    queued = await manager.start(RunRequest(question="q2"))
    await runner.entered_event(running.run_id).wait()
    await manager.close()
    record = await store.get_run(running.run_id)
    assert record.status == "interrupted" and record.content == "part0 "
    events = await store.events(running.run_id)
    assert events[-1].type == "answer" and events[-1].stop_reason == "interrupted"
    assert (await store.get_run(queued.run_id)).status == "interrupted"


@pytest.mark.parametrize("journal", [False, True])
async def test_the_store_gets_the_end_of_a_run_lost_with_it_once_it_is_back(store, make_manager, monkeypatch, journal):
    """Without a journal, readers end at an error after the last event stored. With one, they had
    every event (each on disk before it was sent) and the answer stands; the store, recording
    behind (here only when the run ends), learns of the loss when the run is over."""
    monkeypatch.setattr(upkeep_module, "_HEARTBEAT_S", 0.05)
    runner = GatedRunner(steps=3)
    manager = await make_manager(runner, journal=journal, record_interval_s=5)
    record = await manager.start(RunRequest(question="q"))
    sub = (await manager.read(record.run_id)).events()
    sent = [await anext(sub), await anext(sub)]  # run_started and part0
    await store.close()
    runner.finish(record.run_id)
    sent += await drain(sub)
    delivered = "".join(e.text for e in sent if isinstance(e, AnswerDelta))
    if journal:
        assert isinstance(sent[-1], Answer) and delivered == "part0 part1 part2 "
        assert not any(isinstance(e, ErrorEvent) for e in sent)
    else:
        assert isinstance(sent[-1], ErrorEvent) and sent[-1].code == "run.store_unavailable"
        assert delivered.startswith("part0 ")
    await asyncio.sleep(0.2)  # housekeeping rounds while the store is still gone: nothing is lost
    await store.open()

    async def finished() -> RunRecord | None:  # the next housekeeping round records the run's end
        stored = await store.get_run(record.run_id)
        return stored if stored is not None and stored.finished else None

    stored = await await_until(finished, what="the run's end recorded")
    if journal:
        assert stored.status == "completed" and stored.error is None
    else:
        assert stored.status == "failed" and stored.error["code"] == "run.store_unavailable"
    assert stored.content == delivered and stored.last_seq == sent[-1].seq
    assert [e.to_dict() for e in await store.events(record.run_id)] == [e.to_dict() for e in sent]
    conversation = await store.get_conversation(record.conversation_id)
    assert [(m["role"], m["content"]) for m in conversation.messages] == [("user", "q"), ("assistant", delivered)]


@pytest.mark.redis
async def test_a_redis_that_comes_back_empty_gets_the_whole_run_lost_with_it(monkeypatch):
    from reasonloop.runs.stores.redis.store import RedisRunStore

    monkeypatch.setattr(upkeep_module, "_HEARTBEAT_S", 0.05)
    redis = RedisServer()  # its own server: this test kills it and starts another on its port
    settings = RunsSettings(store="redis", redis_url=redis.url)
    store = RedisRunStore(settings)
    await store.open()
    runner = GatedRunner(steps=3)
    manager = RunManager(store, runner, settings)
    await manager.open()
    try:
        record = await manager.start(RunRequest(question="q"))
        sub = (await manager.read(record.run_id)).events()
        await runner.entered_event(record.run_id).wait()
        redis.stop()
        runner.finish(record.run_id)
        sent = await drain(sub)
        assert isinstance(sent[-1], ErrorEvent) and sent[-1].code == "run.store_unavailable"
        redis = RedisServer(redis.port)  # back, with nothing in it

        async def finished() -> RunRecord | None:  # the status is stored after the events
            with contextlib.suppress(RunStoreUnavailable):
                stored = await store.get_run(record.run_id)
                return stored if stored is not None and stored.finished else None
            return None

        stored = await await_until(finished, what="the run's end stored in the Redis that came back")
        assert stored is not None and stored.status == "failed" and stored.question == "q"
        assert [e.to_dict() for e in await store.events(record.run_id)] == [e.to_dict() for e in sent]
    finally:
        await manager.close()
        await store.close()
        redis.stop()


async def test_a_stored_run_whose_reading_fails_tells_the_attached_reader():
    from reasonloop.errors import ReasonLoopError, RunError
    from reasonloop.events import RunStarted
    from reasonloop.runs.reading import RunFeed

    async def broken() -> AsyncIterator[Event]:
        yield RunStarted(reasoning="qa", question="q", run_id="r", seq=1)
        raise OSError("the disk went away")

    async def cut_short() -> AsyncIterator[Event]:
        yield RunStarted(reasoning="qa", question="q", run_id="r", seq=1)

    for events, expected in ((broken(), "OSError: the disk went away"), (cut_short(), "ended before its end")):
        got: list[str] = []
        problems: list[ReasonLoopError] = []
        following = RunFeed(0, stored=events).attach(
            lambda payload, terminal, got=got: got.append(payload), failed=problems.append
        )
        await asyncio.wait_for(following.task, 5)
        assert len(got) == 1 and len(problems) == 1
        assert isinstance(problems[0], RunError) and expected in problems[0].message
