"""A research run killed with SIGKILL mid-research in one process, resumed by a run manager of
another, on both stores: no model or tool call is made again for the finished sub-research."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from reasonloop.config import RunsSettings
from reasonloop.events import Answer, Report, ResearchTask, Resumed
from reasonloop.runs.manager import RunManager
from reasonloop.runs.stores.redis.store import RedisRunStore
from reasonloop.runs.stores.sqlite.store import SQLiteRunStore
from tests.reasoning.research_helpers import PLAN
from tests.runs.research_resume import CountingResearchModel, Searches, logged, request, research_runner
from tests.runs.test_resume import content_of, until_end
from tests.runs.test_resume_processes import blocked_in_second_call

pytestmark = pytest.mark.integration  # served on sockets, or started in processes

ROOT = Path(__file__).resolve().parents[2]


def start_worker(here: Path, where: list[str]) -> subprocess.Popen:
    with (here / "worker.log").open("wb") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.runs.research_worker", "--dir", str(here), *where],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )


async def calm_answer(tmp_path: Path) -> Answer:
    """The answer of the same run in a process that never died."""
    runs = RunsSettings(sqlite_path=str(tmp_path / "calm.sqlite"))
    store = SQLiteRunStore(runs)
    await store.open()
    model = CountingResearchModel(tmp_path / "calm-model.log")
    manager = RunManager(store, research_runner(tmp_path, runs, Searches(tmp_path / "calm-search.log"), model), runs)
    try:
        await manager.open()
        events = await until_end(manager, (await manager.start(request())).run_id)
    finally:
        await manager.close()
        await store.close()
    assert isinstance(events[-1], Answer)
    return events[-1]


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
async def test_a_research_run_killed_mid_research_resumes_without_redoing_finished_sub_research(
    tmp_path, backend, request
):
    if backend == "redis":
        prefix = f"r{uuid.uuid4().hex[:8]}:"
        runs = RunsSettings(store="redis", redis_url=request.getfixturevalue("redis_server").url, redis_prefix=prefix)
        where = ["--redis", runs.redis_url, "--prefix", prefix]
    else:
        runs = RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite"))
        where = ["--sqlite", runs.sqlite_path]
    worker = start_worker(tmp_path, where)
    try:
        await blocked_in_second_call(worker, tmp_path)  # waits for DIR/run_id
    finally:
        worker.kill()  # SIGKILL
        worker.wait(10)
    run_id = (tmp_path / "run_id").read_text()
    before = logged(tmp_path / "model.log")
    # the plan, both calls of the first two sub-agents, the first call of the third (then blocked)
    assert sorted(before) == sorted(["plan", *[f"agent:{q}" for q in PLAN[:2] for _ in (1, 2)], f"agent:{PLAN[2]}"])
    assert sorted(logged(tmp_path / "search.log")) == sorted(PLAN)

    store = RedisRunStore(runs) if backend == "redis" else SQLiteRunStore(runs)
    await store.open()
    model = CountingResearchModel(tmp_path / "model.log")
    searches = Searches(tmp_path / "search.log")
    manager = RunManager(store, research_runner(tmp_path, runs, searches, model), runs)
    try:
        await manager.open()
        assert list(manager.resume.resumed) == [run_id]
        events = await until_end(manager, run_id)
        stored = await store.events(run_id)
        view = await manager.get(run_id)
    finally:
        await manager.close()
        await store.close()

    # The resumed run made model calls only for what was not done: the third sub-agent's answer
    # (its first call is replayed), the judge and the report. No plan, nothing of the first two.
    after = logged(tmp_path / "model.log")[len(before) :]
    assert after == [f"agent:{PLAN[2]}", "judge", "report"] and model.requests == 3
    assert logged(tmp_path / "search.log")[len(PLAN) :] == [PLAN[2]]  # only the search it died in
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
    assert [e.to_json() for e in events] == [e.to_json() for e in stored]
    [resumed] = [e for e in stored if isinstance(e, Resumed)]
    seen = {content_of(e) for e in stored[: resumed.seq - 1]}
    assert not [e for e in stored[resumed.seq :] if content_of(e) in seen]  # nothing twice for readers
    running = [e.step for e in stored if isinstance(e, ResearchTask) and e.status == "running"]
    assert sorted(running) == ["1.1", "1.2", "1.3"]  # the third's budget as it was: not sent again
    done = [e.step for e in stored if isinstance(e, ResearchTask) and e.status == "done"]
    assert sorted(done) == ["1.1", "1.2", "1.3"]
    answer = stored[-1]
    assert isinstance(answer, Answer) and view.status == "completed" and view.content == answer.text
    assert {c.document_id for c in answer.citations} == {"d1", "d2", "d3"}
    assert next(e for e in stored if isinstance(e, Report) and not e.partial).text == answer.text

    calm = await calm_answer(tmp_path)  # the same report, citations and usage as a run no process died in
    assert answer.text == calm.text and answer.citations == calm.citations
    assert answer.usage == calm.usage


async def test_a_research_run_stopped_mid_research_keeps_its_partial_report(tmp_path):
    runs = RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite"))
    store = SQLiteRunStore(runs)
    await store.open()
    searches = Searches(tmp_path / "search.log", gated=True)
    model = CountingResearchModel(tmp_path / "model.log")
    manager = RunManager(store, research_runner(tmp_path, runs, searches, model), runs)
    try:
        await manager.open()
        record = await manager.start(request())
        await asyncio.wait_for(searches.blocked.wait(), 20)
        feed = await manager.read(record.run_id)
        async with asyncio.timeout(20):  # until the first two sub-researches are in
            done: set[str] = set()
            async for event in feed.events():
                if isinstance(event, ResearchTask) and event.status == "done":
                    done.add(event.step)
                if len(done) == 2:
                    break
        stopped = await manager.stop(record.run_id)
        events = await until_end(manager, record.run_id)
    finally:
        await manager.close()
        await store.close()
    assert stopped.status == "stopped"
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.stop_reason == "stopped"
    drafts = [e for e in events if isinstance(e, Report) and e.partial]
    assert stopped.content == answer.text == drafts[-1].text
    assert "## Who makes the Aria 2 headphones?" in answer.text and "Northwind Audio was founded in Oslo" in answer.text
    assert PLAN[2] not in answer.text
    assert "judge" not in logged(tmp_path / "model.log")  # stopped before judging
