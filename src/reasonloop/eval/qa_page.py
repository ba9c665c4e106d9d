"""The parts of the HTML report that tell a QA evaluation's story.

After the side-by-side table (:mod:`reasonloop.eval.report`): the paired differences between
strategies with their intervals, what each figure means, the plot of F1 against tokens (every
strategy with its own marker shape, its mean with its intervals as error bars, so that equal
means stay visible), and the per-question table, wrong answers first. Every text that comes from
a question set or a model is escaped: it is shown as text, never read as markup.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from reasonloop.eval.comparison import Difference, format_difference, strategy_differences
from reasonloop.eval.question_table import QuestionEntry, question_entries

__all__ = ["MARKERS", "differences_html", "notes_html", "questions_html", "tokens_plot"]

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
"""One marker shape per strategy, in table order (then repeated)."""

NOTES = (
    (
        "correct / abstained / wrong",
        "Each answer has one outcome. Abstained: the run said the documents do not decide the question. "
        "Correct: it mentions an accepted answer, or reaches F1 0.5 against one with all its numbers; for a "
        "yes/no question, its opening decides the accepted way. A question the documents do not answer is "
        "correct only when the run abstained. wrong/answered = wrong / (correct + wrong).",
    ),
    (
        "EM, F1",
        "Exact match and token F1 of the answer text (citation markers removed) against the closest accepted "
        "answer, 0-100, by the official rules: SQuAD v1.1 for English (punctuation deleted, articles dropped, "
        "F1 over words), CMRC 2018 for a question or answer with Chinese characters (F1 from the longest "
        "common run of characters and words). They are strict: a correct answer that says more than the "
        "accepted answer scores a low EM and F1.",
    ),
    (
        "evidence R",
        "Share of the question's gold documents (its gold_ids) among the documents the run retrieved. "
        "'-' when the questions name no gold documents. Over the set's own documents gold_ids are the set's "
        "document ids; with --kb they are the knowledge base's document ids or source paths as 'reasonloop kb "
        "list' shows them (the end of a path is enough: policies/travel.md).",
    ),
    (
        "citation P",
        "Share of the answer's citations whose passage holds an accepted answer (for a yes/no question, the "
        "question's evidence sentence); blank when the answer cites nothing. It judges the citations, not the "
        "answer: a precision of 0.88 beside an EM of 25 means the cited passages were mostly the right ones, "
        "not that 88% of the answers were.",
    ),
    (
        "intervals",
        "Each mean is followed by its 95% bootstrap interval [low, high]: 2,000 resamples of the questions "
        "with a fixed seed. Two strategies are compared on the questions both answered (paired): a difference "
        "whose interval holds 0 is not significant, whatever its size.",
    ),
    (
        "cost",
        "Model calls, prompt and completion tokens (as the provider reports them, estimated otherwise), tool "
        "calls and seconds per question; p50 and p95 of the seconds.",
    ),
)


def notes_html() -> str:
    items = "".join(f"<dt>{html.escape(term)}</dt><dd>{html.escape(text)}</dd>" for term, text in NOTES)
    return f'<h2>How to read this</h2><dl class="notes">{items}</dl>'


def differences_html(rows: dict[str, list[dict[str, Any]]]) -> str:
    diffs: Sequence[Difference] = strategy_differences(rows)
    if not diffs:
        return ""
    items = "".join(
        f'<li class="{"sig" if d.interval.significant else "ns"}">{html.escape(format_difference(d))}</li>'
        for d in diffs
    )
    return (
        "<h2>Differences between strategies</h2><p>Paired over the questions both strategies answered, "
        f"with 95% bootstrap intervals.</p><ul>{items}</ul>"
    )


def _cell(text: str, cls: str = "") -> str:
    return f'<td class="{cls}">{html.escape(text)}</td>' if cls else f"<td>{html.escape(text)}</td>"


def _entry_row(e: QuestionEntry) -> str:
    f1 = "-" if e.f1 is None else f"{100 * e.f1:.1f}"
    trace = ""
    if e.trace:
        steps = "".join(f"<li>{html.escape(t)}</li>" for t in e.trace)
        trace = f"<details><summary>trace</summary><ol>{steps}</ol></details>"
    run = html.escape(e.run_id) if e.run_id else "-"
    return (
        f'<tr class="{html.escape(e.outcome)}">'
        f'<td class="outcome">{html.escape(e.outcome)}</td>'
        f"{_cell(e.strategy, 'text')}{_cell(e.id, 'text')}{_cell(e.question, 'text')}{_cell(e.gold_text, 'text')}"
        f'<td class="text">{html.escape(e.answer) or "<i>(empty)</i>"}{trace}</td>'
        f"{_cell(f1)}{_cell(str(e.tokens))}{_cell(f'{e.seconds:.1f}')}"
        f'<td class="text run">{run}{"<br>" + html.escape(e.stop_reason) if e.stop_reason else ""}</td></tr>'
    )


def questions_html(rows: dict[str, list[dict[str, Any]]]) -> str:
    entries = question_entries(rows)
    if not entries:
        return ""
    counts = {k: sum(e.outcome == k for e in entries) for k in ("wrong", "abstained", "correct")}
    head = "".join(
        f"<th>{h}</th>"
        for h in ("outcome", "strategy", "id", "question", "gold", "answer", "F1", "tokens", "s", "run id")
    )
    body = "".join(_entry_row(e) for e in entries)
    return (
        f"<h2>Per question</h2><p>{counts['wrong']} wrong, {counts['abstained']} abstained, "
        f"{counts['correct']} correct; wrong answers first. The run id names the run; its line in the results "
        f"folder (<code>results.jsonl</code>) keeps it with the first steps of its trace.</p>"
        f'<table class="questions"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    )


def tokens_plot(plt: Any, scores: Sequence[Any], rows: dict[str, list[dict[str, Any]]]) -> Any:
    """F1 against tokens per question: each strategy its own marker, its mean with interval bars.

    Per-question points are spread sideways a little (up to 1.5% of the token range; F1 stays exact)
    so that equal points do not stack into one; means are hollow, of decreasing size and labelled,
    so two equal means show as two shapes one inside the other.
    """
    import numpy as np

    rng = np.random.default_rng(7)
    fig, ax = plt.subplots(figsize=(8, 4.8))
    by_name = {s.strategy: s for s in scores}
    tokens_all = [
        r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"]
        for items in rows.values()
        for r in items
        if r.get("f1") is not None and "usage" in r
    ]
    span = (max(tokens_all) - min(tokens_all)) if tokens_all else 0
    spread = 0.015 * (span or max(tokens_all or [1]))
    labelled = 0
    for index, (strategy, items) in enumerate(rows.items()):
        items = [r for r in items if r.get("f1") is not None and "usage" in r]  # no answer: no F1
        if not items:
            continue
        marker = MARKERS[index % len(MARKERS)]
        color = f"C{index % 10}"
        tokens = np.array([r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"] for r in items], float)
        f1s = np.array([100 * r["f1"] for r in items])
        ax.scatter(
            tokens + rng.uniform(-spread, spread, tokens.size),
            f1s,
            s=14,
            alpha=0.35,
            marker=marker,
            color=color,
        )
        score = by_name.get(strategy)
        f1_iv = score.intervals.get("f1") if score is not None else None
        mean_t, mean_f = float(tokens.mean()), float(f1s.mean())
        yerr = [[mean_f - f1_iv.low], [f1_iv.high - mean_f]] if f1_iv else None
        ax.errorbar(
            [mean_t],
            [mean_f],
            yerr=yerr,
            fmt=marker,
            markersize=max(6, 13 - 2 * index),
            markerfacecolor="none",
            markeredgewidth=2,
            color=color,
            ecolor=color,
            capsize=4,
            label=f"{strategy}: mean F1 {mean_f:.1f} at {mean_t:.0f} tokens",
        )
        ax.annotate(
            strategy,
            (mean_t, mean_f),
            xytext=(10, (-16 - 12 * labelled) if mean_f > 80 else (10 + 12 * labelled)),  # inside the axes
            textcoords="offset points",
            color=color,
            fontsize=9,
            arrowprops={"arrowstyle": "-", "color": color, "lw": 0.6},
        )
        labelled += 1
    ax.set_ylim(-5, 105)
    ax.set_xlabel("tokens per question (prompt + completion)")
    ax.set_ylabel("F1")
    ax.set_title("F1 against tokens, per strategy (bars: 95% interval of the mean)")
    ax.legend(fontsize=8, loc="best")
    return fig
