"""Text in images, offline, Chinese and English: RapidOCR (PP-OCRv4 detection, direction and
recognition models shipped inside the ``rapidocr-onnxruntime`` wheel) on onnxruntime.

The recognition model is trained mostly on Chinese, where there are no spaces, and on English it
drops the space between words now and then, sometimes every one in a line ("thesealword"). The
spaces are put back from the page itself: a word gap is a run of blank pixel columns as wide as a
word space, between two letters the recogniser placed on either side of it (:func:`_spaced`). No
space ever goes next to a Chinese (or other full-width) character.

Chosen over Debian's tesseract with ``chi_sim`` by character accuracy and speed on rendered text
(``benchmarks/ocr.py``; figures in benchmarks/README.md). The engine is built once per process,
and one recognition runs at a time: it already uses every core.
"""

from __future__ import annotations

import itertools
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["OcrLine", "recognize"]

_engine: Any = None
_lock = threading.Lock()
_MIN_SCORE = 0.5
"""Lines recognised with less confidence than this are noise (textures, stamps, lines of a table)."""
_WORD_GAP = 0.44
"""A run of blank pixel columns at least this share of the line's letter pitch (the mean distance
between the centres of its letters) is a space between words. On rendered English pages the gaps
between the letters of a word measure up to 0.43 of it, spaces 0.40 and up, most 0.5-0.8
(benchmarks/ocr.py)."""
_BODY_GAP = 0.6
_BODY_ONLY_GAP = 0.36
"""A letter whose top reaches over the gap after it (f, T) narrows it to 0.40-0.42: a gap of at least
:data:`_BODY_ONLY_GAP` is a space too when the body of the line (its middle, from the top of the
small letters to the baseline) is blank over :data:`_BODY_GAP` of the pitch. Letters of a word
leave at most 0.51 there."""
_BODY = (0.45, 0.8)
"""Where the body of a line is, as shares of the line box's height from its top."""
_NO_SPACE_BEFORE = frozenset(",.;:!?)]}%")
_NO_SPACE_AFTER = frozenset("([{")


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


def recognize(image: Any, *, space_words: bool = True) -> list[OcrLine]:
    """The lines of text in ``image`` (a PIL image), top to bottom.

    Args:
        space_words: Put back the spaces between words the recogniser dropped (see the module);
            ``False`` keeps its text as it is.

    Raises:
        ImportError: the OCR engine is not installed.
    """
    import numpy as np

    pixels = np.asarray(image.convert("RGB"))
    with _lock:
        # No per-line direction classifier: on upright pages it turned whole lines upside down
        # (garbage text) often enough to cost 10 points of accuracy (benchmarks/ocr.py).
        # The boxes of the characters place each one in the line, for the word spaces.
        result, _ = _get_engine()(pixels, use_cls=False, return_word_box=space_words)
    gray = pixels.mean(axis=2) if space_words and result else None
    lines: list[OcrLine] = []
    for row in result or []:
        points, text, score = row[0], str(row[1]), row[2]
        if float(score) < _MIN_SCORE:
            continue
        xs = [float(p[0]) for p in points]
        ys = [float(p[1]) for p in points]
        box = (min(xs), min(ys), max(xs), max(ys))
        if gray is not None and len(row) >= 5:
            text = _spaced(text, row[4], row[3], gray, box)
        text = " ".join(text.split())
        if text:
            lines.append(OcrLine(text, box))
    lines.sort(key=lambda line: (round(line.box[1] / 8), line.box[0]))
    return lines


def _wide(ch: str) -> bool:
    """A character written without spaces around it: Chinese, Japanese, Korean, full-width forms."""
    return unicodedata.east_asian_width(ch) in ("W", "F")


def _spaced(text: str, chars: Sequence[str], char_boxes: Sequence[Any], gray: Any, box: tuple[float, ...]) -> str:
    """``text`` with a space wherever two of its letters stand on either side of a word gap of
    the page (``gray``, the page's grey levels; ``box``, the line's box in it), and the
    recogniser put none. ``chars`` and ``char_boxes`` are the recogniser's characters of the line
    (``text``'s, in order) and their boxes; ``text`` is returned as it is when they do not fit it,
    and for a line that is not horizontal."""
    import numpy as np

    x0, top, x1, bottom = (round(v) for v in box)
    if len(chars) != len(text) or len(char_boxes) != len(text) or "".join(map(str, chars)) != text:
        return text
    if x1 - x0 <= bottom - top or top < 0 or x0 < 0:
        return text
    letters = [k for k, ch in enumerate(text) if not ch.isspace()]
    if len(letters) < 3:
        return text
    try:
        centres = [sum(float(p[0]) for p in b) / len(b) for b in char_boxes]
    except (TypeError, ValueError, IndexError, ZeroDivisionError):
        return text
    pitch = (centres[letters[-1]] - centres[letters[0]]) / (len(letters) - 1)
    crop = gray[top : bottom + 1, x0 : x1 + 1]
    if pitch <= 0 or crop.size == 0:
        return text
    dark, light = np.percentile(crop, 2), np.percentile(crop, 98)
    if light - dark < 48:  # no contrast to tell ink from paper
        return text
    ink = crop < (dark + light) / 2
    blank = ~ink.any(axis=0)
    height = ink.shape[0]
    body_blank = ~ink[int(height * _BODY[0]) : int(height * _BODY[1]) + 1].any(axis=0)
    gap, body_only, body_gap = (max(2.0, share * pitch) for share in (_WORD_GAP, _BODY_ONLY_GAP, _BODY_GAP))
    out: list[str] = []
    for a, b in itertools.pairwise(letters):
        out.append(text[a:b])
        left, right = text[a], text[b]
        if b - a > 1 or _wide(left) or _wide(right) or right in _NO_SPACE_BEFORE or left in _NO_SPACE_AFTER:
            continue
        lo, hi = max(int(centres[a]) - x0, 0), max(int(np.ceil(centres[b])) - x0, 0)
        run = _longest_run(blank[lo:hi])
        if run >= gap or (run >= body_only and _longest_run(body_blank[lo:hi]) >= body_gap):
            out.append(" ")
    out.append(text[letters[-1] :])
    return text[: letters[0]] + "".join(out)


def _longest_run(flags: Any) -> int:
    """The length of the longest run of true values in ``flags``."""
    best = run = 0
    for flag in flags:
        run = run + 1 if flag else 0
        best = max(best, run)
    return best
