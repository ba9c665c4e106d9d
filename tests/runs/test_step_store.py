"""The steps of runs in flight and the claim of an orphaned run, on both stores against their real backends."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from reasonloop.runs.models import RunRecord
from reasonloop.runs.stores.protocol import features_of
from reasonloop.runs.stores.sqlite.store import SQLiteRunStore
from tests.runs.test_stores import open_redis_store


async def test_both_stores_keep_steps(any_store):
    assert features_of(any_store).step_journal


async def test_steps_are_kept_replaced_and_read_back(any_store):
    await any_store.create_run(RunRecord(run_id="run_s", status="running", instance="me"))
    assert await any_store.steps("run_s") == {}
    await any_store.put_step("run_s", "llm:abc:0", '{"chunks": []}')
    await any_store.put_step("run_s", "tool:def:0", "first")
    await any_store.put_step("run_s", "tool:def:0", "second")  # a step done again replaces the old one
    await any_store.put_step("run_other", "x", "y")  # a run not yet recorded may keep steps (its request)
    assert await any_store.steps("run_s") == {"llm:abc:0": '{"chunks": []}', "tool:def:0": "second"}
    assert await any_store.steps("run_other") == {"x": "y"}


@pytest.mark.parametrize("status", ["completed", "failed", "stopped", "interrupted"])
async def test_a_runs_end_drops_its_steps_and_keeps_none_after(any_store, status):
    await any_store.create_run(RunRecord(run_id="run_e", status="running", instance="me"))
    await any_store.put_step("run_e", "k", "v")
    await any_store.update_run("run_e", status="running", last_seq=3)  # not an end: kept
    assert await any_store.steps("run_e") == {"k": "v"}
    await any_store.update_run("run_e", status=status, content="done")
    assert await any_store.steps("run_e") == {}
    await any_store.put_step("run_e", "late", "v")  # written after the end (a slow write): not kept
    assert await any_store.steps("run_e") == {}
    assert (await any_store.get_run("run_e")).content == "done"


async def test_a_claim_moves_an_in_flight_run_once(any_store):
    await any_store.create_run(RunRecord(run_id="run_c", status="running", instance="dead"))
    assert not await any_store.claim_run("run_c", "someone else", "me")  # not that instance's
    assert await any_store.claim_run("run_c", "dead", "me")
    assert (await any_store.get_run("run_c")).instance == "me"
    assert [r.instance for r in await any_store.inflight_runs()] == ["me"]
    assert await any_store.inflight_runs(exclude_instance="me") == []
    assert not await any_store.claim_run("run_c", "dead", "third")  # taken already
    assert not await any_store.claim_run("run_nobody", "dead", "me")
    await any_store.update_run("run_c", status="completed")
    assert not await any_store.claim_run("run_c", "me", "third")  # an ended run is nobody's to take


async def test_claims_made_at_once_have_one_winner(any_store):
    await any_store.create_run(RunRecord(run_id="run_r", status="running", instance="dead"))
    won = await asyncio.gather(*(any_store.claim_run("run_r", "dead", f"claimant{i}") for i in range(8)))
    assert sum(won) == 1
    assert (await any_store.get_run("run_r")).instance == f"claimant{won.index(True)}"


@pytest.mark.redis
async def test_claims_from_two_clients_of_one_redis_have_one_winner(redis_server):
    prefix = f"c{uuid.uuid4().hex[:8]}:"
    async with open_redis_store(redis_server, prefix) as a, open_redis_store(redis_server, prefix) as b:
        for n in range(20):
            run_id = f"run_{n}"
            await a.create_run(RunRecord(run_id=run_id, status="running", instance="dead"))
            won = await asyncio.gather(a.claim_run(run_id, "dead", "a"), b.claim_run(run_id, "dead", "b"))
            assert sorted(won) == [False, True]
            winner = "a" if won[0] else "b"
            assert (await b.get_run(run_id)).instance == winner


@pytest.mark.redis
async def test_redis_steps_go_with_the_run_and_outlive_nothing(redis_server):
    prefix = f"s{uuid.uuid4().hex[:8]}:"
    async with open_redis_store(redis_server, prefix, ttl_s=60) as store:
        await store.create_run(RunRecord(run_id="run_t", status="running", instance="me"))
        await store.put_step("run_t", "k", "v")
        assert await store.r.ttl(f"{prefix}steps:run_t") == -1  # kept as long as the run is in flight
        await store.update_runs([("run_t", {"status": "completed"})])
        assert not await store.r.exists(f"{prefix}steps:run_t")
        assert 0 < await store.r.ttl(f"{prefix}run:run_t") <= 60


async def test_two_sqlite_stores_on_one_file_share_steps_and_claims(tmp_path):
    # Several server processes share one SQLite file: a step written by one is read by another.
    from reasonloop.config import RunsSettings

    path = str(tmp_path / "runs.sqlite")
    one, two = (SQLiteRunStore(RunsSettings(sqlite_path=path)) for _ in range(2))
    await one.open()
    await two.open()
    try:
        await one.create_run(RunRecord(run_id="run_x", status="running", instance="dead"))
        await one.put_step("run_x", "k", "v")
        assert await two.steps("run_x") == {"k": "v"}
        won = await asyncio.gather(one.claim_run("run_x", "dead", "one"), two.claim_run("run_x", "dead", "two"))
        assert sorted(won) == [False, True]
    finally:
        await one.close()
        await two.close()


async def test_steps_of_many_runs_written_at_once_are_all_kept_but_an_ended_runs(any_store):
    for n in range(5):
        await any_store.create_run(RunRecord(run_id=f"run_{n}", status="running", instance="me"))
    await any_store.update_run("run_4", status="completed")
    await asyncio.gather(*(any_store.put_step(f"run_{n % 5}", f"k{n}", f"v{n}") for n in range(50)))
    for n in range(4):
        assert await any_store.steps(f"run_{n}") == {f"k{i}": f"v{i}" for i in range(n, 50, 5)}
    assert await any_store.steps("run_4") == {}


async def test_a_step_added_once_is_kept_by_the_first_writer_only_and_read_by_its_prefix(any_store):
    await any_store.create_run(RunRecord(run_id="run_a", status="awaiting_approval", instance="me"))
    await any_store.put_step("run_a", "llm:abc:0", "a model reply")
    added = await asyncio.gather(*(any_store.add_step("run_a", "approval:x:decision", f"answer {i}") for i in range(5)))
    assert sorted(added) == [False, False, False, False, True]  # of writers at once, one
    assert await any_store.add_step("run_a", "approval:x", "asked")
    assert not await any_store.add_step("run_a", "approval:x", "asked again")
    kept = await any_store.steps("run_a", "approval:")
    winner = f"answer {added.index(True)}"
    assert kept == {"approval:x": "asked", "approval:x:decision": winner}  # not the model's reply
    assert await any_store.steps("run_a", "approval;") == {}  # the range ends at the prefix
    await any_store.update_run("run_a", status="completed")
    assert not await any_store.add_step("run_a", "approval:y", "late")  # an ended run keeps none
    assert await any_store.steps("run_a", "approval:") == {}


async def test_a_run_awaiting_approval_is_in_flight_and_can_be_claimed(any_store):
    await any_store.create_run(RunRecord(run_id="run_w", status="awaiting_approval", instance="dead"))
    assert [r.run_id for r in await any_store.inflight_runs(exclude_instance="me")] == ["run_w"]
    assert await any_store.claim_run("run_w", "dead", "me")
