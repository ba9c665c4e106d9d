"""The local index's metadata store: documents, chunks and vectors in one sqlite file (WAL).

sqlite is the source of truth. A document becomes part of the index in one transaction that
writes its row and all its chunk rows (the *commit point*); its vectors were cached in the same
database before that. The BM25 and HNSW indexes are derived from these rows and can always be
rebuilt from them: :meth:`MetadataStore.dirty` records that derived indexes may lag behind, so
a process killed mid-ingest leaves committed documents intact and the next open reconciles.

Chunk keys are ``INTEGER PRIMARY KEY AUTOINCREMENT``: never reused, so a stale entry in a
derived index can never point at another chunk.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from reasonloop.errors import KBError
from reasonloop.kb.base import Filter
from reasonloop.kb.embedding.cache import VectorCache
from reasonloop.kb.storage.filters import filter_sql

__all__ = ["ChunkRow", "ChunkWrite", "DocumentRow", "DocumentWrite", "MetadataStore"]

KeySummary = tuple[int, int, int]
"""``(largest chunk key, number of chunks, sequence number of the last removed key noted)``."""

REMOVED_KEPT = 100_000
"""Removed chunk keys remembered for readers in other processes; one further behind compares every key."""

BUSY_TIMEOUT_S = 60.0
"""How long a statement waits for another process's write transaction before failing."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL DEFAULT '',
    content_hash TEXT NOT NULL,
    bytes INTEGER NOT NULL DEFAULT 0,
    mtime REAL,
    updated REAL NOT NULL,
    chunks INTEGER NOT NULL DEFAULT 0,
    metadata TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS chunks (
    key INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    text TEXT NOT NULL,
    embed_hash BLOB NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks (doc_id);
CREATE TABLE IF NOT EXISTS removed_keys (seq INTEGER PRIMARY KEY AUTOINCREMENT, key INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS pages (
    doc_id TEXT NOT NULL,
    page INTEGER NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (doc_id, page)
) WITHOUT ROWID;
"""


@dataclass
class ChunkWrite:
    ordinal: int
    text: str
    embed_hash: bytes
    metadata: dict[str, Any]


@dataclass
class DocumentWrite:
    id: str
    source: str
    title: str
    content_hash: str
    bytes: int
    mtime: float | None
    metadata: dict[str, Any]
    chunks: list[ChunkWrite] = field(default_factory=list)
    pages: list[tuple[int, str]] = field(default_factory=list)
    """``(page_number, text)``: the texts chunk offsets point into (a document without pages is page 1)."""


@dataclass
class DocumentRow:
    id: str
    source: str
    title: str
    content_hash: str
    bytes: int
    mtime: float | None
    updated: float
    chunks: int
    metadata: dict[str, Any]


@dataclass
class ChunkRow:
    key: int
    id: str
    doc_id: str
    source: str
    title: str
    text: str
    metadata: dict[str, Any]


class MetadataStore:
    """sqlite access for one index directory (thread-safe; one connection behind a lock)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # Other processes write to the same file (one at a time, under the writer lock); a
            # statement that meets one of their short transactions waits for it instead of failing.
            self.conn = sqlite3.connect(
                str(self.path), check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_S
            )
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise KBError(f"{self.path}: not a reasonloop index database ({exc})", path=str(self.path)) from exc
        self.lock = threading.RLock()
        self.vectors = VectorCache(self.conn, self.lock)

    def data_version(self) -> int:
        """A number that changes whenever another connection (another process, or another handle
        in this one) commits to the database; this connection's own commits leave it as it is.

        Reading it costs no I/O: it is how a reader notices, cheaply, that a writer committed.
        """
        with self.lock:
            return int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    # -- meta -----------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        with self.lock:
            row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, **values: Any) -> None:
        with self.lock:
            self.conn.executemany(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", [(k, str(v)) for k, v in values.items()]
            )

    @property
    def dirty(self) -> bool:
        """Whether the derived indexes may disagree with these rows (an ingest did not finish)."""
        return self.get_meta("dirty") == "1"

    @dirty.setter
    def dirty(self, value: bool) -> None:
        self.set_meta(dirty="1" if value else "0")

    # -- writes ---------------------------------------------------------------------------------
    def commit_documents(self, docs: Sequence[DocumentWrite]) -> tuple[list[int], list[list[int]]]:
        """Replace each document and its chunks, all in one transaction.

        Returns:
            ``(removed_keys, new_keys)``: keys of the chunks replaced, and the new chunk keys of
            each document in order.
        """
        removed: list[int] = []
        added: list[list[int]] = []
        now = time.time()
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                for doc in docs:
                    old = [
                        r[0]
                        for r in self.conn.execute(
                            "SELECT c.key FROM chunks c JOIN documents d ON c.doc_id = d.id "
                            "WHERE d.id = ? OR d.source = ?",
                            (doc.id, doc.source),
                        )
                    ]
                    removed.extend(old)
                    self._log_removed(old)
                    self.conn.execute(
                        "DELETE FROM chunks WHERE doc_id IN (SELECT id FROM documents WHERE id = ? OR source = ?)",
                        (doc.id, doc.source),
                    )
                    self.conn.execute(
                        "DELETE FROM pages WHERE doc_id IN (SELECT id FROM documents WHERE id = ? OR source = ?)",
                        (doc.id, doc.source),
                    )
                    self.conn.execute("DELETE FROM documents WHERE id = ? OR source = ?", (doc.id, doc.source))
                    self.conn.executemany(
                        "INSERT INTO pages (doc_id, page, text) VALUES (?, ?, ?)",
                        [(doc.id, number, text) for number, text in doc.pages],
                    )
                    self.conn.execute(
                        "INSERT INTO documents (id, source, title, content_hash, bytes, mtime, updated, chunks, metadata)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            doc.id,
                            doc.source,
                            doc.title,
                            doc.content_hash,
                            doc.bytes,
                            doc.mtime,
                            now,
                            len(doc.chunks),
                            json.dumps(doc.metadata, ensure_ascii=False),
                        ),
                    )
                    keys = []
                    for c in doc.chunks:
                        cur = self.conn.execute(
                            "INSERT INTO chunks (id, doc_id, ordinal, text, embed_hash, metadata) VALUES (?, ?, ?, ?, ?, ?)",
                            (
                                f"{doc.id}:{c.ordinal}",
                                doc.id,
                                c.ordinal,
                                c.text,
                                c.embed_hash,
                                json.dumps(c.metadata, ensure_ascii=False),
                            ),
                        )
                        keys.append(int(cur.lastrowid or 0))
                    added.append(keys)
                self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('last_update', ?)", (str(now),))
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
        return removed, added

    def delete_documents(self, doc_ids: Sequence[str]) -> list[int]:
        """Delete documents and their chunks; returns the removed chunk keys."""
        if not doc_ids:
            return []
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                removed: list[int] = []
                for doc_id in doc_ids:
                    keys = [r[0] for r in self.conn.execute("SELECT key FROM chunks WHERE doc_id = ?", (doc_id,))]
                    removed.extend(keys)
                    self._log_removed(keys)
                    self.conn.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
                    self.conn.execute("DELETE FROM pages WHERE doc_id = ?", (doc_id,))
                    self.conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
                self.conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('last_update', ?)", (str(time.time()),)
                )
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
        return removed

    def _log_removed(self, keys: Sequence[int]) -> None:
        """Note removed chunk keys for readers in other processes (inside a write transaction),
        forgetting all but the last :data:`REMOVED_KEPT`."""
        if not keys:
            return
        self.conn.executemany("INSERT INTO removed_keys (key) VALUES (?)", [(int(k),) for k in keys])
        self.conn.execute(
            "DELETE FROM removed_keys WHERE seq <= (SELECT max(seq) FROM removed_keys) - ?", (REMOVED_KEPT,)
        )

    # -- reads ----------------------------------------------------------------------------------
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
        return DocumentRow(*row[:8], metadata=json.loads(row[8]))

    def document(self, id_or_source: str) -> DocumentRow | None:
        with self.lock:
            row = self.conn.execute(
                "SELECT id, source, title, content_hash, bytes, mtime, updated, chunks, metadata FROM documents "
                "WHERE id = ? OR source = ? ORDER BY source = ? DESC LIMIT 1",
                (id_or_source, id_or_source, id_or_source),
            ).fetchone()
        return self._doc(row) if row else None

    def documents(self, source_prefix: str | None = None) -> list[DocumentRow]:
        sql = "SELECT id, source, title, content_hash, bytes, mtime, updated, chunks, metadata FROM documents"
        args: tuple[Any, ...] = ()
        if source_prefix:
            # A range of the unique index on source, not a scan of every document: an ingest
            # asks this for each file it reads.
            sql += " WHERE source >= ? AND substr(source, 1, ?) = ?"
            args = (source_prefix, len(source_prefix), source_prefix)
            above = _next_prefix(source_prefix)
            if above is not None:
                sql += " AND source < ?"
                args += (above,)
        with self.lock:
            rows = self.conn.execute(sql + " ORDER BY source", args).fetchall()
        return [self._doc(r) for r in rows]

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

    def source_counts(self) -> dict[str, int]:
        with self.lock:
            return dict(self.conn.execute("SELECT source, chunks FROM documents ORDER BY source").fetchall())

    def totals(self) -> tuple[int, int, int]:
        """``(documents, chunks, bytes)``."""
        with self.lock:
            docs, size = self.conn.execute("SELECT count(*), coalesce(sum(bytes), 0) FROM documents").fetchone()
        return int(docs), self.chunk_count(), int(size)

    # -- filters --------------------------------------------------------------------------------
    def allowed_keys(self, filters: Sequence[Filter]) -> set[int]:
        """Keys of the chunks matching every filter (ANDed). Unknown fields match nothing.

        Raises:
            KBError: an unknown operator or a malformed value for its operator.
        """
        where: list[str] = []
        args: list[Any] = []
        for f in filters:
            clause, values = filter_sql(f)
            where.append(clause)
            args.extend(values)
        sql = "SELECT c.key FROM chunks c JOIN documents d ON d.id = c.doc_id"
        if where:
            sql += " WHERE " + " AND ".join(f"({w})" for w in where)
        with self.lock:
            return {r[0] for r in self.conn.execute(sql, args)}

    def close(self) -> None:
        with self.lock:
            self.conn.close()


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
