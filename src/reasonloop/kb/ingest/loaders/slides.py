"""PowerPoint ``.pptx`` (python-pptx): a page per slide, in the order shown, with its text
frames, tables (as Markdown tables) and speaker notes."""

from __future__ import annotations

import io
from typing import Any

from reasonloop.errors import KBLoadError
from reasonloop.kb.ingest.loaders.document import LoadedDocument, Page, PageFn
from reasonloop.kb.ingest.loaders.sheets import markdown_table

__all__ = ["load_pptx"]


def load_pptx(data: bytes, source: str, title: str, on_page: PageFn | None = None) -> LoadedDocument:
    import zipfile

    from pptx import Presentation

    try:
        deck = Presentation(io.BytesIO(data))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise KBLoadError(f"{source}: corrupt or unreadable .pptx ({exc})", source=source) from exc
    slides = list(deck.slides)
    pages: list[Page] = []
    first_title = ""
    for number, slide in enumerate(slides, start=1):
        parts: list[str] = []
        for shape in slide.shapes:
            parts.extend(_shape_text(shape))
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame.text.strip() if slide.notes_slide.notes_text_frame else ""
            if notes:
                parts.append(f"Notes: {notes}")
        if not first_title and slide.shapes.title is not None:
            first_title = slide.shapes.title.text.strip()
        pages.append(Page(number, "\n\n".join(parts)))
        if on_page is not None:
            on_page(number, len(slides))
    doc_title = (deck.core_properties.title or "").strip() or first_title or title
    return LoadedDocument.paged(source, doc_title, pages, metadata={"type": "pptx", "pages": len(slides)})


def _shape_text(shape: Any) -> list[str]:
    if getattr(shape, "has_table", False) and shape.has_table:
        rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
        return [markdown_table(rows)] if rows else []
    if shape.shape_type is not None and hasattr(shape, "shapes"):  # a group
        return [t for child in shape.shapes for t in _shape_text(child)]
    if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        text = "\n".join(p.text.strip() for p in shape.text_frame.paragraphs if p.text.strip())
        return [text] if text else []
    return []
