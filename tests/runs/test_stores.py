"""The same contract checked on both run stores, each against its real backend."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from reasonloop.config import RunsSettings, Settings
from reasonloop.errors import RunStoreUnavailable
from reasonloop.events import Answer, AnswerDelta, RunStarted
from reasonloop.runs.instance import instance_alive, new_instance_id
from reasonloop.runs.models import ConversationRecord, RunRecord, new_id
from reasonloop.runs.recovery import recover_interrupted, restore_turn
from reasonloop.runs.stores import open_store
from reasonloop.runs.stores.event_rows import EventRows
from reasonloop.runs.stores.protocol import update_runs
from reasonloop.runs.stores.redis.store import RedisRunStore
from reasonloop.runs.stores.sqlite.store import SQLiteRunStore
from tests.runs.helpers import RedisServer, free_port
from tests.waiting import await_until


def dead_instance() -> str:
    """An instance on this host whose process is gone: its pid is ``pid_max``, which no process is given."""
    with open("/proc/sys/kernel/pid_max", encoding="ascii") as f:
        pid_max = int(f.read())
    return f"{socket.gethostname()}:{pid_max}:dead"


@contextlib.asynccontextmanager
async def open_redis_store(server, prefix: str, ttl_s: int = 60):
    """A Redis store on ``server`` with its own key prefix, open for the block."""
    store = RedisRunStore(RunsSettings(store="redis", redis_url=server.url, redis_prefix=prefix, ttl_s=ttl_s))
    await store.open()
    try:
        yield store
    finally:
        await store.close()


def stamped(run_id: str, seq: int, event):
    event.run_id, event.seq = run_id, seq
    return event


async def test_runs_round_trip(any_store):
    record = RunRecord(run_id="run_a", tenant="t1", question="q", instance="me")
    await any_store.create_run(record)
    await any_store.update_run("run_a", status="running", started_at=1.0)
    got = await any_store.get_run("run_a")
    assert got.status == "running" and got.started_at == 1.0 and got.question == "q"
    assert [r.run_id for r in await any_store.inflight_runs()] == ["run_a"]
    assert [r.run_id for r in await any_store.inflight_runs(exclude_instance="other")] == ["run_a"]
    assert await any_store.inflight_runs(exclude_instance="me") == []  # an instance skips its own runs
    await any_store.update_run("run_a", status="completed", content="done")
    assert await any_store.inflight_runs() == []
    assert [r.run_id for r in await any_store.list_runs("t1")] == ["run_a"]
    assert await any_store.list_runs("t2") == []
    assert await any_store.get_run("run_missing") is None
    await any_store.update_run("run_missing", status="failed", content="x")  # no record is made up
    assert await any_store.get_run("run_missing") is None


async def test_events_append_in_order_and_resume(any_store):
    await any_store.create_run(RunRecord(run_id="run_e"))
    for seq, event in enumerate([RunStarted(reasoning="x", question="q"), AnswerDelta(text="a")], start=1):
        await any_store.append_event("run_e", stamped("run_e", seq, event))
    with pytest.raises(ValueError):
        await any_store.append_event("run_e", stamped("run_e", 2, AnswerDelta(text="again")))
    assert [e.seq for e in await any_store.events("run_e")] == [1, 2]
    assert [e.text for e in await any_store.events("run_e", after_seq=1)] == ["a"]


async def test_follow_replays_then_follows_to_the_terminal_event(any_store):
    await any_store.create_run(RunRecord(run_id="run_f", status="running"))
    await any_store.append_event("run_f", stamped("run_f", 1, RunStarted(reasoning="x", question="q")))
    await any_store.append_event("run_f", stamped("run_f", 2, AnswerDelta(text="a")))
    got = []

    async def reader():
        async for event in any_store.follow("run_f", after_seq=1):
            got.append(event)
            if len(got) == 1:
                appended.set()

    appended = asyncio.Event()
    task = asyncio.create_task(reader())
    await appended.wait()
    await any_store.append_event("run_f", stamped("run_f", 3, AnswerDelta(text="b")))
    await any_store.append_event("run_f", stamped("run_f", 4, Answer(text="ab")))
    await asyncio.wait_for(task, 10)
    assert [e.seq for e in got] == [2, 3, 4]


async def test_stop_requests_reach_the_executing_instance(any_store):
    await any_store.create_run(RunRecord(run_id="run_s", status="running", instance="inst-1"))
    stream = any_store.stop_requests("inst-1")
    first = asyncio.ensure_future(anext(stream))

    async def seen() -> bool:  # asked again until the listener has subscribed: one asked before is not heard
        await any_store.request_stop("run_s")
        return first.done()

    await await_until(seen, interval=0.05)
    assert first.result() == "run_s"
    await stream.aclose()


async def test_instances_restoring_the_same_runs_turn_at_once_add_it_once(any_store):
    await any_store.create_conversation(ConversationRecord(conversation_id="conv_r", tenant="t1", title="t"))
    record = RunRecord(run_id="run_r", conversation_id="conv_r", question="why?", status="completed")
    restores = [restore_turn(any_store, record, "because", "completed", 2.0) for _ in range(3)]
    await asyncio.gather(*restores)  # as if three instances recovered the run together
    await restore_turn(any_store, record, "because", "completed", 3.0)  # and one more, later
    conv = await any_store.get_conversation("conv_r")
    assert [(m["role"], m["content"]) for m in conv.messages] == [("user", "why?"), ("assistant", "because")]
    assert await any_store.add_turn("conv_missing", "run_r", [{"role": "user", "content": "x"}]) is False


@pytest.mark.redis
async def test_redis_instances_that_both_find_the_turn_missing_still_add_it_once(redis_server):
    settings = RunsSettings(store="redis", redis_url=redis_server.url, redis_prefix=f"turn{new_id('t')}:")
    stores = [RedisRunStore(settings), RedisRunStore(settings)]
    for store in stores:
        await store.open()
    try:
        await stores[0].create_conversation(ConversationRecord(conversation_id="conv_t", tenant="t1", title="t"))
        both_read = asyncio.Barrier(2)  # each reads the history before either adds to it

        def racing(real):
            async def lrange(*args, **kwargs):
                history = await real(*args, **kwargs)
                await both_read.wait()
                return history

            return lrange

        for store in stores:
            store.r.lrange = racing(store.r.lrange)
        record = RunRecord(run_id="run_t", conversation_id="conv_t", question="why?", status="completed")
        await asyncio.gather(*(restore_turn(store, record, "because", "completed", 2.0) for store in stores))
        for store in stores:
            del store.r.lrange
        conv = await stores[0].get_conversation("conv_t")
        assert [m["role"] for m in conv.messages] == ["user", "assistant"]
    finally:
        for store in stores:
            await store.close()


async def test_a_turn_claimed_is_a_turn_stored(any_store, monkeypatch):
    # Claiming a run's turn and adding it are one step: a failure between them must not leave the
    # claim without the turn, which every later recovery would then skip.
    await any_store.create_conversation(ConversationRecord(conversation_id="conv_t", tenant="t"))
    turn = [
        {"role": "user", "content": "q", "run_id": "run_t"},
        {"role": "assistant", "content": "a", "run_id": "run_t"},
    ]

    async def lost(*args, **kwargs):
        raise RunStoreUnavailable("the store went away")

    monkeypatch.setattr(any_store, "add_messages", lost)
    with contextlib.suppress(RunStoreUnavailable):
        await any_store.add_turn("conv_t", "run_t", turn)
    monkeypatch.undo()
    await any_store.add_turn("conv_t", "run_t", turn)  # a later recovery
    stored = await any_store.get_conversation("conv_t")
    assert [m["content"] for m in stored.messages] == ["q", "a"]


async def test_conversations_and_feedback(any_store):
    await any_store.create_conversation(ConversationRecord(conversation_id="conv_1", tenant="t1", title="hello"))
    await any_store.add_messages("conv_1", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    await any_store.add_messages("conv_1", [{"role": "user", "content": "again"}])
    conv = await any_store.get_conversation("conv_1")
    assert [m["content"] for m in conv.messages] == ["hi", "yo", "again"] and conv.tenant == "t1"
    assert [c.conversation_id for c in await any_store.list_conversations("t1")] == ["conv_1"]
    assert await any_store.list_conversations("t2") == []
    assert await any_store.rename_conversation("conv_1", "订单 <b>") is True
    renamed = await any_store.get_conversation("conv_1")
    assert renamed.title == "订单 <b>" and [m["content"] for m in renamed.messages] == ["hi", "yo", "again"]
    assert [c.title for c in await any_store.list_conversations("t1")] == ["订单 <b>"]
    assert await any_store.rename_conversation("conv_missing", "x") is False
    assert await any_store.delete_conversation("conv_1") is True
    assert await any_store.delete_conversation("conv_1") is False
    assert await any_store.get_conversation("conv_1") is None
    await any_store.add_feedback({"run_id": "run_x", "rating": 1, "tenant": "t1"})


async def test_a_conversation_given_messages_is_the_latest_of_its_tenant(any_store):
    title = 'says "updated_at":1.5 and "tenant":"x"'  # the field's own characters, inside a string
    start = time.time() - 30
    old = ConversationRecord(conversation_id="conv_old", tenant="té", title=title, created_at=start, updated_at=start)
    await any_store.create_conversation(old)
    newer = ConversationRecord(conversation_id="conv_new", tenant="té", updated_at=start + 10)
    await any_store.create_conversation(newer)
    assert [c.conversation_id for c in await any_store.list_conversations("té")] == ["conv_new", "conv_old"]
    before = time.time()
    await any_store.add_messages("conv_old", [{"role": "user", "content": "back again"}])
    assert [c.conversation_id for c in await any_store.list_conversations("té")] == ["conv_old", "conv_new"]
    conv = await any_store.get_conversation("conv_old")
    assert (conv.title, conv.tenant, conv.created_at) == (title, "té", start)
    assert conv.updated_at >= before
    assert [m["content"] for m in conv.messages] == ["back again"]


async def test_messages_for_a_deleted_conversation_are_not_kept(any_store):
    # A run still streaming when its conversation is deleted ends by adding its turn: the user
    # deleted that conversation, and nothing of it may stay behind.
    await any_store.create_conversation(ConversationRecord(conversation_id="conv_gone", tenant="t"))
    assert await any_store.delete_conversation("conv_gone")
    await any_store.add_messages("conv_gone", [{"role": "user", "content": "secret"}])
    assert await any_store.get_conversation("conv_gone") is None
    if isinstance(any_store, SQLiteRunStore):
        rows = await any_store._run(lambda c: c.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
        assert rows == 0


async def test_recovery_marks_orphans_interrupted_with_partial_content(any_store):
    dead = dead_instance()
    await any_store.create_run(RunRecord(run_id="run_dead", status="running", instance=dead))
    await any_store.append_event("run_dead", stamped("run_dead", 1, RunStarted(reasoning="x", question="q")))
    await any_store.append_event("run_dead", stamped("run_dead", 2, AnswerDelta(text="half ")))
    await any_store.append_event("run_dead", stamped("run_dead", 3, AnswerDelta(text="done")))
    alive = f"{socket.gethostname()}:{__import__('os').getpid()}:other"
    await any_store.create_run(RunRecord(run_id="run_alive", status="running", instance=alive))
    assert await recover_interrupted(any_store, me="me") == ["run_dead"]
    record = await any_store.get_run("run_dead")
    assert record.status == "interrupted" and record.content == "half done"
    events = await any_store.events("run_dead")
    assert isinstance(events[-1], Answer) and events[-1].stop_reason == "interrupted" and events[-1].seq == 4
    assert (await any_store.get_run("run_alive")).status == "running"
    assert await recover_interrupted(any_store, me="me") == []


async def test_a_dead_instance_whose_pid_was_reused_is_recovered(any_store):
    # A restarted container's server is often PID 1 again, with the same host name: the pid alone
    # would make its predecessor look alive for ever.
    me = new_instance_id()
    host, pid, _ = me.split(":", 2)
    predecessor = f"{host}:{pid}:1:0badcafe"  # this pid, started at another time
    assert instance_alive(me) is True and instance_alive(predecessor) is False
    await any_store.create_run(RunRecord(run_id="run_before_restart", status="running", instance=predecessor))
    assert await recover_interrupted(any_store, me=me) == ["run_before_restart"]


@pytest.mark.redis
async def test_redis_unavailable_at_start_is_a_clear_error_that_never_shows_the_password():
    port = free_port()
    store = RedisRunStore(RunsSettings(store="redis", redis_url=f"redis://:s3cret@127.0.0.1:{port}/0"))
    with pytest.raises(RunStoreUnavailable) as info:
        await store.open()
    assert f"127.0.0.1:{port}" in info.value.message and info.value.code == "run.store_unavailable"
    assert "s3cret" not in f"{info.value.message} {info.value.details}"
    with pytest.raises(RunStoreUnavailable) as info:
        await store.get_run("run_x")  # not open
    assert "s3cret" not in f"{info.value.message} {info.value.details}"


@pytest.mark.redis
async def test_redis_refusing_writes_is_the_store_unavailable_not_a_crash():
    server = RedisServer()  # its own: the memory limit below must not reach other tests
    store = RedisRunStore(RunsSettings(store="redis", redis_url=server.url))
    try:
        await store.open()
        await store.create_run(RunRecord(run_id="run_before"))
        await store.r.config_set("maxmemory-policy", "noeviction")
        await store.r.config_set("maxmemory", "1")  # every write is now refused with OOM
        with pytest.raises(RunStoreUnavailable, match="refused"):
            await store.create_run(RunRecord(run_id="run_refused"))
        with pytest.raises(RunStoreUnavailable, match="refused"):
            await store.append_events(
                EventRows.of(
                    [("run_before", 1, stamped("run_before", 1, RunStarted(reasoning="r", question="q")).to_json())]
                )
            )
        with pytest.raises(RunStoreUnavailable, match="refused"):
            await store.append_event("run_before", stamped("run_before", 1, RunStarted(reasoning="r", question="q")))
        with pytest.raises(RunStoreUnavailable, match="refused"):
            await store.update_run("run_before", status="failed")
        assert (await store.get_run("run_before")).run_id == "run_before"  # reads still work
    finally:
        await store.close()
        server.stop()


@pytest.mark.redis
async def test_redis_finished_runs_expire(redis_server):
    async with open_redis_store(redis_server, "ttl:") as store:
        await store.create_run(RunRecord(run_id="run_t"))
        await store.append_event("run_t", stamped("run_t", 1, Answer(text="x")))
        assert await store.r.ttl("ttl:run:run_t") == -1
        await store.update_run("run_t", status="completed")
        assert 0 < await store.r.ttl("ttl:run:run_t") <= 60
        assert 0 < await store.r.ttl("ttl:events:run_t") <= 60


@pytest.mark.redis
async def test_redis_runs_recorded_whole_read_and_update_as_before(redis_server):
    """A run hash holding only the whole record (as every update once rewrote it) reads back,
    takes updates over it, and leaves the in-flight set when it ends."""
    async with open_redis_store(redis_server, "whole:") as store:
        record = RunRecord(run_id="run_w", tenant="t1", question="q", status="running", instance="gone")
        key = "whole:run:run_w"
        await store.r.hset(key, mapping={"data": record.model_dump_json(), "status": "running", "tenant": "t1"})
        await store.r.hset(key, "instance", "gone")
        await store.r.sadd("whole:inflight", "run_w")
        assert [r.run_id for r in await store.inflight_runs(exclude_instance="me")] == ["run_w"]
        await store.update_run("run_w", status="interrupted", content="partial", ended_at=2.5)
        got = await store.get_run("run_w")
        assert (got.status, got.content, got.ended_at, got.question) == ("interrupted", "partial", 2.5, "q")
        assert await store.r.hget(key, "status") == "interrupted"  # the plain copy moves with it
        assert await store.inflight_runs() == []
        assert 0 < await store.r.ttl(key) <= 60
        await store.update_run("run_unknown", status="running")
        assert not await store.r.exists("whole:run:run_unknown")  # no stray hash for a run never created


@pytest.mark.redis
async def test_redis_writes_go_on_after_redis_lost_its_scripts(redis_server):
    """A restarted Redis has no scripts loaded: the store's writes load theirs again."""
    async with open_redis_store(redis_server, "flush:") as store:
        await store.create_run(RunRecord(run_id="run_f", tenant="t"))
        await store.create_conversation(ConversationRecord(conversation_id="conv_f", tenant="t"))
        await store.r.script_flush()
        rows = EventRows.of([("run_f", 1, stamped("run_f", 1, AnswerDelta(text="a")).to_json())])
        assert await store.append_events(rows) == [None]
        await store.update_run("run_f", status="completed", content="a")
        await store.add_messages("conv_f", [{"role": "user", "content": "q"}])
        assert [e.text for e in await store.events("run_f")] == ["a"]
        assert (await store.get_run("run_f")).status == "completed"
        assert [m["content"] for m in (await store.get_conversation("conv_f")).messages] == ["q"]


