"""PDF: the text of each page, its ruled tables as Markdown tables, scanned pages through OCR.

pypdf opens the file first: it tells an encrypted file from a damaged one and repairs broken
cross-references (its repair messages become one warning in our words, see :class:`_PdfMessages`).
pdfplumber then reads the pages one at a time, and each page's parsed objects are released
before the next, so a long PDF costs the memory of one page. A page with no text but an image
is rendered (pypdfium2) and OCR'd (:mod:`.ocr`).

:func:`page_layout` is the one place a page's text is made, so the character offsets a citation
carries can be turned back into boxes on the page (:func:`span_boxes`) for the page image.
"""

from __future__ import annotations

import io
import logging
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from reasonloop.errors import KBLoadError
from reasonloop.kb.ingest.loaders.document import DOCUMENTS_EXTRA, LoadedDocument, Page, PageFn

__all__ = [
    "DAMAGED_PDF",
    "MAX_OCR_PIXELS",
    "PageLayout",
    "fit_scale",
    "load_pdf",
    "open_pdf",
    "page_layout",
    "render_page",
    "span_boxes",
]

log = logging.getLogger("reasonloop.kb.loaders")

DAMAGED_PDF = (
    "damaged PDF: its text was recovered, but parts may be missing or out of order "
    "(--debug shows what the PDF reader repaired)"
)
OCR_SCALE = 200 / 72
"""Scanned pages are rendered at 200 dpi for OCR (PDF units are 1/72 inch)..."""
MAX_OCR_PIXELS = 50_000_000
"""...or at the scale that makes at most this many pixels (``[kb.limits] max_pixels``): a poster
page of 14,400 units would otherwise be 40,000 × 40,000 pixels, several GB."""

Box = tuple[float, float, float, float]
"""``(x0, top, x1, bottom)`` in PDF units from the page's top-left corner."""


