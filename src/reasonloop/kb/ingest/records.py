"""Documents as an ingest records them: given as data (:class:`Record`), their stable ids, and
their chunks' text headed by their title."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Record", "as_records", "document_id", "titled"]


def document_id(source: str) -> str:
    """Stable id of the document at ``source``."""
    return hashlib.blake2b(source.encode("utf-8"), digest_size=8).hexdigest()


_HEADING = re.compile(r"\s*#{1,6}[ \t]+(?P<heading>[^\n]*)")


def titled(title: str, text: str) -> str:
    """``text`` headed by its document's ``title`` for embedding and indexing, unless it already
    opens with it as a Markdown heading (a page's first chunk): the title is counted once."""
    if not title:
        return text
    opening = _HEADING.match(text)
    if opening and opening["heading"].strip().strip("#").strip() == title.strip():
        return text
    return f"{title}\n{text}"


@dataclass
class Record:
    """A document given as data rather than a file (see ``KnowledgeBase.ingest_records``)."""

    id: str
    text: str
    title: str = ""
    source: str = ""
    """Defaults to the id."""
    metadata: dict[str, Any] = field(default_factory=dict)


def as_records(items: Iterable[Record | tuple[str, str, str] | Mapping[str, Any]]) -> Iterator[Record]:
    """:class:`Record` from records, ``(id, title, text)`` tuples or dicts.

    Dicts carry ``id`` (or BEIR's ``_id``), ``text``, optional ``title``, ``source`` and
    ``metadata``; any other key joins the metadata.
    """
    for r in items:
        if isinstance(r, Record):
            yield r
        elif isinstance(r, tuple):
            rid, title, text = r
            yield Record(id=str(rid), title=title or "", text=text)
        else:
            extra = {k: v for k, v in r.items() if k not in ("id", "_id", "title", "text", "source", "metadata")}
            yield Record(
                id=str(r["id"] if "id" in r else r["_id"]),
                title=r.get("title") or "",
                text=r.get("text") or "",
                source=r.get("source") or "",
                metadata={**extra, **(r.get("metadata") or {})},
            )
