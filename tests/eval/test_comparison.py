"""Strategies compared with their intervals, a baseline's verdict, the per-question table and its HTML."""

from __future__ import annotations

import json

import pytest

from reasonloop.errors import ConfigError
from reasonloop.eval.comparison import (
    baseline_differences,
    format_difference,
    load_baseline,
    strategy_differences,
)
from reasonloop.eval.qa import QAReport, evidence_recall, summarize
from reasonloop.eval.question_table import error_lines, question_entries
from reasonloop.eval.report import qa_tables, write_html


def _row(strategy: str, qid: str, prediction: str, answers=("Paris",), **extra) -> dict:
    return {
        "strategy": strategy,
        "id": qid,
        "question": f"Question {qid}?",
        "answers": list(answers),
        "prediction": prediction,
        "abstained": extra.pop("abstained", False),
        "seconds": extra.pop("seconds", 1.0),
        "usage": {"llm_calls": 1, "prompt_tokens": 100, "completion_tokens": 10, "tool_calls": 1},
        **extra,
    }


def _rows(strategy: str, right: int, n: int = 20) -> list[dict]:
    return [_row(strategy, f"q{i}", "Paris" if i < right else "Lyon") for i in range(n)]


def test_each_mean_has_its_interval_in_the_table() -> None:
    score = summarize("qa", _rows("qa", 10), [])
    assert score.f1 == pytest.approx(50.0) and score.intervals["f1"].mean == pytest.approx(50.0)
    f1 = score.intervals["f1"]
    assert f1.low < 50 < f1.high and score.intervals["correct"].mean == pytest.approx(50.0)
    table = qa_tables([score])
    assert f"50.0 [{f1.low:.1f}, {f1.high:.1f}]" in table
    assert score.to_dict()["intervals"]["f1"]["n"] == 20


def test_strategies_are_compared_pairwise_with_a_verdict() -> None:
    rows = {"qa": _rows("qa", 10), "react": _rows("react", 11), "rewoo": _rows("rewoo", 20)}
    diffs = {(d.before, d.after, d.figure): d for d in strategy_differences(rows)}
    close = diffs[("qa", "react", "f1")]
    assert close.interval.mean == pytest.approx(5.0) and not close.interval.significant
    text = format_difference(close)
    assert text.startswith("react \u2212 qa: +5.0 F1 [") and text.endswith("over 20 questions: not significant")
    far = diffs[("qa", "rewoo", "f1")]
    assert far.interval.significant and format_difference(far).endswith(": better")
    scores = [summarize(s, r, []) for s, r in rows.items()]
    assert "- rewoo \u2212 react: +45.0 F1 [" in qa_tables(scores, rows)


def _write(folder, rows) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_a_baseline_is_worse_better_or_the_same_per_figure(tmp_path) -> None:
    good, bad = tmp_path / "good", tmp_path / "bad"
    _write(good, _rows("qa", 18))
    _write(bad, _rows("qa", 4))
    now = {"qa": _rows("qa", 18)}
    worse = baseline_differences({"qa": _rows("qa", 4)}, load_baseline(good))
    assert {d.figure for d in worse if d.worse} == {"f1", "em", "correct", "wrong"}
    assert not any(d.worse for d in baseline_differences(now, load_baseline(good)))  # the same
    better = baseline_differences(now, load_baseline(bad / "results.jsonl"))  # the file itself works too
    assert not any(d.worse for d in better) and any(d.interval.significant for d in better)