@pytest.mark.redis
async def test_redis_tenant_indexes_let_go_of_what_expired(redis_server):
    async with open_redis_store(redis_server, "idx:") as store:
        now = time.time()
        await store.create_conversation(ConversationRecord(conversation_id="conv_old", updated_at=now - 120))
        await store.create_run(RunRecord(run_id="run_ancient", created_at=now - 60 - 2 * 86_400))
        await store.create_run(RunRecord(run_id="run_gone", created_at=now - 30))
        await store.r.delete("idx:run:run_gone")  # as its TTL would
        await store.create_conversation(ConversationRecord(conversation_id="conv_new", updated_at=now))
        await store.create_run(RunRecord(run_id="run_new", created_at=now))
        assert await store.r.zrange("idx:convs:default", 0, -1) == ["conv_new"]
        assert await store.r.zrange("idx:runs:default", 0, -1) == ["run_gone", "run_new"]
        assert [r.run_id for r in await store.list_runs("default")] == ["run_new"]
        assert await store.r.zrange("idx:runs:default", 0, -1) == ["run_new"]  # found gone while listing


@pytest.mark.redis
async def test_redis_feedback_older_than_the_ttl_is_let_go(redis_server):
    async with open_redis_store(redis_server, "fb:") as store:
        old_ms = int((time.time() - 120) * 1000)
        await store.r.xadd("fb:feedback", {"f": "{}"}, id=f"{old_ms}-0")
        await store.add_feedback({"run_id": "run_x", "rating": 1, "tenant": "t"})
        entries = await store.r.xrange("fb:feedback")
        assert len(entries) == 1 and "run_x" in entries[0][1]["f"]


