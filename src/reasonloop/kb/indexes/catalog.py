"""The catalog an index keeps in its directory's ``kb.sqlite``: what was ingested, and the work on it
that does not depend on how the index searches.

Both built-in indexes hold one: :class:`~reasonloop.kb.indexes.local.LocalIndex` keeps BM25 and
vectors beside it in the same directory, :class:`~reasonloop.kb.indexes.milvus.MilvusIndex` a
Milvus collection. The catalog has the documents, their chunks and pages and the vector cache
(:class:`~reasonloop.kb.storage.store.MetadataStore`), refuses an embedding model other than the
one the index was built with, runs ingests and deletes in writer turns
(:class:`~reasonloop.kb.storage.turns.WriterTurns`), lists documents, reads the hits of a search
back from their chunk keys, and hands out retrievers. How the derived indexes are opened, updated,
repaired and searched is the index's own: the :class:`SearchSide` it gives its catalog.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from reasonloop.errors import ConfigError, KBError, KBModelMismatch
from reasonloop.kb.access import EVERYONE, Reader, readers_json
from reasonloop.kb.base import Hit, IngestProgress, IngestReport, KBStats
from reasonloop.kb.embedding.embedders import Embedder
from reasonloop.kb.ingest.chunking import Chunker
from reasonloop.kb.ingest.fetch import is_url
from reasonloop.kb.ingest.names import path_of, source_name
from reasonloop.kb.retrieval.hybrid import HybridRetriever, Reranker, SearchBackend
from reasonloop.kb.settings import LocalIndexOptions, parse_retriever_settings
from reasonloop.kb.storage.store import ChunkRow, DocumentRow, MetadataStore
from reasonloop.kb.storage.turns import DerivedIndexes, WriterTurns

if TYPE_CHECKING:
    # The ingestion pipeline (loaders, fetching, the vector cache) loads when something is
    # ingested: opening an index to search does not need it.
    from reasonloop.kb.ingest.pipeline import Ingestor
    from reasonloop.kb.ingest.records import Record
    from reasonloop.kb.retrieval.rerankers.base import RerankStep

__all__ = ["Catalog", "ProgressFn", "SearchSide", "index_directory"]

ProgressFn = Callable[[IngestProgress], None]


class SearchSide(DerivedIndexes, SearchBackend, Protocol):
    """What the index holding a catalog does its own way: the indexes it derives from the
    catalog's rows, and searching them.

    It is also what an ingest run writes through (``ensure_vectors``, ``commit_group``, with the
    index's ``path``, ``store``, ``embedder``, ``chunker``, ``options``, ``content_signature``
    and parse limits: :class:`~reasonloop.kb.ingest.pipeline.IngestTarget`).
    """

    def apply(
        self,
        removed: Sequence[int],
        lexical: Sequence[tuple[int, str]],
        keys: Sequence[int],
        vectors: np.ndarray,
        *,
        commit_lexical: bool = True,
    ) -> None:
        """Update the derived indexes after a sqlite commit."""
        ...

    def has_vector_file(self) -> bool:
        """Whether settling with ``flush_vectors`` writes a file (once per ingest, in a turn of its own)."""
        ...

    def close_search(self) -> None:
        """Close what search reads (under the catalog's mutation lock)."""
        ...


def index_directory(path: str | Path) -> Path:
    """``path`` resolved, as the directory of an index.

    Raises:
        KBError: ``path`` is a file.
    """
    directory = Path(path).expanduser().resolve()
    if directory.exists() and not directory.is_dir():
        raise KBError(f"{directory} exists and is not a directory", path=str(directory))
    return directory


class Catalog:
    """The catalog of the index directory ``path`` (created if missing).

    Args:
        path: Index directory, from :func:`index_directory`.
        embedder: Makes the vectors; must match the one the index was built with.
        options: The index's ``[kb.options]``.
        index: The index holding this catalog (not called until it is built).

    Raises:
        KBModelMismatch: the index was built with another embedding model.
        KBError: ``kb.sqlite`` is not a reasonloop index database.
    """

    def __init__(self, path: Path, embedder: Embedder, options: LocalIndexOptions, index: SearchSide) -> None:
        self.path = path
        self.embedder = embedder
        self.options = options
        self.index = index
        self.chunker = Chunker(options.chunk_tokens, options.chunk_overlap)
        self.content_signature = f"{self.chunker.signature}/title={int(options.embed_title)}/once"
        self.path.mkdir(parents=True, exist_ok=True)
        self.store = MetadataStore(self.path / "kb.sqlite")
        try:
            self._check_model()
        except KBModelMismatch:
            self.store.close()
            raise
        self.turns = WriterTurns(self.store, self.path / "writer.lock", index)
        self._write_lock = asyncio.Lock()
        self._query_vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._reranker: RerankStep | None = None

    # -- model bookkeeping ----------------------------------------------------------------------------
    def _check_model(self) -> None:
        stored = self.store.get_meta("embedding_model")
        if stored and stored != self.embedder.vector_space:
            raise KBModelMismatch(
                f"the knowledge base at {self.path} was built with embedding model {stored!r}, "
                f"but {self.embedder.vector_space!r} is configured. Vectors of different models cannot be mixed: "
                f"configure the original model again, or re-index by deleting {self.path} "
                "(or choosing a new --kb directory) and ingesting your documents again.",
                path=str(self.path),
                stored=stored,
                configured=self.embedder.vector_space,
            )

    def check_dim(self, dim: int) -> str | None:
        """The stored embedding size (None before the first vectors).

        Raises:
            KBModelMismatch: ``dim`` differs from it.
        """
        stored = self.store.get_meta("embedding_dim")
        if stored and int(stored) != dim:
            raise KBModelMismatch(
                f"{self.embedder.name!r} produced {dim}-d vectors but the knowledge base at {self.path} "
                f"holds {stored}-d vectors; re-index into a new directory",
                path=str(self.path),
            )
        return stored

    # -- ingest ---------------------------------------------------------------------------------------
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
        """Ingest files, folders (recursive) and http(s) URLs.

        Args:
            sources: Paths and URLs.
            on_progress: Called with an :class:`IngestProgress` as work advances.
            include: Globs a folder's files must match (default: every supported type).
            exclude: Globs of files or folders to skip.
            prune: Delete indexed documents under an ingested folder whose file is gone.
            readers: Who may read the documents (canonical names,
                :func:`~reasonloop.kb.access.parse_readers`), unchanged ones included. ``None``:
                a file's readers come from the nearest ``.readers`` sidecar file; without one, a
                document keeps the readers it had (a new one: everyone in the tenant).
        """
        from reasonloop.kb.ingest.pipeline import Ingestor

        ingestor = Ingestor(self.index, on_progress, commit_chunks=self.options.commit_chunks, readers=readers)
        items = await asyncio.to_thread(ingestor.expand, sources, include, exclude)

        async def produce(queue: asyncio.Queue[Any]) -> None:
            await ingestor.produce_files(items, queue)

        report = await self._run(ingestor, produce)
        await self._set_unchanged_access(ingestor.access_of_unchanged)
        for doc_id in ingestor.stale:
            report.deleted.extend(await self.delete(doc_id))
        if prune:
            for doc in await asyncio.to_thread(self._vanished, sources):
                await self.delete(doc.id)
                report.deleted.append(doc.source)
        return report

    def _vanished(self, sources: Sequence[str]) -> list[DocumentRow]:
        """Indexed documents under the folders in ``sources`` whose file no longer exists."""
        gone: list[DocumentRow] = []
        for source in sources:
            folder = Path(source).expanduser()
            if not is_url(source) and folder.is_dir():
                prefix = source_name(str(folder.resolve())) + "/"
                gone.extend(d for d in self.store.documents(prefix) if not _file_exists(d.source))
        return gone

    async def ingest_records(
        self,
        records: Iterable[Record | tuple[str, str, str] | Mapping[str, Any]],
        *,
        on_progress: ProgressFn | None = None,
        readers: Sequence[str] | None = None,
    ) -> IngestReport:
        """Ingest documents given as data: :class:`Record`, ``(id, title, text)`` or dicts.

        Dicts carry ``id`` (or BEIR's ``_id``), ``text``, optional ``title``, ``source``,
        ``metadata``; any other key joins the metadata. ``readers`` as for :meth:`ingest`.
        """
        from reasonloop.kb.ingest.pipeline import Ingestor
        from reasonloop.kb.ingest.records import as_records

        ingestor = Ingestor(self.index, on_progress, commit_chunks=self.options.commit_chunks, readers=readers)

        async def produce(queue: asyncio.Queue[Any]) -> None:
            await ingestor.produce_records(as_records(records), queue)

        report = await self._run(ingestor, produce)
        await self._set_unchanged_access(ingestor.access_of_unchanged)
        return report

    async def _set_unchanged_access(self, access: Mapping[str, str]) -> None:
        """Readers given (or found in a sidecar) for sources left unchanged by an ingest."""
        for source, stored in access.items():
            docs = await asyncio.to_thread(self._resolve, source)
            await asyncio.to_thread(self.store.set_access, [d.id for d in docs], stored)

    async def _run(self, ingestor: Ingestor, produce: Callable[[asyncio.Queue[Any]], Any]) -> IngestReport:
        turns = self.turns
        async with self._write_lock:
            queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=64)
            producer = asyncio.ensure_future(produce(queue))
            consumer = asyncio.ensure_future(ingestor.consume(queue))
            ok = False
            try:
                await asyncio.gather(producer, consumer)
                ok = True
            finally:
                for task in (producer, consumer):
                    task.cancel()
                await asyncio.gather(producer, consumer, return_exceptions=True)
                # Under the mutation lock: a consumer cancelled while its commit ran in a worker
                # thread returns at once, but the thread finishes that commit; settle after it.
                flushed = False
                with turns.mutate:
                    if turns.began is not None:
                        if not ok:
                            turns.repair(flush=False)
                        turns.end(flush_vectors=True)
                        flushed = True
            if ok and not flushed and self.index.has_vector_file() and ingestor.report.chunks_added:
                # The vector file is written once per ingest (opening reads it), in a turn of its own.
                await turns.begin()
                with turns.mutate:
                    turns.end(flush_vectors=True)
        ingestor.report.seconds = time.perf_counter() - ingestor.started
        return ingestor.report

    # -- delete / list --------------------------------------------------------------------------------
    def _resolve(self, doc_id_or_source: str) -> list[DocumentRow]:
        doc_id_or_source = source_name(doc_id_or_source)  # a path that is not UTF-8 is stored escaped
        doc = self.store.document(doc_id_or_source)
        if doc is not None:
            return [doc]
        target = doc_id_or_source
        if not is_url(target):
            target = source_name(os.path.realpath(os.path.expanduser(target)))
        doc = self.store.document(target)
        if doc is not None:
            return [doc]
        # A folder or a JSON file: every document under it.
        return [d for d in self.store.documents(target) if d.source[len(target) : len(target) + 1] in ("/", "#")]

    async def delete(
        self,
        doc_id_or_source: str,
        *,
        on_wait: Callable[[str], None] | None = None,
        reader: Reader = EVERYONE,
    ) -> list[str]:
        """Remove a document (by id or source), or every document under a folder/JSON file,
        among those ``reader`` may read.

        Args:
            on_wait: Called with a message when another process is writing and this waits for it.

        Returns:
            The sources removed (empty when nothing matched).
        """
        async with self._write_lock:
            docs = await asyncio.to_thread(self._resolve, doc_id_or_source)
            docs = [d for d in docs if reader.may_read(_stored(d))]
            if not docs:
                return []
            await self.turns.begin(on_wait)
            with self.turns.mutate:
                try:
                    removed = self.store.delete_documents([d.id for d in docs])
                    self.index.apply(removed, [], [], np.zeros((0, 0), np.float32))
                finally:
                    self.turns.end(flush_vectors=True)
            return [d.source for d in docs]

    async def documents(self, reader: Reader = EVERYONE) -> list[DocumentRow]:
        return self.store.documents(reader=reader)

    async def document(
        self, doc_id_or_source: str, reader: Reader = EVERYONE
    ) -> tuple[DocumentRow, list[ChunkRow]] | None:
        """A document ``reader`` may read and its chunks in order; None when nothing matched."""
        row = self.store.document(source_name(doc_id_or_source), reader)
        return None if row is None else (row, self.store.chunks_of(row.id))

    async def set_access(
        self, doc_id_or_source: str, readers: Sequence[str] | None, reader: Reader = EVERYONE
    ) -> list[DocumentRow]:
        """Give a document (or every document under a folder/JSON file) that ``reader`` may read
        new readers (``None``: everyone). Returns the documents changed (empty: none matched)."""
        docs = [d for d in await asyncio.to_thread(self._resolve, doc_id_or_source) if reader.may_read(_stored(d))]
        if not docs:
            return []
        await asyncio.to_thread(self.store.set_access, [d.id for d in docs], readers_json(readers))
        changed = [await asyncio.to_thread(self.store.document, d.id) for d in docs]
        return [d for d in changed if d is not None]

    async def stats(self, reader: Reader = EVERYONE) -> KBStats:
        docs, chunks, size = self.store.totals(reader)
        # a reader who may not read everything learns when its own documents changed, not others'
        last = self.store.get_meta("last_update") if reader.everything else self.store.last_updated(reader)
        return KBStats(
            documents=docs,
            chunks=chunks,
            bytes=size,
            sources=self.store.source_counts(reader),
            embedding_model=self.store.get_meta("embedding_model"),
            last_update=float(last) if last else None,
        )

    # -- search ---------------------------------------------------------------------------------------
    async def query_vector(self, query: str) -> np.ndarray:
        """The embedding of ``query``, from the recent-queries cache when it is there."""
        vector = self._query_vectors.get(query)
        if vector is None:
            vector = (await self.embedder.embed_queries([query]))[0]
            if self.options.query_cache > 0:
                self._query_vectors[query] = vector
                if len(self._query_vectors) > self.options.query_cache:
                    self._query_vectors.popitem(last=False)
        else:
            self._query_vectors.move_to_end(query)
        return vector

    def documents_of(self, keys: Sequence[int]) -> dict[int, str]:
        return self.store.documents_of(keys)

    def hydrate(self, scored: Sequence[tuple[int, float]]) -> list[Hit]:
        rows = self.store.chunks([k for k, _ in scored])
        hits = []
        for key, score in scored:
            row = rows.get(key)
            if row is None:  # an entry whose chunk was deleted meanwhile
                continue
            hits.append(
                Hit(
                    chunk_id=row.id,
                    document_id=row.doc_id,
                    source=row.source,
                    title=row.title,
                    text=row.text,
                    score=score,
                    metadata=row.metadata,
                )
            )
        return hits

    def reranker(self) -> RerankStep | None:
        """The reranker of ``[kb.options.reranker]`` (opened on first use, shared), or ``None``."""
        if self._reranker is None and self.options.reranker:
            from reasonloop.kb.retrieval.rerankers.base import RerankStep, create_reranker

            made = create_reranker(self.options.reranker)
            self._reranker = RerankStep(made) if made is not None else None
        return self._reranker

    def retriever(
        self, settings: dict[str, Any] | None = None, *, reranker: Reranker | None = None, reader: Reader = EVERYONE
    ) -> HybridRetriever:
        """A retriever over the index (``settings``: :class:`RetrieverSettings` fields) that
        searches only the documents ``reader`` may read.

        With ``rerank`` on, the configured reranker (or ``reranker``) orders the best
        ``rerank_depth`` fused candidates; with it off, ``reranker`` is ignored too.

        Raises:
            ConfigError: invalid settings, or ``rerank`` on with no reranker configured.
        """
        s = parse_retriever_settings(self.options.retriever, settings)
        if s.rerank is False:
            reranker = None
        elif reranker is None:
            reranker = self.reranker()
            if reranker is None and s.rerank:
                raise ConfigError("rerank is on but no reranker is configured ([kb.options.reranker])")
        return HybridRetriever(
            self.index,
            mode=s.mode,
            top_k=s.top_k,
            fusion=s.fusion,
            rrf_k=s.rrf_k,
            weights={"dense": s.dense_weight, "lexical": s.lexical_weight},
            candidates=s.candidates,
            reranker=reranker,
            rerank_depth=s.rerank_depth,
            reader=reader,
        )

    async def close(self) -> None:
        async with self._write_lock:
            with self.turns.mutate:
                self.index.close_search()
            self.store.close()
        if self._reranker is not None:
            await self._reranker.reranker.aclose()
            self._reranker = None


def _stored(doc: DocumentRow) -> str | None:
    """A row's readers back in their stored form (what :meth:`Reader.may_read` reads)."""
    return None if doc.readers is None else readers_json(doc.readers)


def _file_exists(source: str) -> bool:
    """Whether the file a document was read from is still there (a record of a JSON file is
    ``file#id``; a file name may hold ``#`` too, and may have been stored escaped)."""
    for name in dict.fromkeys((source, source.split("#")[0], source.rsplit("#", 1)[0])):
        if Path(name).exists() or Path(path_of(name)).exists():
            return True
    return False
