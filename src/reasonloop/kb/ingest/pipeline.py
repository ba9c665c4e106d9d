"""The ingestion pipeline: sources -> documents -> chunks -> vectors -> committed index rows.

A producer task loads and chunks sources while the consumer embeds (in worker threads) and
commits, so parsing overlaps embedding and the event loop stays free. Files are parsed in worker
processes under ``[kb.limits]`` (:mod:`reasonloop.kb.ingest.parsing`), several at once; whatever goes
wrong with one file (a parser's exception, a worker that dies or times out) is that file's
failure and the others go on.
Documents are committed in groups of about ``commit_chunks`` chunks: embed (cache first), then
one sqlite transaction for the group (the commit point), then the BM25 and vector indexes.

Unchanged sources (same content hash, which includes the chunking settings) cost a hash and
nothing else; changed ones replace their chunks; unreadable ones are reported and skipped.
Finding and reading the sources is :mod:`reasonloop.kb.ingest.sources`; making a document's rows
from its chunks, :mod:`reasonloop.kb.ingest.prepare`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from reasonloop.errors import KBLoadError, ReasonLoopError
from reasonloop.kb.access import readers_json
from reasonloop.kb.base import IngestProgress, IngestReport
from reasonloop.kb.embedding.cache import embed_with_cache
from reasonloop.kb.ingest.limits import ParseLimits, failure_reason
from reasonloop.kb.ingest.loaders import LoadedDocument, RecordError
from reasonloop.kb.ingest.parsing import ParsePool
from reasonloop.kb.ingest.prepare import PreparedDocument, prepare_document
from reasonloop.kb.ingest.records import Record
from reasonloop.kb.ingest.sources import IngestSources

__all__ = ["IngestTarget", "Ingestor"]

ProgressFn = Callable[[IngestProgress], None]

LEXICAL_COMMIT_EVERY_S = 1.0
"""During an ingest, BM25 commits at most this often (every commit writes a tantivy segment)."""


_DONE = object()


class IngestTarget(Protocol):
    """What an ingest run uses of its index (:class:`~reasonloop.kb.indexes.local.LocalIndex` is one)."""

    path: Any
    store: Any
    embedder: Any
    chunker: Any
    options: Any
    content_signature: str

    def ensure_vectors(self, *args: Any, **kwargs: Any) -> Any: ...

    def commit_group(self, *args: Any, **kwargs: Any) -> Any: ...


class Ingestor:
    """One ingest run against a :class:`~reasonloop.kb.indexes.local.LocalIndex` (an :class:`IngestTarget`)."""

    def __init__(
        self,
        index: IngestTarget,
        on_progress: ProgressFn | None,
        *,
        commit_chunks: int = 64,
        readers: Sequence[str] | None = None,
    ) -> None:
        self.index = index
        self.readers = None if readers is None else readers_json(readers)
        """The readers given for every document, as stored (``None``: from sidecars, or kept)."""
        self.access_of_unchanged: dict[str, str] = {}
        """Source -> readers given (or found in a sidecar) for a source left unchanged."""
        self.on_progress = on_progress
        self.commit_chunks = commit_chunks
        self.report = IngestReport()
        self.sources = IngestSources(index.path, self.report, self.readers)
        """The files and URLs this run reads, and who may read their documents."""
        self.progress = IngestProgress()
        self.started = time.perf_counter()
        self.seen_sources: set[str] = set()
        self.stale: list[str] = []
        """Ids of documents whose record disappeared from a re-read file (deleted after the run)."""
        self._last_lexical_commit = self.started
        self._order: list[str] = []
        """The sources in the order they are read (for :attr:`IngestProgress.first_pending`)."""
        self._finished_pending = 0
        """Sources whose documents are all read but not all committed yet."""
        self._pages_ahead: dict[str, list[tuple[int, int]]] = {}
        """Pages read of files parsed ahead of the one being reported."""

    # -- progress ---------------------------------------------------------------------------------
    def _tick(self, current: str | None = None) -> None:
        if current is not None:
            self.progress.current = current
        self.progress.seconds = time.perf_counter() - self.started
        self.progress.failed = len(self.report.failed)
        if self.on_progress is not None:
            self.on_progress(self.progress.model_copy())

    def _waiting(self, message: str) -> None:
        self.progress.waiting = message
        self._tick()

    def _page_read(self, item: str, done: int, total: int) -> None:
        if item != self.progress.current:  # a file parsed ahead of the one shown: told when it is
            self._pages_ahead.setdefault(item, []).append((done, total))
            return
        self.progress.pages_done, self.progress.pages_total = done, total
        self._tick()

    # -- producing --------------------------------------------------------------------------------
    def expand(self, sources: Sequence[str], include: Sequence[str] | None, exclude: Sequence[str] | None) -> list[str]:
        """The names of the files and URLs to read (:meth:`IngestSources.expand`)."""
        return self.sources.expand(sources, include, exclude)

    def _content_hash(self, payload: bytes) -> str:
        h = hashlib.blake2b(digest_size=16)
        h.update(self.index.content_signature.encode())
        h.update(payload)
        return h.hexdigest()

    async def _load(
        self, item: str, pool: ParsePool
    ) -> tuple[list[LoadedDocument | RecordError], str, int, float | None] | None:
        """Fetch or read ``item`` and parse it in ``pool``; ``None`` when the file is unchanged (not parsed)."""
        opts = self.index.options
        data, ctype, suffix, title, mtime = await self.sources.read(
            item, fetch_timeout_s=opts.fetch_timeout_s, max_fetch_bytes=opts.max_fetch_bytes
        )
        content_hash = self._content_hash(data)
        if self.index.store.content_hashes([item]).get(item) == content_hash:
            return None
        loop = asyncio.get_running_loop()

        def on_page(done: int, total: int) -> None:  # called in the loader's thread
            loop.call_soon_threadsafe(self._page_read, item, done, total)

        docs = await asyncio.to_thread(
            pool.parse, data, item, suffix=suffix, default_title=title, content_type=ctype, on_page=on_page
        )
        return docs, content_hash, len(data), mtime

    def _prepare(
        self,
        doc: LoadedDocument,
        content_hash: str,
        size: int,
        mtime: float | None,
        doc_id: str | None = None,
        *,
        access: str | None = None,
    ) -> PreparedDocument | None:
        """Chunk a document (``access``: its readers as stored, ``None`` to keep its own);
        ``None`` when it is unchanged."""
        self.seen_sources.add(doc.source)
        stored = self.index.store.content_hashes([doc.source]).get(doc.source)
        if stored == content_hash:
            self.report.unchanged.append(doc.source)
            return None
        return prepare_document(
            doc,
            self.index.chunker,
            embed_title=self.index.options.embed_title,
            content_hash=content_hash,
            size=size,
            mtime=mtime,
            doc_id=doc_id,
            access=access,
            updated=stored is not None,
        )

    def _parse_pool(self) -> ParsePool:
        limits = getattr(self.index, "parse_limits", None) or ParseLimits()
        return ParsePool(limits, loaders=dict(getattr(self.index, "parse_loaders", None) or {}))

    async def produce_files(self, items: Sequence[str], queue: asyncio.Queue[Any]) -> None:
        """Read, parse and chunk each of ``items`` in turn; after each, a ``None`` marker: the
        source has nothing more in the queue. While one file is chunked and queued, the next
        ones are parsed, as many at once as the parse pool has workers."""
        self.progress.files_total = len(items)
        self._order = list(items)
        self.progress.first_pending = self._order[0] if self._order else ""
        pool = self._parse_pool()
        ahead: deque[tuple[str, asyncio.Future[Any]]] = deque()
        upcoming = iter(items)

        def fill() -> None:
            while len(ahead) < pool.size:
                item = next(upcoming, None)
                if item is None:
                    return
                ahead.append((item, asyncio.ensure_future(self._load(item, pool))))

        try:
            fill()
            while ahead:
                item, loading = ahead.popleft()
                await self._produce_file(item, loading, queue, fill)
        finally:
            for _, loading in ahead:
                loading.cancel()
            await asyncio.to_thread(pool.close)  # also ends a worker still parsing for a cancelled load
            await asyncio.gather(*(loading for _, loading in ahead), return_exceptions=True)
        await queue.put(_DONE)

    async def _produce_file(
        self, item: str, loading: asyncio.Future[Any], queue: asyncio.Queue[Any], parsed: Callable[[], None]
    ) -> None:
        """Chunk and queue the documents of ``item`` once ``loading`` has parsed them; ``parsed``
        is called as soon as the parse is over (its worker is free for the next file)."""
        self.progress.pages_done = self.progress.pages_total = 0
        self._tick(item)
        for done, total in self._pages_ahead.pop(item, []):
            self._page_read(item, done, total)
        try:
            loaded = await loading
        except KBLoadError as exc:
            loaded = exc.message
        except Exception as exc:  # whatever else went wrong is this file's failure alone
            loaded = failure_reason(exc, ParseLimits())
        parsed()
        access: str | None = None
        if not isinstance(loaded, str):
            try:
                access = await asyncio.to_thread(self.sources.access_of, item)
            except ReasonLoopError as exc:  # a sidecar that cannot be read: not ingested rather than open to all
                loaded = exc.message
        if isinstance(loaded, str):
            self.report.failed[item] = loaded.removeprefix(f"{item}: ")
            self.progress.files_done += 1
            await queue.put(None)
            return
        if loaded is None:
            self.seen_sources.add(item)
            if access is not None:
                self.access_of_unchanged[item] = access
            self.report.unchanged.append(item)
            self.progress.files_done += 1
            await queue.put(None)
            return
        docs, content_hash, size, mtime = loaded
        for doc in docs:
            if isinstance(doc, RecordError):
                self.report.failed[doc.source] = doc.reason
                continue
            if doc.warnings:
                self.report.warnings[doc.source] = "; ".join(doc.warnings)
            record_hash = content_hash
            if len(docs) > 1 or doc.source != item:
                payload = json.dumps([doc.title, doc.text, doc.metadata], ensure_ascii=False, sort_keys=True)
                record_hash = self._content_hash(payload.encode())
            prepared = await asyncio.to_thread(
                self._prepare,
                doc,
                record_hash,
                size if len(docs) == 1 else len(doc.text.encode()),
                mtime,
                access=access,
            )
            if prepared is None and access is not None:
                self.access_of_unchanged[doc.source] = access
            if prepared is not None:
                self.progress.chunks_total += len(prepared.write.chunks)
                await queue.put(prepared)
        if all(isinstance(d, LoadedDocument) for d in docs):
            # Records that left a JSON/JSONL file leave the index with it.
            kept = {d.source for d in docs if isinstance(d, LoadedDocument)}
            self.stale.extend(d.id for d in self.index.store.documents(item + "#") if d.source not in kept)
        self.progress.files_done += 1
        await queue.put(None)  # progress marker: a file finished

    async def produce_records(self, records: Iterable[Record], queue: asyncio.Queue[Any]) -> None:
        for rec in records:
            source = rec.source or rec.id
            if not rec.text.strip():
                self.report.failed[source] = "empty text"
                continue
            payload = json.dumps([rec.title, rec.text, rec.metadata], ensure_ascii=False, sort_keys=True)
            doc = LoadedDocument(source=source, title=rec.title, text=rec.text, metadata=dict(rec.metadata))
            size = len(rec.text.encode("utf-8"))
            prepared = await asyncio.to_thread(
                self._prepare, doc, self._content_hash(payload.encode()), size, None, rec.id, access=self.readers
            )
            if prepared is None and self.readers is not None:
                self.access_of_unchanged[source] = self.readers
            self.progress.files_total += 1
            self.progress.files_done += 1
            if prepared is not None:
                self.progress.chunks_total += len(prepared.write.chunks)
                await queue.put(prepared)
            await queue.put(None)
        await queue.put(_DONE)

    # -- consuming --------------------------------------------------------------------------------
    async def consume(self, queue: asyncio.Queue[Any]) -> None:
        """Commit what the producers queue, in groups of about ``commit_chunks`` chunks.

        A full group is committed when the next item comes: when that is the end marker of the
        group's last source, the marker is counted first, so that a source the commit holds
        whole is counted with it (an ingest stopped during that commit reports it as done).
        """
        pending: list[PreparedDocument] = []
        pending_chunks = 0
        while True:
            item = await queue.get()
            if item is _DONE:
                break
            if item is None:  # a source is read: finished once what it queued is committed
                if pending:
                    self._finished_pending += 1
                else:
                    self._finished(1)
                self._tick()
            if pending_chunks >= self.commit_chunks:
                await self._flush(pending)
                pending, pending_chunks = [], 0
            if item is not None:
                pending.append(item)
                pending_chunks += len(item.write.chunks)
        if pending:
            await self._flush(pending)
        self._tick("")

    def _finished(self, count: int) -> None:
        self.progress.files_committed += count
        done = self.progress.files_committed
        self.progress.first_pending = self._order[done] if done < len(self._order) else ""

    async def _flush(self, docs: list[PreparedDocument]) -> None:
        texts = [t for d in docs for t in d.embed_texts]
        vectors_parts: list[np.ndarray] = []
        step = max(self.index.embedder.max_batch, 16) * 2
        for i in range(0, len(texts), step):
            began = time.perf_counter()
            part, embedded = await embed_with_cache(self.index.embedder, self.index.store.vectors, texts[i : i + step])
            if embedded:  # a step served wholly from the cache is no measure of the embedder
                self.progress.embed_seconds += time.perf_counter() - began
            vectors_parts.append(part)
            self.progress.chunks_done += len(part)
            self.progress.chunks_embedded += embedded
            self.report.chunks_embedded += embedded
            self._tick()
        if texts:
            vectors = np.concatenate(vectors_parts)
            self.index.ensure_vectors(vectors.shape[1])
        else:
            vectors = np.zeros((0, 0), np.float32)
        begin = getattr(self.index, "begin_commit", None)
        if begin is not None:  # wait for another process's writer turn to end, saying so
            await begin(self._waiting)
            if self.progress.waiting:
                self.progress.waiting = ""
                self._tick()
        now = time.perf_counter()
        commit_lexical = now - self._last_lexical_commit >= LEXICAL_COMMIT_EVERY_S
        if commit_lexical:
            self._last_lexical_commit = now
        # The commit point, then the derived indexes, in one worker-thread call: jieba, tantivy
        # and HNSW are CPU work, and a cancelled ingest must not leave this half done.
        commit = asyncio.ensure_future(
            asyncio.to_thread(
                self.index.commit_group,
                [d.write for d in docs],
                [d.lexical_texts for d in docs],
                vectors,
                commit_lexical=commit_lexical,
            )
        )
        try:
            new_keys = await asyncio.shield(commit)
        except asyncio.CancelledError:
            # The thread commits anyway: count what it commits, so that an interrupted ingest
            # reports what is in the index. The cancellation may be repeated while it does (the
            # ingest cancels what gather may already have cancelled): it is taken once the
            # commit is counted.
            while not commit.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(commit)
            self._committed(docs, commit.result())
            raise
        self._committed(docs, new_keys)

    def _committed(self, docs: list[PreparedDocument], new_keys: list[list[int]]) -> None:
        for d, keys in zip(docs, new_keys, strict=True):
            (self.report.updated if d.updated else self.report.added).append(d.write.source)
            self.report.chunks_added += len(keys)
        self._finished(self._finished_pending)
        self._finished_pending = 0
        self._tick()
