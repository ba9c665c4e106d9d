"""The per-question table: what each strategy answered, and how it was counted, wrong answers first.

One entry per (strategy, question) that finished: the question, its accepted answers, the answer
given (without its ``[n]`` markers), the outcome, EM and F1, its cost, and the run id (the run's
trace, as the strategy reported it, is kept in the results folder beside it). Ordered wrong
first, then abstained, then correct; within an outcome by strategy, then in the set's order.
The same entries make ``--show-errors N`` on the terminal and the table of the HTML report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reasonloop.eval.metrics import strip_citations

__all__ = ["QuestionEntry", "error_lines", "question_entries"]

_ORDER = {"wrong": 0, "abstained": 1, "correct": 2}


@dataclass(frozen=True, slots=True)
class QuestionEntry:
    """One row of the per-question table."""

    strategy: str
    id: str
    question: str
    golds: tuple[str, ...]
    """Accepted answers (none: the documents do not answer the question)."""
    answer: str
    outcome: str
    em: float | None
    f1: float | None
    tokens: int
    llm_calls: int
    seconds: float
    run_id: str = ""
    stop_reason: str = ""
    trace: tuple[str, ...] = field(default=())

    @property
    def gold_text(self) -> str:
        return " | ".join(self.golds) if self.golds else "(not in the documents)"


def question_entries(rows: Mapping[str, Sequence[dict[str, Any]]]) -> list[QuestionEntry]:
    """The entries of every strategy's scored rows, wrong first (module docstring)."""
    keyed = []
    for s_index, (strategy, items) in enumerate(rows.items()):
        for q_index, row in enumerate(items):
            if row.get("error") or "prediction" not in row:
                continue
            usage = row.get("usage") or {}
            entry = QuestionEntry(
                strategy=strategy,
                id=str(row.get("id", "")),
                question=str(row.get("question", "")),
                golds=tuple(str(a) for a in row.get("answers") or ()),
                answer=strip_citations(str(row["prediction"])),
                outcome=str(row.get("outcome", "")),
                em=row.get("em"),
                f1=row.get("f1"),
                tokens=int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0)),
                llm_calls=int(usage.get("llm_calls", 0)),
                seconds=float(row.get("seconds", 0.0)),
                run_id=str(row.get("run_id", "")),
                stop_reason=str(row.get("stop_reason", "")),
                trace=tuple(str(t) for t in row.get("trace") or ()),
            )
            keyed.append(((_ORDER.get(entry.outcome, 3), s_index, q_index), entry))
    return [entry for _, entry in sorted(keyed, key=lambda kv: kv[0])]


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def error_lines(entries: Sequence[QuestionEntry], limit: int, *, width: int = 160) -> list[str]:
    """The first ``limit`` answers that are not correct (wrong first, then abstained), as plain text."""
    shown = [e for e in entries if e.outcome != "correct"][:limit]
    lines = []
    for e in shown:
        f1 = "-" if e.f1 is None else f"{100 * e.f1:.1f}"
        cost = f"F1 {f1}, {e.tokens} tokens, {e.llm_calls} calls, {e.seconds:.1f} s"
        lines.append(f"{e.outcome.upper()}  {e.strategy}  {e.id}  {_short(e.question, width)}")
        lines.append(f"    gold:   {_short(e.gold_text, width)}")
        lines.append(f"    answer: {_short(e.answer, width) or '(empty)'}")
        lines.append(f"    {cost}" + (f", run {e.run_id}" if e.run_id else ""))
    if not shown:
        lines.append("every answer is correct")
    return lines
