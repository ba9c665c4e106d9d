"""One document of the caller's knowledge base: what it is and its text, chunk by chunk.

A citation names its chunk and the chunk's character offsets; a reader of the citation opens
the whole document here and finds the cited chunk among the others.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel

from reasonloop.errors import DocumentNotFound
from reasonloop.server.deps import principal, server_state
from reasonloop.server.gate import Caller
from reasonloop.server.tenancy import kb_call

__all__ = ["ChunkView", "DocumentView", "router"]

router = APIRouter(prefix="/v1/documents", tags=["knowledge base"])


class ChunkView(BaseModel):
    chunk_id: str
    ordinal: int
    text: str
    start: int | None = None
    """Character offset of the chunk in its document."""
    end: int | None = None
    page: int | None = None


class DocumentView(BaseModel):
    id: str
    source: str
    title: str
    bytes: int
    updated: float
    metadata: dict[str, Any]
    chunks: list[ChunkView]
    """In document order; overlapping chunks repeat the text they share."""


@router.get("/{document}", response_model=DocumentView)
async def get_document(document: str, request: Request, who: Annotated[Caller, Depends(principal)]) -> DocumentView:
    """A document (by id or source) with its chunks; 404 when there is none."""
    kb = await server_state(request).kb.get(who.tenant, who.reader)
    found = await kb_call(kb.document, document)
    if found is None:
        raise DocumentNotFound(f"no document {document!r}", document=document)
    row, chunks = found
    return DocumentView(
        id=row.id,
        source=row.source,
        title=row.title,
        bytes=row.bytes,
        updated=row.updated,
        metadata=row.metadata,
        chunks=[
            ChunkView(
                chunk_id=c.id,
                ordinal=i,
                text=c.text,
                start=c.metadata.get("start"),
                end=c.metadata.get("end"),
                page=c.metadata.get("page"),
            )
            for i, c in enumerate(chunks)
        ],
    )
