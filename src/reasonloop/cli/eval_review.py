"""What ``reasonloop eval qa`` shows after its tables: the answers that went wrong, and a baseline's verdict.

``--show-errors N`` prints the first N answers that are not correct (wrong first, then
abstained) with their question, accepted answers, cost and run id. ``--baseline PREVIOUS`` compares
each strategy with the same strategy in an earlier results folder, paired over the questions both
hold; with ``--fail-if-worse`` a figure worse beyond its 95% interval makes the command exit with
:data:`WORSE_EXIT`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reasonloop.cli.console import console, escape

__all__ = ["WORSE_EXIT", "compare_with_baseline", "print_baseline", "show_errors"]

WORSE_EXIT = 4
"""Exit status when ``--fail-if-worse`` finds a figure worse than the baseline's (3 is kept for failed questions)."""


def show_errors(report: Any, limit: int) -> None:
    """Print the first ``limit`` answers that are not correct, wrong ones first."""
    from reasonloop.eval.question_table import error_lines, question_entries

    console.print(f"\nAnswers that are not correct (first {limit}, wrong first):", highlight=False)
    for line in error_lines(question_entries(report.rows), limit):
        console.print(escape(line), highlight=False, soft_wrap=True)


def compare_with_baseline(report: Any, baseline: Path) -> list[Any]:
    """Each strategy of ``report`` against the same one in the results at ``baseline``.

    Raises:
        ConfigError: the baseline cannot be read, or shares no strategy or question with this run.
    """
    from reasonloop.eval.comparison import baseline_differences, load_baseline

    return baseline_differences(report.rows, load_baseline(baseline))


def print_baseline(baseline: Path, diffs: list[Any]) -> None:
    """One line per strategy and figure, ``WORSE`` first on a line that is worse beyond its interval."""
    from reasonloop.eval.comparison import format_difference

    console.print(
        f"\nAgainst the baseline {escape(str(baseline))} (paired over the questions both hold, 95% intervals):",
        highlight=False,
        soft_wrap=True,
    )
    for diff in diffs:
        mark = "WORSE " if diff.worse else ""
        console.print(f"- {mark}{escape(format_difference(diff))}", highlight=False, soft_wrap=True)
