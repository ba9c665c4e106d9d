"""An SSE stream whose server stops mid-run ends with a terminal event, or leaves a gap the client
resumes from with ``Last-Event-ID``: real server processes, stopped with SIGTERM as a service
manager or Ctrl-C stops them."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from pathlib import Path

import httpx
import openai
import pytest

from reasonloop.runs.models import TERMINAL
from tests.runs.helpers import free_port
from tests.server.helpers import event_data, parse_sse, process_ready, sse_events
from tests.server.test_mcp_server import REASONLOOP, clean_env, workspace
from tests.server.test_processes import ServerProcess

pytestmark = pytest.mark.integration

TERMINAL_EVENTS = {"answer", "error"}


async def ready(server: Serve | ServerProcess) -> None:
    """Until the server answers ``/readyz``."""
    await process_ready(server.url, server.proc, server.log)


class Serve:
    """``reasonloop serve`` in a process of its own."""

    def __init__(self, config: Path, cwd: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = cwd / f"serve-{self.port}.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [REASONLOOP, "-c", str(config), "serve", "--port", str(self.port)],
                cwd=cwd,
                env=clean_env(),
                stdout=log,
                stderr=log,
            )

    async def ready(self) -> None:
        await ready(self)

    def end(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)


async def stream_until(http: httpx.AsyncClient, url: str, stop: callable, *, headers=None) -> list[dict]:
    """Read the SSE stream at ``url`` to its end, calling ``stop(messages)`` after each message until
    it returns True (it may stop the server); the messages read, the stream's end included."""
    lines: list[str] = []
    messages: list[dict] = []
    stopped = False
    async with http.stream("GET", url, headers=headers or {}) as response:
        assert response.status_code == 200
        try:
            async for line in response.aiter_lines():
                lines.append(line)
                if line == "":
                    messages = parse_sse(lines)
                    if not stopped:
                        stopped = stop(messages)
        except httpx.RemoteProtocolError:  # a connection cut without the stream's last chunk
            pass
    assert stopped, "the stream ended before the server was stopped"
    return parse_sse(lines)


async def test_a_stream_ends_with_the_interrupted_answer_when_reasonloop_serve_stops(tmp_path):
    config = workspace(tmp_path)  # its agent "slow" hangs 30 s in an MCP tool
    server = Serve(config, tmp_path)
    try:
        await server.ready()
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            run_id = (await http.post("/v1/runs", json={"question": "wait", "agent": "slow"})).json()["run_id"]

            def stop_when_hanging(messages: list[dict]) -> bool:
                if any(m["event"] == "tool_call" for m in messages):
                    server.proc.send_signal(signal.SIGTERM)
                    return True
                return False

            received = await stream_until(http, f"/v1/runs/{run_id}/events", stop_when_hanging)
        assert server.proc.wait(30) in (0, -signal.SIGTERM), server.log.read_text()
        assert "Traceback" not in server.log.read_text()
    finally:
        server.end()

    assert received[-1]["event"] == "answer", [m["event"] for m in received]
    last = json.loads(received[-1]["data"])
    assert last["stop_reason"] == "interrupted" and last["depth"] == 0
    assert [int(m["id"]) for m in received] == list(range(1, len(received) + 1))

    again = Serve(config, tmp_path)  # the same store: the run's end was recorded before the process exited
    try:
        await again.ready()
        async with httpx.AsyncClient(base_url=again.url, timeout=30) as http:
            view = (await http.get(f"/v1/runs/{run_id}")).json()
            assert view["run"]["status"] == "interrupted"
            assert (
                await sse_events(http, f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": received[-1]["id"]}) == []
            )
            assert await sse_events(http, f"/v1/runs/{run_id}/events") == received
    finally:
        again.end()


async def test_a_stream_of_a_run_executed_elsewhere_is_resumed_there(tmp_path):
    shared = ["--sqlite", str(tmp_path / "shared.sqlite"), "--delay", "0.02"]
    runner, reader = ServerProcess(tmp_path, *shared), ServerProcess(tmp_path, *shared)
    try:
        await asyncio.gather(ready(runner), ready(reader))
        async with (
            httpx.AsyncClient(base_url=runner.url, timeout=30) as on_runner,
            httpx.AsyncClient(base_url=reader.url, timeout=30) as on_reader,
        ):
            run_id = (await on_runner.post("/v1/runs", json={"question": "long one"})).json()["run_id"]

            def stop_reader(messages: list[dict]) -> bool:
                if len(messages) >= 5:
                    reader.proc.send_signal(signal.SIGTERM)
                    return True
                return False

            cut = await stream_until(on_reader, f"/v1/runs/{run_id}/events", stop_reader)
            assert reader.proc.wait(30) in (0, -signal.SIGTERM)
            # the run goes on in the other process: this stream ends without its end, each message with its id
            assert cut and cut[-1]["event"] not in TERMINAL_EVENTS
            assert [int(m["id"]) for m in cut] == list(range(1, len(cut) + 1))
            rest = await sse_events(on_runner, f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": cut[-1]["id"]})
            whole = await sse_events(on_runner, f"/v1/runs/{run_id}/events")
            assert cut + rest == whole
            assert event_data(whole)[-1]["type"] == "answer" and event_data(whole)[-1]["stop_reason"] == "final"
            assert (await on_runner.get(f"/v1/runs/{run_id}")).json()["run"]["status"] in TERMINAL
    finally:
        runner.kill()
        reader.kill()


async def test_a_streamed_chat_completion_ends_with_its_finish_when_reasonloop_serve_stops(tmp_path):
    config = workspace(tmp_path)
    server = Serve(config, tmp_path)
    try:
        await server.ready()
        client = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        stream = await client.chat.completions.create(
            model="slow", messages=[{"role": "user", "content": "wait"}], stream=True
        )
        chunks = []
        stopped = False
        async for chunk in stream:  # ends without an error: the stream was closed with [DONE]
            chunks.append(chunk)
            lane = (chunk.choices[0].delta.model_extra or {}).get("reasoning_content") if chunk.choices else None
            if lane and lane.startswith("→ hang(") and not stopped:
                server.proc.send_signal(signal.SIGTERM)
                stopped = time.monotonic()
        ended = time.monotonic()
        await client.close()
        assert stopped and ended - stopped < 10  # ended by the stop, not by the hang's 30 s
        assert server.proc.wait(30) in (0, -signal.SIGTERM), server.log.read_text()
        assert "Traceback" not in server.log.read_text()
    finally:
        server.end()
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["stop"], [c.model_dump() for c in chunks[-3:]]
    assert chunks[-1].model_extra["citations"] == []
    assert "woke" not in "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
