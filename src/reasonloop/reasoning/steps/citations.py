"""Inline markers like ``[1]`` in an answer, mapped to the evidence they name, each quoting the
sentence of its passage that the answer rests on."""

from __future__ import annotations

import re
from collections.abc import Mapping

from reasonloop.events import Citation
from reasonloop.kb.base import Hit
from reasonloop.reasoning.steps.sentences import quoting, sentence_units
from reasonloop.reasoning.steps.terms import question_terms

__all__ = ["cite", "markers", "supporting_sentence"]

# [1]  [1, 2]  [1][3]  【2】  [1，2]  [^1]
_MARKER = re.compile(r"[\[【]\^?(\d{1,3}(?:\s*[,，、]\s*\^?\d{1,3})*)[\]】]")
_NUM = re.compile(r"\d+")
_CLAUSE_END = re.compile(r"(?<=[.!?。！？])\s*")


def markers(text: str) -> list[int]:
    """Marker numbers in order of first use, without repeats."""
    seen: dict[int, None] = {}
    for m in _MARKER.finditer(text):
        for n in _NUM.findall(m.group(1)):
            seen.setdefault(int(n), None)
    return list(seen)


def _claims(text: str) -> dict[int, str]:
    """For each marker, the answer's words that cite it (the sentence before each of its uses)."""
    out: dict[int, str] = {}
    pos = 0
    for m in _MARKER.finditer(text):
        before = text[pos : m.start()]
        clause = _CLAUSE_END.split(before.strip())[-1] if before.strip() else ""
        for n in _NUM.findall(m.group(1)):
            out[int(n)] = f"{out.get(int(n), '')} {clause or before}".strip()
        pos = m.end()
    return out


def supporting_sentence(claim: str, citation: Citation, hit: Hit) -> Citation:
    """``citation`` narrowed to the sentence of ``hit`` that shares most of ``claim``'s words (the
    passage's first sentence when none does), with its offsets on the page."""
    text = hit.text
    spans = sentence_units(text)
    if not spans:
        return citation
    terms = question_terms(claim)
    best = max(spans, key=lambda span: (terms.coverage(text[span[0] : span[1]]), -span[0]))
    return quoting(citation, hit, *best)


def cite(text: str, evidence: Mapping[int, Citation], passages: Mapping[int, Hit] | None = None) -> list[Citation]:
    """The citations an answer uses: every marker that names known evidence, in order of use,
    each quoting the sentence of its passage (in ``passages``) that the answer's words rest on."""
    claims = _claims(text) if passages else {}
    out = []
    for n in markers(text):
        if n not in evidence:
            continue
        hit = passages.get(n) if passages else None
        out.append(supporting_sentence(claims.get(n, ""), evidence[n], hit) if hit is not None else evidence[n])
    return out
