"""Figures with their uncertainty: intervals per strategy, paired differences, a gate on a baseline.

Every figure of the QA table is a mean of per-question values (:data:`FIGURES`): EM and F1 (0..100,
over questions that have an accepted answer), *correct* and *wrong* (100 for a question with that
outcome, 0 otherwise: the mean is a percentage of the answered questions), evidence recall and
citation precision (0..1, over the questions that have one), and the cost figures. Each gets a
95% bootstrap interval (:mod:`reasonloop.eval.intervals`).

Strategies are compared on the questions both answered, pairwise: ``rewoo − qa: +1.2 F1 [−0.8,
+3.1]: not significant``. A run is compared with a *baseline* (the results folder of an earlier
``reasonloop eval qa``, or its ``results.jsonl``) the same way, strategy by strategy, over the
questions both hold: a figure is *worse* when its paired difference is below zero beyond its
interval (for *wrong*, above zero), which is what ``--fail-if-worse`` gates on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reasonloop.errors import ConfigError
from reasonloop.eval.intervals import Interval, bootstrap_interval, paired_difference
from reasonloop.eval.scoring import rescore

__all__ = [
    "COMPARED",
    "FIGURES",
    "Difference",
    "baseline_differences",
    "figure_intervals",
    "format_difference",
    "load_baseline",
    "question_values",
    "strategy_differences",
]


def _usage(name: str) -> Callable[[dict[str, Any]], float | None]:
    def value(row: dict[str, Any]) -> float | None:
        counted = row.get("usage", {}).get(name)  # rows of older runs have no searches
        return None if counted is None else float(counted)

    return value


def _scaled(name: str, factor: float) -> Callable[[dict[str, Any]], float | None]:
    return lambda row: None if row.get(name) is None else factor * float(row[name])


def _is(kind: str) -> Callable[[dict[str, Any]], float | None]:
    return lambda row: 100.0 if row.get("outcome") == kind else 0.0


FIGURES: dict[str, tuple[str, Callable[[dict[str, Any]], float | None]]] = {
    "em": ("EM", _scaled("em", 100)),
    "f1": ("F1", _scaled("f1", 100)),
    "correct": ("correct %", _is("correct")),
    "wrong": ("wrong %", _is("wrong")),
    "evidence_recall": ("evidence R", _scaled("evidence_recall", 1)),
    "citation_precision": ("citation P", _scaled("citation_precision", 1)),
    "llm_calls": ("calls", _usage("llm_calls")),
    "prompt_tokens": ("prompt tok", _usage("prompt_tokens")),
    "completion_tokens": ("compl. tok", _usage("completion_tokens")),
    "tool_calls": ("tool calls", _usage("tool_calls")),
    "searches": ("searches", _usage("searches")),
    "seconds": ("s/question", _scaled("seconds", 1)),
}
"""Figure key -> (its column name, the per-question value of a scored row; None: not counted)."""

COMPARED = ("f1", "em", "correct", "wrong", "evidence_recall", "citation_precision")
"""The quality figures compared between strategies and against a baseline."""
_LOWER_IS_BETTER = frozenset({"wrong"})


def question_values(rows: Iterable[dict[str, Any]], figure: str) -> dict[str, float]:
    """Question id -> the value ``figure`` takes on it, by the current rules (questions without one left out)."""
    value = FIGURES[figure][1]
    out = {}
    for row in rows:
        v = value(rescore(row))
        if v is not None:
            out[str(row["id"])] = v
    return out


def figure_intervals(rows: Sequence[dict[str, Any]]) -> dict[str, Interval]:
    """Every figure of :data:`FIGURES` over ``rows`` (scored rows of one strategy), with its interval."""
    out = {}
    for figure, (_, value) in FIGURES.items():
        values = [v for v in map(value, rows) if v is not None]
        if values:
            out[figure] = bootstrap_interval(values)
    return out


@dataclass(frozen=True, slots=True)
class Difference:
    """``after − before`` on one figure, paired over the questions both hold."""

    before: str
    after: str
    figure: str
    interval: Interval

    @property
    def worse(self) -> bool:
        """``after`` is worse than ``before`` beyond the interval."""
        if not self.interval.significant:
            return False
        return self.interval.low > 0 if self.figure in _LOWER_IS_BETTER else self.interval.high < 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "before": self.before,
            "after": self.after,
            "figure": self.figure,
            **self.interval.to_dict(),
            "significant": self.interval.significant,
            "worse": self.worse,
        }


def _paired(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]], figure: str) -> Interval | None:
    va, vb = question_values(a, figure), question_values(b, figure)
    common = [q for q in va if q in vb]
    if not common:
        return None
    return paired_difference([va[q] for q in common], [vb[q] for q in common])


def strategy_differences(
    rows: Mapping[str, Sequence[dict[str, Any]]], figures: Sequence[str] = ("f1", "em", "correct")
) -> list[Difference]:
    """Every later strategy against every earlier one, on each figure, over the questions both answered."""
    names = [s for s, r in rows.items() if r]
    out = []
    for i, before in enumerate(names):
        for after in names[i + 1 :]:
            for figure in figures:
                interval = _paired(rows[before], rows[after], figure)
                if interval is not None:
                    out.append(Difference(before, after, figure, interval))
    return out


def _signed(value: float, fmt: str) -> str:
    return fmt.format(value).replace("-", "\u2212") if value < 0 else "+" + fmt.format(value)


def format_difference(diff: Difference) -> str:
    """``rewoo − qa: +1.2 F1 [−0.8, +3.1]: not significant`` (quality shares with 2 decimals)."""
    iv = diff.interval
    fmt = "{:.2f}" if diff.figure in ("evidence_recall", "citation_precision") else "{:.1f}"
    verdict = "not significant"
    if iv.significant:
        verdict = "worse" if diff.worse else "better"
    return (
        f"{diff.after} \u2212 {diff.before}: {_signed(iv.mean, fmt)} {FIGURES[diff.figure][0]} "
        f"[{_signed(iv.low, fmt)}, {_signed(iv.high, fmt)}] over {iv.n} questions: {verdict}"
    )


# -- baseline -------------------------------------------------------------------------------------
def load_baseline(path: str | Path) -> dict[str, list[dict[str, Any]]]:
    """The finished rows per strategy of an earlier evaluation, scored by the current rules.

    ``path`` is the results folder ``reasonloop eval qa`` printed (holding ``results.jsonl``) or
    that file itself. A question repeated in the file keeps its last finished line, as resuming does.

    Raises:
        ConfigError: no such file, or no finished question in it.
    """
    path = Path(path)
    file = path / "results.jsonl" if path.is_dir() else path
    if not file.is_file():
        raise ConfigError(
            f"baseline {path} not found: give the results folder an earlier 'reasonloop eval qa' printed, "
            "or its results.jsonl"
        )
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    with file.open(encoding="utf-8") as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except json.JSONDecodeError:
                continue  # a line cut short by a killed run, as the result store skips it
            if not isinstance(row, dict) or "strategy" not in row or "id" not in row:
                raise ConfigError(f"{file}:{number}: not a result line of 'reasonloop eval qa' (no strategy or id)")
            if not row.get("error"):
                latest[(str(row["strategy"]), str(row["id"]))] = row
    if not latest:
        raise ConfigError(f"baseline {file} holds no finished question")
    out: dict[str, list[dict[str, Any]]] = {}
    for (strategy, _), row in latest.items():
        out.setdefault(strategy, []).append(rescore(row))
    return out


def baseline_differences(
    current: Mapping[str, Sequence[dict[str, Any]]],
    baseline: Mapping[str, Sequence[dict[str, Any]]],
    figures: Sequence[str] = COMPARED,
) -> list[Difference]:
    """Each strategy of ``current`` against the same strategy in ``baseline`` (``before``: ``baseline``).

    Raises:
        ConfigError: no strategy, or no question of a shared strategy, is in both.
    """
    shared = [s for s in current if s in baseline and current[s]]
    if not shared:
        raise ConfigError(
            f"the baseline has none of the strategies evaluated here ({', '.join(current)}; "
            f"it has {', '.join(baseline) or 'none'})"
        )
    out = []
    for strategy in shared:
        ids = {str(r["id"]) for r in current[strategy]} & {str(r["id"]) for r in baseline[strategy]}
        if not ids:
            raise ConfigError(f"the baseline's {strategy} answered none of the questions evaluated here")
        for figure in figures:
            interval = _paired(baseline[strategy], current[strategy], figure)
            if interval is not None:
                out.append(Difference(f"baseline {strategy}", strategy, figure, interval))
    return out
