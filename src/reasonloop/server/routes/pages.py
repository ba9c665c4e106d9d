"""A document's pages over HTTP, for showing a citation where it is: the page's text, and for
PDFs the rendered page with the cited span's boxes.

A citation carries ``document_id``, ``page`` (null for formats without pages: their whole text
is page 1), ``start``/``end`` (its quote) and ``chunk_start``/``chunk_end`` (the passage holding
the quote), character offsets in that page's text. So

- ``GET /v1/documents/{document}/pages/{page}?start=&end=`` answers the page's ``text``
  (``text[start:end]`` is the citation's quote, ``text[chunk_start:chunk_end]`` the passage that
  holds it), the document's page numbers, and, for a PDF with a span, the span's ``boxes`` as
  fractions of the page's width and height;
- ``GET /v1/documents/{document}/pages/{page}/image?start=&end=&scale=`` answers the PDF page
  as PNG, the span highlighted. ``scale`` is at most 4, and a page so large that it would make
  more than :data:`MAX_PIXELS` pixels is rendered at the scale that makes that many.

Both are scoped to the caller's tenant like every knowledge-base route. The image is rendered
from the PDF file the document was ingested from (uploads are kept under the tenant's
``uploads/``); a PDF that was moved or fetched from a URL has text but no image.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import Response

from reasonloop.errors import DocumentNotFound, RequestInvalid
from reasonloop.kb.ingest.names import path_of
from reasonloop.server.deps import principal, server_state
from reasonloop.server.gate import Caller

__all__ = ["MAX_PIXELS", "router"]

router = APIRouter(prefix="/v1/documents", tags=["knowledge base"])

_HIGHLIGHT = (255, 213, 0, 96)
"""RGBA of the cited span's boxes on a page image."""
MAX_PIXELS = 8_500_000
"""Most pixels (width × height) of a page image: a little more than an A4 or US Letter page at the
largest scale, 4. A larger page is rendered at a smaller scale, so that a PDF of poster-sized pages
cannot make the server allocate gigabytes."""


async def _page(request: Request, who: Caller, document: str, page: int) -> tuple[Any, str, list[int]]:
    kb = await server_state(request).kb.get(who.tenant, who.reader)
    return await kb.page(document, page)


def _span(text: str, start: int | None, end: int | None) -> tuple[int, int] | None:
    if start is None and end is None:
        return None
    s = 0 if start is None else start
    e = len(text) if end is None else end
    if not 0 <= s <= e <= len(text):
        raise RequestInvalid(f"span [{s}, {e}) is outside the page's {len(text)} characters", start=s, end=e)
    return s, e


def _pdf_file(doc: Any) -> Path | None:
    if doc.metadata.get("type") != "pdf":
        return None
    for name in (doc.source, path_of(doc.source)):  # a name that is not UTF-8 is stored escaped
        path = Path(name)
        if path.is_file():
            return path
    return None


def _layout(path: Path, number: int) -> tuple[Any, bytes]:
    from reasonloop.kb.ingest.loaders.pdf import open_pdf, page_layout

    data = path.read_bytes()
    pdf, _ = open_pdf(data, str(path))
    try:
        page = pdf.pages[number - 1]
        try:
            # A scanned page is OCR'd here too: rendered within the same pixel cap as the image.
            return page_layout(page, data, number, max_pixels=MAX_PIXELS), data
        finally:
            page.close()
    finally:
        pdf.close()


@router.get("/{document}/pages/{page}")
async def page_text(
    request: Request,
    who: Annotated[Caller, Depends(principal)],
    document: str,
    page: Annotated[int, PathParam(ge=1)],
    start: Annotated[int | None, Query(ge=0)] = None,
    end: Annotated[int | None, Query(ge=0)] = None,
) -> dict[str, Any]:
    """Page ``page`` of a document: its text, and for a span of it on a PDF page, the span's boxes."""
    doc, text, numbers = await _page(request, who, document, page)
    span = _span(text, start, end)
    path = _pdf_file(doc)
    body: dict[str, Any] = {
        "document": doc.id,
        "source": doc.source,
        "title": doc.title,
        "type": doc.metadata.get("type"),
        "page": page,
        "pages": numbers,
        "text": text,
        "image": f"/v1/documents/{doc.id}/pages/{page}/image" if path else None,
    }
    if span is not None:
        body["span"] = {"start": span[0], "end": span[1], "text": text[span[0] : span[1]]}
        if path is not None:
            layout, _ = await asyncio.to_thread(_layout, path, page)
            from reasonloop.kb.ingest.loaders.pdf import span_boxes

            w, h = layout.width, layout.height
            body["boxes"] = [
                {"x0": x0 / w, "top": top / h, "x1": x1 / w, "bottom": bottom / h}
                for x0, top, x1, bottom in span_boxes(layout, *span)
            ]
    return body


@router.get("/{document}/pages/{page}/image", response_class=Response)
async def page_image(
    request: Request,
    who: Annotated[Caller, Depends(principal)],
    document: str,
    page: Annotated[int, PathParam(ge=1)],
    start: Annotated[int | None, Query(ge=0)] = None,
    end: Annotated[int | None, Query(ge=0)] = None,
    scale: Annotated[float, Query(gt=0, le=4)] = 1.5,
) -> Response:
    """A PDF page as PNG (``scale`` pixels per PDF unit, 1.5 = 108 dpi; less for a page that would
    exceed :data:`MAX_PIXELS`), the span ``[start, end)`` highlighted."""
    doc, text, _ = await _page(request, who, document, page)
    span = _span(text, start, end)
    path = _pdf_file(doc)
    if path is None:
        raise DocumentNotFound(
            f"document {doc.id!r} has no page image (only PDFs kept on disk have one)", document=doc.id
        )
    png = await asyncio.to_thread(_render, path, page, span, scale)
    return Response(png, media_type="image/png")


def _render(path: Path, number: int, span: tuple[int, int] | None, scale: float) -> bytes:
    from PIL import Image, ImageDraw

    from reasonloop.kb.ingest.loaders.pdf import render_page, span_boxes

    # The page's layout (an OCR of a scanned page) only for the boxes of a span.
    layout, data = _layout(path, number) if span is not None else (None, path.read_bytes())
    image = render_page(data, number, scale, max_pixels=MAX_PIXELS).convert("RGBA")
    if layout is not None and span is not None:
        # The boxes are in PDF units; the image's own size says how many pixels each one became.
        sx, sy = image.width / layout.width, image.height / layout.height
        overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
        draw = ImageDraw.Draw(overlay)
        for x0, top, x1, bottom in span_boxes(layout, *span):
            draw.rectangle((x0 * sx, top * sy, x1 * sx, bottom * sy), fill=_HIGHLIGHT)
        image = Image.alpha_composite(image, overlay)
    out = io.BytesIO()
    image.convert("RGB").save(out, "PNG")
    return out.getvalue()