class _PdfMessages(logging.Handler):
    """The ``pypdf`` logger's records: to our log at debug level, and to the PDF being read by
    the thread that logged them (PDFs may be read in several threads at once)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.local = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        found: list[str] | None = getattr(self.local, "found", None)
        message = record.getMessage()
        if found is not None:
            found.append(message)
        log.debug("PDF reader on %s: %s", getattr(self.local, "source", "a PDF"), message)

    @contextmanager
    def collect(self, source: str) -> Iterator[list[str]]:
        found: list[str] = []
        self.local.found, self.local.source = found, source
        try:
            yield found
        finally:
            self.local.found = self.local.source = None


_pdf_messages: _PdfMessages | None = None
_pdf_messages_lock = threading.Lock()


def _pdf_log() -> _PdfMessages:
    """The handler taking over the ``pypdf`` and ``pdfminer`` loggers (installed once)."""
    global _pdf_messages
    with _pdf_messages_lock:
        if _pdf_messages is None:
            _pdf_messages = _PdfMessages()
            pypdf_log = logging.getLogger("pypdf")
            pypdf_log.addHandler(_pdf_messages)
            pypdf_log.propagate = False
            # pdfminer reports what pypdf already said (and font trivia) at warning level.
            logging.getLogger("pdfminer").setLevel(logging.ERROR)
        return _pdf_messages


@dataclass
class PageLayout:
    """A page's text and, for each of its characters, where it is on the page (``None`` for
    separators that are not printed)."""

    text: str
    boxes: list[Box | None]
    width: float
    height: float
    ocr: bool = False


def open_pdf(data: bytes, source: str) -> tuple[Any, list[str]]:
    """The file opened with pdfplumber, and pypdf's repair messages.

    Raises:
        KBLoadError: corrupt, or protected by a password.
    """
    import pdfplumber
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    with _pdf_log().collect(source) as repairs:
        try:
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not reader.decrypt(""):
                raise KBLoadError(
                    f"{source}: the PDF is protected by a password; save an unprotected copy and ingest that",
                    source=source,
                )
            len(reader.pages)
        except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError, OSError) as exc:
            raise KBLoadError(f"{source}: corrupt or unreadable PDF ({exc})", source=source) from exc
    try:
        pdf = pdfplumber.open(io.BytesIO(data))
        len(pdf.pages)
    except Exception as exc:  # pdfminer raises many unrelated types on malformed input
        name = type(exc).__name__
        if "Password" in name or "Encrypt" in name:
            raise KBLoadError(f"{source}: the PDF is protected by a password", source=source) from exc
        raise KBLoadError(f"{source}: corrupt or unreadable PDF ({name}: {exc})", source=source) from exc
    return pdf, repairs


def load_pdf(
    data: bytes, source: str, title: str, on_page: PageFn | None = None, *, max_pixels: int = MAX_OCR_PIXELS
) -> LoadedDocument:
    """The text of each page; a scanned page is rendered for OCR at :data:`OCR_SCALE`, or at the
    smaller scale that keeps it within ``max_pixels``."""
    pdf, repairs = open_pdf(data, source)
    warnings: list[str] = [DAMAGED_PDF] if repairs else []
    pages: list[Page] = []
    unread: list[int] = []
    first_failure = ""
    needs_ocr: list[int] = []
    try:
        total = len(pdf.pages)
        meta_title = str((pdf.metadata or {}).get("Title") or "").strip()
        for number, page in enumerate(pdf.pages, start=1):
            try:
                layout = page_layout(page, data, number, max_pixels=max_pixels)
                pages.append(Page(number, layout.text))
            except ImportError:
                needs_ocr.append(number)
            except Exception as exc:  # one bad page loses that page, not the document
                log.debug("%s: page %d unreadable: %s", source, number, exc)
                unread.append(number)
                first_failure = first_failure or f"page {number}: {type(exc).__name__}: {exc}"[:300]
            finally:
                page.close()  # drop the page's parsed objects: memory stays that of one page
            if on_page is not None:
                on_page(number, total)
    finally:
        pdf.close()
    if unread:
        warnings.append(f"pages {_ranges(unread)} could not be read")
    if needs_ocr:
        warnings.append(f"pages {_ranges(needs_ocr)} are scanned images; reading them needs OCR: {DOCUMENTS_EXTRA}")
    doc = LoadedDocument.paged(
        source, meta_title or title, pages, metadata={"type": "pdf", "pages": total}, warnings=warnings
    )
    if not doc.pages:
        if needs_ocr:
            raise KBLoadError(f"{source}: a scanned PDF; reading it needs OCR: {DOCUMENTS_EXTRA}", source=source)
        if unread:
            raise KBLoadError(f"{source}: no page could be read ({first_failure})", source=source)
        raise KBLoadError(f"{source}: no extractable text in PDF", source=source)
    return doc


def _ranges(numbers: list[int]) -> str:
    out: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(out)


def page_layout(page: Any, data: bytes, number: int, *, max_pixels: int = MAX_OCR_PIXELS) -> PageLayout:
    """The text of a pdfplumber ``page`` (number ``number`` of the PDF ``data``) with its boxes.

    Text lines top to bottom; each ruled table becomes a Markdown table (a paragraph of its
    own) where it stands. A page without characters but with an image is OCR'd, rendered with
    at most ``max_pixels`` pixels.

    Raises:
        ImportError: the page needs OCR and the OCR engine is not installed.
    """
    width, height = float(page.width), float(page.height)
    if not page.chars and page.images:
        return _ocr_layout(data, number, width, height, max_pixels)
    tables = [t for t in page.find_tables() if t.rows]
    body = page
    if tables:
        boxes = [t.bbox for t in tables]
        body = page.filter(lambda obj: obj.get("object_type") != "char" or not _inside(obj, boxes))
    blocks: list[tuple[float, bool, list[tuple[str, Box | None]]]] = []
    for line in body.extract_text_lines(return_chars=True, strip=True):
        blocks.append((float(line["top"]), False, _line_chars(line)))
    for table in tables:
        blocks.append((float(table.bbox[1]), True, _table_chars(table)))
    blocks.sort(key=lambda b: b[0])
    text_parts: list[str] = []
    char_boxes: list[Box | None] = []
    previous_table = False
    for i, (_, is_table, chars) in enumerate(blocks):
        if i:
            sep = "\n\n" if is_table or previous_table else "\n"
            text_parts.append(sep)
            char_boxes.extend([None] * len(sep))
        for ch, box in chars:
            text_parts.append(ch)
            char_boxes.append(box)
        previous_table = is_table
    return PageLayout("".join(text_parts), char_boxes, width, height)


def _inside(obj: dict[str, Any], boxes: list[Box]) -> bool:
    cx = (float(obj["x0"]) + float(obj["x1"])) / 2
    cy = (float(obj["top"]) + float(obj["bottom"])) / 2
    return any(x0 <= cx <= x1 and top <= cy <= bottom for x0, top, x1, bottom in boxes)


def _line_chars(line: dict[str, Any]) -> list[tuple[str, Box | None]]:
    """Each character of a line's text with its box; the spaces pdfplumber put between words have none."""
    chars = line.get("chars") or []
    out: list[tuple[str, Box | None]] = []
    j = 0
    for ch in line["text"]:
        box: Box | None = None
        if j < len(chars) and chars[j]["text"].startswith(ch):
            c = chars[j]
            box = (float(c["x0"]), float(c["top"]), float(c["x1"]), float(c["bottom"]))
            if len(chars[j]["text"]) <= 1 or chars[j]["text"].endswith(ch):
                j += 1
        elif ch.isspace() and j < len(chars) and chars[j]["text"].isspace():
            j += 1
        out.append((ch, box))
    return out


