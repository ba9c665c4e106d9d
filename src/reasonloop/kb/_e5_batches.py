"""Model inputs grouped by length, so that a batch pads few tokens: a speed trick.

Why: a batch runs at the length of its longest row; texts of mixed lengths batched in arrival order
spend much of the encoder's work on padding (benchmarks/embedding.py).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["TOKEN_BUDGET", "length_batches"]

TOKEN_BUDGET = 4096
"""Padded tokens per batch: large enough for the matrix products, small enough that attention's
``batch x heads x seq x seq`` scores stay around 100 MB at 512 tokens."""


def length_batches(lengths: Sequence[int], budget: int = TOKEN_BUDGET) -> list[list[int]]:
    """Indices of ``lengths`` in batches of similar length, each padding to at most ``budget`` tokens
    (a longer row alone), shortest first."""
    batches: list[list[int]] = []
    batch: list[int] = []
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        if batch and (len(batch) + 1) * lengths[i] > budget:
            batches.append(batch)
            batch = []
        batch.append(i)
    if batch:
        batches.append(batch)
    return batches
