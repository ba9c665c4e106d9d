"""Hop-routing evaluation: does the ``auto`` mode's router send each question the right way?

Each question of a routing set with ``hops`` labels (the bundled set has them:
:data:`~reasonloop.eval.routing.BUNDLED_SET`) is routed twice: by the router as a run uses it (the
model's JSON decision, the rule when the model gives none: :func:`~reasonloop.reasoning.steps.router.route_question`)
and by the fallback rule alone. For each, the report gives the accuracy on the questions the rule was
written against (``dev``), on those it was not (``heldout``) and on all, the confusion table of
labelled against chosen route, and how often the model's own decision was used.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reasonloop.eval.datasets import RoutingItem
from reasonloop.eval.report import markdown_table
from reasonloop.eval.results import ResultStore
from reasonloop.llm.base import LLM
from reasonloop.reasoning.formats.language import detect_language
from reasonloop.reasoning.formats.route_reply import ROUTES
from reasonloop.reasoning.steps.route_rule import rule_route
from reasonloop.reasoning.steps.router import route_question

__all__ = ["HopReport", "evaluate_hops", "hop_routing_tables", "score_hops"]

_DECIDERS = ("router", "rule")
"""``router``: the model's decision, else the rule's (as a run routes); ``rule``: the rule alone."""


@dataclass
class HopReport:
    questions: int
    failed: int
    model_decided: int
    """Questions whose route the model's own reply decided (the rest fell back to the rule)."""
    accuracy: dict[str, dict[str, float]]
    """``{decider: {"dev": ..., "heldout": ..., "all": ...}}``."""
    counts: dict[str, int]
    """Questions per split."""
    confusion: dict[str, dict[str, dict[str, int]]]
    """``{decider: {labelled: {chosen: n}}}``."""
    wrong: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "rows"}


def score_hops(rows: Sequence[dict[str, Any]]) -> HopReport:
    """Accuracy per split and confusion tables of finished ``rows`` (``expected``, ``router``, ``rule``, ``split``)."""
    done = [r for r in rows if not r.get("error")]
    splits = sorted({r["split"] or "unsplit" for r in done})
    accuracy: dict[str, dict[str, float]] = {}
    confusion: dict[str, dict[str, dict[str, int]]] = {}
    wrong: dict[str, list[dict[str, Any]]] = {}
    for decider in _DECIDERS:
        scores = {}
        for name in [*splits, "all"]:
            part = [r for r in done if name == "all" or (r["split"] or "unsplit") == name]
            scores[name] = sum(r[decider] == r["expected"] for r in part) / len(part) if part else 0.0
        accuracy[decider] = scores
        table: dict[str, dict[str, int]] = {}
        for (expected, chosen), n in sorted(Counter((r["expected"], r[decider]) for r in done).items()):
            table.setdefault(expected, {})[chosen] = n
        confusion[decider] = table
        wrong[decider] = [
            {
                "id": r["id"],
                "question": r["question"],
                "expected": r["expected"],
                "chosen": r[decider],
                "split": r["split"],
            }
            for r in done
            if r[decider] != r["expected"]
        ]
    return HopReport(
        questions=len(rows),
        failed=len(rows) - len(done),
        model_decided=sum(r["decided_by"] == "model" for r in done),
        accuracy=accuracy,
        counts={name: sum((r["split"] or "unsplit") == name for r in done) for name in splits},
        confusion=confusion,
        wrong=wrong,
        rows=list(rows),
    )


async def evaluate_hops(
    items: Sequence[RoutingItem],
    *,
    llm: LLM | None,
    folder: str | Path,
    manifest: dict[str, Any],
    on_result: Callable[[dict[str, Any], bool], None] | None = None,
) -> HopReport:
    """Route every labelled question of ``items`` with ``llm`` (``None``: the rule only) and with the rule.

    Results go to ``folder`` one line per question (resumed like :func:`~reasonloop.eval.routing.evaluate_routing`).
    """
    labelled = [i for i in items if i.hops]
    store = ResultStore(folder, {"kind": "hop_routing", **manifest})
    try:
        for item in labelled:
            if store.has("hops", item.id):
                if on_result:
                    on_result(store.done[("hops", item.id)], True)
                continue
            started = time.perf_counter()
            row: dict[str, Any] = {
                "strategy": "hops",
                "id": item.id,
                "question": item.question,
                "language": item.language,
                "split": item.split,
                "expected": item.hops,
                "rule": rule_route(item.question)[0],
            }
            try:
                decision = await route_question(llm, item.question, language=detect_language(item.question))
                row.update(router=decision.route, decided_by=decision.decided_by, reason=decision.reason)
            except Exception as exc:  # recorded, and the evaluation goes on
                row.update(router="", decided_by="", error={"code": type(exc).__name__, "message": str(exc)})
            row["seconds"] = time.perf_counter() - started
            store.add(row)
            if on_result:
                on_result(row, False)
    finally:
        store.close()
    ids = [i.id for i in labelled]
    return score_hops([*store.rows("hops", ids), *store.failed("hops", ids)])


def hop_routing_tables(report: HopReport) -> str:
    """Accuracy per split for the router and the rule, then each one's confusion table and misses."""
    splits = [*report.counts, "all"]
    done = report.questions - report.failed
    parts = [
        f"{done} labelled questions"
        + (f" ({report.failed} failed)" if report.failed else "")
        + f"; the model's own decision was used for {report.model_decided}, the rule's for the rest",
        markdown_table(
            ["routed by", *(f"{s} ({report.counts.get(s, done)})" for s in splits)],
            [
                ["model, rule when it gives no decision", *(f"{report.accuracy['router'][s]:.3f}" for s in splits)],
                ["rule alone", *(f"{report.accuracy['rule'][s]:.3f}" for s in splits)],
            ],
        ),
    ]
    for decider, title in (("router", "model, rule when it gives no decision"), ("rule", "rule alone")):
        table = report.confusion[decider]
        parts.append(
            f"{title}: labelled \\ chosen\n\n"
            + markdown_table(
                ["labelled \\ chosen", *ROUTES],
                [[e, *(table.get(e, {}).get(c, 0) for c in ROUTES)] for e in ROUTES if e in table],
            )
        )
        misses = report.wrong[decider]
        if misses:
            parts.append(
                "\n".join(
                    f"- {w['id']} ({w['split']}): {w['question']}  labelled {w['expected']}, chosen {w['chosen']}"
                    for w in misses
                )
            )
    return "\n\n".join(parts)
