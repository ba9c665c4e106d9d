"""Text in images, offline, Chinese and English: RapidOCR (PP-OCRv4 detection, direction and
recognition models shipped inside the ``rapidocr-onnxruntime`` wheel) on onnxruntime.

Chosen over Debian's tesseract with ``chi_sim`` by character accuracy and speed on rendered text
(``benchmarks/ocr.py``; figures in benchmarks/README.md). The engine is built once per process,
and one recognition runs at a time: it already uses every core.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["OcrLine", "recognize"]

_engine: Any = None
_lock = threading.Lock()
_MIN_SCORE = 0.5
"""Lines recognised with less confidence than this are noise (textures, stamps, lines of a table)."""


@dataclass(frozen=True, slots=True)
class OcrLine:
    """One line of text and its box in image pixels ``(x0, top, x1, bottom)``."""

    text: str
    box: tuple[float, float, float, float]


def _get_engine() -> Any:
    global _engine
    if _engine is None:
        from rapidocr_onnxruntime import RapidOCR  # ImportError: the documents extra is missing

        # Detection on the image as it is, only shrunk past 2000 pixels: the default scales the
        # short side up to 736, which makes a line-high strip of text a huge, slow image.
        # One onnxruntime thread: OCR runs beside the embedder during an ingest, and extra
        # threads spin (1.7x the CPU per page for no gain on a busy machine, benchmarks/ocr.py).
        _engine = RapidOCR(det_limit_type="max", det_limit_side_len=2000, intra_op_num_threads=1)
    return _engine


def recognize(image: Any) -> list[OcrLine]:
    """The lines of text in ``image`` (a PIL image), top to bottom.

    Raises:
        ImportError: the OCR engine is not installed.
    """
    import numpy as np

    pixels = np.asarray(image.convert("RGB"))
    with _lock:
        # No per-line direction classifier: on upright pages it turned whole lines upside down
        # (garbage text) often enough to cost 10 points of accuracy (benchmarks/ocr.py).
        result, _ = _get_engine()(pixels, use_cls=False)
    lines: list[OcrLine] = []
    for points, text, score in result or []:
        text = " ".join(str(text).split())
        if not text or float(score) < _MIN_SCORE:
            continue
        xs = [float(p[0]) for p in points]
        ys = [float(p[1]) for p in points]
        lines.append(OcrLine(text, (min(xs), min(ys), max(xs), max(ys))))
    lines.sort(key=lambda line: (round(line.box[1] / 8), line.box[0]))
    return lines
