"""A run waiting for approval outlives its process: a server that stops (SIGTERM) leaves it pending
for the next one, and one killed with SIGKILL has it answered and continued by another instance."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from reasonloop.config import RunsSettings
from reasonloop.events import Answer, ApprovalDecided, ApprovalRequested, Resumed
from reasonloop.runs.manager import RunManager
from reasonloop.runs.stores.redis.store import RedisRunStore
from reasonloop.runs.stores.sqlite.store import SQLiteRunStore
from reasonloop.tools.approval import Decision
from tests.runs.approval_helpers import ANSWER, AskingModel, approving_runner, logged, next_request, until_end
from tests.runs.approval_helpers import request as run_request
from tests.runs.approval_worker import APPROVALS
from tests.runs.resume_helpers import Tally

pytestmark = pytest.mark.integration  # served on sockets, or started in processes

ROOT = Path(__file__).resolve().parents[2]
BY = {"key": "ops", "tenant": "default", "principal": None, "via": "rest"}


def start_worker(here: Path, where: list[str]) -> subprocess.Popen:
    with (here / "worker.log").open("wb") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.runs.approval_worker", "--dir", str(here), *where],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )


async def waiting_for_approval(proc: subprocess.Popen, here: Path) -> str:
    deadline = time.monotonic() + 90  # a busy machine starts a process slowly
    while not (here / "run_id").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"the worker's run never waited: {(here / 'worker.log').read_text()}")
        await asyncio.sleep(0.05)
    return (here / "run_id").read_text()


def where(backend: str, tmp_path: Path, request) -> tuple[RunsSettings, list[str]]:
    if backend == "redis":
        prefix = f"a{uuid.uuid4().hex[:8]}:"
        runs = RunsSettings(store="redis", redis_url=request.getfixturevalue("redis_server").url, redis_prefix=prefix)
        return runs, ["--redis", runs.redis_url, "--prefix", prefix]
    runs = RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite"))
    return runs, ["--sqlite", runs.sqlite_path]


async def finish(manager: RunManager, run_id: str, first: ApprovalRequested) -> list:
    """Confirm the run's first call and its second, and read it to its end."""
    await manager.answer_approval(run_id, first.approval_id, Decision(decision="confirm", by=BY))
    second = await next_request(manager, run_id, first.seq)
    await manager.answer_approval(run_id, second.approval_id, Decision(decision="confirm", by=BY))
    return await until_end(manager, run_id)


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
async def test_a_server_that_stops_leaves_the_approval_pending_for_the_next(tmp_path, backend, request):
    runs, args = where(backend, tmp_path, request)
    worker = start_worker(tmp_path, args)
    try:
        run_id = await waiting_for_approval(worker, tmp_path)
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(30) == 0, (tmp_path / "worker.log").read_text()
    finally:
        worker.kill()
    store = SQLiteRunStore(runs) if backend == "sqlite" else RedisRunStore(runs)
    await store.open()
    left = await store.get_run(run_id)
    assert left is not None and left.status == "awaiting_approval"  # not ended by the stop
    tally, model = Tally(tmp_path / "tool.log"), AskingModel(calls=2, log=tmp_path / "model.log")
    manager = RunManager(store, approving_runner(tmp_path, runs, tally, model, APPROVALS), runs, approvals=APPROVALS)
    try:
        await manager.open()  # the next server: it takes the run up at once
        assert list(manager.resume.resumed) == [run_id]
        [pending] = await manager.approvals_of(run_id)
        first = await next_request(manager, run_id)
        assert pending.status == "pending" and pending.approval_id == first.approval_id
        events = await finish(manager, run_id, first)
        stored = await store.events(run_id)
        record = await store.get_run(run_id)
        audit = await manager.approvals_of(run_id)
    finally:
        await manager.close()
        await store.close()
    # One model call in the stopped server; here the first is replayed, not made again: two more.
    assert model.requests == 2 and len(logged(tmp_path / "model.log")) == 3
    assert tally.logged() == ["0", "1"]
    assert isinstance(events[-1], Answer) and events[-1].text == ANSWER
    assert record is not None and record.status == "completed"
    assert len([e for e in stored if isinstance(e, ApprovalRequested)]) == 2  # the first not sent twice
    assert len([e for e in stored if isinstance(e, Resumed)]) == 1
    assert [(a.status, a.by) for a in audit] == [("confirmed", BY), ("confirmed", BY)]


@pytest.mark.redis
async def test_killed_while_waiting_answered_on_another_instance_which_continues_the_run(tmp_path, request):
    runs, args = where("redis", tmp_path, request)
    store = RedisRunStore(runs)
    await store.open()
    tally, model = Tally(tmp_path / "tool.log"), AskingModel(calls=2, log=tmp_path / "model.log")
    other = RunManager(store, approving_runner(tmp_path, runs, tally, model, APPROVALS), runs, approvals=APPROVALS)
    await other.open()  # another instance, up before the first dies
    worker = start_worker(tmp_path, args)
    try:
        try:
            run_id = await waiting_for_approval(worker, tmp_path)
        finally:
            worker.kill()  # SIGKILL: nothing of the worker runs after this
            worker.wait(10)
        [pending] = await other.approvals_of(run_id)
        assert pending.status == "pending"
        # Answered here, right away: the run's instance is dead, so this one takes the run up.
        await other.answer_approval(run_id, pending.approval_id, Decision(decision="confirm", by=BY))
        second = await next_request(other, run_id, 0)
        second = second if second.approval_id != pending.approval_id else await next_request(other, run_id, second.seq)
        await other.answer_approval(run_id, second.approval_id, Decision(decision="confirm", by=BY))
        events = await until_end(other, run_id)
        record = await store.get_run(run_id)
        audit = await other.approvals_of(run_id)
    finally:
        await other.close()
        await store.close()
    assert run_id in other.resume.resumed
    assert model.requests == 2 and len(logged(tmp_path / "model.log")) == 3  # no model call made twice
    assert tally.logged() == ["0", "1"]
    assert isinstance(events[-1], Answer) and record is not None and record.status == "completed"
    decided = [e for e in events if isinstance(e, ApprovalDecided)]
    assert [d.by for d in decided] == [BY, BY] and [a.status for a in audit] == ["confirmed", "confirmed"]


@pytest.mark.redis
async def test_an_answer_given_on_another_live_instance_reaches_the_run_where_it_executes(tmp_path, request):
    runs, _ = where("redis", tmp_path, request)
    stores = [RedisRunStore(runs), RedisRunStore(runs)]
    for s in stores:
        await s.open()
    tally, model = Tally(tmp_path / "tool.log"), AskingModel(calls=1)
    managers = [
        RunManager(s, approving_runner(tmp_path, runs, tally, model, APPROVALS), runs, approvals=APPROVALS)
        for s in stores
    ]
    executing, answering = managers
    try:
        for m in managers:
            await m.open()
        run_id = (await executing.start(run_request())).run_id
        asked = await next_request(executing, run_id)
        assert (await answering.get(run_id)).status == "awaiting_approval"
        await answering.answer_approval(run_id, asked.approval_id, Decision(decision="reject", reason="no", by=BY))
        events = await until_end(answering, run_id)  # read there, through the store
    finally:
        for m in managers:
            await m.close()
        for s in stores:
            await s.close()
    assert tally.runs == 0 and "rejected by its approver: no" in model.observations()[0]
    assert isinstance(events[-1], Answer) and not answering.resume.resumed  # it ran where it was
