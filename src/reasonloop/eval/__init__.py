"""Evaluation: retrieval quality, answers and their cost per strategy, and tool routing.

Example::

    from reasonloop.eval import evaluate_qa, load_qa_set, open_eval_kb, qa_tables
    from reasonloop.llm.resolve import create_llm

    qa = load_qa_set("../shared/data/hotpotqa_dev_ircot500/dev_subsampled.jsonl")
    kb = await open_eval_kb(qa, "eval-work/hotpot")
    try:
        report = await evaluate_qa(qa, ["qa", "react"], llm=create_llm("local"), retriever=kb.retriever(),
                                   folder="eval-work/hotpot/run", limit=20)
    finally:
        await kb.close()
    print(qa_tables(report.scores))  # the side-by-side table, then correct/abstained/wrong per group

The same runs from the command line: ``reasonloop eval retrieval|qa|routing`` (docs/evaluation.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reasonloop.eval.answer_scores import answer_language, best_exact_match, best_f1, exact_match, f1_score
    from reasonloop.eval.datasets import (
        Doc,
        QAItem,
        QASet,
        RetrievalSet,
        RoutingItem,
        load_qa_set,
        load_retrieval_set,
        load_routing_set,
        subsample,
    )
    from reasonloop.eval.judge import Judge
    from reasonloop.eval.metrics import mrr, ndcg_at_k, recall_at_k
    from reasonloop.eval.outcomes import is_yes_no, mentions, outcome, yes_no_of
    from reasonloop.eval.qa import QAReport, StrategyScore, evaluate_qa, open_eval_kb
    from reasonloop.eval.report import qa_table, qa_tables, retrieval_table, routing_tables, write_html
    from reasonloop.eval.retrieval import RetrievalReport, evaluate_retrieval
    from reasonloop.eval.routing import RoutingReport, bundled_set_path, evaluate_routing, score_routing

_LAZY = {
    **dict.fromkeys(
        (
            "Doc",
            "QAItem",
            "QASet",
            "RetrievalSet",
            "RoutingItem",
            "load_qa_set",
            "load_retrieval_set",
            "load_routing_set",
            "subsample",
        ),
        "reasonloop.eval.datasets",
    ),
    "Judge": "reasonloop.eval.judge",
    **dict.fromkeys(
        ("answer_language", "best_exact_match", "best_f1", "exact_match", "f1_score"), "reasonloop.eval.answer_scores"
    ),
    **dict.fromkeys(("mrr", "ndcg_at_k", "recall_at_k"), "reasonloop.eval.metrics"),
    **dict.fromkeys(("QAReport", "StrategyScore", "evaluate_qa", "open_eval_kb"), "reasonloop.eval.qa"),
    **dict.fromkeys(("is_yes_no", "mentions", "outcome", "yes_no_of"), "reasonloop.eval.outcomes"),
    **dict.fromkeys(
        ("qa_table", "qa_tables", "retrieval_table", "routing_tables", "write_html"), "reasonloop.eval.report"
    ),
    **dict.fromkeys(("RetrievalReport", "evaluate_retrieval"), "reasonloop.eval.retrieval"),
    **dict.fromkeys(
        ("RoutingReport", "bundled_set_path", "evaluate_routing", "score_routing"), "reasonloop.eval.routing"
    ),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'reasonloop.eval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "Doc",
    "Judge",
    "QAItem",
    "QAReport",
    "QASet",
    "RetrievalReport",
    "RetrievalSet",
    "RoutingItem",
    "RoutingReport",
    "StrategyScore",
    "answer_language",
    "best_exact_match",
    "best_f1",
    "bundled_set_path",
    "evaluate_qa",
    "evaluate_retrieval",
    "evaluate_routing",
    "exact_match",
    "f1_score",
    "is_yes_no",
    "load_qa_set",
    "load_retrieval_set",
    "load_routing_set",
    "mentions",
    "mrr",
    "ndcg_at_k",
    "open_eval_kb",
    "outcome",
    "qa_table",
    "qa_tables",
    "recall_at_k",
    "retrieval_table",
    "routing_tables",
    "score_routing",
    "subsample",
    "write_html",
    "yes_no_of",
]
