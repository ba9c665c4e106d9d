"""Fixtures for the runs layer: both run stores, each against its real backend."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from reasonloop.config import RunsSettings
from reasonloop.runs.stores.redis.store import RedisRunStore
from reasonloop.runs.stores.sqlite.store import SQLiteRunStore
from tests.runs.helpers import RedisServer


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    yield server
    server.stop()


@pytest.fixture
async def store(tmp_path) -> AsyncIterator[SQLiteRunStore]:
    s = SQLiteRunStore(RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite")))
    await s.open()
    yield s
    await s.close()


@pytest.fixture(params=["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
async def any_store(request, tmp_path) -> AsyncIterator[SQLiteRunStore | RedisRunStore]:
    if request.param == "sqlite":
        s = SQLiteRunStore(RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite")))
    else:
        server = request.getfixturevalue("redis_server")
        s = RedisRunStore(RunsSettings(store="redis", redis_url=server.url, redis_prefix=f"t{uuid.uuid4().hex[:8]}:"))
    await s.open()
    yield s
    await s.close()
