"""E-books ``.epub`` (ebooklib): a page per chapter, in reading (spine) order, as plain text."""

from __future__ import annotations

import io
import re

from reasonloop.errors import KBLoadError
from reasonloop.kb.ingest.loaders.document import LoadedDocument, Page, PageFn

__all__ = ["load_epub"]


def load_epub(data: bytes, source: str, title: str, on_page: PageFn | None = None) -> LoadedDocument:
    import zipfile

    import ebooklib
    from ebooklib import epub

    from reasonloop.kb.ingest.loaders.text import html_text

    try:
        book = epub.read_epub(io.BytesIO(data), options={"ignore_ncx": True})
    except (zipfile.BadZipFile, KeyError, ValueError, AttributeError, epub.EpubException) as exc:
        raise KBLoadError(f"{source}: corrupt or unreadable .epub ({exc})", source=source) from exc
    chapters = []
    for item_id, _linear in book.spine:
        item = book.get_item_with_id(item_id)
        if item is not None and item.get_type() == ebooklib.ITEM_DOCUMENT:
            chapters.append(item)
    pages: list[Page] = []
    for number, item in enumerate(chapters, start=1):
        text = html_text(item.get_content().decode("utf-8", errors="replace"))
        pages.append(Page(number, re.sub(r"\n{3,}", "\n\n", text)))
        if on_page is not None:
            on_page(number, len(chapters))
    meta = book.get_metadata("DC", "title")
    doc_title = str(meta[0][0]).strip() if meta else ""
    return LoadedDocument.paged(source, doc_title or title, pages, metadata={"type": "epub", "chapters": len(chapters)})