def test_open_store_picks_the_configured_store(tmp_path):
    settings = Settings(runs=RunsSettings(sqlite_path=str(tmp_path / "r.sqlite")))
    assert isinstance(open_store(settings), SQLiteRunStore)
    assert isinstance(open_store(Settings(runs=RunsSettings(store="redis"))), RedisRunStore)


async def test_sqlite_store_in_an_unwritable_place_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    store = SQLiteRunStore(RunsSettings(sqlite_path=str(blocker / "runs.sqlite")))
    with pytest.raises(RunStoreUnavailable):
        await store.open()


async def test_a_duplicate_in_a_batch_of_appends_fails_alone(any_store):
    await any_store.create_run(RunRecord(run_id="run_b"))
    results = await asyncio.gather(
        any_store.append_event("run_b", stamped("run_b", 1, AnswerDelta(text="a"))),
        any_store.append_event("run_b", stamped("run_b", 1, AnswerDelta(text="dup"))),
        any_store.append_event("run_b", stamped("run_b", 2, AnswerDelta(text="b"))),
        return_exceptions=True,
    )
    assert [type(r) for r in results] == [type(None), ValueError, type(None)]
    assert [e.text for e in await any_store.events("run_b")] == ["a", "b"]


@pytest.mark.redis
async def test_redis_appends_wait_for_a_free_connection_rather_than_fail(redis_server):
    settings = RunsSettings(store="redis", redis_url=redis_server.url, redis_prefix="pool:", redis_max_connections=2)
    store = RedisRunStore(settings)
    await store.open()
    try:
        await asyncio.gather(
            *(store.append_event(f"run_{i}", stamped(f"run_{i}", 1, AnswerDelta(text="x"))) for i in range(200))
        )
        assert all([len(await store.events(f"run_{i}")) == 1 for i in range(200)])
    finally:
        await store.close()


