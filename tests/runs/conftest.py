"""Fixtures for the runs layer: a SQLite store in a temp dir and runners with controllable pace."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from reasonloop.config import RunsSettings
from reasonloop.runs.sqlite_store import SQLiteRunStore


@pytest.fixture
async def store(tmp_path) -> AsyncIterator[SQLiteRunStore]:
    s = SQLiteRunStore(RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite")))
    await s.open()
    yield s
    await s.close()
