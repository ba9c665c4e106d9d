"""One result line scored by the current rules: its outcome, exact match and F1.

A result line keeps the question, its accepted answers and the answer given, so figures read back
from an older results folder (a resumed run, a baseline) are scored by the same rules as a fresh one.
"""

from __future__ import annotations

from typing import Any

from reasonloop.eval.answer_scores import answer_language, best_exact_match, best_f1
from reasonloop.eval.metrics import strip_citations
from reasonloop.eval.outcomes import outcome

__all__ = ["rescore", "row_outcome"]


def row_outcome(row: dict[str, Any]) -> str:
    """The outcome of a finished row, by the current rules (a resumed row may have been judged by older ones)."""
    return outcome(row["answers"], row.get("answerable", True), row.get("prediction", ""), row.get("abstained", False))


def rescore(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its EM, F1 and outcome computed again by the current rules.

    A result line keeps the answer it scored, so figures read back from an older results folder
    (a resumed run, a baseline) are scored by the same rules as a fresh one. Rows that failed, or
    whose question has no accepted answer, keep what they have.
    """
    if row.get("error") or "prediction" not in row:
        return row
    out = dict(row)
    out["outcome"] = row_outcome(row)
    answers = row.get("answers") or []
    if answers:
        language = answer_language(row.get("question", ""), answers)
        scored = strip_citations(row["prediction"])
        out["language"] = language
        out["em"] = best_exact_match(scored, answers, language)
        out["f1"] = best_f1(scored, answers, language)
    return out