async def test_a_batch_of_events_is_recorded_at_once_and_a_duplicate_fails_alone(any_store):
    await any_store.create_run(RunRecord(run_id="run_m"))
    await any_store.create_run(RunRecord(run_id="run_n"))
    await any_store.append_event("run_m", stamped("run_m", 1, AnswerDelta(text="first")))
    from reasonloop.runs.stores.event_rows import EventRows

    rows = EventRows.of(
        (event.run_id, event.seq, event.to_json())
        for event in (
            stamped("run_m", 1, AnswerDelta(text="dup")),
            stamped("run_m", 2, AnswerDelta(text="a")),
            stamped("run_n", 1, AnswerDelta(text="b")),
        )
    )
    results = await any_store.append_events(rows)
    assert [type(r) for r in results] == [ValueError, type(None), type(None)]
    assert [e.text for e in await any_store.events("run_m")] == ["first", "a"]
    assert [e.text for e in await any_store.events("run_n")] == ["b"]


async def test_a_batch_of_one_runs_events_reads_back_from_any_seq(any_store):
    await any_store.create_run(RunRecord(run_id="run_r"))
    texts = [f"t{seq}" for seq in range(1, 11)]
    rows = EventRows.of(
        ("run_r", seq, stamped("run_r", seq, AnswerDelta(text=text)).to_json()) for seq, text in enumerate(texts, 1)
    )
    assert await any_store.append_events(rows) == [None] * 10
    await any_store.append_event("run_r", stamped("run_r", 11, Answer(text="".join(texts))))
    for after in (0, 1, 4, 9, 10):
        assert [e.seq for e in await any_store.events("run_r", after_seq=after)] == list(range(after + 1, 12))
    assert await any_store.events("run_r", after_seq=11) == []
    assert [e.text for e in await any_store.events("run_r", after_seq=8)] == ["t9", "t10", "t1t2t3t4t5t6t7t8t9t10"]


