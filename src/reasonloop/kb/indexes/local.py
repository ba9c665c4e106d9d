"""The built-in ``local`` index: everything in one directory, nothing to run.

Layout of the directory (``.reasonloop/`` by default)::

    kb.sqlite        documents, chunks, cached vectors, meta (embedding model, dim)
    lexical/         tantivy BM25 index          (derived from kb.sqlite)
    vectors.npz      flat vectors, small indexes (derived from kb.sqlite)
    vectors.usearch  HNSW graph, large indexes   (derived from kb.sqlite)
    writer.lock      flock held by the process writing, one writer turn at a time

Crash safety: sqlite is the source of truth, and a document is in the index once its sqlite
transaction commits. The derived indexes are updated after that commit, under a ``dirty`` flag
set for each writer turn; when a process finds the flag set and the writer lock free (the
writer was killed), it reconciles them with sqlite: vectors missing from the HNSW graph are
re-added from the cached vectors, entries whose chunk no longer exists are purged, and BM25 is
rebuilt from the stored text. Documents that never reached their commit point are simply
absent and get ingested again.

Many processes: any number may open the directory. Readers take no lock: before each search
they compare sqlite's ``data_version`` with the one they last saw (no I/O), and when another
process committed they reload the BM25 searcher and bring their in-memory vectors in line with
sqlite (the vectors of new chunks come from the vector cache in sqlite). Writers take turns
under ``writer.lock``: a turn begins by catching up in the same way, commits groups of
documents for about :data:`TURN_S` seconds, then commits BM25, lets go of tantivy's own writer
lock and of ``writer.lock``; the embedding of the next group runs outside any lock. A writer
that finds the lock taken waits, saying so through the ingest progress (or the log).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np

from reasonloop.config import secret
from reasonloop.errors import ConfigError, KBError, KBModelMismatch
from reasonloop.kb.base import Filter, Hit, IngestProgress, IngestReport, KBStats
from reasonloop.kb.embedding.embedders import Embedder
from reasonloop.kb.ingest.chunking import Chunker
from reasonloop.kb.ingest.fetch import is_url
from reasonloop.kb.ingest.limits import ParseLimits
from reasonloop.kb.ingest.names import path_of, source_name
from reasonloop.kb.retrieval.hybrid import HybridRetriever, Reranker
from reasonloop.kb.retrieval.lexical import LexicalIndex
from reasonloop.kb.retrieval.vector import LocalVectorStore, VectorStore
from reasonloop.kb.settings import LocalIndexOptions, parse_options, parse_retriever_settings
from reasonloop.kb.storage.locking import WriterLock
from reasonloop.kb.storage.store import ChunkRow, DocumentRow, DocumentWrite, MetadataStore
from reasonloop.registry import PluginInfo

if TYPE_CHECKING:
    # The ingestion pipeline (loaders, fetching, the vector cache) loads when something is
    # ingested: opening an index to search does not need it.
    from reasonloop.kb.ingest.pipeline import Ingestor
    from reasonloop.kb.ingest.records import Record
    from reasonloop.kb.retrieval.rerankers.base import RerankStep

__all__ = ["LocalIndex", "LocalIndexOptions"]

ProgressFn = Callable[[IngestProgress], None]
_T = TypeVar("_T")
logger = logging.getLogger(__name__)

TURN_S = 1.0
"""A writer lets a waiting writer in after holding the writer lock about this long (at the end of
a commit group): each turn ends with a BM25 commit, so this is also how often BM25 commits."""

REPAIR_EVERY_S = 1.0
"""How often a reader that saw the dirty flag checks whether the writer that set it is gone."""


class LocalIndex:
    """The ``local`` index: sqlite + tantivy + usearch (or Qdrant) under ``path``.

    Args:
        path: Index directory (created if missing).
        embedder: Makes the vectors; must match the one the index was built with.
        options: :class:`LocalIndexOptions` or the ``[kb.options]`` table.

    Raises:
        KBModelMismatch: the index was built with another embedding model.
        ConfigError: invalid options.
    """

    info: ClassVar[PluginInfo] = PluginInfo(
        id="local", name="Local index", description="Embedded hybrid index (sqlite, tantivy BM25, usearch HNSW)."
    )

    def __init__(self, path: str | Path, embedder: Embedder, options: dict[str, Any] | LocalIndexOptions | None = None):
        self.path = Path(path).expanduser().resolve()
        if self.path.exists() and not self.path.is_dir():
            raise KBError(f"{self.path} exists and is not a directory", path=str(self.path))
        self.options = parse_options(options)
        self.embedder = embedder
        self.chunker = Chunker(self.options.chunk_tokens, self.options.chunk_overlap)
        self.content_signature = f"{self.chunker.signature}/title={int(self.options.embed_title)}/once"
        self.parse_limits = ParseLimits()
        """What one file may cost while it is parsed (``[kb.limits]``, set by :meth:`KnowledgeBase.open`)."""
        self.parse_loaders: dict[str, str] = {}
        """Loader plugins: a suffix -> ``package.module:function``, run in the parsing workers."""
        self.path.mkdir(parents=True, exist_ok=True)
        self.store = MetadataStore(self.path / "kb.sqlite")
        try:
            self._check_model()
        except KBModelMismatch:
            self.store.close()
            raise
        self.vectors: VectorStore | None = None
        self._open_search()
        self._reranker: RerankStep | None = None
        self._write_lock = asyncio.Lock()
        self._query_vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._mutate = threading.RLock()  # sqlite commits + derived-index updates, vs. repairs and catch-ups
        self._writer = WriterLock(self.path / "writer.lock")
        self._turn_began: float | None = None
        """When this process's current writer turn began (None: it holds no turn)."""
        self._seen_version: int | None = None
        self._suspect_dirty = False
        """The dirty flag was set when last looked at, by a writer of another process."""
        self._last_repair_try = 0.0
        self._view: tuple[int, int, int] | None = None
        """sqlite's :meth:`~MetadataStore.key_summary` that the in-memory vectors match (None: unknown)."""
        # Repairs need the writer lock. Without it another process is writing: its sqlite
        # commits run ahead of its BM25 commits, so this one only brings its view up to date,
        # and every write operation below catches up again once it holds the lock.
        if self._writer.try_acquire():
            try:
                self.reconcile()
            finally:
                self._writer.release()
        else:
            self.catch_up(force=True)

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

    def _open_search(self) -> None:
        """Open what search reads (BM25 here; the vectors once their size is known)."""
        self.lexical = self._derived(lambda: LexicalIndex(self.path / "lexical"), [self.path / "lexical"])
        dim = self.store.get_meta("embedding_dim")
        if dim:
            self.ensure_vectors(int(dim))

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

    def ensure_vectors(self, dim: int) -> VectorStore:
        """The vector store, created on first use once the embedding size is known."""
        stored = self.check_dim(dim)
        if not stored:
            self.store.set_meta(embedding_model=self.embedder.vector_space, embedding_dim=dim)
        if self.vectors is None:
            if self.options.vector_store == "qdrant":
                from reasonloop.kb.indexes.qdrant import QdrantVectorStore

                self.vectors = QdrantVectorStore(
                    dim,
                    url=self.options.qdrant_url,
                    path=None if self.options.qdrant_url else self.path / "qdrant",
                    collection=self.options.qdrant_collection,
                    api_key=secret(self.options.qdrant_api_key_env),
                )
            else:
                self.vectors = self._derived(
                    lambda: LocalVectorStore(
                        self.path / "vectors.usearch",
                        dim,
                        exact_below=self.options.exact_below,
                        ef_search=self.options.ef_search,
                    ),
                    [self.path / "vectors.usearch", self.path / "vectors.npz"],
                )
        return self.vectors

    def _derived(self, make: Callable[[], _T], files: Sequence[Path]) -> _T:
        """Open a derived index; an unreadable one is deleted and rebuilt from sqlite by :meth:`reconcile`."""
        try:
            return make()
        except KBError as exc:
            logger.warning("rebuilding %s: %s", ", ".join(map(str, files)), exc.message)
            for f in files:
                if f.is_dir():
                    shutil.rmtree(f)
                else:
                    f.unlink(missing_ok=True)
            return make()

    # -- consistency ----------------------------------------------------------------------------------
    def reconcile(self) -> None:
        """Bring BM25 and vectors in line with sqlite (cheap when nothing is off).

        Only call it holding the writer lock.
        """
        with self._mutate:
            self._reconcile()

    def _reconcile(self, *, flush: bool = True) -> None:
        """:meth:`_sync`, then repair what a killed writer left: documents whose vectors are
        lost, a BM25 index that disagrees with sqlite; ``flush`` writes the vector file."""
        dirty = self.store.dirty
        self.lexical.commit()  # what this process applied, first: a rebuild must not meet it pending
        lost = self._sync()
        if lost:  # no cached vector: drop those documents so the next ingest redoes them
            self.store.delete_documents(self.store.doc_ids_of_keys(lost))
            self._view = None
        if flush and self.vectors is not None:
            self.vectors.flush()
        if dirty or len(self.lexical) != self.store.chunk_count():
            self.lexical.clear()
            for batch in self.store.iter_lexical():
                self.lexical.add(batch)
            self.lexical.release_writer()
        if dirty:
            self.store.dirty = False
        self._suspect_dirty = False

    def _sync(self) -> list[int]:
        """Bring this process's view in line with sqlite, in memory only: reload the BM25
        searcher, add the vectors of chunks committed elsewhere (from the vector cache), drop
        those of chunks deleted elsewhere.

        Returns:
            Keys of chunks whose vector is in no cache (only a repair can deal with them).
        """
        self._seen_version = self.store.data_version()
        self.lexical.refresh()
        if self.vectors is None:
            dim = self.store.get_meta("embedding_dim")
            if not dim:
                return []
            self.ensure_vectors(int(dim))
            assert self.vectors is not None
        missing: np.ndarray | None = None
        if self._view is not None:
            # What changed since the last look: the keys above the largest seen, the removals
            # noted since. Exact when the count agrees; else (a removal no longer remembered, a
            # writer of an older version that noted none) every key is compared.
            old_top, old_count, old_seq = self._view
            view, added, removed = self.store.changes_since(old_top, old_seq)
            if removed is not None:
                gone = np.unique(removed[removed <= old_top])
                if view[1] == old_count + len(added) - len(gone):
                    if len(gone):
                        self.vectors.remove([int(k) for k in gone])
                    missing = added
        else:
            view = self.store.key_summary()
        if missing is None:
            keys = self.store.all_keys()
            have = self.vectors.keys()
            extra = np.setdiff1d(have, keys)
            missing = np.setdiff1d(keys, have)
            if len(extra):
                self.vectors.remove([int(k) for k in extra])
        self._view = view
        lost: list[int] = []
        if len(missing):
            model = self.store.get_meta("embedding_model") or self.embedder.vector_space
            found, matrix, lost = self.store.vectors_for(model, [int(k) for k in missing])
            if found:
                self.vectors.add(found, matrix)
        return lost

    def catch_up(self, *, force: bool = False) -> bool:
        """See what other processes committed (cheap when they committed nothing: one pragma).

        Called before every search. When another process committed since the last look, BM25
        is reloaded and the in-memory vectors brought in line with sqlite (reading only the
        chunks added since, unless some were deleted). A dirty flag left by a writer that
        is gone (its lock is free) is repaired here. Never waits: while this process's own
        writer holds the index, the search uses the view as it is.

        Returns:
            Whether the view was brought up to date.
        """
        now = time.monotonic()
        changed = self.store.data_version() != self._seen_version
        repair = self._suspect_dirty and now - self._last_repair_try >= REPAIR_EVERY_S
        if not force and not repair and not changed:
            return False
        if not self._mutate.acquire(blocking=force):
            return False
        try:
            synced = False
            if changed or force:
                self._sync()
                synced = True
                self._suspect_dirty = not self._writer.held and self.store.dirty
            if self._suspect_dirty and not self._writer.held:
                self._last_repair_try = now
                if self._writer.try_acquire():  # the writer that set the flag is gone
                    try:
                        self._reconcile()
                        synced = True
                    finally:
                        self._writer.release()
            return synced
        finally:
            self._mutate.release()

    # -- writer turns ---------------------------------------------------------------------------------
    async def begin_commit(self, on_wait: Callable[[str], None] | None = None) -> None:
        """Hold a writer turn before committing (waiting for another process's turn to end).

        ``on_wait`` is called once with a message when this has to wait (default: the log).
        """
        if self._turn_began is not None:
            return
        await self._writer.acquire_async(on_wait or _log_wait)
        try:
            await asyncio.to_thread(self._begin_turn)
        except BaseException:
            self._writer.release()
            raise

    def _begin_turn(self) -> None:
        """Under the writer lock: catch up with (or repair after) other writers, mark dirty."""
        with self._mutate:
            if self.store.dirty or self.store.data_version() != self._seen_version:
                self._reconcile(flush=False)
            self.store.dirty = True
            self._turn_began = time.monotonic()

    def _end_turn(self, *, flush_vectors: bool = False) -> None:
        """Commit BM25, let go of tantivy's writer and of the writer lock (under ``_mutate``)."""
        if self._turn_began is None:
            return
        try:
            self._settle(flush_vectors=flush_vectors)
            self.store.dirty = False  # left set if the above failed: the next holder repairs
        finally:
            self._turn_began = None
            self._writer.release()

    def commit_group(
        self,
        writes: Sequence[DocumentWrite],
        lexical_texts: Sequence[Sequence[str]],
        vectors: np.ndarray,
        *,
        commit_lexical: bool = True,
    ) -> list[list[int]]:
        """Commit documents to sqlite (the commit point), then update BM25 and vectors.

        Returns:
            The new chunk keys of each document.
        """
        with self._mutate:
            if self._turn_began is None:  # a caller that did not await begin_commit: wait here
                self._writer.acquire(_log_wait)
                try:
                    self._begin_turn()
                except BaseException:
                    self._writer.release()
                    raise
            removed, new_keys = self.store.commit_documents(writes)
            lexical = [
                item
                for keys, texts in zip(new_keys, lexical_texts, strict=True)
                for item in zip(keys, texts, strict=True)
            ]
            flat_keys = [k for keys in new_keys for k in keys]
            self.apply(removed, lexical, flat_keys, vectors, commit_lexical=commit_lexical)
            if time.monotonic() - (self._turn_began or 0.0) >= TURN_S:
                self._end_turn()  # let a waiting writer in; the next group begins another turn
            return new_keys

    def apply(
        self,
        removed: Sequence[int],
        lexical: Sequence[tuple[int, str]],
        keys: Sequence[int],
        vectors: np.ndarray,
        *,
        commit_lexical: bool = True,
    ) -> None:
        """Update the derived indexes after a sqlite commit.

        ``commit_lexical=False`` batches BM25 commits during a long ingest (each tantivy commit
        writes a segment); the ingest commits at its end, and the dirty flag covers a crash.
        """
        if self._view is not None:  # this process's own writes, in its turn: the view stays exact
            top = max([self._view[0], *(int(k) for k in keys)])
            seq = self.store.removed_seq() if len(removed) else self._view[2]
            self._view = (top, self._view[1] + len(keys) - len(removed), seq)
        self.lexical.delete(removed)
        self.lexical.add(lexical)
        if commit_lexical:
            self.lexical.commit()
        if self.vectors is not None:
            self.vectors.remove(removed)
            if len(keys):
                self.vectors.add(keys, vectors)

    def _settle(self, *, flush_vectors: bool = False) -> None:
        """Make what was applied durable and searchable by every process (BM25 commit, and the
        vector file with ``flush_vectors``), and let go of tantivy's own writer lock."""
        self.lexical.release_writer()
        if flush_vectors and self.vectors is not None:
            self.vectors.flush()

    # -- ingest ---------------------------------------------------------------------------------------
    async def ingest(
        self,
        sources: Sequence[str],
        *,
        on_progress: ProgressFn | None = None,
        include: Sequence[str] | None = None,
        exclude: Sequence[str] | None = None,
        prune: bool = False,
    ) -> IngestReport:
        """Ingest files, folders (recursive) and http(s) URLs.

        Args:
            sources: Paths and URLs.
            on_progress: Called with an :class:`IngestProgress` as work advances.
            include: Globs a folder's files must match (default: every supported type).
            exclude: Globs of files or folders to skip.
            prune: Delete indexed documents under an ingested folder whose file is gone.
        """
        from reasonloop.kb.ingest.pipeline import Ingestor

        ingestor = Ingestor(self, on_progress, commit_chunks=self.options.commit_chunks)
        items = await asyncio.to_thread(ingestor.expand, sources, include, exclude)

        async def produce(queue: asyncio.Queue[Any]) -> None:
            await ingestor.produce_files(items, queue)

        report = await self._run(ingestor, produce)
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
    ) -> IngestReport:
        """Ingest documents given as data: :class:`Record`, ``(id, title, text)`` or dicts.

        Dicts carry ``id`` (or BEIR's ``_id``), ``text``, optional ``title``, ``source``,
        ``metadata``; any other key joins the metadata.
        """
        from reasonloop.kb.ingest.pipeline import Ingestor
        from reasonloop.kb.ingest.records import as_records

        ingestor = Ingestor(self, on_progress, commit_chunks=self.options.commit_chunks)

        async def produce(queue: asyncio.Queue[Any]) -> None:
            await ingestor.produce_records(as_records(records), queue)

        return await self._run(ingestor, produce)

    async def _run(self, ingestor: Ingestor, produce: Callable[[asyncio.Queue[Any]], Any]) -> IngestReport:
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
                # Under _mutate: a consumer cancelled while its commit ran in a worker thread
                # returns at once, but the thread finishes that commit; settle after it.
                flushed = False
                with self._mutate:
                    if self._turn_began is not None:
                        if not ok:
                            self._reconcile(flush=False)
                        self._end_turn(flush_vectors=True)
                        flushed = True
            if ok and not flushed and self.vectors is not None and ingestor.report.chunks_added:
                # The vector file is written once per ingest (opening reads it), in a turn of its own.
                await self.begin_commit()
                with self._mutate:
                    self._end_turn(flush_vectors=True)
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

    async def delete(self, doc_id_or_source: str, *, on_wait: Callable[[str], None] | None = None) -> list[str]:
        """Remove a document (by id or source), or every document under a folder/JSON file.

        Args:
            on_wait: Called with a message when another process is writing and this waits for it.

        Returns:
            The sources removed (empty when nothing matched).
        """
        async with self._write_lock:
            docs = await asyncio.to_thread(self._resolve, doc_id_or_source)
            if not docs:
                return []
            await self.begin_commit(on_wait)
            with self._mutate:
                try:
                    removed = self.store.delete_documents([d.id for d in docs])
                    self.apply(removed, [], [], np.zeros((0, 0), np.float32))
                finally:
                    self._end_turn(flush_vectors=True)
            return [d.source for d in docs]

    async def documents(self) -> list[DocumentRow]:
        return self.store.documents()

    async def document(self, doc_id_or_source: str) -> tuple[DocumentRow, list[ChunkRow]] | None:
        """A document and its chunks in order; None when nothing matched."""
        row = self.store.document(source_name(doc_id_or_source))
        return None if row is None else (row, self.store.chunks_of(row.id))

    async def stats(self) -> KBStats:
        docs, chunks, size = self.store.totals()
        last = self.store.get_meta("last_update")
        return KBStats(
            documents=docs,
            chunks=chunks,
            bytes=size,
            sources=self.store.source_counts(),
            embedding_model=self.store.get_meta("embedding_model"),
            last_update=float(last) if last else None,
        )

    # -- search backend -------------------------------------------------------------------------------
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

    async def dense_search(self, query: str, k: int, allowed: set[int] | None) -> list[tuple[int, float]]:
        self.catch_up()
        if self.vectors is None or len(self.vectors) == 0:
            return []
        return self.vectors.search(await self.query_vector(query), k, allowed)

    def lexical_search(self, query: str, k: int, allowed: set[int] | None) -> list[tuple[int, float]]:
        self.catch_up()
        return self.lexical.search(query, k, allowed)

    def allowed_keys(self, filters: Sequence[Filter]) -> set[int]:
        return self.store.allowed_keys(filters)

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

    def retriever(self, settings: dict[str, Any] | None = None, *, reranker: Reranker | None = None) -> HybridRetriever:
        """A retriever over this index (``settings``: :class:`RetrieverSettings` fields).

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
            self,
            mode=s.mode,
            top_k=s.top_k,
            fusion=s.fusion,
            rrf_k=s.rrf_k,
            weights={"dense": s.dense_weight, "lexical": s.lexical_weight},
            candidates=s.candidates,
            reranker=reranker,
            rerank_depth=s.rerank_depth,
        )

    async def close(self) -> None:
        async with self._write_lock:
            with self._mutate:
                self._close_search()
            self.store.close()
        if self._reranker is not None:
            await self._reranker.reranker.aclose()
            self._reranker = None

    def _close_search(self) -> None:
        self.lexical.close()
        # The vector file is written only under the writer lock (two processes must never write
        # it at once); when another process is writing, it writes the file itself.
        if self.vectors is not None and self._writer.try_acquire():
            try:
                self._sync()
                self.vectors.close()
            finally:
                self._writer.release()


def _log_wait(message: str) -> None:
    logger.warning("%s", message)


def _file_exists(source: str) -> bool:
    """Whether the file a document was read from is still there (a record of a JSON file is
    ``file#id``; a file name may hold ``#`` too, and may have been stored escaped)."""
    for name in dict.fromkeys((source, source.split("#")[0], source.rsplit("#", 1)[0])):
        if Path(name).exists() or Path(path_of(name)).exists():
            return True
    return False
