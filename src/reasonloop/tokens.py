"""Offline token counting.

No tokenizer is downloaded at run time, so counts are estimates calibrated on BPE
tokenisers of the GPT/Llama family: one token per CJK character, about one per short
word, more for long words, numbers and punctuation. Budgets and trimming use these
counts; providers that report real usage override them for the usage figures.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["count_tokens", "trim_to_tokens"]

# CJK ideographs, kana and hangul each cost about one token; a Latin word about one per
# four characters (at least one); every other non-space symbol one.
_PIECE = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"  # one CJK character
    r"|[A-Za-z\u00c0-\u024f]+"  # a Latin word
    r"|\d{1,3}"  # numbers split in groups of up to three digits
    r"|[^\sA-Za-z\d]"  # any other symbol
)


def _piece_cost(piece: str) -> int:
    if len(piece) > 1 and piece[0].isalpha():
        return max(1, (len(piece) + 3) // 5)
    return 1


def count_tokens(text: str) -> int:
    """Estimated number of tokens in ``text``."""
    if not text:
        return 0
    return _count_cached(text) if len(text) < _CACHE_MIN_CHARS else _count_cached_long(text)


# Prompts are re-sent with the same history every step, so the same strings are counted again
# and again; str caches its own hash, so a cache hit costs a dict lookup. Short strings are
# cheap to count and not worth evicting long ones for.
_CACHE_MIN_CHARS = 64


def _count(text: str) -> int:
    return sum(_piece_cost(m.group()) for m in _PIECE.finditer(text))


_count_cached = _count
_count_cached_long = lru_cache(maxsize=2048)(_count)


def trim_to_tokens(text: str, budget: int, marker: str = " …[trimmed]") -> str:
    """``text`` cut at a piece boundary so that it costs at most ``budget`` tokens.

    The marker is appended when anything was cut, so a model knows the text goes on.
    """
    if budget <= 0:
        return ""
    total = 0
    for m in _PIECE.finditer(text):
        total += _piece_cost(m.group())
        if total > budget:
            return text[: m.start()].rstrip() + marker
    return text
