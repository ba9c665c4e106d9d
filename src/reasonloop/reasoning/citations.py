"""Inline markers like ``[1]`` in an answer, mapped to the evidence they name."""

from __future__ import annotations

import re
from collections.abc import Mapping

from reasonloop.events import Citation

__all__ = ["cite", "markers"]

# [1]  [1, 2]  [1][3]  【2】  [1，2]  [^1]
_MARKER = re.compile(r"[\[【]\^?(\d{1,3}(?:\s*[,，、]\s*\^?\d{1,3})*)[\]】]")
_NUM = re.compile(r"\d+")


def markers(text: str) -> list[int]:
    """Marker numbers in order of first use, without repeats."""
    seen: dict[int, None] = {}
    for m in _MARKER.finditer(text):
        for n in _NUM.findall(m.group(1)):
            seen.setdefault(int(n), None)
    return list(seen)


def cite(text: str, evidence: Mapping[int, Citation]) -> list[Citation]:
    """The citations an answer uses: every marker that names known evidence, in order of use."""
    return [evidence[n] for n in markers(text) if n in evidence]
