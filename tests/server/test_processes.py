"""Real server processes: crash recovery after SIGKILL, and two instances sharing a real redis-server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest

from reasonloop.config import RunsSettings
from reasonloop.runs.stores.redis.store import RedisRunStore
from reasonloop.server import create_app
from tests.runs.helpers import GatedRunner, RedisServer, free_port
from tests.server.helpers import event_data, make_settings, process_ready, serve, sse_events

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


class ServerProcess:
    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tmp_path / f"server-{self.port}.log"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.server.serve_scripted",
                "--port",
                str(self.port),
                "--kb",
                str(tmp_path / "kb"),
                *args,
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=(log := self.log.open("wb")),
        )
        log.close()  # the child has its own copy of the descriptor

    async def ready(self) -> None:
        await process_ready(self.url, self.proc, self.log)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # SIGKILL: no shutdown code runs
        self.proc.wait(10)


@pytest.fixture
def processes():
    started: list[ServerProcess] = []
    yield started
    for p in started:
        p.kill()


@pytest.mark.parametrize(
    "recording",
    [
        pytest.param(["--record-interval", "0.05"], id="journal"),
        # the store records nothing during the run: what the client got is only in the journal
        pytest.param(["--record-interval", "5"], id="journal-only"),
        pytest.param(["--no-journal"], id="store-only"),
    ],
)
async def test_crash_recovery_after_sigkill(tmp_path, processes, recording):
    db = str(tmp_path / "runs.sqlite")
    first = ServerProcess(tmp_path, "--sqlite", db, *recording)
    processes.append(first)
    await first.ready()
    async with httpx.AsyncClient(base_url=first.url, timeout=20) as client:
        run_id = (await client.post("/v1/runs", json={"question": "long one"})).json()["run_id"]
        received = await sse_events(client, f"/v1/runs/{run_id}/events", limit=8)
    first.kill()
    second = ServerProcess(tmp_path, "--sqlite", db)
    processes.append(second)
    await second.ready()
    async with httpx.AsyncClient(base_url=second.url, timeout=20) as client:
        view = (await client.get(f"/v1/runs/{run_id}")).json()
        replay = await sse_events(client, f"/v1/runs/{run_id}/events")
    assert view["run"]["status"] == "interrupted"
    assert replay[: len(received)] == received  # everything the client had been sent is there, unchanged
    events = event_data(replay)
    assert events[-1]["type"] == "answer" and events[-1]["stop_reason"] == "interrupted"
    partial = "".join(e["text"] for e in events if e["type"] == "answer_delta")
    got = "".join(e["text"] for e in event_data(received) if e["type"] == "answer_delta")
    assert partial.startswith(got) and got
    assert view["run"]["content"] == partial == events[-1]["text"] == view["result"]["content"]


@pytest.mark.parametrize("backend", [pytest.param("redis", marks=pytest.mark.redis), "sqlite"])
async def test_two_instances_share_runs(tmp_path, processes, request, backend):
    if backend == "redis":
        shared = ["--redis", request.getfixturevalue("redis_server").url, "--prefix", f"mi{uuid.uuid4().hex[:6]}:"]
    else:  # several workers on one machine sharing one SQLite file
        shared = ["--sqlite", str(tmp_path / "shared.sqlite")]
    a = ServerProcess(tmp_path, *shared)
    b = ServerProcess(tmp_path, *shared)
    processes += [a, b]
    await asyncio.gather(a.ready(), b.ready())
    async with (
        httpx.AsyncClient(base_url=a.url, timeout=20) as on_a,
        httpx.AsyncClient(base_url=b.url, timeout=20) as on_b,
    ):
        run_id = (await on_a.post("/v1/runs", json={"question": "shared"})).json()["run_id"]
        from_b = await sse_events(on_b, f"/v1/runs/{run_id}/events", limit=5)  # streamed from the other instance
        assert [int(m["id"]) for m in from_b] == [1, 2, 3, 4, 5]
        stopped = await on_b.post(f"/v1/runs/{run_id}/stop")
        assert stopped.status_code == 200 and stopped.json()["status"] == "stopped"
        rest = await sse_events(on_a, f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": from_b[-1]["id"]})
        whole = await sse_events(on_b, f"/v1/runs/{run_id}/events")
        assert from_b + rest == whole
        final = json.loads(whole[-1]["data"])
        assert final["type"] == "answer" and final["stop_reason"] == "stopped"
        assert (await on_a.get(f"/v1/runs/{run_id}")).json()["run"]["status"] == "stopped"
        assert (await on_a.post(f"/v1/runs/{run_id}/stop")).status_code == 409


@pytest.mark.redis
async def test_redis_unavailable_at_start_is_a_clear_error(tmp_path):
    dead = f"redis://127.0.0.1:{free_port()}/0"
    proc = ServerProcess(tmp_path, "--redis", dead)
    code = proc.proc.wait(30)
    log = proc.log.read_text()
    assert code != 0
    assert "run.store_unavailable" in log and dead in log


@pytest.mark.redis
async def test_redis_lost_mid_run_fails_the_run_and_keeps_what_was_delivered(tmp_path):
    redis = RedisServer()  # its own server: this test kills it
    try:
        settings = make_settings(tmp_path, runs=RunsSettings(store="redis", redis_url=redis.url))
        runner = GatedRunner(steps=3)
        app = create_app(settings, runner=runner, store=RedisRunStore(settings.runs))
        async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=20) as client:
            run_id = (await client.post("/v1/runs", json={"question": "q"})).json()["run_id"]
            async with client.stream("GET", f"/v1/runs/{run_id}/events") as response:
                lines = response.aiter_lines()
                seen: list[dict] = []
                async for line in lines:
                    if line.startswith("data:"):
                        seen.append(json.loads(line[5:]))
                        if len(seen) == 2:
                            break
                redis.stop()
                runner.finish(run_id)
                async for line in lines:
                    if line.startswith("data:"):
                        seen.append(json.loads(line[5:]))
            assert [e["type"] for e in seen[:2]] == ["run_started", "answer_delta"]
            assert seen[1]["text"] == "part0 "
            assert seen[-1]["type"] == "error" and seen[-1]["code"] == "run.store_unavailable"
            assert "Redis" in seen[-1]["message"]
            assert [e["seq"] for e in seen] == list(range(1, len(seen) + 1))
            ready = await client.get("/readyz")
            assert ready.status_code == 503
    finally:
        redis.stop()
