"""The knowledge-source contract: an index ingests documents and hands out retrievers.

``Index`` and ``Retriever`` are protocols: a backend conforms without inheriting. Hits are
plain data with everything a citation needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from reasonloop.events import Citation

__all__ = ["Filter", "Hit", "Index", "IngestProgress", "IngestReport", "KBStats", "Retriever"]


class Hit(BaseModel):
    """One retrieved chunk."""

    chunk_id: str
    document_id: str
    source: str
    title: str = ""
    text: str
    score: float = 0.0
    """The retrieval score (fused, dense or BM25, by the search mode)."""
    rerank_score: float | None = None
    """The reranker's score, when a reranker ordered the hits (``None`` otherwise)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """``page``, ``start``, ``end`` (character offsets in the page's text, or in the document's
    text when it has no pages) and whatever the loader kept."""

    def citation(self, marker: int | None = None, quote_chars: int = 300) -> Citation:
        """This hit as a citation (quote trimmed to ``quote_chars``)."""
        from reasonloop.events import Citation  # the event models load with the runs that cite, not with search

        return Citation(
            marker=marker,
            chunk_id=self.chunk_id,
            document_id=self.document_id,
            source=self.source,
            title=self.title or None,
            page=self.metadata.get("page"),
            start=self.metadata.get("start"),
            end=self.metadata.get("end"),
            chunk_start=self.metadata.get("start"),
            chunk_end=self.metadata.get("end"),
            quote=self.text[:quote_chars],
            score=self.score,
        )


class Filter(BaseModel):
    """One metadata condition; a list of them is ANDed.

    ``op``: ``eq``, ``in``, ``range`` (``value`` = ``[low, high]``, either may be null) or
    ``contains`` (substring of a string field, or member of a list field).
    """

    field: str
    op: str = "eq"
    value: Any = None


@runtime_checkable
class Retriever(Protocol):
    async def search(self, query: str, top_k: int = 10, filters: Sequence[Filter] | None = None) -> list[Hit]: ...


class IngestProgress(BaseModel):
    files_done: int = 0
    """Sources read and chunked (or found unchanged, or failed)."""
    files_total: int = 0
    chunks_done: int = 0
    chunks_total: int = 0
    current: str = ""
    chunks_embedded: int = 0
    """Chunks actually sent to the embedder (cache hits excluded), for an embedding rate."""
    seconds: float = 0.0
    """Time since the ingest started."""
    embed_seconds: float = 0.0
    """Time spent getting the vectors of the chunks embedded so far (what an embedding rate is measured
    over, with :attr:`chunks_embedded`); batches served wholly from the vector cache are not counted."""
    pages_done: int = 0
    """Pages read of the paged file being read (PDF pages, slides, sheets, chapters)."""
    pages_total: int = 0
    files_committed: int = 0
    """Sources finished for good, in the order they are read: every document of theirs committed
    (searchable, and kept if the ingest stops now), or nothing to do (unchanged, or failed)."""
    first_pending: str = ""
    """The first source, in that order, that is not finished yet (empty when all are)."""
    failed: int = 0
    """Sources (or records of a JSON/JSONL file) that could not be read, so far."""
    waiting: str = ""
    """What the ingest waits for before its next commit (another process writing to the same
    knowledge base), empty when it is not waiting."""


class IngestReport(BaseModel):
    added: list[str] = Field(default_factory=list)
    updated: list[str] = Field(default_factory=list)
    unchanged: list[str] = Field(default_factory=list)
    failed: dict[str, str] = Field(default_factory=dict)
    """Source -> reason, for files that could not be read; the rest of the batch still ingests."""
    warnings: dict[str, str] = Field(default_factory=dict)
    """Source -> what was wrong with it, for sources ingested in spite of a problem (a damaged PDF)."""
    deleted: list[str] = Field(default_factory=list)
    """Sources removed because they disappeared from an ingested folder (``prune``)."""
    skipped: dict[str, str] = Field(default_factory=dict)
    """Path -> why, for what a folder walk left out on purpose: a symbolic link loop, a link
    leading outside the folder, a broken link. Not a failure: the folder's files are ingested."""
    chunks_added: int = 0
    chunks_embedded: int = 0
    """Chunks whose vectors were computed (the rest came from the vector cache)."""
    seconds: float = 0.0


class KBStats(BaseModel):
    documents: int = 0
    chunks: int = 0
    bytes: int = 0
    sources: dict[str, int] = Field(default_factory=dict)
    """Source -> chunk count."""
    embedding_model: str | None = None
    last_update: float | None = None


class Index(Protocol):
    """A knowledge-source plugin (registered under kind ``index``)."""

    async def ingest(
        self, sources: Sequence[str], *, on_progress: Callable[[IngestProgress], None] | None = None
    ) -> IngestReport: ...

    def retriever(self, settings: dict[str, Any] | None = None) -> Retriever: ...

    async def stats(self) -> KBStats: ...
