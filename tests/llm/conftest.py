"""Fixtures for the HTTP provider tests: a loopback stub server and a recorded, zero backoff."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from reasonloop.llm.base import LLM
from tests.llm.fixtures.server import StubServer


@pytest.fixture
async def stub() -> AsyncIterator[StubServer]:
    server = await StubServer().start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
def backoffs(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Delays the base class asked for between attempts; the actual sleep is zero."""
    asked: list[float] = []
    original = LLM._backoff

    def recording(self: LLM, attempt: int, error: object) -> float:
        asked.append(original(self, attempt, error))  # type: ignore[arg-type]
        return 0.0

    monkeypatch.setattr(LLM, "_backoff", recording)
    return asked