async def test_a_sqlite_file_from_before_chunks_keeps_its_events(tmp_path):
    """A file whose events are one row each (``events``) opens with every event in place, and a
    duplicate of one of them is still refused."""
    path = str(tmp_path / "runs.sqlite")
    old = sqlite3.connect(path, isolation_level=None)
    old.executescript(
        "CREATE TABLE events (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL);"
        "CREATE UNIQUE INDEX events_run_seq ON events (run_id, seq);"
    )
    for seq, text in ((1, "a"), (2, "b")):
        old.execute(
            "INSERT INTO events (run_id, seq, data) VALUES (?,?,?)",
            ("run_o", seq, stamped("run_o", seq, AnswerDelta(text=text)).to_json()),
        )
    old.close()
    store = SQLiteRunStore(RunsSettings(sqlite_path=path))
    await store.open()
    try:
        assert [e.text for e in await store.events("run_o")] == ["a", "b"]
        with pytest.raises(ValueError):
            await store.append_event("run_o", stamped("run_o", 2, AnswerDelta(text="dup")))
        await store.append_event("run_o", stamped("run_o", 3, AnswerDelta(text="c")))
        assert [e.text for e in await store.events("run_o", after_seq=1)] == ["b", "c"]
    finally:
        await store.close()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT name FROM sqlite_master WHERE name='events'").fetchall() == []
    finally:
        conn.close()
    store = SQLiteRunStore(RunsSettings(sqlite_path=path))  # opening again changes nothing
    await store.open()
    try:
        assert [e.text for e in await store.events("run_o")] == ["a", "b", "c"]
    finally:
        await store.close()


