"""Scoring functions of the evaluation harness: rankings, answers, percentiles.

A *ranking* is a list of document ids, best first (a repeated id keeps its first rank); *qrels*
map a document id to its graded relevance (grade > 0 is relevant). nDCG uses linear gains and a
``log2(rank + 1)`` discount with the ideal cut at ``k``, as trec_eval's ``ndcg_cut`` (the BEIR
convention) computes it.

Exact match and F1 of answers follow the official scorers and live in
:mod:`reasonloop.eval.answer_scores`; here are the looser checks that read a whole answer or passage
(:func:`contains_answer`, :func:`normalize_for_matching`).
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections.abc import Hashable, Iterable, Mapping, Sequence

__all__ = [
    "all_in_top",
    "any_in_top",
    "contains_answer",
    "dedupe",
    "mean",
    "mrr",
    "ndcg_at_k",
    "normalize_for_matching",
    "percentile",
    "rank_with_ties",
    "recall_at_k",
    "strip_citations",
]


def dedupe(ids: Iterable[Hashable]) -> list:
    """``ids`` with repeats removed, first occurrence kept (chunk hits -> document ranking)."""
    return list(dict.fromkeys(ids))


def rank_with_ties(scored: Iterable[tuple[str, float]]) -> list[str]:
    """Ids of ``(id, score)`` pairs, best score first; equal scores ordered by id.

    Score ties are common in fused rankings; ordering them by id makes a ranking (and every
    figure computed from it) the same however the pairs arrived.
    """
    return [item for item, _ in sorted(scored, key=lambda kv: (-kv[1], kv[0]))]


def ndcg_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Normalised discounted cumulative gain of the first ``k`` documents of ``ranking``.

    Raises:
        ValueError: ``k`` < 1.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    dcg = sum(
        qrels.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(dedupe(ranking)[:k]) if qrels.get(doc, 0) > 0
    )
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Share of the relevant documents found in the first ``k`` of ``ranking`` (0 when none is relevant)."""
    relevant = {d for d, g in qrels.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(dedupe(ranking)[:k])) / len(relevant)


def mrr(ranking: Sequence[str], qrels: Mapping[str, int], k: int | None = None) -> float:
    """Reciprocal rank of the first relevant document (within the first ``k``; 0 when none)."""
    for i, doc in enumerate(dedupe(ranking)[:k] if k else dedupe(ranking)):
        if qrels.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def all_in_top(ranking: Sequence[str], qrels: Mapping[str, int], k: int) -> bool:
    """Every relevant document is in the first ``k`` (false when none is relevant)."""
    relevant = {d for d, g in qrels.items() if g > 0}
    return bool(relevant) and relevant.issubset(dedupe(ranking)[:k])


def any_in_top(ranking: Sequence[str], qrels: Mapping[str, int], k: int) -> bool:
    """At least one relevant document is in the first ``k``."""
    return any(qrels.get(d, 0) > 0 for d in dedupe(ranking)[:k])


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean (0.0 for no values)."""
    items = [float(v) for v in values]
    return sum(items) / len(items) if items else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation between closest ranks.

    Raises:
        ValueError: no values, or ``q`` outside 0..100.
    """
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


# -- answers ------------------------------------------------------------------------------------
# EM and F1 follow the official scorers (reasonloop.eval.answer_scores). What follows is looser and
# serves the checks that read a whole answer: does it mention an accepted answer, does a passage hold it.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_CJK_PUNCT = "，。、；：？！「」『』（）《》〈〉【】“”‘’·…—～"
_PUNCT = set(string.punctuation) | set(_CJK_PUNCT)
_MARKERS = re.compile(r"\s*\[\d+\]")


def strip_citations(text: str) -> str:
    """``text`` without its ``[n]`` citation markers (they cite the answer, they are not part of it)."""
    return _MARKERS.sub("", text).strip()


def normalize_for_matching(text: str) -> str:
    """Lower case (after NFKC), every punctuation mark (any script) made a space, no English articles,
    single spaces: text in which an answer is looked for as whole words, whatever marks surround it."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(" " if ch in _PUNCT or unicodedata.category(ch).startswith("P") else ch for ch in text)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def contains_answer(passage: str, golds: Sequence[str]) -> bool:
    """Some gold answer occurs in ``passage`` (both normalised for matching; spaces ignored for CJK)."""
    text = normalize_for_matching(passage)
    squeezed = text.replace(" ", "")
    for gold in golds:
        g = normalize_for_matching(gold)
        if not g:
            continue
        if _CJK.search(g):
            if g.replace(" ", "") in squeezed:
                return True
        elif re.search(rf"(?<!\w){re.escape(g)}(?!\w)", text):
            return True
    return False
