"""A run killed with SIGKILL mid-way in one process, resumed by a run manager of another, on both stores."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from reasonloop.config import RunsSettings
from reasonloop.events import Answer, Resumed, ToolCall, ToolResult
from reasonloop.runs.manager import RunManager
from reasonloop.runs.stores.redis.store import RedisRunStore
from reasonloop.runs.stores.sqlite.store import SQLiteRunStore
from tests.runs.resume_helpers import ANSWER, CountingModel, Tally, counting_runner
from tests.runs.resume_helpers import request as run_request
from tests.runs.test_resume import content_of, until_end

pytestmark = pytest.mark.integration  # a worker process, killed

ROOT = Path(__file__).resolve().parents[2]


def lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def start_worker(here: Path, where: list[str]) -> subprocess.Popen:
    """The worker process (its stderr in ``here/worker.log``)."""
    with (here / "worker.log").open("wb") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.runs.resume_worker", "--dir", str(here), *where],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )


def worker_said(here: Path) -> str:
    return (here / "worker.log").read_text()


async def blocked_in_second_call(proc: subprocess.Popen, here: Path) -> None:
    """Until the worker's run is inside its second tool call, its first call and two replies kept."""
    deadline = time.monotonic() + 90  # a busy machine starts a process slowly
    while not (here / "run_id").exists():
        if proc.poll() is not None:
            raise AssertionError(f"the worker exited: {worker_said(here)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"the worker's run never reached its second tool call: {worker_said(here)}")
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
async def test_a_run_killed_mid_way_resumes_in_another_process_without_repeating_its_steps(tmp_path, backend, request):
    if backend == "redis":
        prefix = f"k{uuid.uuid4().hex[:8]}:"
        runs = RunsSettings(store="redis", redis_url=request.getfixturevalue("redis_server").url, redis_prefix=prefix)
        where = ["--redis", runs.redis_url, "--prefix", prefix]
    else:
        runs = RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite"))  # events journaled first, as served
        where = ["--sqlite", runs.sqlite_path]
    worker = start_worker(tmp_path, where)
    try:
        await blocked_in_second_call(worker, tmp_path)
    finally:
        worker.kill()  # SIGKILL: nothing of the worker runs after this
        worker.wait(10)
    run_id = (tmp_path / "run_id").read_text()
    assert lines(tmp_path / "tool.log") == ["0", "1"]
    assert lines(tmp_path / "model.log") == ["2", "4"]  # two model calls (their messages) before it died

    store = RedisRunStore(runs) if backend == "redis" else SQLiteRunStore(runs)
    await store.open()
    tally, model = Tally(tmp_path / "tool.log"), CountingModel(tmp_path / "model.log")
    manager = RunManager(store, counting_runner(tmp_path, runs, tally, model), runs)
    try:
        await manager.open()
        assert list(manager.resume.resumed) == [run_id]
        events = await until_end(manager, run_id)
        stored = await store.events(run_id)
        view = await manager.get(run_id)
        left = await store.steps(run_id)
    finally:
        await manager.close()
        await store.close()

    # The resumed run made no model call and no tool call for what was done: two model calls (after
    # the second and third tool calls) and two tool calls (the one it died in, and the third).
    assert model.requests == 2 and lines(tmp_path / "model.log") == ["2", "4", "6", "8"]
    assert tally.runs == 2 and lines(tmp_path / "tool.log") == ["0", "1", "1", "2"]
    assert [e.to_json() for e in events] == [e.to_json() for e in stored]
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
    [resumed] = [e for e in stored if isinstance(e, Resumed)]
    assert resumed.reused_steps == 3
    seen = {content_of(e) for e in stored[: resumed.seq - 1]}
    assert not [e for e in stored[resumed.seq :] if content_of(e) in seen]  # nothing twice for readers
    assert [e.call_id for e in stored if isinstance(e, ToolCall)] == ["call0", "call1", "call2"]
    assert [e.call_id for e in stored if isinstance(e, ToolResult)] == ["call0", "call1", "call2"]
    assert view.status == "completed" and view.content == ANSWER and left == {}

    # The same answer, and the same usage, as a run no process died in.
    calm_runs = RunsSettings(sqlite_path=str(tmp_path / "calm.sqlite"))
    calm_store = SQLiteRunStore(calm_runs)
    await calm_store.open()
    calm = RunManager(
        calm_store,
        counting_runner(
            tmp_path, calm_runs, Tally(tmp_path / "calm-tool.log"), CountingModel(tmp_path / "calm-model.log")
        ),
        calm_runs,
    )
    try:
        await calm.open()
        whole = await until_end(calm, (await calm.start(run_request())).run_id)
    finally:
        await calm.close()
        await calm_store.close()
    answer, expected = stored[-1], whole[-1]
    assert isinstance(answer, Answer) and isinstance(expected, Answer)
    assert answer.text == expected.text == ANSWER
    assert answer.usage == expected.usage
