"""The ``milvus`` index: dense vectors and BM25 in Milvus, fused as the local index fuses.

Search runs in Milvus: a dense search on the chunk vectors and a full-text search through
Milvus's built-in BM25 function on the chunk text (title first, as the local index indexes it),
each with the metadata filters evaluated inside Milvus (:mod:`reasonloop.kb.indexes.milvus_filters`);
:class:`~reasonloop.kb.retrieval.hybrid.HybridRetriever` fuses the two lists exactly as it fuses the
local index's. The text analyzer segments Chinese with jieba and lower-cases and stems English
(Snowball), as the local BM25 does; ``milvus_analyzer`` replaces it.

``milvus_uri`` empty opens Milvus Lite on the file ``milvus.db`` inside the index directory (no
server); ``http://host:19530`` reaches a Milvus standalone or cluster with the same code. Several
knowledge bases share one collection, each under its tenant (``milvus_tenant``, by default the
name of a server tenant's directory, else ``default``): a partition key on a server, a filtered
field on Milvus Lite (which has no partition keys).

What was ingested (documents, content hashes, chunk text, the vector cache) stays in the index
directory's ``kb.sqlite``, the :class:`~reasonloop.kb.indexes.catalog.Catalog` this index holds as
the local index holds one: that is what makes a re-ingest incremental and an interrupted one
recoverable, and search reads its chunks' text from it. Milvus is updated after each sqlite
commit; opening a directory whose last ingest did not finish (or whose chunk count Milvus
disagrees with) reconciles the two, from the cached vectors.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import ValidationError

from reasonloop.config import secret
from reasonloop.errors import ConfigError, KBError, KBModelMismatch, KBUnavailable
from reasonloop.kb.access import EVERYONE, Reader
from reasonloop.kb.base import Filter
from reasonloop.kb.embedding.embedders import Embedder
from reasonloop.kb.indexes.catalog import Catalog, index_directory
from reasonloop.kb.indexes.catalog_front import CatalogFront
from reasonloop.kb.indexes.milvus_filters import filter_expr
from reasonloop.kb.indexes.milvus_schema import (
    DEFAULT_ANALYZER,
    MilvusIndexOptions,
    clip,
    collection_rows,
    new_collection,
)
from reasonloop.kb.ingest.limits import ParseLimits
from reasonloop.kb.settings import parse_options
from reasonloop.kb.storage.store import DocumentWrite
from reasonloop.registry import PluginInfo

__all__ = ["DEFAULT_ANALYZER", "MilvusIndex", "MilvusIndexOptions"]

_BATCH = 500


def _quote(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


class MilvusIndex(CatalogFront):
    """The ``milvus`` index (see the module docstring).

    Args:
        path: Index directory (its ``kb.sqlite``, and the Milvus Lite file without ``milvus_uri``).
        embedder: Makes the vectors; must match the one the index was built with.
        options: :class:`MilvusIndexOptions` or the ``[kb.options]`` table.

    Raises:
        KBUnavailable: Milvus does not answer within ``milvus_timeout_s``, or pymilvus is not installed.
        KBModelMismatch: the index or the collection holds vectors of another model or size.
        ConfigError: invalid options.
    """

    info: ClassVar[PluginInfo] = PluginInfo.declared("index", "milvus")

    def __init__(
        self, path: str | Path, embedder: Embedder, options: dict[str, Any] | MilvusIndexOptions | None = None
    ):
        if not isinstance(options, MilvusIndexOptions):
            try:
                options = MilvusIndexOptions(**(options or {}))
            except ValidationError as exc:
                problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
                raise ConfigError(f"invalid kb.options: {problems}") from None
        self.milvus_options = options
        resolved = Path(path).expanduser().resolve()
        self.tenant = options.milvus_tenant or (resolved.name if resolved.parent.name == "tenants" else "default")
        self.collection = options.milvus_collection
        self._client: Any = None
        self._dim: int | None = None
        try:
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
            self._open_search()
            self.turns.open()
        except BaseException:
            self._close_client()
            raise

    # -- connection -----------------------------------------------------------------------------------
    @property
    def client(self) -> Any:
        """The one client of this index (opened once: Milvus answers the first search of a new
        collection slowly, while it loads it)."""
        if self._client is None:
            try:
                from pymilvus import MilvusClient
            except ImportError as exc:
                raise KBUnavailable(
                    "the milvus index needs pymilvus (and milvus-lite for a local file): "
                    "pip install 'reasonloop[milvus]'"
                ) from exc
            o = self.milvus_options
            uri = o.milvus_uri or str(self.path / "milvus.db")
            try:
                self._client = MilvusClient(uri=uri, token=secret(o.milvus_token_env) or "", timeout=o.milvus_timeout_s)
            except Exception as exc:
                raise KBUnavailable(f"milvus at {uri} did not answer within {o.milvus_timeout_s:g} s: {exc}") from exc
        return self._client

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, timeout=self.milvus_options.milvus_timeout_s, **kwargs)
        except (KBError, ConfigError):
            raise
        except Exception as exc:
            raise KBUnavailable(f"milvus {what} failed on collection {self.collection!r}: {exc}") from exc

    @property
    def _lite(self) -> bool:
        uri = self.milvus_options.milvus_uri
        return not uri or uri.endswith(".db")

    def _tenant_expr(self, extra: str = "") -> str:
        base = f"tenant == {_quote(self.tenant)}"
        return f"{base} and ({extra})" if extra else base

    # -- the collection -------------------------------------------------------------------------------
    def _open_search(self) -> None:
        self.client  # noqa: B018 - a Milvus that does not answer fails the open, not a later search
        dim = self.store.get_meta("embedding_dim")
        if dim:
            self.ensure_vectors(int(dim))

    def ensure_vectors(self, dim: int) -> Any:
        """The collection, created on first use once the embedding size is known."""
        stored = self.catalog.check_dim(dim)
        if self._dim is None:
            self._ensure_collection(dim)
            self._dim = dim
        if not stored:
            self.store.set_meta(embedding_model=self.embedder.vector_space, embedding_dim=dim)
        return self.collection

    def _ensure_collection(self, dim: int) -> None:
        client = self.client
        if self._call("has_collection", client.has_collection, self.collection):
            described = self._call("describe_collection", client.describe_collection, self.collection)
            fields = {f["name"]: f for f in described.get("fields", [])}
            have = fields.get("dense", {}).get("params", {}).get("dim")
            if have is not None and int(have) != dim:
                raise KBModelMismatch(
                    f"milvus collection {self.collection!r} holds {have}-d vectors, the embedder makes {dim}-d ones; "
                    "choose another milvus_collection",
                    collection=self.collection,
                )
            self._call("load_collection", client.load_collection, self.collection)
            return
        schema, index = new_collection(client, dim, self.milvus_options, lite=self._lite)
        self._call(
            "create_collection",
            client.create_collection,
            self.collection,
            schema=schema,
            index_params=index,
            consistency_level="Strong",
        )

    # -- consistency ----------------------------------------------------------------------------------
    def _milvus_keys(self) -> np.ndarray:
        iterator = self._call(
            "query_iterator",
            self.client.query_iterator,
            self.collection,
            batch_size=1000,
            filter=self._tenant_expr(),
            output_fields=["key"],
        )
        keys: list[int] = []
        try:
            while True:
                batch = iterator.next()
                if not batch:
                    break
                keys.extend(int(r["key"]) for r in batch)
        finally:
            iterator.close()
        return np.asarray(sorted(keys), dtype=np.uint64)

    def _milvus_count(self) -> int:
        rows = self._call(
            "query", self.client.query, self.collection, filter=self._tenant_expr(), output_fields=["count(*)"]
        )
        return int(rows[0]["count(*)"]) if rows else 0

    def sync(self) -> list[int]:
        """Nothing to bring up to date: every process searches the same Milvus collection."""
        self.turns.viewed()
        return []

    def repair(self, *, flush: bool = True) -> None:
        """Bring Milvus in line with sqlite after an ingest that did not finish, from the cached vectors."""
        if self._dim is None:
            return
        dirty = self.store.dirty
        if not dirty and self._milvus_count() == self.store.chunk_count():
            return
        keys = self.store.all_keys()
        have = self._milvus_keys()
        extra = np.setdiff1d(have, keys)
        missing = np.setdiff1d(keys, have)
        if len(extra):
            self._delete_keys([int(k) for k in extra])
        if len(missing):
            model = self.store.get_meta("embedding_model") or self.embedder.vector_space
            found, matrix, lost = self.store.vectors_for(model, [int(k) for k in missing])
            if found:
                chunks = self.store.chunks(found)
                rows = [(k, chunks[k].doc_id, chunks[k].source, chunks[k].title, chunks[k].text) for k in found]
                self._insert([(*row, chunks[row[0]].metadata) for row in rows], matrix)
            if lost:  # no cached vector: drop those documents so the next ingest redoes them
                self.store.delete_documents(self.store.doc_ids_of_keys(lost))
        if dirty:
            self.store.dirty = False

    # -- writing --------------------------------------------------------------------------------------
    def _insert(self, rows: Sequence[tuple[int, str, str, str, str, dict[str, Any]]], vectors: np.ndarray) -> None:
        data = collection_rows(self.tenant, rows, vectors)
        for i in range(0, len(data), _BATCH):
            self._call("insert", self.client.insert, self.collection, data[i : i + _BATCH])

    def _delete_keys(self, keys: Sequence[int]) -> None:
        for i in range(0, len(keys), _BATCH):
            part = ", ".join(str(int(k)) for k in keys[i : i + _BATCH])
            self._call("delete", self.client.delete, self.collection, filter=self._tenant_expr(f"key in [{part}]"))

    def commit_group(
        self,
        writes: Sequence[DocumentWrite],
        lexical_texts: Sequence[Sequence[str]],
        vectors: np.ndarray,
        *,
        commit_lexical: bool = True,
    ) -> list[list[int]]:
        """Commit documents to sqlite (the commit point), then replace their chunks in Milvus."""
        with self.turns.mutate:
            removed, new_keys = self.store.commit_documents(writes)
            rows = [
                (key, w.id, w.source, w.title, c.text, c.metadata)
                for w, keys in zip(writes, new_keys, strict=True)
                for key, c in zip(keys, w.chunks, strict=True)
            ]
            if removed:
                self._delete_keys(removed)
            if rows:
                self._insert(rows, vectors)
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
        """Remove deleted chunks from Milvus (new chunks go in through :meth:`commit_group`)."""
        if len(keys):
            raise KBError("the milvus index adds chunks through commit_group only")
        if removed:
            self._delete_keys(list(removed))

    def settle(self, *, flush_vectors: bool = False) -> None:
        """Writes are visible to the next search already (strong consistency); nothing to do."""

    def has_vector_file(self) -> bool:
        return False

    # -- search backend -------------------------------------------------------------------------------
    def allowed_keys(self, filters: Sequence[Filter], reader: Reader = EVERYONE) -> Any:
        """The filters as a Milvus expression (what dense and BM25 search then evaluate inside
        Milvus), or ``""`` when they cannot match.

        For a reader who may not read everything, what it may read joins the expression, read
        from the catalog where readers are kept: its chunk keys (``key in [...]``) or, when they
        are fewer, its documents (``doc_id in [...]``); integers cost Milvus less to compare than
        strings (benchmarks/README.md, "access_filter.py"). Milvus ranks only those chunks, and a
        change of readers holds for the next search without rewriting rows.
        """
        expr = filter_expr(filters) if filters else None
        if reader.everything:
            return expr
        if expr == "":
            return ""
        keys = self.store.allowed_keys([], reader)
        if not keys:
            return ""
        documents = self.store.readable_documents(reader)
        if len(keys) <= len(documents):
            readable = f"key in [{', '.join(map(str, sorted(keys)))}]"
        else:
            readable = f"doc_id in [{', '.join(_quote(clip(d, 256)) for d in sorted(documents))}]"
        return readable if not expr else f"({expr}) and {readable}"

    def _search(self, data: Any, field: str, k: int, allowed: Any) -> list[tuple[int, float]]:
        if self._dim is None or k <= 0 or (allowed is not None and not allowed):
            return []
        result = self._call(
            "search",
            self.client.search,
            self.collection,
            data=[data],
            anns_field=field,
            limit=min(k, 16_384),
            filter=self._tenant_expr(allowed or ""),
            output_fields=["key"],
        )
        hits = [(int(h["entity"]["key"]), float(h["distance"])) for h in result[0]] if result else []
        hits.sort(key=lambda h: (-h[1], h[0]))
        return hits

    async def dense_search(self, query: str, k: int, allowed: Any) -> list[tuple[int, float]]:
        if self._dim is None:
            return []
        vector = await self.query_vector(query)
        dense = np.asarray(vector, dtype=np.float32).tolist()
        return await asyncio.to_thread(self._search, dense, "dense", k, allowed)

    async def lexical_search(self, query: str, k: int, allowed: Any) -> list[tuple[int, float]]:
        """BM25 inside Milvus, in a worker thread: the call waits on Milvus, not on the event loop."""
        if not query.strip():
            return []
        return await asyncio.to_thread(self._search, query, "sparse", k, allowed)

    # -- closing --------------------------------------------------------------------------------------
    def close_search(self) -> None:
        self._close_client()

    def _close_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()