async def test_several_runs_are_updated_at_once_skipping_unknown_ones(any_store):
    for run_id in ("run_x", "run_y"):
        await any_store.create_run(RunRecord(run_id=run_id, tenant="t"))
    await update_runs(
        any_store,
        [
            ("run_x", {"status": "running", "started_at": 3.0}),
            ("run_ghost", {"status": "failed"}),
            ("run_y", {"status": "completed", "content": "done"}),
        ],
    )
    x, y = await any_store.get_run("run_x"), await any_store.get_run("run_y")
    assert (x.status, x.started_at, y.status, y.content) == ("running", 3.0, "completed", "done")
    assert await any_store.get_run("run_ghost") is None
    assert [r.run_id for r in await any_store.inflight_runs()] == ["run_x"]


async def test_a_continuing_run_is_recorded_only_while_its_conversation_has_none_in_flight(any_store):
    await any_store.create_run(RunRecord(run_id="run_first", tenant="t", conversation_id="conv_c"))
    second = RunRecord(run_id="run_second", tenant="t", conversation_id="conv_c")
    assert await any_store.create_continuing_run(second) == "run_first"
    assert await any_store.get_run("run_second") is None
    elsewhere = RunRecord(run_id="run_elsewhere", tenant="t", conversation_id="conv_other")
    assert await any_store.create_continuing_run(elsewhere) is None  # another conversation is free
    await any_store.update_run("run_first", status="running")
    assert await any_store.create_continuing_run(second) == "run_first"
    await any_store.update_run("run_first", status="completed")
    assert await any_store.create_continuing_run(second) is None
    assert (await any_store.get_run("run_second")).conversation_id == "conv_c"
    third = RunRecord(run_id="run_third", tenant="t", conversation_id="conv_c")
    assert await any_store.create_continuing_run(third) == "run_second"  # the run just recorded holds it