def test_a_baseline_is_scored_by_the_current_rules_and_keeps_the_last_line(tmp_path) -> None:
    old = _row("qa", "q1", "1,250 kilometres", answers=["1250 kilometres"], em=0.0, f1=0.4)
    retried = [{**_row("qa", "q2", "x"), "error": {"code": "run.error"}}, _row("qa", "q2", "Paris")]
    _write(tmp_path / "b", [old, *retried])
    with (tmp_path / "b" / "results.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"strategy": "qa", "id": "q3", "predic')  # a line cut short by a killed run
    rows = load_baseline(tmp_path / "b")["qa"]
    assert [(r["id"], r["em"], r["f1"]) for r in rows] == [("q1", 1.0, 1.0), ("q2", 1.0, 1.0)]


def test_an_unusable_baseline_is_one_clear_error(tmp_path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_baseline(tmp_path / "missing")
    _write(tmp_path / "empty", [{**_row("qa", "q1", "x"), "error": {"code": "run.error"}}])
    with pytest.raises(ConfigError, match="no finished question"):
        load_baseline(tmp_path / "empty")
    (tmp_path / "other.jsonl").write_text('{"question": "q?"}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"other\.jsonl:1: not a result line"):
        load_baseline(tmp_path / "other.jsonl")
    _write(tmp_path / "react", _rows("react", 3))
    with pytest.raises(ConfigError, match="none of the strategies"):
        baseline_differences({"qa": _rows("qa", 3)}, load_baseline(tmp_path / "react"))
    _write(tmp_path / "others", [_row("qa", "z1", "Paris")])
    with pytest.raises(ConfigError, match="answered none of the questions"):
        baseline_differences({"qa": _rows("qa", 3)}, load_baseline(tmp_path / "others"))


def _mixed() -> dict[str, list[dict]]:
    rows = [
        _row("qa", "q1", "Paris [1]", run_id="run-1", trace=["searched"]),
        _row("qa", "q2", "The documents don't say.", abstained=True, run_id="run-2"),
        _row("qa", "q3", "Lyon", run_id="run-3", seconds=2.5),
    ]
    return {"qa": rows}


def test_the_per_question_table_puts_wrong_answers_first() -> None:
    from reasonloop.eval.scoring import rescore

    rows = {"qa": [rescore(r) for r in _mixed()["qa"]]}
    entries = question_entries(rows)
    assert [(e.id, e.outcome) for e in entries] == [("q3", "wrong"), ("q2", "abstained"), ("q1", "correct")]
    wrong = entries[0]
    assert (wrong.question, wrong.golds, wrong.answer, wrong.f1, wrong.tokens, wrong.seconds, wrong.run_id) == (
        "Question q3?",
        ("Paris",),
        "Lyon",
        0.0,
        110,
        2.5,
        "run-3",
    )
    assert entries[2].answer == "Paris"  # citation markers are not part of the answer
    lines = error_lines(entries, 1)
    assert lines[0].startswith("WRONG  qa  q3  Question q3?") and "run run-3" in lines[3]
    assert len(lines) == 4  # one answer shown: the correct ones never are
    assert error_lines(entries[2:], 5) == ["every answer is correct"]


def test_the_html_report_holds_the_table_and_escapes_untrusted_text(tmp_path) -> None:
    from reasonloop.eval.scoring import rescore

    hostile = '<script>alert("q")</script>'
    rows = [
        rescore(_row("qa", "q1", f"Lyon {hostile}", answers=["<b>Paris</b>"], run_id="r<1>")),
        rescore(_row("qa", "q2", "Paris")),
    ]
    rows[0]["question"] = f"Where? {hostile}"
    rows[0]["trace"] = ["<img src=x onerror=alert(1)>"]
    report = QAReport("set", "model", [summarize("qa", rows, [])], {"qa": rows}, str(tmp_path))
    page = write_html(tmp_path / "r.html", "Answers <x>", kind="qa", report=report).read_text(encoding="utf-8")
    assert "<script>" not in page and "<img src=x" not in page and "<b>Paris</b>" not in page
    assert "Where? &lt;script&gt;alert(&quot;q&quot;)&lt;/script&gt;" in page
    assert "&lt;b&gt;Paris&lt;/b&gt;" in page and "r&lt;1&gt;" in page
    assert page.index('<tr class="wrong">') < page.index('<tr class="correct">')
    assert "<h2>Per question</h2>" in page and "How to read this" in page and "citation P" in page


def test_gold_ids_match_a_document_id_or_its_source_path() -> None:
    assert evidence_recall([], ["a"], []) is None
    assert evidence_recall(["a", "b"], ["a"], []) == 0.5
    sources = ["/srv/docs/policies/travel.md", "C:\\docs\\hr\\leave.md"]
    assert evidence_recall(["policies/travel.md", "hr/leave.md"], ["9f3c"], sources) == 1.0
    assert evidence_recall(["travel.md"], [], ["/srv/docs/policies/my-travel.md"]) == 0.0  # whole path parts


def test_rows_kept_from_older_rules_are_scored_by_the_current_ones() -> None:
    # a results line written when punctuation was made a space: EM 0, F1 0.4 kept in the file
    old = _row("qa", "q1", "1,250 kilometres [1]", answers=["1250 kilometres"], em=0.0, f1=0.4, outcome="correct")
    zh = _row("qa", "q2", "1902年建成", answers=["1902年"], em=0.0, f1=0.0)
    score = summarize("qa", [old, zh], [])
    assert score.em == pytest.approx(50.0)  # EM 1 and 0
    assert score.f1 == pytest.approx(100 * (1.0 + 2 / 3) / 2)
