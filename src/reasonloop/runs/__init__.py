"""Runs: start, read, stop and record runs (a :class:`RunManager` over a :class:`RunStore`).

The run idea lives here (manager, scheduler, execution, conversations, live readers and feeds,
models, recovery, instance identity); :mod:`~reasonloop.runs.recording` is the write-behind tier
that journals, records and publishes events; :mod:`~reasonloop.runs.stores` holds the stores.
"""

from reasonloop.runs.execution import Runner
from reasonloop.runs.manager import RunManager
from reasonloop.runs.models import RunRecord, RunRequest, RunStatus
from reasonloop.runs.reading import Delivery, RunFeed
from reasonloop.runs.stores import RunStore, StoreFeatures, open_store

__all__ = [
    "Delivery",
    "RunFeed",
    "RunManager",
    "RunRecord",
    "RunRequest",
    "RunStatus",
    "RunStore",
    "Runner",
    "StoreFeatures",
    "open_store",
]