async def test_updates_set_exactly_the_fields_given(any_store):
    await any_store.create_run(RunRecord(run_id="run_u", question="q?", tenant="t1"))
    await any_store.update_run(
        "run_u", status="failed", content='a "quoted" é\nline', error={"code": "x", "message": "m"}, last_seq=7
    )
    await any_store.update_run("run_u", content='{"looks": "like json"}', stop_reason=None, ended_at=1.5)
    run = await any_store.get_run("run_u")
    assert (run.status, run.content, run.error, run.last_seq, run.ended_at) == (
        "failed",
        '{"looks": "like json"}',  # a string that looks like JSON stays a string
        {"code": "x", "message": "m"},
        7,
        1.5,
    )
    assert (run.question, run.tenant) == ("q?", "t1")  # the other fields are untouched
    assert [r.run_id for r in await any_store.list_runs("t1")] == ["run_u"]
    try:
        await any_store.update_run("run_u", colour="blue")
    except ValueError as exc:
        assert "colour" in str(exc)
    else:
        raise AssertionError("an unknown field was accepted")


def test_ids_made_later_sort_later_and_never_repeat():
    ids = []
    for _ in range(3):
        ids += [new_id("run") for _ in range(1000)]
        time.sleep(0.002)  # the next ones fall in a later millisecond
    assert len(set(ids)) == len(ids)
    firsts = [ids[0], ids[1000], ids[2000]]
    assert firsts == sorted(firsts) and len(set(firsts)) == 3
    assert all(i.startswith("run_") and len(i) == len("run_") + 27 for i in ids)


