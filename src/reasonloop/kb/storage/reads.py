"""What an index directory's sqlite file answers: documents, pages, chunks, chunk keys, cached
vectors and the chunks that filters allow.

:class:`StoreReads` is the reading half of :class:`~reasonloop.kb.storage.store.MetadataStore`,
on the store's one connection and under its lock.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence, Set
from typing import Any

import numpy as np

from reasonloop.kb.access import EVERYONE, Reader, access_sql, stored_readers
from reasonloop.kb.base import Filter
from reasonloop.kb.storage._reader_keys import ReaderKeys
from reasonloop.kb.storage.filters import filter_sql
from reasonloop.kb.storage.rows import ChunkRow, DocumentRow, KeySummary

__all__ = ["StoreReads"]


class StoreReads:
    """The queries of a :class:`~reasonloop.kb.storage.store.MetadataStore` (thread-safe under ``lock``)."""

    conn: sqlite3.Connection
    lock: threading.RLock
    writes: int
    """This connection's writes so far (with ``data_version``, what tells that the catalog changed)."""
    reader_keys: ReaderKeys

    def data_version(self) -> int: ...

    def changes_since(self, top: int, removed_seq: int) -> tuple[KeySummary, np.ndarray, np.ndarray | None]:
        """What changed in the chunks since a reader's :class:`KeySummary` ``(top, _, removed_seq)``,
        read in one snapshot.

        Returns:
            The summary now, the keys added above ``top``, and the keys removed since
            ``removed_seq`` (``None`` when the log no longer reaches back that far).
        """
        with self.lock:
            self.conn.execute("BEGIN")
            try:
                summary = self._summary()
                added = [r[0] for r in self.conn.execute("SELECT key FROM chunks WHERE key > ? ORDER BY key", (top,))]
                first = self.conn.execute("SELECT min(seq) FROM removed_keys").fetchone()[0]
                removed: list[int] | None = [
                    r[0] for r in self.conn.execute("SELECT key FROM removed_keys WHERE seq > ?", (removed_seq,))
                ]
                if first is not None and first > removed_seq + 1:
                    removed = None  # forgotten: the log starts after what the reader saw
            finally:
                self.conn.execute("COMMIT")
        return (
            summary,
            np.asarray(added, dtype=np.uint64),
            None if removed is None else np.asarray(removed, dtype=np.uint64),
        )

    def _doc(self, row: tuple[Any, ...]) -> DocumentRow:
        return DocumentRow(*row[:8], metadata=json.loads(row[8]), readers=stored_readers(row[9]))

    def document(self, id_or_source: str, reader: Reader = EVERYONE) -> DocumentRow | None:
        """A document by id or source, when ``reader`` may read it."""
        where, names = access_sql(reader)
        with self.lock:
            row = self.conn.execute(
                f"SELECT {_DOC_FIELDS} FROM documents d "
                f"WHERE (d.id = ? OR d.source = ?) AND {where} ORDER BY d.source = ? DESC LIMIT 1",
                (id_or_source, id_or_source, *names, id_or_source),
            ).fetchone()
        return self._doc(row) if row else None

    def documents(self, source_prefix: str | None = None, reader: Reader = EVERYONE) -> list[DocumentRow]:
        """The documents (under ``source_prefix``) ``reader`` may read, by source."""
        where, names = access_sql(reader)
        sql = f"SELECT {_DOC_FIELDS} FROM documents d WHERE {where}"
        args: tuple[Any, ...] = tuple(names)
        if source_prefix:
            # A range of the unique index on source, not a scan of every document: an ingest
            # asks this for each file it reads.
            sql += " AND d.source >= ? AND substr(d.source, 1, ?) = ?"
            args += (source_prefix, len(source_prefix), source_prefix)
            above = _next_prefix(source_prefix)
            if above is not None:
                sql += " AND d.source < ?"
                args += (above,)
        with self.lock:
            rows = self.conn.execute(sql + " ORDER BY d.source", args).fetchall()
        return [self._doc(r) for r in rows]

    def readable_documents(self, reader: Reader) -> Set[str]:
        """The ids of the documents ``reader`` may read (kept until the catalog changes, as
        :meth:`allowed_keys`)."""
        where, names = access_sql(reader)

        def work_out() -> set[str]:
            with self.lock:
                return {r[0] for r in self.conn.execute(f"SELECT d.id FROM documents d WHERE {where}", names)}

        stamp = (self.data_version(), self.writes)
        return self.reader_keys.get(("documents", *reader.names), stamp, work_out)

    def page(self, doc_id: str, number: int) -> str | None:
        """The text of page ``number`` of document ``doc_id`` (``None``: no such page stored)."""
        with self.lock:
            row = self.conn.execute("SELECT text FROM pages WHERE doc_id = ? AND page = ?", (doc_id, number)).fetchone()
        return row[0] if row else None

    def page_numbers(self, doc_id: str) -> list[int]:
        """The numbers of the pages of ``doc_id`` that have text, in order."""
        with self.lock:
            rows = self.conn.execute("SELECT page FROM pages WHERE doc_id = ? ORDER BY page", (doc_id,)).fetchall()
        return [r[0] for r in rows]

    def content_hashes(self, sources: Sequence[str]) -> dict[str, str]:
        """Source -> stored content hash, for the sources that are indexed."""
        out: dict[str, str] = {}
        with self.lock:
            for i in range(0, len(sources), 500):
                part = list(sources[i : i + 500])
                marks = ",".join("?" * len(part))
                for src, h in self.conn.execute(
                    f"SELECT source, content_hash FROM documents WHERE source IN ({marks})", part
                ):
                    out[src] = h
        return out

    def chunks(self, keys: Sequence[int]) -> dict[int, ChunkRow]:
        """Rows of the chunks among ``keys`` that exist (others are silently absent)."""
        out: dict[int, ChunkRow] = {}
        with self.lock:
            for i in range(0, len(keys), 500):
                part = [int(k) for k in keys[i : i + 500]]
                marks = ",".join("?" * len(part))
                for row in self.conn.execute(
                    "SELECT c.key, c.id, c.doc_id, d.source, d.title, c.text, c.metadata FROM chunks c "
                    f"JOIN documents d ON d.id = c.doc_id WHERE c.key IN ({marks})",
                    part,
                ):
                    out[row[0]] = ChunkRow(*row[:6], metadata=json.loads(row[6]))
        return out

    def documents_of(self, keys: Sequence[int]) -> dict[int, str]:
        """The document id of each of ``keys`` that exists (as :meth:`chunks` would read it)."""
        out: dict[int, str] = {}
        with self.lock:
            for i in range(0, len(keys), 500):
                part = [int(k) for k in keys[i : i + 500]]
                marks = ",".join("?" * len(part))
                out.update(
                    self.conn.execute(
                        f"SELECT c.key, c.doc_id FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.key IN ({marks})",
                        part,
                    )
                )
        return out

    def chunks_of(self, doc_id: str) -> list[ChunkRow]:
        """The document's chunks in order."""
        with self.lock:
            rows = self.conn.execute(
                "SELECT c.key, c.id, c.doc_id, d.source, d.title, c.text, c.metadata FROM chunks c "
                "JOIN documents d ON d.id = c.doc_id WHERE c.doc_id = ? ORDER BY c.ordinal",
                (doc_id,),
            ).fetchall()
        return [ChunkRow(*row[:6], metadata=json.loads(row[6])) for row in rows]

    def chunk_count(self) -> int:
        with self.lock:
            return int(self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0])

    def all_keys(self) -> np.ndarray:
        with self.lock:
            rows = self.conn.execute("SELECT key FROM chunks ORDER BY key").fetchall()
        return np.asarray([r[0] for r in rows], dtype=np.uint64)

    def key_summary(self) -> KeySummary:
        """``(largest chunk key, number of chunks, last removal noted)``: keys only grow and every
        removal is noted in order, so a reader that knew an earlier summary learns what changed
        from the keys above its largest one and the removals noted after its last one
        (:meth:`changes_since`)."""
        with self.lock:
            return self._summary()

    def removed_seq(self) -> int:
        """The sequence number of the last removed chunk key noted (0: none)."""
        with self.lock:
            return int(self.conn.execute("SELECT coalesce(max(seq), 0) FROM removed_keys").fetchone()[0])

    def _summary(self) -> KeySummary:
        top, count = self.conn.execute("SELECT coalesce(max(key), 0), count(*) FROM chunks").fetchone()
        seq = self.conn.execute("SELECT coalesce(max(seq), 0) FROM removed_keys").fetchone()[0]
        return int(top), int(count), int(seq)

    def keys_after(self, key: int) -> np.ndarray:
        """The chunk keys above ``key``, in order."""
        with self.lock:
            rows = self.conn.execute("SELECT key FROM chunks WHERE key > ? ORDER BY key", (int(key),)).fetchall()
        return np.asarray([r[0] for r in rows], dtype=np.uint64)

    def iter_lexical(self, batch: int = 2000) -> Iterator[list[tuple[int, str]]]:
        """``(key, title + text)`` for every chunk, in batches (to rebuild the BM25 index)."""
        last = -1
        while True:
            with self.lock:
                rows = self.conn.execute(
                    "SELECT c.key, d.title, c.text FROM chunks c JOIN documents d ON d.id = c.doc_id "
                    "WHERE c.key > ? ORDER BY c.key LIMIT ?",
                    (last, batch),
                ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield [(k, f"{t}\n{x}" if t else x) for k, t, x in rows]

    def vectors_for(self, model: str, keys: Sequence[int]) -> tuple[list[int], np.ndarray, list[int]]:
        """Cached vectors of chunks ``keys``: ``(found_keys, matrix, keys_without_vector)``."""
        found: list[int] = []
        rows: list[np.ndarray] = []
        missing: list[int] = []
        with self.lock:
            for i in range(0, len(keys), 500):
                part = [int(k) for k in keys[i : i + 500]]
                marks = ",".join("?" * len(part))
                got = dict(
                    self.conn.execute(
                        f"SELECT c.key, e.vector FROM chunks c LEFT JOIN embed_cache e "
                        f"ON e.model = ? AND e.hash = c.embed_hash WHERE c.key IN ({marks})",
                        [model, *part],
                    ).fetchall()
                )
                for k in part:
                    blob = got.get(k)
                    if blob is None:
                        missing.append(k)
                    else:
                        found.append(k)
                        rows.append(np.frombuffer(blob, dtype=np.float32))
        matrix = np.vstack(rows) if rows else np.zeros((0, 0), np.float32)
        return found, matrix, missing

    def doc_ids_of_keys(self, keys: Sequence[int]) -> list[str]:
        with self.lock:
            marks = ",".join("?" * len(keys))
            return [
                r[0]
                for r in self.conn.execute(
                    f"SELECT DISTINCT doc_id FROM chunks WHERE key IN ({marks})", [int(k) for k in keys]
                )
            ]

    def source_counts(self, reader: Reader = EVERYONE) -> dict[str, int]:
        where, names = access_sql(reader)
        with self.lock:
            return dict(
                self.conn.execute(f"SELECT d.source, d.chunks FROM documents d WHERE {where} ORDER BY d.source", names)
            )

    def last_updated(self, reader: Reader) -> float | None:
        """When the last of the documents ``reader`` may read was written (``None``: it may read none)."""
        where, names = access_sql(reader)
        with self.lock:
            row = self.conn.execute(f"SELECT max(d.updated) FROM documents d WHERE {where}", names).fetchone()
        return None if row[0] is None else float(row[0])

    def totals(self, reader: Reader = EVERYONE) -> tuple[int, int, int]:
        """``(documents, chunks, bytes)`` of what ``reader`` may read."""
        if reader.everything:
            with self.lock:
                docs, size = self.conn.execute("SELECT count(*), coalesce(sum(bytes), 0) FROM documents").fetchone()
            return int(docs), self.chunk_count(), int(size)
        where, names = access_sql(reader)
        with self.lock:
            docs, chunks, size = self.conn.execute(
                f"SELECT count(*), coalesce(sum(d.chunks), 0), coalesce(sum(d.bytes), 0) FROM documents d WHERE {where}",
                names,
            ).fetchone()
        return int(docs), int(chunks), int(size)

    # -- filters --------------------------------------------------------------------------------
    def allowed_keys(self, filters: Sequence[Filter], reader: Reader = EVERYONE) -> Set[int]:
        """Keys of the chunks matching every filter (ANDed) of the documents ``reader`` may read.
        Unknown fields match nothing.

        Raises:
            KBError: an unknown operator or a malformed value for its operator.
        """
        if not filters and not reader.everything:
            stamp = (self.data_version(), self.writes)
            return self.reader_keys.get(tuple(reader.names), stamp, lambda: self._allowed_keys(filters, reader))
        return self._allowed_keys(filters, reader)

    def _allowed_keys(self, filters: Sequence[Filter], reader: Reader) -> set[int]:
        where: list[str] = []
        args: list[Any] = []
        if not reader.everything:
            clause, names = access_sql(reader)
            where.append(clause)
            args.extend(names)
        for f in filters:
            clause, values = filter_sql(f)
            where.append(clause)
            args.extend(values)
        sql = "SELECT c.key FROM chunks c JOIN documents d ON d.id = c.doc_id"
        if where:
            sql += " WHERE " + " AND ".join(f"({w})" for w in where)
        with self.lock:
            return {r[0] for r in self.conn.execute(sql, args)}


_DOC_FIELDS = "d.id, d.source, d.title, d.content_hash, d.bytes, d.mtime, d.updated, d.chunks, d.metadata, d.access"


def _next_prefix(prefix: str) -> str | None:
    """The smallest string above every string that starts with ``prefix`` (``None``: none is)."""
    while prefix:
        last = ord(prefix[-1]) + 1
        if 0xD800 <= last <= 0xDFFF:  # surrogates are no text: the next character is U+E000
            last = 0xE000
        if last <= 0x10FFFF:
            return prefix[:-1] + chr(last)
        prefix = prefix[:-1]
    return None
