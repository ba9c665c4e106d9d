"""Reports of an evaluation: markdown tables for the terminal, a self-contained HTML page with plots.

The HTML page embeds its plots as base64 PNG images (``<img src="data:image/png;base64,...">``)
and its style inline, so it opens offline from a single file. The plots are drawn with
matplotlib (the ``eval`` extra) on its non-interactive Agg backend: F1 against tokens per
question for each strategy, and the distribution of wall time per question. A QA report shows
correct, abstained and wrong answers per strategy, and per group of questions when the set
names groups.
"""

from __future__ import annotations

import base64
import html
import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reasonloop.errors import ConfigError

__all__ = [
    "markdown_table",
    "qa_group_table",
    "qa_table",
    "qa_tables",
    "retrieval_table",
    "routing_tables",
    "write_html",
]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A markdown table, numbers right-aligned."""
    text = [[str(c) for c in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in text)) for i, h in enumerate(header)]
    right = [i > 0 for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return (
            "| "
            + " | ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True))
            + " |"
        )

    sep = (
        "|" + "|".join(("-" * (w + 1) + ":") if r else "-" * (w + 2) for w, r in zip(widths, right, strict=True)) + "|"
    )
    return "\n".join([line([str(h) for h in header]), sep, *(line(r) for r in text)])


def _num(value: float | None, fmt: str = "{:.1f}") -> str:
    return "-" if value is None else fmt.format(value)


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


QA_HEADER = [
    "strategy",
    "n",
    "failed",
    "correct",
    "abstained",
    "wrong",
    "wrong/answered",
    "EM",
    "F1",
    "evidence R",
    "citation P",
    "calls",
    "prompt tok",
    "compl. tok",
    "tool calls",
    "searches",
    "s/question",
    "p50 s",
    "p95 s",
]


def _strategy(score: Any) -> str:
    """The strategy asked for, and what actually answered when it differs."""
    ran = getattr(score, "ran", "")
    return ran if ran else score.strategy


def _ci(score: Any, key: str, value: float | None, fmt: str = "{:.1f}") -> str:
    """``value [low, high]`` when the score has the 95% interval of ``key``, else the value alone."""
    interval = getattr(score, "intervals", {}).get(key)
    if value is None or interval is None:
        return _num(value, fmt)
    return f"{fmt.format(value)} [{fmt.format(interval.low)}, {fmt.format(interval.high)}]"


def qa_table(scores: Sequence[Any]) -> str:
    """The side-by-side table of :class:`~reasonloop.eval.qa.StrategyScore` rows, each mean with its
    95% bootstrap interval in brackets."""
    rows = []
    judged = any(s.faithfulness is not None or s.relevance is not None for s in scores)
    for s in scores:
        row = [
            _strategy(s),
            s.questions,
            s.failed,
            s.correct,
            s.abstained,
            s.wrong,
            _share(s.wrong_share),
            _ci(s, "em", s.em),
            _ci(s, "f1", s.f1),
            _ci(s, "evidence_recall", s.evidence_recall, "{:.2f}"),
            _ci(s, "citation_precision", s.citation_precision, "{:.2f}"),
            _ci(s, "llm_calls", s.llm_calls, "{:.2f}"),
            _ci(s, "prompt_tokens", s.prompt_tokens, "{:.0f}"),
            _ci(s, "completion_tokens", s.completion_tokens, "{:.0f}"),
            _ci(s, "tool_calls", s.tool_calls, "{:.2f}"),
            _ci(s, "searches", s.searches, "{:.2f}"),
            _ci(s, "seconds", s.seconds, "{:.2f}"),
            _num(s.p50_s, "{:.2f}"),
            _num(s.p95_s, "{:.2f}"),
        ]
        if judged:
            row += [_num(s.faithfulness, "{:.2f}"), _num(s.relevance, "{:.2f}")]
        rows.append(row)
    return markdown_table(QA_HEADER + (["faithful", "relevant"] if judged else []), rows)


QA_GROUP_HEADER = ["strategy", "group", "n", "failed", "correct", "abstained", "wrong", "wrong/answered", "EM", "F1"]


def qa_group_table(scores: Sequence[Any]) -> str:
    """Correct, abstained and wrong per strategy and group of questions ('' when the set names no groups)."""
    rows = [
        [
            _strategy(s),
            name,
            g.questions,
            g.failed,
            g.correct,
            g.abstained,
            g.wrong,
            _share(g.wrong_share),
            _ci(g, "em", g.em),
            _ci(g, "f1", g.f1),
        ]
        for s in scores
        for name, g in s.groups.items()
    ]
    return markdown_table(QA_GROUP_HEADER, rows) if rows else ""


def qa_tables(scores: Sequence[Any], rows: dict[str, list[dict[str, Any]]] | None = None) -> str:
    """The side-by-side table, the per-group table when the set names groups, then (given the
    scored ``rows`` of two strategies or more) their paired differences with 95% intervals."""
    parts = [qa_table(scores)]
    groups = qa_group_table(scores)
    if groups:
        parts.append(groups)
    if rows:
        from reasonloop.eval.comparison import format_difference, strategy_differences

        diffs = strategy_differences(rows)
        if diffs:
            parts.append(
                "Differences, paired over the questions both answered (95% bootstrap intervals):\n"
                + "\n".join(f"- {format_difference(d)}" for d in diffs)
            )
    return "\n\n".join(parts)


def retrieval_table(report: Any) -> str:
    modes = list(report.metrics)
    keys = list(report.metrics[modes[0]]) if modes else []
    rows = [
        [
            m,
            *(f"{report.metrics[m][k]:.4f}" for k in keys),
            f"{report.latency[m]['p50_ms']:.1f}",
            f"{report.latency[m]['p95_ms']:.1f}",
        ]
        for m in modes
    ]
    return markdown_table(["mode", *keys, "p50 ms", "p95 ms"], rows)


def routing_tables(report: Any) -> str:
    """Accuracy line, per-tool precision/recall, the confusion table and the wrong questions."""
    parts = [
        f"accuracy {report.accuracy:.3f} over {report.questions - report.failed} questions"
        + (f" ({report.failed} failed)" if report.failed else "")
    ]
    parts.append(
        markdown_table(
            ["tool", "precision", "recall", "support"],
            [[t, f"{v['precision']:.2f}", f"{v['recall']:.2f}", int(v["support"])] for t, v in report.per_tool.items()],
        )
    )
    called = sorted({c for row in report.confusion.values() for c in row})
    parts.append(
        markdown_table(
            ["expected \\ called", *called],
            [[e, *(report.confusion[e].get(c, 0) for c in called)] for e in sorted(report.confusion)],
        )
    )
    if report.wrong:
        parts.append(
            "\n".join(
                f"- {w['id']}: {w['question']}  expected {w['expected'] or ['none']}, called {w['called'] or ['none']}"
                for w in report.wrong
            )
        )
    return "\n\n".join(parts)


# -- HTML -----------------------------------------------------------------------------------------
def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise ConfigError("the HTML report needs matplotlib: pip install 'reasonloop[eval]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=96, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _qa_plots(scores: Sequence[Any], rows: dict[str, list[dict[str, Any]]]) -> list[tuple[str, str]]:
    from reasonloop.eval.qa_page import tokens_plot

    plt = _pyplot()
    plots = []
    fig = tokens_plot(plt, scores, rows)
    plots.append(("F1 against tokens", _png(fig)))
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    names = [s for s, items in rows.items() if items]
    ax.boxplot([[r["seconds"] for r in rows[s]] for s in names], showfliers=True)
    ax.set_xticks(range(1, len(names) + 1), names)
    ax.set_ylabel("seconds per question")
    ax.set_title("Latency distribution")
    plots.append(("Latency distribution", _png(fig)))
    plt.close(fig)
    return plots


def _latency_plot(samples: dict[str, list[float]], label: str) -> list[tuple[str, str]]:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    names = [n for n, v in samples.items() if v]
    ax.boxplot([samples[n] for n in names])
    ax.set_xticks(range(1, len(names) + 1), names)
    ax.set_ylabel(label)
    ax.set_title("Latency distribution")
    result = [("Latency distribution", _png(fig))]
    plt.close(fig)
    return result


_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2rem;max-width:90rem;color:#222}"
    "table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}"
    "td:first-child,th:first-child{text-align:left}img{max-width:100%;display:block;margin:1rem 0}"
    "pre{background:#f6f6f6;padding:.5rem;overflow:auto}"
    "dl.notes dt{font-weight:600;margin-top:.5rem}dl.notes dd{margin:0 0 0 1.5rem}"
    "li.sig{font-weight:600}li.ns{color:#555}"
    "table.questions{font-size:.85rem;width:100%}table.questions td.text{text-align:left;vertical-align:top;"
    "overflow-wrap:anywhere;max-width:22rem}table.questions td.run{font-family:monospace;font-size:.75rem;min-width:8rem;max-width:12rem}"
    "tr.wrong td.outcome{background:#fbe3e3;color:#8a1c1c}tr.abstained td.outcome{background:#f4f0dc}"
    "tr.correct td.outcome{background:#e2f3e5;color:#1d5e2a}td.outcome{text-align:left;font-weight:600}"
    "details{margin-top:.3rem;font-size:.8rem;color:#555}table.questions th{text-align:left}"
    "span.ci{font-size:.75rem;color:#666;white-space:nowrap}div.wide{overflow-x:auto}"
)


_WITH_INTERVAL = re.compile(r"^(\S+) (\[\S+, \S+\])$")


def _html_cell(text: str) -> str:
    """A cell's text, escaped; a ``value [low, high]`` cell shows its interval small, on its own line."""
    m = _WITH_INTERVAL.match(text)
    if m:
        return f'{html.escape(m.group(1))}<br><span class="ci">{html.escape(m.group(2))}</span>'
    return html.escape(text)


