"""Which language a question is written in, so the answer can follow it."""

from __future__ import annotations

import re

__all__ = ["LANGUAGE_NAMES", "detect_language"]

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]+")

LANGUAGE_NAMES = {"en": "English", "zh": "Chinese (中文)", "ja": "Japanese"}


def detect_language(text: str) -> str:
    """``"zh"`` when Han characters dominate, ``"ja"`` with kana, else ``"en"``.

    A Chinese question that quotes an English term stays Chinese: each Han character
    counts as a word, each Latin run as one.
    """
    han = len(_CJK.findall(text))
    if _KANA.search(text):
        return "ja"
    latin = len(_LATIN.findall(text))
    return "zh" if han and han >= latin else "en"
