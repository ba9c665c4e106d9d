"""A real uvicorn server in the test's event loop, and small SSE / WebSocket client helpers."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from reasonloop.config import KBSettings, RunsSettings, ServerSettings, Settings
from reasonloop.server.transport.process import uvicorn_options
from tests.runs.helpers import free_port
from tests.waiting import await_until


def make_settings(tmp_path, **server: Any) -> Settings:
    runs = server.pop("runs", None) or RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite"))
    return Settings(kb=KBSettings(path=str(tmp_path / "kb")), runs=runs, server=ServerSettings(**server))


@asynccontextmanager
async def serve(app: Any, settings: Settings | None = None, **config: Any) -> AsyncIterator[str]:
    """Run ``app`` on a free loopback port until the block ends; yields the base URL. ``config``:
    more of uvicorn's options (``root_path``...)."""
    port = free_port()
    srv = settings.server if settings else ServerSettings()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        lifespan="on",
        timeout_graceful_shutdown=1,
        **{"log_level": "warning", **uvicorn_options(srv), **config},
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())

    def started() -> bool:  # uvicorn sets a flag, with no event to wait on
        if task.done():
            task.result()
            raise RuntimeError("server exited during start-up")
        return server.started

    await await_until(started, what="uvicorn started")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


READY_S = 90
"""How long a server process may take to answer ``/readyz``: a machine busy with other work starts one slowly."""


def _exited(proc: subprocess.Popen, log: Path) -> None:
    if proc.poll() is not None:
        raise AssertionError(f"server exited: {log.read_text()}")


async def process_ready(url: str, proc: subprocess.Popen, log: Path) -> None:
    """Until the server process at ``url`` answers ``/readyz``; one that exits fails at once, with its log."""
    async with httpx.AsyncClient(base_url=url, timeout=2) as http:

        async def answers() -> bool:
            _exited(proc, log)
            try:
                return (await http.get("/readyz")).status_code == 200
            except httpx.TransportError:
                return False

        await await_until(answers, READY_S, what=f"the server at {url} ready")


def parse_sse(lines: list[str]) -> list[dict[str, Any]]:
    """SSE messages (``id``, ``event``, ``data``) from raw lines; comments and pings dropped."""
    out, cur = [], {}
    for line in lines:
        if not line:
            if "data" in cur:
                out.append(cur)
            cur = {}
        elif line.startswith(":"):
            continue
        else:
            key, _, value = line.partition(":")
            cur[key] = value[1:] if value.startswith(" ") else value
    if "data" in cur:
        out.append(cur)
    return out


async def sse_events(
    client: httpx.AsyncClient, url: str, *, headers: dict[str, str] | None = None, limit: int | None = None
) -> list[dict[str, Any]]:
    """Read SSE messages from ``url`` (all of them, or the first ``limit``, then disconnect)."""
    messages: list[dict[str, Any]] = []
    async with client.stream("GET", url, headers=headers or {}) as response:
        assert response.status_code == 200, await response.aread()
        cur: list[str] = []
        async for line in response.aiter_lines():
            cur.append(line)
            if line == "":
                messages.extend(parse_sse(cur))
                cur = []
                if limit is not None and len(messages) >= limit:
                    return messages[:limit]
        messages.extend(parse_sse(cur))
    return messages


def event_data(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [json.loads(m["data"]) for m in messages]
