"""Fixtures for server tests: a real redis-server for the scale-out tests (fails if it is missing)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.runs.helpers import RedisServer


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    yield server
    server.stop()
