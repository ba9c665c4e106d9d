"""The built-in ``local`` index: everything in one directory, nothing to run.

Layout of the directory (``.reasonloop/`` by default)::

    kb.sqlite        documents, chunks, cached vectors, meta (embedding model, dim): the catalog
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

Many processes (:mod:`~reasonloop.kb.storage.turns`): a reader that sees another process's
commit reloads the BM25 searcher and brings its in-memory vectors in line with sqlite (the
vectors of new chunks come from the vector cache in sqlite). A writer's turn commits groups of
documents for about :data:`TURN_S` seconds, then commits BM25 and lets go of tantivy's own
writer lock and of ``writer.lock``; the embedding of the next group runs outside any lock.

What the catalog does whatever the search side is (ingest runs, deletes, listing, reading hits
back) is :class:`~reasonloop.kb.indexes.catalog.Catalog`'s; this index holds one.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np

from reasonloop.config import secret
from reasonloop.errors import KBError
from reasonloop.kb.access import EVERYONE, Reader
from reasonloop.kb.base import Filter
from reasonloop.kb.embedding.embedders import Embedder
from reasonloop.kb.indexes.catalog import Catalog, index_directory
from reasonloop.kb.indexes.catalog_front import CatalogFront
from reasonloop.kb.ingest.limits import ParseLimits
from reasonloop.kb.retrieval.lexical import LexicalIndex
from reasonloop.kb.retrieval.vector import LocalVectorStore, VectorStore
from reasonloop.kb.settings import LocalIndexOptions, parse_options
from reasonloop.kb.storage.store import DocumentWrite
from reasonloop.registry import PluginInfo

__all__ = ["LocalIndex", "LocalIndexOptions"]

_T = TypeVar("_T")
logger = logging.getLogger(__name__)

TURN_S = 1.0
"""A writer lets a waiting writer in after holding the writer lock about this long (at the end of
a commit group): each turn ends with a BM25 commit, so this is also how often BM25 commits."""


class LocalIndex(CatalogFront):
    """The ``local`` index: sqlite + tantivy + usearch (or Qdrant) under ``path``.

    Args:
        path: Index directory (created if missing).
        embedder: Makes the vectors; must match the one the index was built with.
        options: :class:`LocalIndexOptions` or the ``[kb.options]`` table.

    Raises:
        KBModelMismatch: the index was built with another embedding model.
        ConfigError: invalid options.
    """

    info: ClassVar[PluginInfo] = PluginInfo.declared("index", "local")

    def __init__(self, path: str | Path, embedder: Embedder, options: dict[str, Any] | LocalIndexOptions | None = None):
        directory = index_directory(path)
        self.options = parse_options(options)
        self.catalog = Catalog(directory, embedder, self.options, self)
        self.path, self.embedder, self.store = directory, embedder, self.catalog.store
        self.chunker, self.content_signature = self.catalog.chunker, self.catalog.content_signature
        self.parse_limits = ParseLimits()
        """What one file may cost while it is parsed (``[kb.limits]``, set by :meth:`KnowledgeBase.open`)."""
        self.parse_loaders: dict[str, str] = {}
        """Loader plugins: a suffix -> ``package.module:function``, run in the parsing workers."""
        self.turns = self.catalog.turns
        self._writer = self.turns.writer
        self.vectors: VectorStore | None = None
        self._view: tuple[int, int, int] | None = None
        """sqlite's :meth:`~MetadataStore.key_summary` that the in-memory vectors match (None: unknown)."""
        self._open_search()
        self.turns.open()

    # -- the derived indexes --------------------------------------------------------------------------
    def _open_search(self) -> None:
        """Open what search reads (BM25 here; the vectors once their size is known)."""
        self.lexical = self._derived(lambda: LexicalIndex(self.path / "lexical"), [self.path / "lexical"])
        dim = self.store.get_meta("embedding_dim")
        if dim:
            self.ensure_vectors(int(dim))

    def ensure_vectors(self, dim: int) -> VectorStore:
        """The vector store, created on first use once the embedding size is known."""
        stored = self.catalog.check_dim(dim)
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

    def repair(self, *, flush: bool = True) -> None:
        """:meth:`sync`, then repair what a killed writer left: documents whose vectors are
        lost, a BM25 index that disagrees with sqlite; ``flush`` writes the vector file."""
        dirty = self.store.dirty
        self.lexical.commit()  # what this process applied, first: a rebuild must not meet it pending
        lost = self.sync()
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

    def sync(self) -> list[int]:
        """Bring this process's view in line with sqlite, in memory only: reload the BM25
        searcher, add the vectors of chunks committed elsewhere (from the vector cache), drop
        those of chunks deleted elsewhere.

        Returns:
            Keys of chunks whose vector is in no cache (only a repair can deal with them).
        """
        self.turns.viewed()
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
        """See what other processes committed (:meth:`WriterTurns.catch_up`); called before every search.

        When another process committed since the last look, BM25 is reloaded and the in-memory
        vectors brought in line with sqlite (reading only the chunks added since, unless some
        were deleted).

        Returns:
            Whether the view was brought up to date.
        """
        return self.turns.catch_up(force=force)

    # -- writing --------------------------------------------------------------------------------------
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
        with self.turns.mutate:
            self.turns.hold()  # a caller that did not await begin_commit waits here
            removed, new_keys = self.store.commit_documents(writes)
            lexical = [
                item
                for keys, texts in zip(new_keys, lexical_texts, strict=True)
                for item in zip(keys, texts, strict=True)
            ]
            flat_keys = [k for keys in new_keys for k in keys]
            self.apply(removed, lexical, flat_keys, vectors, commit_lexical=commit_lexical)
            if time.monotonic() - (self.turns.began or 0.0) >= TURN_S:
                self.turns.end()  # let a waiting writer in; the next group begins another turn
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

    def settle(self, *, flush_vectors: bool = False) -> None:
        """Make what was applied durable and searchable by every process (BM25 commit, and the
        vector file with ``flush_vectors``), and let go of tantivy's own writer lock."""
        self.lexical.release_writer()
        if flush_vectors and self.vectors is not None:
            self.vectors.flush()

    def has_vector_file(self) -> bool:
        return self.vectors is not None

    # -- search backend -------------------------------------------------------------------------------
    async def dense_search(self, query: str, k: int, allowed: set[int] | None) -> list[tuple[int, float]]:
        self.catch_up()
        if self.vectors is None or len(self.vectors) == 0:
            return []
        return self.vectors.search(await self.query_vector(query), k, allowed)

    def lexical_search(self, query: str, k: int, allowed: set[int] | None) -> list[tuple[int, float]]:
        self.catch_up()
        return self.lexical.search(query, k, allowed)

    def allowed_keys(self, filters: Sequence[Filter], reader: Reader = EVERYONE) -> set[int]:
        """The chunk keys the filters allow among the documents ``reader`` may read (the mask both
        the vector search and BM25 search under)."""
        return self.store.allowed_keys(filters, reader)

    # -- closing --------------------------------------------------------------------------------------
    def close_search(self) -> None:
        self.lexical.close()
        # The vector file is written only under the writer lock (two processes must never write
        # it at once); when another process is writing, it writes the file itself.
        if self.vectors is not None and self._writer.try_acquire():
            try:
                self.sync()
                self.vectors.close()
            finally:
                self._writer.release()
