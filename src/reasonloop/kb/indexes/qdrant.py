"""Qdrant as the vector store, for collections shared by several machines.

Same contract as :class:`~reasonloop.kb.retrieval.vector.LocalVectorStore`: integer keys are Qdrant point
ids, scores are cosine similarities, ``allowed`` becomes a ``has_id`` filter evaluated inside
Qdrant before its top-k. Pass ``url`` for a server, ``path`` for Qdrant's embedded local mode
(brute force; fine for tests and small data), or neither for an in-memory instance.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from reasonloop.errors import KBError

__all__ = ["QdrantVectorStore"]


class QdrantVectorStore:
    """A Qdrant collection of unit vectors keyed by chunk key.

    Args:
        dim: Vector length.
        url: Qdrant server URL (``http://host:6333``).
        path: Folder for embedded local mode (used when ``url`` is empty).
        collection: Collection name.
        api_key: Server API key, if any.

    Raises:
        KBError: the collection exists with another vector length, or Qdrant is unreachable.
    """

    def __init__(
        self,
        dim: int,
        *,
        url: str = "",
        path: str | Path | None = None,
        collection: str = "reasonloop",
        api_key: str | None = None,
    ) -> None:
        from qdrant_client import QdrantClient, models

        self._models = models
        self.dim = dim
        self.collection = collection
        try:
            if url:
                self._client = QdrantClient(url=url, api_key=api_key, check_compatibility=False)
            elif path is not None:
                self._client = QdrantClient(path=str(path))
            else:
                self._client = QdrantClient(location=":memory:")
            if not self._client.collection_exists(collection):
                self._client.create_collection(
                    collection, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE)
                )
            else:
                info = self._client.get_collection(collection)
                size = getattr(info.config.params.vectors, "size", None)
                if size is not None and size != dim:
                    raise KBError(f"qdrant collection {collection!r} holds {size}-d vectors, expected {dim}")
        except KBError:
            raise
        except Exception as exc:  # connection and API errors of the client
            raise KBError(f"qdrant unavailable ({url or path or ':memory:'}): {exc}") from exc

    def __len__(self) -> int:
        return int(self._client.count(self.collection, exact=True).count)

    def keys(self) -> np.ndarray:
        out: list[int] = []
        offset: Any = None
        while True:
            records, offset = self._client.scroll(
                self.collection, limit=1000, offset=offset, with_payload=False, with_vectors=False
            )
            out.extend(int(r.id) for r in records)
            if offset is None:
                break
        return np.asarray(sorted(out), dtype=np.uint64)

    def add(self, keys: Sequence[int], vectors: np.ndarray) -> None:
        if len(keys) == 0:
            return
        vecs = np.asarray(vectors, dtype=np.float32).reshape(len(keys), self.dim)
        points = [self._models.PointStruct(id=int(k), vector=v.tolist()) for k, v in zip(keys, vecs, strict=True)]
        for i in range(0, len(points), 256):
            self._client.upsert(self.collection, points=points[i : i + 256], wait=True)

    def remove(self, keys: Collection[int]) -> None:
        if not keys:
            return
        ids = [int(k) for k in keys]
        self._client.delete(self.collection, points_selector=self._models.PointIdsList(points=ids), wait=True)

    def search(self, query: np.ndarray, k: int, allowed: Collection[int] | None = None) -> list[tuple[int, float]]:
        if k <= 0 or (allowed is not None and not allowed):
            return []
        query_filter = None
        if allowed is not None:
            query_filter = self._models.Filter(must=[self._models.HasIdCondition(has_id=[int(x) for x in allowed])])
        response = self._client.query_points(
            self.collection,
            query=np.asarray(query, dtype=np.float32).reshape(self.dim).tolist(),
            query_filter=query_filter,
            limit=k,
            with_payload=False,
        )
        hits = [(int(p.id), float(p.score)) for p in response.points]
        hits.sort(key=lambda h: (-h[1], h[0]))
        return hits

    def flush(self) -> None:
        """Qdrant persists on write; nothing to do."""

    def close(self) -> None:
        self._client.close()
