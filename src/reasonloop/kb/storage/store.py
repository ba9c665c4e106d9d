"""An index directory's catalog: documents, chunks, pages and vectors in one sqlite file (WAL).

sqlite is the source of truth. A document becomes part of the index in one transaction that
writes its row and all its chunk rows (the *commit point*); its vectors were cached in the same
database before that. The search indexes (BM25 and vectors, or a Milvus collection) are derived
from these rows and can always be rebuilt from them: :meth:`MetadataStore.dirty` records that
derived indexes may lag behind, so a process killed mid-ingest leaves committed documents intact
and the next open reconciles.

This module opens the file and writes to it (and keeps the log of removed chunk keys that readers
in other processes follow); what it answers is in :mod:`~reasonloop.kb.storage.reads`, the tables
and rows in :mod:`~reasonloop.kb.storage.rows`.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reasonloop.errors import KBError
from reasonloop.kb.embedding.cache import VectorCache
from reasonloop.kb.storage._reader_keys import ReaderKeys
from reasonloop.kb.storage.reads import StoreReads
from reasonloop.kb.storage.rows import SCHEMA, ChunkRow, ChunkWrite, DocumentRow, DocumentWrite

__all__ = ["ChunkRow", "ChunkWrite", "DocumentRow", "DocumentWrite", "MetadataStore"]

REMOVED_KEPT = 100_000
"""Removed chunk keys remembered for readers in other processes; one further behind compares every key."""

BUSY_TIMEOUT_S = 60.0
"""How long a statement waits for another process's write transaction before failing."""


class MetadataStore(StoreReads):
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
            self.conn.executescript(SCHEMA)
            columns = {row[1] for row in self.conn.execute("PRAGMA table_info(documents)")}
            if "access" not in columns:  # an index made before documents had readers: everyone reads them
                self.conn.execute("ALTER TABLE documents ADD COLUMN access TEXT")
        except sqlite3.DatabaseError as exc:
            raise KBError(f"{self.path}: not a reasonloop index database ({exc})", path=str(self.path)) from exc
        self.lock = threading.RLock()
        self.vectors = VectorCache(self.conn, self.lock)
        self.writes = 0
        self.reader_keys = ReaderKeys()

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
                    access = doc.access
                    if doc.keep_access:
                        before = self.conn.execute(
                            "SELECT access FROM documents WHERE id = ? OR source = ? ORDER BY source = ? DESC LIMIT 1",
                            (doc.id, doc.source, doc.source),
                        ).fetchone()
                        access = before[0] if before else None
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
                        "INSERT INTO documents (id, source, title, content_hash, bytes, mtime, updated, chunks, metadata,"
                        " access) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                            access,
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
                self.writes += 1
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
        return removed, added

    def set_access(self, doc_ids: Sequence[str], access: str | None) -> int:
        """Give documents new readers (``access`` as stored; ``None``: everyone), in one transaction.

        Nothing derived depends on readers (every search reads them here), so the change holds
        for the next search of every process.

        Returns:
            How many documents changed.
        """
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                changed = 0
                for doc_id in doc_ids:
                    changed += self.conn.execute(
                        "UPDATE documents SET access = ? WHERE id = ?", (access, doc_id)
                    ).rowcount
                self.conn.execute("COMMIT")
                self.writes += 1
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
        return changed

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
                self.writes += 1
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

    def close(self) -> None:
        with self.lock:
            self.conn.close()
