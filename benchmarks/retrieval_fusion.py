"""Score fusion for the sensitivity table of ``retrieval.py``: a weighted sum of normalised scores.

The index fuses by reciprocal rank (``reasonloop.kb.hybrid.rrf_fuse``), which ignores how far
apart the scores are. Here each run's scores are first normalised per query, then summed with
weights; a document missing from a run gets that run's lowest normalised score (it was below
the run's cut-off). Ties keep the order of first appearance (dense first).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

__all__ = ["normalise", "score_fuse"]


def normalise(scored: Sequence[tuple[str, float]], how: str) -> dict[str, float]:
    """``{doc: normalised score}``: ``minmax`` to [0, 1], ``z`` to zero mean and unit deviation.

    Raises:
        ValueError: unknown ``how``.
    """
    if how not in ("minmax", "z"):
        raise ValueError(f"normalisation must be minmax or z, got {how!r}")
    values = [s for _, s in scored]
    if not values:
        return {}
    if how == "minmax":
        low, span = min(values), (max(values) - min(values)) or 1.0
        return {d: (s - low) / span for d, s in scored}
    mu, sd = statistics.fmean(values), statistics.pstdev(values) or 1.0
    return {d: (s - mu) / sd for d, s in scored}


def score_fuse(
    runs: Sequence[Sequence[tuple[str, float]]], weights: Sequence[float], how: str = "minmax"
) -> list[tuple[str, float]]:
    """Fuse scored runs (best first) into one ``(doc, score)`` list, best first."""
    if len(runs) != len(weights):
        raise ValueError(f"{len(weights)} weights for {len(runs)} runs")
    normed = [normalise(run, how) for run in runs]
    floors = [min(n.values()) if n else 0.0 for n in normed]
    order: dict[str, int] = {}
    for run in runs:
        for doc, _ in run:
            order.setdefault(doc, len(order))
    fused = {
        doc: sum(w * n.get(doc, floor) for n, w, floor in zip(normed, weights, floors, strict=True)) for doc in order
    }
    return sorted(fused.items(), key=lambda kv: (-kv[1], order[kv[0]]))
