"""Ranking metrics of ``retrieval.py``: those of the evaluation harness (:mod:`reasonloop.eval.metrics`).

A *ranking* is a list of document ids, best first; *qrels* map a document id to its graded
relevance (grade > 0 is relevant). Gains are linear in the grade and discounted by
``log2(rank + 1)``, as trec_eval's ``ndcg_cut`` (the BEIR convention) computes them.
"""

from __future__ import annotations

from reasonloop.eval.metrics import all_in_top, any_in_top, dedupe, mean, ndcg_at_k, percentile, recall_at_k

__all__ = ["all_in_top", "any_in_top", "dedupe", "mean", "ndcg_at_k", "percentile", "recall_at_k"]