def _html_table(markdown: str) -> str:
    lines = [ln for ln in markdown.splitlines() if ln.startswith("|")]
    if len(lines) < 2:
        return f"<pre>{html.escape(markdown)}</pre>"
    cells = [[_html_cell(c.strip()) for c in ln.strip().strip("|").split("|")] for ln in lines]
    head = "".join(f"<th>{c}</th>" for c in cells[0])
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in cells[2:])
    return f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def write_html(path: str | Path, title: str, *, kind: str, report: Any, command: str = "") -> Path:
    """Write the report of a ``qa``, ``retrieval`` or ``routing`` evaluation as one HTML file.

    Raises:
        ConfigError: matplotlib is not installed.
    """
    sections: list[str] = []
    after: list[str] = []
    if kind == "qa":
        from reasonloop.eval.qa_page import differences_html, notes_html, questions_html

        sections.append(_html_table(qa_table(report.scores)))
        groups = qa_group_table(report.scores)
        if groups:
            sections.append(f"<h2>Per group of questions</h2>{_html_table(groups)}")
        sections.append(differences_html(report.rows))
        sections.append(notes_html())
        plots = _qa_plots(report.scores, report.rows)
        after.append(questions_html(report.rows))
    elif kind == "retrieval":
        sections.append(_html_table(retrieval_table(report)))
        plots = _latency_plot(report.samples, "milliseconds per search")
    else:
        text = routing_tables(report)
        blocks = text.split("\n\n")
        sections.append(f"<p>{html.escape(blocks[0])}</p>")
        sections += [_html_table(b) if b.startswith("|") else f"<pre>{html.escape(b)}</pre>" for b in blocks[1:]]
        plots = _latency_plot(
            {"routing": [r["seconds"] for r in report.rows if not r.get("error")]}, "seconds per question"
        )
    for caption, data in plots:
        sections.append(
            f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )
    sections += after
    if command:
        sections.append(f"<p>Reproduce with:</p><pre>{html.escape(command)}</pre>")
    page = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>{''.join(sections)}</body></html>"
    )
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out
