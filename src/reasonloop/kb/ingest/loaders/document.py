"""What a loader hands the ingest pipeline: a document's text, its pages, and what went wrong."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reasonloop.errors import KBLoadError

__all__ = ["DOCUMENTS_EXTRA", "LoadedDocument", "Page", "PageFn", "RecordError", "missing_extra"]

PageFn = Callable[[int, int], None]
"""``(pages_done, pages_total)``, called by paged loaders after each page."""

DOCUMENTS_EXTRA = "pip install 'reasonloop[documents]'"


@dataclass(frozen=True, slots=True)
class Page:
    """One page (a PDF page, a slide, a sheet, a chapter, an image frame) and its text."""

    number: int
    """1-based, as the document numbers it (pages without text are left out, not renumbered)."""
    text: str


@dataclass
class LoadedDocument:
    """A document's text and what a citation needs about it."""

    source: str
    """Absolute path or URL; ``path#id`` for records of a JSON/JSONL file."""
    title: str
    text: str
    pages: list[Page] | None = None
    """The pages of paged formats; ``text`` is then their texts joined by blank lines."""
    metadata: dict[str, Any] = field(default_factory=dict)
    doc_id: str | None = None
    """Explicit id (JSON records with ``id``); otherwise derived from ``source``."""
    warnings: list[str] = field(default_factory=list)
    """What was wrong with the source though it could be read (a damaged PDF, ...)."""

    @classmethod
    def paged(cls, source: str, title: str, pages: Sequence[Page], **kwargs: Any) -> LoadedDocument:
        """A document made of ``pages`` (those with text)."""
        kept = [p for p in pages if p.text.strip()]
        return cls(source=source, title=title, text="\n\n".join(p.text for p in kept), pages=kept, **kwargs)


@dataclass
class RecordError:
    """One bad record inside an otherwise readable JSON/JSONL file."""

    source: str
    reason: str


def missing_extra(source: str, what: str, exc: ImportError) -> KBLoadError:
    """The error of a file whose format needs an optional dependency that is not installed."""
    module = exc.name or str(exc)
    return KBLoadError(f"{source}: reading {what} needs {module!r}: {DOCUMENTS_EXTRA}", source=source)
