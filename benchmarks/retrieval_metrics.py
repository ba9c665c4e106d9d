"""Ranking metrics of ``retrieval.py``: nDCG, recall, "all/any relevant in the top k", percentiles.

A *ranking* is a list of document ids, best first; *qrels* map a document id to its graded
relevance (grade > 0 is relevant). Gains are linear in the grade and discounted by
``log2(rank + 1)``, as trec_eval's ``ndcg_cut`` (the BEIR convention) computes them.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence

__all__ = ["all_in_top", "any_in_top", "dedupe", "mean", "ndcg_at_k", "percentile", "recall_at_k"]


def dedupe(ids: Iterable[Hashable]) -> list:
    """``ids`` with repeats removed, first occurrence kept (chunk hits -> document ranking)."""
    return list(dict.fromkeys(ids))


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