def test_ids_never_repeat_across_threads_or_in_a_forked_child():
    with ThreadPoolExecutor(4) as pool:
        ids = list(pool.map(lambda _: new_id("run"), range(4000)))
    assert len(set(ids)) == len(ids)
    new_id("run")  # random bits are pooled now: a child inherits the pool
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id, then out at once
        os.write(write, new_id("run").encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    os.close(read)
    os.close(write)
    assert child.startswith("run_") and child[-16:] != new_id("run")[-16:]


async def test_recovery_gives_the_conversation_the_turn_its_process_did_not_store(any_store):
    dead = dead_instance()
    await any_store.create_conversation(ConversationRecord(conversation_id="conv_r", tenant="t1"))
    for run_id in ("run_cut", "run_ended", "run_stored"):
        await any_store.create_run(
            RunRecord(run_id=run_id, status="running", instance=dead, question=f"q {run_id}", conversation_id="conv_r")
        )
        await any_store.append_event(run_id, stamped(run_id, 1, RunStarted(reasoning="x", question="q")))
        await any_store.append_event(run_id, stamped(run_id, 2, AnswerDelta(text="partial")))
    # run_cut died mid-answer; run_ended stored its answer but not its status or turn;
    # run_stored stored its turn too, and only its status is missing.
    for run_id in ("run_ended", "run_stored"):
        await any_store.append_event(run_id, stamped(run_id, 3, Answer(text=f"all of {run_id}")))
    await any_store.add_messages(
        "conv_r",
        [
            {"role": "user", "content": "q run_stored", "run_id": "run_stored", "ts": 1.0},
            {"role": "assistant", "content": "all of run_stored", "run_id": "run_stored", "ts": 2.0},
        ],
    )
    assert await recover_interrupted(any_store, me="me") == ["run_cut"]
    assert await recover_interrupted(any_store, me="me") == []  # nothing is added twice
    messages = (await any_store.get_conversation("conv_r")).messages
    turns = sorted((m["run_id"], m["role"], m["content"]) for m in messages)
    assert turns == [
        ("run_cut", "assistant", "partial"),
        ("run_cut", "user", "q run_cut"),
        ("run_ended", "assistant", "all of run_ended"),
        ("run_ended", "user", "q run_ended"),
        ("run_stored", "assistant", "all of run_stored"),
        ("run_stored", "user", "q run_stored"),
    ]
    assert (await any_store.get_run("run_ended")).status == "completed"


@pytest.mark.parametrize(
    ("query", "params", "index"),
    [
        ("TAKE_STOP_REQUESTS", ("i",), "runs_stop_requested"),
        ("_RUN_IN_FLIGHT", ("conv_c", "run_r"), "runs_conversation_in_flight"),
        ("sqlite_events._READ", ("run_r", 5), "event_chunks_run_seq"),
        ("sqlite_events._COVERING", ("run_r", 5), "event_chunks_run_seq"),
    ],
)
async def test_sqlite_polls_and_checks_use_an_index_not_a_scan_of_every_run(tmp_path, query, params, index):
    from reasonloop.runs.stores.sqlite import events as sqlite_events
    from reasonloop.runs.stores.sqlite import store as sqlite_store

    path = str(tmp_path / "runs.sqlite")
    store = SQLiteRunStore(RunsSettings(sqlite_path=path))
    await store.open()
    await store.close()
    conn = sqlite3.connect(path)
    try:
        module, _, name = query.rpartition(".")
        sql = getattr(sqlite_events if module else sqlite_store, name)
        plan = " ".join(row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params))
    finally:
        conn.close()
    assert f"USING INDEX {index}" in plan, plan


@pytest.mark.redis
async def test_watching_stops_on_redis_ends_when_cancelled_while_it_subscribes(redis_server):
    # redis-py can swallow a cancellation that arrives while it connects; the watcher must end all
    # the same, or a run manager closed right after it opened waits on it for ever.
    async with open_redis_store(redis_server, f"w{new_id('x')}:") as store:

        async def watch() -> None:
            async for _ in store.stop_requests("me"):
                pass

        for i in range(40):
            task = asyncio.create_task(watch())
            await asyncio.sleep((i % 20) * 0.0005)
            task.cancel()
            done, _ = await asyncio.wait({task}, timeout=5)
            assert done, f"the watcher went on after its cancellation (attempt {i})"
