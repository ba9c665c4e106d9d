"""The knowledge base as users meet it: open, ingest, search, inspect, delete.

Example::

    from reasonloop.kb import KnowledgeBase

    async with KnowledgeBase.open("my-kb") as kb:
        report = await kb.ingest(["docs/", "https://example.org/page.html"])
        for hit in await kb.search("how do I configure Qdrant?", top_k=5):
            print(hit.score, hit.source, hit.metadata.get("page"), hit.text[:80])
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reasonloop.config import Settings, load_settings
from reasonloop.errors import DocumentNotFound, KBError
from reasonloop.kb.access import EVERYONE, Reader, parse_readers
from reasonloop.kb.base import Filter, Hit, IngestReport, KBStats
from reasonloop.kb.embedding.embedders import Embedder, create_embedder
from reasonloop.kb.indexes.catalog import ProgressFn
from reasonloop.kb.indexes.local import LocalIndex
from reasonloop.kb.retrieval.hybrid import HybridRetriever, Reranker, SearchMode
from reasonloop.kb.storage.store import ChunkRow, DocumentRow
from reasonloop.registry import Registry, resolve

if TYPE_CHECKING:
    from reasonloop.kb.ingest.records import Record

__all__ = ["KnowledgeBase", "as_filters"]

FilterLike = Filter | Mapping[str, Any]


def as_filters(filters: Sequence[FilterLike] | Mapping[str, Any] | None) -> list[Filter] | None:
    """Normalise filters: a list of :class:`Filter`/dicts, or ``{"field": value}`` meaning equality."""
    if filters is None:
        return None
    if isinstance(filters, Mapping):
        return [Filter(field=k, op="eq", value=v) for k, v in filters.items()]
    return [f if isinstance(f, Filter) else Filter(**f) for f in filters]


class KnowledgeBase:
    """A searchable collection of documents backed by an index plugin (``local`` by default).

    Use :meth:`open` rather than the constructor. What it answers is what its :attr:`reader` may
    read (every document, unless it is a view made by :meth:`for_reader`).
    """

    def __init__(
        self, index: LocalIndex, *, owns_embedder: bool = False, reader: Reader = EVERYONE, owns_index: bool = True
    ) -> None:
        self.index = index
        self._owns_embedder = owns_embedder
        self._owns_index = owns_index
        self.reader = reader
        """Whom this knowledge base answers: searches, listings, pages, counts and deletes see
        only the documents it may read (:mod:`reasonloop.kb.access`)."""

    def for_reader(self, reader: Reader) -> KnowledgeBase:
        """The same knowledge base as ``reader`` sees it (closing the view leaves the index open).

        Example::

            alice = kb.for_reader(Reader.of("alice", ["finance"]))
            await alice.search("budget")      # only what alice and the finance group may read
        """
        return KnowledgeBase(self.index, reader=reader, owns_index=False)

    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
        *,
        registry: Registry | None = None,
    ) -> KnowledgeBase:
        """Open (or create) the knowledge base at ``path``.

        Args:
            path: Index directory; default ``settings.kb.path`` (``.reasonloop`` in the working directory).
            settings: Effective settings; default :func:`~reasonloop.config.load_settings`.
            embedder: Embedder to use instead of ``settings.kb.embedder`` (e.g. a
                :class:`~reasonloop.kb.embedding.cache.CachedEmbedder`).
            registry: Plugin registry for the index and embedder ids.

        Raises:
            KBModelMismatch: the index was built with another embedding model.
            PluginNotFound: unknown ``kb.index`` or ``kb.embedder`` id.
            ConfigError: invalid ``kb.options``.
        """
        settings = settings or load_settings()
        options = dict(settings.kb.options)
        owns = embedder is None
        if embedder is None:
            embedder = create_embedder(settings.kb.embedder, options.get("embedder"), registry)
        factory: Any = resolve("index", settings.kb.index, registry)
        index = factory(Path(path if path is not None else settings.kb.path), embedder, options)
        if hasattr(index, "parse_limits"):
            index.parse_limits = settings.kb.limits
        return cls(index, owns_embedder=owns)

    async def __aenter__(self) -> KnowledgeBase:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def path(self) -> Path:
        return self.index.path

    async def ingest(
        self,
        paths_or_urls: str | Sequence[str],
        *,
        on_progress: ProgressFn | None = None,
        include: Sequence[str] | None = None,
        exclude: Sequence[str] | None = None,
        prune: bool = False,
        readers: str | Sequence[str] | None = None,
    ) -> IngestReport:
        """Ingest files, folders and URLs; unchanged ones cost nothing, bad ones land in ``failed``.

        Args:
            readers: Who may read these documents (``"alice, group:finance"`` or a list); ``None``:
                each file's nearest ``.readers`` sidecar, else what the document had (a new one:
                everyone in the tenant).

        Raises:
            RequestInvalid: ``readers`` names no valid reader.
        """
        sources = [paths_or_urls] if isinstance(paths_or_urls, str) else list(paths_or_urls)
        kwargs: dict[str, Any] = {"include": include, "exclude": exclude, "prune": prune}
        if readers is not None:
            kwargs["readers"] = parse_readers(readers)
        return await self.index.ingest(sources, on_progress=on_progress, **kwargs)

    async def ingest_records(
        self,
        records: Iterable[Record | tuple[str, str, str] | Mapping[str, Any]],
        *,
        on_progress: ProgressFn | None = None,
        readers: str | Sequence[str] | None = None,
    ) -> IngestReport:
        """Ingest documents given as data (no files): ``(id, title, text)`` tuples, dicts or :class:`Record`.

        The record id becomes the document id, so hits map back to the caller's ids. ``readers``
        as for :meth:`ingest`.
        """
        if readers is None:
            return await self.index.ingest_records(records, on_progress=on_progress)
        return await self.index.ingest_records(records, on_progress=on_progress, readers=parse_readers(readers))

    async def set_readers(self, doc_id_or_source: str, readers: str | Sequence[str] | None) -> list[DocumentRow]:
        """Change who may read a document (or every document under a folder or JSON file);
        ``None`` opens it to everyone in the tenant. The next search of every process follows.

        Returns:
            The documents changed.

        Raises:
            DocumentNotFound: no such document (among those this knowledge base's reader may read).
            RequestInvalid: ``readers`` names no valid reader.
        """
        canonical = None if readers is None else parse_readers(readers)
        changed = await self.index.set_access(doc_id_or_source, canonical, self.reader)
        if not changed:
            raise DocumentNotFound(f"no document with id or source {doc_id_or_source!r}", document=doc_id_or_source)
        return changed

    async def search(
        self,
        query: str,
        top_k: int = 10,
        filters: Sequence[FilterLike] | Mapping[str, Any] | None = None,
        mode: SearchMode = "hybrid",
        *,
        reranker: Reranker | None = None,
        rerank: bool | None = None,
        candidates: int | None = None,
        per_document: bool = False,
    ) -> list[Hit]:
        """The ``top_k`` best chunks for ``query`` (``[]`` on an empty knowledge base).

        Args:
            query: Free text, any language the embedder handles.
            top_k: Number of hits.
            filters: Metadata conditions applied before ranking (unknown fields match nothing).
            mode: ``hybrid`` (dense and BM25 fused), ``dense`` or ``lexical``.
            reranker: A hook re-ordering the fused candidates instead of the configured reranker.
            rerank: Use the reranker (``[kb.options.reranker]``, or ``reranker``): ``None`` follows
                ``[kb.options.retriever] rerank`` (on when one is configured), ``False`` never.
            candidates: How many fused candidates the reranker orders (default ``rerank_depth``).
            per_document: Return the best chunk of each of the ``top_k`` best documents instead
                (document-level ranking, as retrieval benchmarks score it): each retriever's
                chunks are folded into documents before fusion
                (:meth:`~reasonloop.kb.retrieval.hybrid.HybridRetriever.search_documents`).

        Raises:
            ConfigError: ``rerank=True`` with no reranker configured, or bad ``candidates``.
        """
        settings: dict[str, Any] = {"mode": mode, "top_k": max(top_k, 1)}
        if rerank is not None:
            settings["rerank"] = rerank
        if candidates is not None:
            settings["rerank_depth"] = candidates
        retriever = self.retriever(settings, reranker=reranker)
        if not per_document:
            return await retriever.search(query, top_k, as_filters(filters))
        return await retriever.search_documents(query, top_k, as_filters(filters))

    def retriever(self, settings: dict[str, Any] | None = None, *, reranker: Reranker | None = None) -> HybridRetriever:
        """A :class:`~reasonloop.kb.base.Retriever` for tools and reasoning strategies (searching
        only what :attr:`reader` may read)."""
        if self.reader.everything:
            return self.index.retriever(settings, reranker=reranker)
        return self.index.retriever(settings, reranker=reranker, reader=self.reader)

    async def stats(self) -> KBStats:
        """Counts of the documents :attr:`reader` may read."""
        if self.reader.everything:
            return await self.index.stats()
        return await self.index.stats(self.reader)

    async def documents(self) -> list[DocumentRow]:
        """Every document :attr:`reader` may read: id, source, title, content hash, bytes, mtime,
        last update, chunk count, readers."""
        if self.reader.everything:
            return await self.index.documents()
        return await self.index.documents(self.reader)

    async def document(self, doc_id_or_source: str) -> tuple[DocumentRow, list[ChunkRow]] | None:
        """A document (by id or source) and its chunks in order; None when nothing matched (or
        :attr:`reader` may not read it)."""
        if self.reader.everything:
            return await self.index.document(doc_id_or_source)
        return await self.index.document(doc_id_or_source, self.reader)

    async def page(self, doc_id_or_source: str, number: int) -> tuple[DocumentRow, str, list[int]]:
        """Page ``number`` of a document: its row, the page's text (what chunk offsets point
        into) and the numbers of all its pages with text.

        Raises:
            DocumentNotFound: no such document, or no such page of it.
        """
        store = self.index.store
        doc = await asyncio.to_thread(store.document, doc_id_or_source, self.reader)
        if doc is None:
            raise DocumentNotFound(f"no document with id or source {doc_id_or_source!r}", document=doc_id_or_source)
        text = await asyncio.to_thread(store.page, doc.id, number)
        numbers = await asyncio.to_thread(store.page_numbers, doc.id)
        if text is None:
            has = f"its pages with text: {numbers[0]}-{numbers[-1]}" if numbers else "re-ingest it to store its pages"
            raise DocumentNotFound(f"document {doc.id!r} has no page {number} ({has})", document=doc.id, page=number)
        return doc, text, numbers

    async def text(self, doc_id_or_source: str) -> tuple[DocumentRow, str] | None:
        """A document's whole text: its stored pages in order, a blank line between two. For a
        document ingested before page texts were stored, its chunks stitched by their offsets
        (their overlaps removed). None when nothing matched."""
        found = await self.document(doc_id_or_source)
        if found is None:
            return None
        row, chunks = found
        store = self.index.store
        numbers = await asyncio.to_thread(store.page_numbers, row.id)
        if numbers:
            pages = [await asyncio.to_thread(store.page, row.id, n) for n in numbers]
            return row, "\n\n".join(p for p in pages if p)
        return row, _stitched(chunks)

    async def delete(self, doc_id_or_source: str, *, on_wait: Callable[[str], None] | None = None) -> list[str]:
        """Delete a document by id or source (a folder or JSON file removes everything under it).

        Args:
            on_wait: Called with a message when another process is writing to the knowledge base
                and this waits for its turn (default: a log warning).

        Returns:
            The removed sources.

        Raises:
            KBError: nothing matched.
        """
        extra: dict[str, Any] = {} if self.reader.everything else {"reader": self.reader}
        if on_wait is not None:  # an index plugin need not know the argument
            extra["on_wait"] = on_wait
        removed = await self.index.delete(doc_id_or_source, **extra)
        if not removed:
            raise KBError(f"no document with id or source {doc_id_or_source!r}", target=doc_id_or_source)
        return removed

    async def close(self) -> None:
        if not self._owns_index:  # a reader's view: the knowledge base it was made from stays open
            return
        await self.index.close()
        if self._owns_embedder:
            await self.index.embedder.aclose()


def _stitched(chunks: Sequence[ChunkRow]) -> str:
    """Chunks in page order, each page's joined with their overlaps (by character offsets) removed,
    a blank line between two pages."""
    parts: list[str] = []
    end, page = 0, None
    for chunk in sorted(chunks, key=lambda c: (c.metadata.get("page") or 0, c.metadata.get("start") or 0)):
        if parts and chunk.metadata.get("page") != page:
            parts.append("\n\n")
            end = 0  # offsets start again on every page
        page = chunk.metadata.get("page")
        start = chunk.metadata.get("start")
        if start is None:
            parts.append(chunk.text)
            continue
        parts.append(chunk.text[max(0, end - start) :])
        end = max(end, start + len(chunk.text))
    return "".join(parts)
