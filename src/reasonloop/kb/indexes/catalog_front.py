"""What an index that keeps its documents in a :class:`~reasonloop.kb.indexes.catalog.Catalog`
answers from that catalog, whatever its search side: writer turns, ingest runs, deletes,
listings, query vectors, reading hits back, retrievers, closing.

Both built-in indexes hold a catalog (``self.catalog``, with its writer turns ``self.turns``)
and take these methods from here, so an operation of the catalog is offered once for both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from reasonloop.kb.access import EVERYONE, Reader
from reasonloop.kb.base import Hit, IngestReport, KBStats
from reasonloop.kb.indexes.catalog import Catalog, ProgressFn
from reasonloop.kb.retrieval.hybrid import HybridRetriever, Reranker
from reasonloop.kb.storage.store import ChunkRow, DocumentRow
from reasonloop.kb.storage.turns import WriterTurns

if TYPE_CHECKING:
    from reasonloop.kb.ingest.records import Record
    from reasonloop.kb.retrieval.rerankers.base import RerankStep

__all__ = ["CatalogFront"]


class CatalogFront:
    """The index contract's catalog side, answered by ``self.catalog``."""

    catalog: Catalog
    turns: WriterTurns

    # -- writing --------------------------------------------------------------------------------------
    async def begin_commit(self, on_wait: Callable[[str], None] | None = None) -> None:
        """Hold a writer turn before committing (:meth:`WriterTurns.begin`)."""
        await self.turns.begin(on_wait)

    # -- the catalog's work ---------------------------------------------------------------------------
    async def ingest(
        self,
        sources: Sequence[str],
        *,
        on_progress: ProgressFn | None = None,
        include: Sequence[str] | None = None,
        exclude: Sequence[str] | None = None,
        prune: bool = False,
        readers: Sequence[str] | None = None,
    ) -> IngestReport:
        """Ingest files, folders (recursive) and http(s) URLs (:meth:`Catalog.ingest`)."""
        return await self.catalog.ingest(
            sources, on_progress=on_progress, include=include, exclude=exclude, prune=prune, readers=readers
        )

    async def ingest_records(
        self,
        records: Iterable[Record | tuple[str, str, str] | Mapping[str, Any]],
        *,
        on_progress: ProgressFn | None = None,
        readers: Sequence[str] | None = None,
    ) -> IngestReport:
        """Ingest documents given as data (:meth:`Catalog.ingest_records`)."""
        return await self.catalog.ingest_records(records, on_progress=on_progress, readers=readers)

    async def delete(
        self, doc_id_or_source: str, *, on_wait: Callable[[str], None] | None = None, reader: Reader = EVERYONE
    ) -> list[str]:
        """Remove a document, or every document under a folder/JSON file (:meth:`Catalog.delete`)."""
        return await self.catalog.delete(doc_id_or_source, on_wait=on_wait, reader=reader)

    async def documents(self, reader: Reader = EVERYONE) -> list[DocumentRow]:
        return await self.catalog.documents(reader)

    async def document(
        self, doc_id_or_source: str, reader: Reader = EVERYONE
    ) -> tuple[DocumentRow, list[ChunkRow]] | None:
        """A document ``reader`` may read and its chunks in order; None when nothing matched."""
        return await self.catalog.document(doc_id_or_source, reader)

    async def set_access(
        self, doc_id_or_source: str, readers: Sequence[str] | None, reader: Reader = EVERYONE
    ) -> list[DocumentRow]:
        """New readers for documents ``reader`` may read (:meth:`Catalog.set_access`)."""
        return await self.catalog.set_access(doc_id_or_source, readers, reader)

    async def stats(self, reader: Reader = EVERYONE) -> KBStats:
        return await self.catalog.stats(reader)

    # -- search, the catalog's side -------------------------------------------------------------------
    async def query_vector(self, query: str) -> np.ndarray:
        """The embedding of ``query``, from the recent-queries cache when it is there."""
        return await self.catalog.query_vector(query)

    def documents_of(self, keys: Sequence[int]) -> dict[int, str]:
        return self.catalog.documents_of(keys)

    def hydrate(self, scored: Sequence[tuple[int, float]]) -> list[Hit]:
        return self.catalog.hydrate(scored)

    def reranker(self) -> RerankStep | None:
        """The reranker of ``[kb.options.reranker]`` (opened on first use, shared), or ``None``."""
        return self.catalog.reranker()

    def retriever(
        self, settings: dict[str, Any] | None = None, *, reranker: Reranker | None = None, reader: Reader = EVERYONE
    ) -> HybridRetriever:
        """A retriever over this index for ``reader`` (:meth:`Catalog.retriever`).

        Raises:
            ConfigError: invalid settings, or ``rerank`` on with no reranker configured.
        """
        return self.catalog.retriever(settings, reranker=reranker, reader=reader)

    # -- closing --------------------------------------------------------------------------------------
    async def close(self) -> None:
        await self.catalog.close()
