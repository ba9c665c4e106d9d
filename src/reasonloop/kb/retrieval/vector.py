"""Vector stores: the protocol every backend meets, and the embedded one.

Vectors are unit length and keyed by integer chunk keys; scores are cosine similarities
(higher is closer). :class:`LocalVectorStore` starts *flat*: a numpy matrix searched exactly
(as fast as HNSW below a few tens of thousands of vectors, and it never misses), saved as
``.npz``. Once it reaches ``exact_below`` vectors it builds a usearch HNSW graph in one bulk
insert and from then on lives in the ``.usearch`` file. Filtered searches (``allowed`` keys)
are exact over the allowed vectors when there are few of them, and over-fetch from HNSW
otherwise.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

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
    # einsum's own SIMD loop, not BLAS: as fast single-threaded, and immune to BLAS thread pools
    # fighting the embedding threads (a multi-threaded sgemv here measured 10x slower under load).
    scores = np.einsum("ij,j->i", matrix, query.astype(np.float32, copy=False))
    part = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
    order = part[np.lexsort((keys[part], -scores[part]))]
    return [(int(keys[i]), float(scores[i])) for i in order]


class LocalVectorStore:
    """Flat numpy vectors for small stores, usearch HNSW (cosine) for large ones.

    Args:
        path: The HNSW file (``vectors.usearch``); the flat store lives beside it as ``.npz``.
            ``None`` keeps everything in memory.
        dim: Vector length.
        exact_below: Size at which the HNSW graph is built; below it searches are exact.
        ef_search: HNSW breadth at query time (recall vs. speed).

    Raises:
        KBError: the files on disk hold vectors of another length.
    """

    def __init__(self, path: str | Path | None, dim: int, *, exact_below: int = 20_000, ef_search: int = 128) -> None:
        self.path = Path(path) if path is not None else None
        self.flat_path = self.path.with_suffix(".npz") if self.path is not None else None
        self.dim = dim
        self.exact_below = exact_below
        self.ef_search = ef_search
        self._lock = threading.RLock()
        self._hnsw: Any = None
        self._keys = np.zeros(0, dtype=np.uint64)
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._mirror_valid = False
        self._dirty = False
        if self.path is not None and self.path.exists():
            self._hnsw = self._new_hnsw()
            try:
                self._hnsw.load(str(self.path))
            except (RuntimeError, ValueError, OSError) as exc:
                raise KBError(f"{self.path}: unreadable vector index ({exc})", path=str(self.path)) from exc
            if self._hnsw.ndim != dim:
                raise KBError(f"{self.path} holds {self._hnsw.ndim}-d vectors, expected {dim}", path=str(self.path))
            self._hnsw.expansion_search = ef_search
        elif self.flat_path is not None and self.flat_path.exists():
            try:
                with np.load(self.flat_path) as data:
                    keys, matrix = data["keys"], data["vectors"]
            except (ValueError, KeyError, OSError, EOFError) as exc:
                raise KBError(f"{self.flat_path}: unreadable vector file ({exc})", path=str(self.flat_path)) from exc
            if matrix.ndim != 2 or (len(matrix) and matrix.shape[1] != dim):
                raise KBError(f"{self.flat_path} holds vectors of shape {matrix.shape}, expected dim {dim}")
            self._keys, self._matrix = keys.astype(np.uint64), matrix.astype(np.float32).reshape(-1, dim)
            self._mirror_valid = True
        else:
            self._mirror_valid = True
        self._keyset: set[int] = set(self._keys.tolist()) if self._hnsw is None else set()

    def _new_hnsw(self) -> Any:
        from usearch.index import Index

        index = Index(ndim=self.dim, metric="cos", dtype="f32", connectivity=16, expansion_add=128)
        index.expansion_search = self.ef_search
        return index

    @property
    def uses_hnsw(self) -> bool:
        return self._hnsw is not None

    # -- flat matrix --------------------------------------------------------------------------------
    def _consolidate(self) -> None:
        if self._pending:
            self._keys = np.concatenate([self._keys, *(k for k, _ in self._pending)])
            self._matrix = np.concatenate([self._matrix, *(m for _, m in self._pending)])
            self._pending.clear()

    def _drop_flat(self, keys: np.ndarray) -> None:
        self._consolidate()
        if len(keys) and len(self._keys):
            keep = ~np.isin(self._keys, keys)
            if not keep.all():
                self._keys, self._matrix = self._keys[keep], self._matrix[keep]
                self._keyset.difference_update(keys.tolist())

    def _mirror(self) -> tuple[np.ndarray, np.ndarray]:
        """The flat matrix (in HNSW mode rebuilt from the graph while the store is small)."""
        if self._hnsw is not None and not self._mirror_valid:
            self._keys = np.asarray(self._hnsw.keys, dtype=np.uint64).copy()
            self._matrix = self._hnsw_vectors(self._keys)
            self._mirror_valid = True
        self._consolidate()
        return self._matrix, self._keys

    def _hnsw_vectors(self, keys: np.ndarray) -> np.ndarray:
        got = self._hnsw.get(keys)
        rows = got if isinstance(got, tuple) else list(got)
        return np.vstack(rows).astype(np.float32, copy=False) if len(rows) else np.zeros((0, self.dim), np.float32)

    # -- protocol -----------------------------------------------------------------------------------
    def __len__(self) -> int:
        with self._lock:
            if self._hnsw is not None:
                return len(self._hnsw)
            return len(self._keys) + sum(len(k) for k, _ in self._pending)

    def keys(self) -> np.ndarray:
        with self._lock:
            if self._hnsw is not None:
                return np.asarray(self._hnsw.keys, dtype=np.uint64).copy()
            self._consolidate()
            return self._keys.copy()

    def add(self, keys: Sequence[int], vectors: np.ndarray) -> None:
        if len(keys) == 0:
            return
        arr = np.asarray(keys, dtype=np.uint64)
        vecs = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(arr), self.dim)
        with self._lock:
            self._dirty = True
            if self._hnsw is not None:
                present = [int(k) for k in arr if int(k) in self._hnsw]
                if present:
                    self._hnsw.remove(np.asarray(present, dtype=np.uint64))
                self._hnsw.add(arr, vecs, threads=1)
                self._mirror_valid = False
                return
            new = arr.tolist()
            if not self._keyset.isdisjoint(new):
                self._drop_flat(arr)
            self._keyset.update(new)
            self._pending.append((arr.copy(), vecs.copy()))
            if len(self) >= self.exact_below:
                self._build_hnsw()

    def _build_hnsw(self) -> None:
        self._consolidate()
        index = self._new_hnsw()
        if len(self._keys):
            index.add(self._keys, self._matrix)
        self._hnsw = index
        self._mirror_valid = True  # the flat arrays still hold exactly the same vectors

    def remove(self, keys: Collection[int]) -> None:
        if not keys:
            return
        arr = np.asarray([int(k) for k in keys], dtype=np.uint64)
        with self._lock:
            if self._hnsw is not None:
                present = [int(k) for k in arr if int(k) in self._hnsw]
                if present:
                    self._hnsw.remove(np.asarray(present, dtype=np.uint64))
                    self._dirty = True
                    self._mirror_valid = False
                return
            before = len(self)
            self._drop_flat(arr)
            self._dirty = self._dirty or len(self) != before

    def search(self, query: np.ndarray, k: int, allowed: Collection[int] | None = None) -> list[tuple[int, float]]:
        query = np.asarray(query, dtype=np.float32).reshape(self.dim)
        with self._lock:
            size = len(self)
            if k <= 0 or size == 0:
                return []
            small = self._hnsw is None or size < self.exact_below
            if allowed is None:
                if small:
                    matrix, keys = self._mirror()
                    return top_k_exact(matrix, keys, query, k)
                return self._hnsw_search(query, k)
            wanted = np.fromiter((int(x) for x in allowed), dtype=np.uint64, count=len(allowed))
            if small:
                matrix, keys = self._mirror()
                mask = np.isin(keys, wanted)
                return top_k_exact(matrix[mask], keys[mask], query, k)
            present = np.asarray([x for x in wanted.tolist() if x in self._hnsw], dtype=np.uint64)
            if len(present) == 0:
                return []
            if len(present) < self.exact_below:
                return top_k_exact(self._hnsw_vectors(present), present, query, k)
            allowed_set = set(present.tolist())
            fetch = k * 4
            while True:
                hits = [h for h in self._hnsw_search(query, min(fetch, size)) if h[0] in allowed_set]
                if len(hits) >= k or fetch >= size:
                    return hits[:k]
                fetch *= 4

    def _hnsw_search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        matches = self._hnsw.search(query, k, threads=1)
        return [(int(key), float(1.0 - d)) for key, d in zip(matches.keys, matches.distances, strict=True)]

    def flush(self) -> None:
        """Write the store atomically (temp file, then rename) when it changed."""
        with self._lock:
            if self.path is None or self.flat_path is None or not self._dirty:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self._hnsw is not None:
                tmp = self.path.with_name(self.path.name + ".tmp")
                self._hnsw.save(str(tmp))
                os.replace(tmp, self.path)
                self.flat_path.unlink(missing_ok=True)
            else:
                self._consolidate()
                tmp = self.flat_path.with_name(self.flat_path.stem + ".tmp.npz")
                np.savez(tmp, keys=self._keys, vectors=self._matrix)
                os.replace(tmp, self.flat_path)
            self._dirty = False

    def close(self) -> None:
        self.flush()
