"""Why: working out a reader's allowed chunk keys in SQL costs about 10 ms per search at 5,000
chunks (benchmarks/README.md, "access_filter.py"); they change only when the catalog does.

:class:`ReaderKeys` keeps, per reader, the keys last worked out and the catalog's stamp when
they were: ``PRAGMA data_version`` (moves with every other connection's commit, another
process's included) and this connection's own count of writes. A stamp that moved, by a single
commit of anything, means the keys are worked out again, so a change of readers holds for the
very next search.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

__all__ = ["ReaderKeys"]

T = TypeVar("T")

KEPT = 64
"""Readers whose keys are kept (the least recently searched are let go)."""


class ReaderKeys:
    """Allowed chunk keys per reader, valid while the catalog's stamp stays the same."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, ...], tuple[tuple[int, int], frozenset[int]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, names: tuple[str, ...], stamp: tuple[int, int], work_out: Callable[[], set[int]]) -> frozenset[int]:
        """The keys of the reader answering to ``names`` at ``stamp`` (read before ``work_out`` runs,
        so keys worked out after a later commit are kept under the earlier stamp and redone)."""
        with self._lock:
            kept = self._kept.get(names)
            if kept is not None and kept[0] == stamp:
                self._kept.move_to_end(names)
                return kept[1]  # type: ignore[return-value]  # what work_out gave for these names
        keys = frozenset(work_out())
        with self._lock:
            self._kept[names] = (stamp, keys)
            self._kept.move_to_end(names)
            while len(self._kept) > KEPT:
                self._kept.popitem(last=False)
        return keys
