"""BM25 keyword search on tantivy, with jieba segmentation for Chinese and English stemming.

Chinese has no spaces, so runs of CJK characters are segmented with jieba (search mode, which
also emits the shorter words inside long ones) before tantivy's tokenizer lower-cases, stems
(English Snowball) and indexes the terms. Queries go through the same analysis and are
OR-ed term queries, so user input never meets a query-syntax parser. Entries are keyed by the
integer chunk key and deleted by it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Collection, Iterable
from pathlib import Path

import tantivy

from reasonloop.errors import KBError
from reasonloop.kb.retrieval import _jieba

__all__ = ["LexicalIndex", "segment"]

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_ANALYZER = "rl_text"


def segment(text: str) -> str:
    """``text`` with every CJK run split into space-separated words (other text unchanged).

    jieba is imported, and its dictionary loaded, only for text that has CJK characters.
    """
    if not _CJK_RUN.search(text):
        return text
    jieba = _jieba.tokenizer()
    return _CJK_RUN.sub(lambda m: " " + " ".join(jieba.cut_for_search(m.group())) + " ", text)


def _analyzer() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


class LexicalIndex:
    """A tantivy index of ``(chunk key, text)`` in ``path`` (``None``: in memory).

    Writes are buffered until :meth:`commit`; searches see committed data only.
    """

    def __init__(self, path: str | Path | None) -> None:
        builder = tantivy.SchemaBuilder()
        builder.add_unsigned_field("key", stored=True, indexed=True, fast=True)
        builder.add_text_field("body", stored=False, tokenizer_name=_ANALYZER)
        self._schema = builder.build()
        if path is None:
            self._index = tantivy.Index(self._schema)
        else:
            Path(path).mkdir(parents=True, exist_ok=True)
            try:
                self._index = tantivy.Index(self._schema, path=str(path), reuse=True)
            except ValueError as exc:
                raise KBError(f"{path}: unreadable BM25 index ({exc})", path=str(path)) from exc
        self._analyzer = _analyzer()
        self._index.register_tokenizer(_ANALYZER, self._analyzer)
        self._writer: tantivy.IndexWriter | None = None
        self._lock = threading.RLock()
        self._pending = False
        self._searcher = self._open_searcher()

    def _open_searcher(self) -> tantivy.Searcher:
        # A writer in another process may remove a merged-away segment file between this process
        # reading the list of segments and opening them: read the list again.
        error: ValueError | None = None
        for attempt in range(5):
            try:
                if attempt:
                    self._index.reload()
                return self._index.searcher()
            except ValueError as exc:
                error = exc
        raise KBError(f"unreadable BM25 index ({error})")

    def _w(self) -> tantivy.IndexWriter:
        if self._writer is None:
            self._writer = self._index.writer(heap_size=64_000_000, num_threads=1)
        return self._writer

    def add(self, items: Iterable[tuple[int, str]]) -> None:
        """Index ``(key, text)`` pairs (visible after :meth:`commit`)."""
        with self._lock:
            writer = self._w()
            for key, text in items:
                doc = tantivy.Document()
                doc.add_unsigned("key", int(key))
                doc.add_text("body", segment(text))
                writer.add_document(doc)
                self._pending = True

    def delete(self, keys: Collection[int]) -> None:
        """Remove the entries of ``keys`` (visible after :meth:`commit`)."""
        if not keys:
            return
        with self._lock:
            writer = self._w()
            ordered = [int(k) for k in keys]
            for i in range(0, len(ordered), 10_000):
                writer.delete_documents_by_query(
                    tantivy.Query.term_set_query(self._schema, "key", ordered[i : i + 10_000])
                )
            self._pending = True

    def clear(self) -> None:
        with self._lock:
            self._w().delete_all_documents()
            self._pending = True

    def commit(self) -> None:
        """Make pending writes durable and searchable."""
        with self._lock:
            if not self._pending:
                return
            self._w().commit()
            self._index.reload()
            self._searcher = self._index.searcher()
            self._pending = False

    def refresh(self) -> bool:
        """See commits made by other processes since this index was opened.

        Returns:
            False when the index could not be read just now (a writer of another process removed
            a segment file between reading the index's list and opening it): the previous view
            stays in use, and the next refresh tries again.
        """
        with self._lock:
            try:
                self._index.reload()
                self._searcher = self._index.searcher()
            except ValueError:
                return False
            return True

    def release_writer(self) -> None:
        """Commit pending writes and let go of tantivy's own writer lock, so that another
        process can write next (a writer is opened again by the next write)."""
        with self._lock:
            self.commit()
            if self._writer is not None:
                self._writer.wait_merging_threads()
                self._writer = None

    def __len__(self) -> int:
        return int(self._searcher.num_docs)

    def terms(self, text: str) -> list[str]:
        """Distinct analysed terms of ``text``, in order."""
        return list(dict.fromkeys(self._analyzer.analyze(segment(text))))

    def search(self, query: str, k: int, allowed: Collection[int] | None = None) -> list[tuple[int, float]]:
        """Top ``k`` ``(key, bm25)`` for ``query``, optionally only among ``allowed`` keys."""
        terms = self.terms(query)
        if not terms or k <= 0 or (allowed is not None and not allowed):
            return []
        should = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "body", t)) for t in terms]
        )
        if allowed is not None:
            restrict = tantivy.Query.boost_query(
                tantivy.Query.term_set_query(self._schema, "key", [int(x) for x in allowed]), 0.0
            )
            should = tantivy.Query.boolean_query([(tantivy.Occur.Must, should), (tantivy.Occur.Must, restrict)])
        searcher = self._searcher
        result = searcher.search(should, k, count=False)
        return [(int(searcher.doc(addr)["key"][0]), float(score)) for score, addr in result.hits]

    def keys(self) -> list[int]:
        """Every indexed key (a full scan: for consistency checks, not queries)."""
        searcher = self._searcher
        n = int(searcher.num_docs)
        if not n:
            return []
        hits = searcher.search(tantivy.Query.all_query(), n, count=False).hits
        return sorted(int(searcher.doc(addr)["key"][0]) for _, addr in hits)

    def close(self) -> None:
        with self._lock:
            if self._writer is not None:
                if self._pending:
                    self._writer.commit()
                    self._pending = False
                self._writer.wait_merging_threads()
                self._writer = None
