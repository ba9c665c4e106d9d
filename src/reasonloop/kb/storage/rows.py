"""The tables of an index directory's sqlite file, and the rows written to and read from them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["SCHEMA", "ChunkRow", "ChunkWrite", "DocumentRow", "DocumentWrite", "KeySummary"]

KeySummary = tuple[int, int, int]
"""``(largest chunk key, number of chunks, sequence number of the last removed key noted)``."""

SCHEMA = """
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
    metadata TEXT NOT NULL DEFAULT '{}',
    access TEXT
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
"""Chunk keys are ``INTEGER PRIMARY KEY AUTOINCREMENT``: never reused, so a stale entry in a
derived index can never point at another chunk. ``removed_keys`` is the removal log readers in
other processes follow (:meth:`~reasonloop.kb.storage.reads.StoreReads.changes_since`)."""


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
    access: str | None = None
    """Its readers as stored (:func:`~reasonloop.kb.access.readers_json`; ``None``: everyone)."""
    keep_access: bool = True
    """Keep the readers the document had before this write (a new document: everyone) instead of ``access``."""


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
    readers: list[str] | None = None
    """Who may read it (canonical names; ``None``: everyone in the tenant; ``["!unreadable"]``: the
    stored value cannot be read, and no one may)."""


@dataclass
class ChunkRow:
    key: int
    id: str
    doc_id: str
    source: str
    title: str
    text: str
    metadata: dict[str, Any]
