"""Images ``.png`` ``.jpg`` ``.tiff``, OCR'd (:mod:`.ocr`): a page per frame (multi-page TIFF)."""

from __future__ import annotations

import io

from reasonloop.errors import KBLoadError
from reasonloop.kb.ingest.limits import ParseLimits, check_pixels, failure_reason
from reasonloop.kb.ingest.loaders.document import LoadedDocument, Page, PageFn

__all__ = ["load_image"]


def load_image(
    data: bytes, source: str, title: str, on_page: PageFn | None = None, *, limits: ParseLimits | None = None
) -> LoadedDocument:
    """An image's text, OCR'd; each frame's pixels are counted from its header before it is decoded.

    Raises:
        KBLoadError: not an image, damaged, no text, or a frame of more than ``limits.max_pixels``.
    """
    from PIL import Image, ImageSequence, UnidentifiedImageError

    from reasonloop.kb.ingest.loaders.ocr import recognize

    limits = limits or ParseLimits()
    try:
        image = Image.open(io.BytesIO(data))
        check_pixels(*image.size, source, limits)
        frames = getattr(image, "n_frames", 1)
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise KBLoadError(f"{source}: not a readable image ({exc})", source=source) from exc
    except Image.DecompressionBombError as exc:  # Pillow's own cap, when it is below ours
        raise KBLoadError(f"{source}: {failure_reason(exc, limits)}", source=source) from exc
    pages: list[Page] = []
    try:
        for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
            check_pixels(*frame.size, source, limits)
            lines = recognize(frame)
            pages.append(Page(number, "\n".join(line.text for line in lines)))
            if on_page is not None:
                on_page(number, frames)
    except OSError as exc:  # a truncated file fails when its pixels are read
        raise KBLoadError(f"{source}: damaged image ({exc})", source=source) from exc
    doc = LoadedDocument.paged(source, title, pages, metadata={"type": "image", "pages": frames})
    if not doc.pages:
        raise KBLoadError(f"{source}: no text found in the image (OCR recognised none)", source=source)
    return doc
