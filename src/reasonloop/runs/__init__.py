"""Runs: start, follow, stop and record runs (a :class:`RunManager` over a :class:`RunStore`)."""

from reasonloop.runs.manager import RunManager, Runner
from reasonloop.runs.models import RunRecord, RunRequest, RunStatus
from reasonloop.runs.store import RunStore, open_store

__all__ = ["RunManager", "RunRecord", "RunRequest", "RunStatus", "RunStore", "Runner", "open_store"]