def _cell(text: Any) -> str:
    return " ".join(str(text or "").split()).replace("|", "\\|")


def _table_chars(table: Any) -> list[tuple[str, Box | None]]:
    """A Markdown table: the first row is the header; a cell's characters carry the cell's box."""
    out: list[tuple[str, Box | None]] = []
    rows = table.extract()
    cell_boxes = [list(row.cells) for row in table.rows]
    width = max(len(r) for r in rows)

    def emit(s: str, box: Box | None = None) -> None:
        out.extend((ch, box) for ch in s)

    for r, row in enumerate(rows):
        if r:
            emit("\n")
        emit("|")
        for c in range(width):
            value = _cell(row[c] if c < len(row) else "")
            box = cell_boxes[r][c] if r < len(cell_boxes) and c < len(cell_boxes[r]) else None
            emit(" ")
            emit(value, tuple(float(v) for v in box) if box else None)  # type: ignore[arg-type]
            emit(" |")
        if r == 0:
            emit("\n|" + " --- |" * width)
    return out


def _ocr_layout(data: bytes, number: int, width: float, height: float, max_pixels: int) -> PageLayout:
    from reasonloop.kb.ingest.loaders.ocr import recognize

    image = render_page(data, number, OCR_SCALE, max_pixels=max_pixels)
    scale = image.width / width if width > 0 else OCR_SCALE  # the scale it was rendered at
    return ocr_lines_layout(recognize(image), width, height, scale, ocr=True)


def ocr_lines_layout(lines: list[Any], width: float, height: float, scale: float, *, ocr: bool) -> PageLayout:
    """OCR'd lines as page text: a line per line; a character's box is its share of the line's box."""
    parts: list[str] = []
    boxes: list[Box | None] = []
    for i, line in enumerate(lines):
        if i:
            parts.append("\n")
            boxes.append(None)
        x0, top, x1, bottom = (v / scale for v in line.box)
        step = (x1 - x0) / max(len(line.text), 1)
        for k, ch in enumerate(line.text):
            parts.append(ch)
            boxes.append(None if ch.isspace() else (x0 + k * step, top, x0 + (k + 1) * step, bottom))
    return PageLayout("".join(parts), boxes, width, height, ocr=ocr)


def render_page(data: bytes, number: int, scale: float, *, max_pixels: int | None = None) -> Any:
    """Page ``number`` of the PDF ``data`` as a PIL image, ``scale`` pixels per PDF unit, or fewer
    when the image would have more than ``max_pixels`` pixels (width × height)."""
    import pypdfium2

    pdf = pypdfium2.PdfDocument(data)
    try:
        page = pdf[number - 1]
        try:
            if max_pixels is not None:
                scale = fit_scale(scale, *page.get_size(), max_pixels)
            return page.render(scale=scale).to_pil()
        finally:
            page.close()
    finally:
        pdf.close()


def fit_scale(scale: float, width: float, height: float, max_pixels: int) -> float:
    """``scale``, or the largest smaller one at which a ``width`` × ``height`` page (PDF units)
    renders to at most ``max_pixels`` pixels (each side rounded up to a whole pixel)."""
    if width <= 0 or height <= 0:
        return scale
    scale = min(scale, math.sqrt(max_pixels / (width * height)))
    while scale > 0 and math.ceil(width * scale) * math.ceil(height * scale) > max_pixels:
        scale *= 0.99
    return scale


def span_boxes(layout: PageLayout, start: int, end: int) -> list[Box]:
    """The boxes covering ``layout.text[start:end]``: one per line of the span."""
    out: list[list[float]] = []
    for box in layout.boxes[max(start, 0) : max(end, 0)]:
        if box is None:
            continue
        x0, top, x1, bottom = box
        if out and abs(out[-1][1] - top) < 0.5 * (bottom - top) and x0 >= out[-1][0] - 1:
            last = out[-1]
            last[1], last[2], last[3] = min(last[1], top), max(last[2], x1), max(last[3], bottom)
        else:
            out.append([x0, top, x1, bottom])
    return [(b[0], b[1], b[2], b[3]) for b in out]
