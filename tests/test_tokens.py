"""Offline token estimates and trimming."""

from __future__ import annotations

import pytest

from reasonloop.tokens import count_tokens, trim_to_tokens


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("   \n\t", 0),
        ("a", 1),
        ("hello", 1),
        ("hello world", 2),
        ("internationalization", 4),  # long words cost more: (20 + 3) // 5
        ("你好世界", 4),  # one token per CJK character
        ("こんにちは", 5),
        ("1234567", 3),  # digits in groups of up to three
        ("a, b!", 4),
    ],
)
def test_count_tokens(text, expected):
    assert count_tokens(text) == expected


def test_count_grows_with_text():
    sentence = "The quick brown fox jumps over the lazy dog. "
    assert count_tokens(sentence * 10) == 10 * count_tokens(sentence)


def test_trim_keeps_text_within_budget():
    text = " ".join(f"word{i}" for i in range(100))
    trimmed = trim_to_tokens(text, 20)
    assert trimmed.endswith(" …[trimmed]")
    body = trimmed.removesuffix(" …[trimmed]")
    assert text.startswith(body)
    assert count_tokens(body) <= 20
    assert count_tokens(text[: len(body) + 7]) > 20  # it cut at the budget, not earlier


def test_trim_leaves_short_text_alone():
    assert trim_to_tokens("short text", 10) == "short text"
    assert trim_to_tokens("", 10) == ""


def test_trim_to_zero_or_less_is_empty():
    assert trim_to_tokens("anything", 0) == ""
    assert trim_to_tokens("anything", -5) == ""


def test_trim_cjk_and_custom_marker():
    assert trim_to_tokens("你好世界再见", 3, marker="…") == "你好世…"
