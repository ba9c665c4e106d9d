"""Vector stores: the protocol every backend meets, and the embedded usearch one.

Vectors are unit length and keyed by integer chunk keys; scores are cosine similarities
(higher is closer). :class:`LocalVectorStore` keeps an HNSW graph (usearch) on disk and, while
the store is small (``exact_below`` vectors), an in-memory matrix searched exactly with numpy:
exact is as fast as HNSW at that size and never misses. Filtered searches (``allowed`` keys)
are exact over the allowed vectors when there are few of them, and over-fetch from HNSW
otherwise.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from reasonloop.errors import KBError

__all__ = ["LocalVectorStore", "VectorStore", "top_k_exact"]


@runtime_checkable
class VectorStore(Protocol):
    """Where dense vectors live. Keys are non-negative ints; vectors are unit-length float32."""

    dim: int

    def add(self, keys: Sequence[int], vectors: np.ndarray) -> None:
        """Insert vectors (keys are new; re-adding a key replaces its vector)."""

    def remove(self, keys: Collection[int]) -> None:
        """Delete keys; unknown keys are ignored."""

    def search(self, query: np.ndarray, k: int, allowed: Collection[int] | None = None) -> list[tuple[int, float]]:
        """Top ``k`` ``(key, cosine)`` pairs, best first, only among ``allowed`` when given."""

    def keys(self) -> np.ndarray:
        """Every stored key (uint64)."""

    def __len__(self) -> int: ...

    def flush(self) -> None:
        """Persist pending changes."""

    def close(self) -> None: ...


def top_k_exact(matrix: np.ndarray, keys: np.ndarray, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Exact top ``k`` by dot product; ties broken by smaller key, so results are deterministic."""
    if k <= 0 or len(keys) == 0:
        return []
    scores = matrix @ query.astype(np.float32, copy=False)
    part = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
    order = part[np.lexsort((keys[part], -scores[part]))]
    return [(int(keys[i]), float(scores[i])) for i in order]


class LocalVectorStore:
    """usearch HNSW (cosine) persisted at ``path``, with exact numpy search for small stores.

    Args:
        path: File for the HNSW index (``None``: memory only).
        dim: Vector length.
        exact_below: Below this many vectors, searches are exact.
        ef_search: HNSW breadth at query time (recall vs. speed).

    Raises:
        KBError: the file on disk holds vectors of another length.
    """

    def __init__(self, path: str | Path | None, dim: int, *, exact_below: int = 20_000, ef_search: int = 128) -> None:
        from usearch.index import Index

        self.path = Path(path) if path is not None else None
        self.dim = dim
        self.exact_below = exact_below
        self._lock = threading.RLock()
        self._index = Index(ndim=dim, metric="cos", dtype="f32", connectivity=16, expansion_add=128)
        self._index.expansion_search = ef_search
        if self.path is not None and self.path.exists():
            self._index.load(str(self.path))
            if self._index.ndim != dim:
                raise KBError(f"{self.path} holds {self._index.ndim}-d vectors, expected {dim}", path=str(self.path))
            self._index.expansion_search = ef_search
        self._dirty = False
        self._matrix: np.ndarray | None = None
        self._mkeys: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self._index)

    def keys(self) -> np.ndarray:
        with self._lock:
            return np.asarray(self._index.keys, dtype=np.uint64).copy()

    def add(self, keys: Sequence[int], vectors: np.ndarray) -> None:
        if len(keys) == 0:
            return
        arr = np.asarray(keys, dtype=np.uint64)
        vecs = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(arr), self.dim)
        with self._lock:
            present = [int(k) for k in arr if int(k) in self._index]
            if present:
                self._index.remove(np.asarray(present, dtype=np.uint64))
            self._index.add(arr, vecs, threads=1)
            self._dirty = True
            self._matrix = None

    def remove(self, keys: Collection[int]) -> None:
        if not keys:
            return
        with self._lock:
            present = [int(k) for k in keys if int(k) in self._index]
            if present:
                self._index.remove(np.asarray(present, dtype=np.uint64))
                self._dirty = True
                self._matrix = None

    def _vectors(self, keys: np.ndarray) -> np.ndarray:
        got = self._index.get(keys)
        rows = got if isinstance(got, tuple) else list(got)
        return np.vstack(rows).astype(np.float32, copy=False) if len(rows) else np.zeros((0, self.dim), np.float32)

    def _mirror(self) -> tuple[np.ndarray, np.ndarray]:
        if self._matrix is None or self._mkeys is None:
            keys = self.keys()
            self._mkeys = keys
            self._matrix = self._vectors(keys)
        return self._matrix, self._mkeys

    def search(self, query: np.ndarray, k: int, allowed: Collection[int] | None = None) -> list[tuple[int, float]]:
        query = np.asarray(query, dtype=np.float32).reshape(self.dim)
        with self._lock:
            size = len(self._index)
            if k <= 0 or size == 0:
                return []
            if allowed is None:
                if size < self.exact_below:
                    matrix, keys = self._mirror()
                    return top_k_exact(matrix, keys, query, k)
                return self._hnsw(query, k)
            present = np.asarray([int(x) for x in allowed if int(x) in self._index], dtype=np.uint64)
            if len(present) == 0:
                return []
            if len(present) < self.exact_below:
                return top_k_exact(self._vectors(present), present, query, k)
            allowed_set = set(present.tolist())
            fetch = k * 4
            while True:
                hits = [h for h in self._hnsw(query, min(fetch, size)) if h[0] in allowed_set]
                if len(hits) >= k or fetch >= size:
                    return hits[:k]
                fetch *= 4

    def _hnsw(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        matches = self._index.search(query, k, threads=1)
        return [(int(key), float(1.0 - d)) for key, d in zip(matches.keys, matches.distances, strict=True)]

    def flush(self) -> None:
        """Write the index atomically (temp file, then rename) when it changed."""
        with self._lock:
            if self.path is None or not self._dirty:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(self.path.suffix + ".tmp")
            self._index.save(str(tmp))
            os.replace(tmp, self.path)
            self._dirty = False

    def close(self) -> None:
        self.flush()
