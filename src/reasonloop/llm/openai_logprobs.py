"""Scores read from the log-probabilities an OpenAI-compatible server returns: the first token's
listed alternatives of a chat completion (``"chat"`` scoring) and the echoed prompt tokens of a
``/completions`` call (``"completions"`` scoring). See :mod:`reasonloop.llm.openai_provider`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from reasonloop.errors import LLMNotSupported

__all__ = ["echoed_logprobs", "first_token_scores", "top_logprobs"]


def top_logprobs(response: Any) -> dict[str, float] | None:
    """The log-probabilities a chat completion lists for its first token (the chosen token and
    its ``top_logprobs``), by token text; ``None`` when the response carries none. A text listed
    twice keeps its larger value."""
    choices = getattr(response, "choices", None) or []
    logprobs = getattr(choices[0], "logprobs", None) if choices else None
    content = getattr(logprobs, "content", None) or []
    if not content:
        return None
    first = content[0]
    table: dict[str, float] = {}
    for item in [first, *(getattr(first, "top_logprobs", None) or [])]:
        token, value = getattr(item, "token", None), getattr(item, "logprob", None)
        if token and value is not None:
            table[token] = max(float(value), table.get(token, -math.inf))
    return table or None


def first_token_scores(top: dict[str, float], continuations: Sequence[str], name: str = "openai") -> list[float]:
    """Scores from a first token's listed log-probabilities (``"chat"`` scoring, see the module
    docstring): each continuation's is that of the longest listed token it starts with, or the
    upper bound of an unlisted token's; an empty continuation scores 0.0.

    Raises:
        LLMNotSupported: two different continuations start with the same listed token.
    """
    leftover = 1.0 - sum(math.exp(v) for v in top.values())
    unlisted = min(top.values())
    if leftover > 0:
        unlisted = min(unlisted, math.log(leftover))
    owners: dict[str, str] = {}
    scores = []
    for continuation in continuations:
        if not continuation:
            scores.append(0.0)
            continue
        token = max((t for t in top if continuation.startswith(t)), key=len, default=None)
        if token is None:
            scores.append(unlisted)
            continue
        owner = owners.setdefault(token, continuation)
        if owner != continuation:
            raise LLMNotSupported(
                f"{name}: {owner!r} and {continuation!r} both start with the token {token!r}; the server "
                "gives the first token's log-probabilities only, so it cannot tell them apart",
                provider="openai",
            )
        scores.append(top[token])
    return scores


def echoed_logprobs(logprobs: Any, start: int, end: int) -> list[float | None] | None:
    """The log-probabilities of the tokens of an echoed ``/completions`` text that cover the
    characters ``start:end`` (a token that straddles ``start`` counts: it is where the
    continuation's tokens begin); ``None`` when the response has no token there (no echo)."""
    offsets = list(getattr(logprobs, "text_offset", None) or [])
    values = list(getattr(logprobs, "token_logprobs", None) or [])
    tokens = list(getattr(logprobs, "tokens", None) or [])
    if not offsets or len(offsets) != len(values) or len(tokens) != len(values):
        return None
    ends = [*offsets[1:], offsets[-1] + len(tokens[-1])]
    picked = [v for begin, stop, v in zip(offsets, ends, values, strict=True) if stop > start and begin < end]
    return picked or None
