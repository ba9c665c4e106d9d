"""A loaded document as one commit writes it: its chunk rows and pages, and for each chunk the text
the embedder gets and the text BM25 indexes.

Preparing a document needs the index's chunker and whether titles are embedded, nothing of the run
around it: the pipeline (:mod:`reasonloop.kb.ingest.pipeline`) decides which documents changed and
commits what this makes in groups.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from reasonloop.kb.embedding.cache import text_hash
from reasonloop.kb.ingest.loaders import LoadedDocument
from reasonloop.kb.ingest.records import document_id, titled
from reasonloop.kb.storage.store import ChunkWrite, DocumentWrite

if TYPE_CHECKING:
    from reasonloop.kb.ingest.chunking import Chunker

__all__ = ["PreparedDocument", "prepare_document"]


@dataclass
class PreparedDocument:
    """A document ready for a commit group."""

    write: DocumentWrite
    embed_texts: list[str]
    """Each chunk's text as embedded (headed by the document's title when titles are embedded)."""
    lexical_texts: list[str]
    """Each chunk's text as BM25 indexes it (headed by the document's title)."""
    updated: bool
    """Whether it replaces a stored version of the document (else it is new)."""


def prepare_document(
    doc: LoadedDocument,
    chunker: Chunker,
    *,
    embed_title: bool,
    content_hash: str,
    size: int,
    mtime: float | None,
    doc_id: str | None,
    access: str | None,
    updated: bool,
) -> PreparedDocument:
    """Chunk ``doc`` with ``chunker`` (by page when it has pages) into the rows a commit writes.

    Args:
        doc_id: Its id (default: :func:`~reasonloop.kb.ingest.records.document_id` of its source).
        access: Its readers as stored; ``None`` keeps those a stored version has.
    """
    if doc.pages:
        page_texts = [(p.number, p.text) for p in doc.pages]
        chunks = chunker.split_pages(page_texts)
    else:
        page_texts = [(1, doc.text)]
        chunks = chunker.split(doc.text)
    writes: list[ChunkWrite] = []
    embed_texts: list[str] = []
    lexical_texts: list[str] = []
    for c in chunks:
        embed = titled(doc.title, c.text) if embed_title else c.text
        meta = {**doc.metadata, "start": c.start, "end": c.end}
        if c.page is not None:
            meta["page"] = c.page
        writes.append(ChunkWrite(c.ordinal, c.text, text_hash(embed), meta))
        embed_texts.append(embed)
        lexical_texts.append(titled(doc.title, c.text))
    write = DocumentWrite(
        id=doc_id or document_id(doc.source),
        source=doc.source,
        title=doc.title,
        content_hash=content_hash,
        bytes=size,
        mtime=mtime,
        metadata=doc.metadata,
        chunks=writes,
        pages=page_texts,
        access=access,
        keep_access=access is None,
    )
    return PreparedDocument(write, embed_texts, lexical_texts, updated=updated)
