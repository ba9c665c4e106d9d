"""OCR keeps English words apart (the recogniser drops spaces; they are read back from the page's
gaps) and never puts a space between Chinese characters."""

from __future__ import annotations

import numpy as np
import pytest

from reasonloop.kb.ingest.loaders import load_bytes
from reasonloop.kb.ingest.loaders.ocr import _spaced

from . import documents as make

pytestmark = pytest.mark.integration

# Read by the recogniser alone as "Alterationsofthe architectureofcerebral whitematterin the".
EN_LINES = [
    "Alterations of the architecture of cerebral white matter in the",
    "developing human brain can affect cortical development and result in",
    "functional disabilities. A line scan diffusion-weighted magnetic",
]
ZH_LINES = ["知识库支持中文文档检索，扫描件需要先识别文字。", "使用Python处理PDF文件，北京是中国的首都。"]


def _line(glyphs: list[tuple[str, int]]) -> tuple[str, list[str], list[list[list[float]]], np.ndarray, tuple]:
    """A one-line page: each glyph a 10-pixel-wide block of ink, after a gap of the given pixels;
    with the recogniser's characters and boxes, as it reports them without spaces."""
    gray = np.full((60, 40 + 20 * len(glyphs) + sum(g for _, g in glyphs)), 255.0)
    x = 20
    chars, boxes = [], []
    for ch, gap in glyphs:
        x += gap
        gray[20:44, x : x + 10] = 0
        chars.append(ch)
        boxes.append([[x, 18], [x + 10, 18], [x + 10, 46], [x, 46]])
        x += 10
    return "".join(chars), chars, boxes, gray, (18, 18, x + 2, 46)


def test_a_wide_gap_between_letters_is_a_space_and_a_narrow_one_is_not():
    text, chars, boxes, gray, box = _line(
        [("o", 0), ("f", 2), ("t", 8), ("h", 2), ("e", 1), ("e", 9), ("n", 2), ("d", 2)]
    )
    assert text == "oftheend" and _spaced(text, chars, boxes, gray, box) == "of the end"


def test_spaces_the_recogniser_kept_stay_and_punctuation_keeps_to_its_word():
    text, chars, boxes, gray, box = _line([("a", 0), ("b", 2), (",", 8), ("(", 8), ("c", 8), (")", 2), ("d", 2)])
    assert _spaced(text, chars, boxes, gray, box) == "ab, (c)d"
    spaced = list("ab c")  # a space the recogniser put stays where it is, and is not doubled
    got = _spaced("ab c", spaced, [*boxes[:2], boxes[2], boxes[4]], gray, box)
    assert got == "ab c"


def test_no_space_goes_next_to_a_chinese_character():
    text, chars, boxes, gray, box = _line([("中", 0), ("文", 12), ("P", 12), ("D", 2), ("F", 2), ("字", 12)])
    assert _spaced(text, chars, boxes, gray, box) == text


def test_text_that_does_not_fit_its_characters_is_left_as_it_is():
    _, chars, boxes, gray, box = _line([("o", 0), ("f", 2), ("t", 8), ("h", 2)])
    assert _spaced("ofth", chars[:3], boxes[:3], gray, box) == "ofth"
    assert _spaced("ofth", chars, boxes, np.full_like(gray, 255.0), box) == "ofth"  # a blank page


def test_a_scanned_english_page_keeps_its_words_apart():
    from reasonloop.kb.ingest.loaders.ocr import recognize

    image = make.text_image(EN_LINES, size=23)
    alone = [line.text for line in recognize(image, space_words=False)]
    assert alone != EN_LINES  # what the recogniser gives: words run together
    assert [line.text for line in recognize(image)] == EN_LINES
    doc = load_bytes(make.image_bytes(image), "/docs/scan.png", suffix=".png", default_title="scan")[0]
    assert doc.text.split() == " ".join(EN_LINES).split()


@pytest.mark.parametrize("size", [23, 32])
def test_chinese_ocr_gains_no_spaces(size):
    from reasonloop.kb.ingest.loaders.ocr import recognize

    image = make.text_image(ZH_LINES, size=size)
    spaced = [line.text for line in recognize(image)]
    assert spaced == [line.text for line in recognize(image, space_words=False)]
    assert spaced == ZH_LINES
