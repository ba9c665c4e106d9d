"""Scoring functions of the evaluation harness: rankings, answers, percentiles.

A *ranking* is a list of document ids, best first (a repeated id keeps its first rank); *qrels*
map a document id to its graded relevance (grade > 0 is relevant). nDCG uses linear gains and a
``log2(rank + 1)`` discount with the ideal cut at ``k``, as trec_eval's ``ndcg_cut`` (the BEIR
convention) computes it.

Answers are compared after SQuAD's normalisation (lower case, punctuation and the articles
*a, an, the* removed, white space collapsed). F1 counts overlapping tokens: words for text
without CJK characters, single characters (plus any Latin words and numbers among them) for text
with CJK characters, as the CMRC 2018 scorer does, since Chinese has no spaces between words.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence

__all__ = [
    "all_in_top",
    "answer_tokens",
    "any_in_top",
    "best_exact_match",
    "best_f1",
    "contains_answer",
    "dedupe",
    "exact_match",
    "f1_score",
    "mean",
    "mrr",
    "ndcg_at_k",
    "normalize_answer",
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
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_CJK_PUNCT = "，。、；：？！「」『』（）《》〈〉【】“”‘’·…—～"
_PUNCT = set(string.punctuation) | set(_CJK_PUNCT)
_CJK_PIECE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]|[^\W_]+")


_MARKERS = re.compile(r"\s*\[\d+\]")


def strip_citations(text: str) -> str:
    """``text`` without its ``[n]`` citation markers (they cite the answer, they are not part of it)."""
    return _MARKERS.sub("", text).strip()


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no English articles, single spaces."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(" " if ch in _PUNCT or unicodedata.category(ch).startswith("P") else ch for ch in text)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_tokens(text: str) -> list[str]:
    """The tokens F1 counts: words, or CJK characters one by one (and the words between them)."""
    norm = normalize_answer(text)
    if _CJK.search(norm):
        return _CJK_PIECE.findall(norm)
    return norm.split()


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the normalised strings are equal (spaces ignored for CJK text)."""
    p, g = normalize_answer(prediction), normalize_answer(gold)
    if _CJK.search(g) or _CJK.search(p):
        p, g = p.replace(" ", ""), g.replace(" ", "")
    return float(p == g)


def f1_score(prediction: str, gold: str) -> float:
    """Token-overlap F1 of ``prediction`` against one gold answer (0..1)."""
    pred, ref = answer_tokens(prediction), answer_tokens(gold)
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def best_exact_match(prediction: str, golds: Sequence[str]) -> float:
    """Exact match against the closest of several gold answers."""
    return max((exact_match(prediction, g) for g in golds), default=0.0)


def best_f1(prediction: str, golds: Sequence[str]) -> float:
    """F1 against the closest of several gold answers."""
    return max((f1_score(prediction, g) for g in golds), default=0.0)


def contains_answer(passage: str, golds: Sequence[str]) -> bool:
    """Some gold answer occurs in ``passage`` (both normalised; spaces ignored for CJK)."""
    text = normalize_answer(passage)
    squeezed = text.replace(" ", "")
    for gold in golds:
        g = normalize_answer(gold)
        if not g:
            continue
        if _CJK.search(g):
            if g.replace(" ", "") in squeezed:
                return True
        elif re.search(rf"(?<!\w){re.escape(g)}(?!\w)", text):
            return True
    return False
