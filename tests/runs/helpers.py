"""Runners with a controllable pace for run-manager and server tests."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator

import pytest

from reasonloop.events import Answer, AnswerDelta, Event, RunStarted
from reasonloop.runs.models import RunRequest
from tests.waiting import wait_until


class GatedRunner:
    """Yields ``RunStarted`` and one delta per released step; waits (forever, unless released) in between.

    ``running`` and ``max_running`` count runs inside the runner at once (for concurrency checks).
    """

    def __init__(self, steps: int = 3) -> None:
        self.steps = steps
        self.gates: dict[str, asyncio.Event] = {}
        self.entered: dict[str, asyncio.Event] = {}
        self.running = 0
        self.max_running = 0
        self.cancelled: list[str] = []
        self.free: set[str] = set()

    def finish(self, run_id: str) -> None:
        """Let ``run_id`` run to its answer without further gates."""
        self.free.add(run_id)
        self.gate(run_id).set()

    def gate(self, run_id: str) -> asyncio.Event:
        return self.gates.setdefault(run_id, asyncio.Event())

    def entered_event(self, run_id: str) -> asyncio.Event:
        return self.entered.setdefault(run_id, asyncio.Event())

    def __call__(self, request: RunRequest) -> AsyncIterator[Event]:
        return self._run(request)

    async def _run(self, request: RunRequest) -> AsyncIterator[Event]:
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        try:
            yield RunStarted(reasoning="gated", question=request.question)
            self.entered_event(request.run_id).set()
            for i in range(self.steps):
                yield AnswerDelta(text=f"part{i} ")
                if request.run_id not in self.free:
                    gate = self.gate(request.run_id)
                    await gate.wait()
                    gate.clear()
            yield Answer(text="".join(f"part{i} " for i in range(self.steps)))
        except (asyncio.CancelledError, GeneratorExit):  # cancelled mid-await, or closed between events
            self.cancelled.append(request.run_id)
            raise
        finally:
            self.running -= 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A real ``redis-server`` on a free loopback port, without persistence.

    Fails (never skips) when the binary is missing: the multi-instance tests need it.
    """

    def __init__(self, port: int | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is not installed (apt-get install -y redis-server)", pytrace=False)
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_until(self._accepts, what=f"redis-server on port {self.port}")
        except AssertionError:
            self.stop()
            pytest.fail(f"redis-server did not start on port {self.port}", pytrace=False)

    def _accepts(self) -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
