"""The honest_answers set (benchmarks/data/honest_answers): its shape, its evidence, and a run over it."""

from __future__ import annotations

import json
from collections import Counter
from functools import partial
from pathlib import Path

import pytest

import reasonloop.eval.qa as qa_module
from reasonloop.eval.datasets import load_qa_set
from reasonloop.eval.outcomes import is_yes_no, mentions, outcome
from tests.cli_run import run_cli
from tests.kb.helpers import HashEmbedder

ROOT = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "honest_answers"
QUESTIONS, DOCS = ROOT / "questions.jsonl", ROOT / "docs"


@pytest.fixture(scope="module")
def honest():
    return load_qa_set(QUESTIONS, corpus=DOCS)


@pytest.fixture(scope="module")
def raw() -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, QUESTIONS.read_text(encoding="utf-8").splitlines())}


def test_the_set_has_every_group_in_both_languages(honest, raw) -> None:
    groups = Counter(i.group for i in honest.items)
    assert groups["yes_no"] >= 40 and groups["span"] >= 40 and groups["absent"] >= 20
    assert set(groups) == {"yes_no", "span", "absent"}
    yes_no = [raw[i.id] for i in honest.items if i.group == "yes_no"]
    assert sum(r["negated"] for r in yes_no) * 2 >= len(yes_no)  # half or more against a negated sentence
    assert {a for r in yes_no for a in r["answers"]} == {"yes", "no"}
    chinese = [r for r in raw.values() if r["language"] == "zh"]
    assert 0.3 <= len(chinese) / len(raw) <= 0.4
    assert {r["group"] for r in chinese} == {"yes_no", "span", "absent"}
    docs = {d.id for d in honest.docs}
    assert any(d.endswith(".txt") for d in docs) and any(d.startswith("zh/") for d in docs)


def test_every_answer_is_in_its_evidence_and_the_evidence_in_a_gold_document(honest) -> None:
    text = {d.id: " ".join(f"{d.title}\n{d.text}".split()) for d in honest.docs}
    for item in honest.items:
        if not item.answerable:
            assert item.answers == () and item.gold_ids == () and not item.evidence, item.id
            continue
        assert item.gold_ids and item.evidence, item.id
        evidence = " ".join(item.evidence.split())
        assert any(evidence in text[g] for g in item.gold_ids), item.id
        assert is_yes_no(item.answers) == (item.group == "yes_no"), item.id
        if item.group == "span":
            assert mentions(item.evidence, item.answers), item.id


def test_chinese_questions_are_asked_over_chinese_documents(honest, raw) -> None:
    for item in honest.items:
        if raw[item.id]["language"] == "zh":
            assert any(g.startswith("zh/") for g in item.gold_ids) or not item.answerable, item.id


def test_eval_qa_runs_over_the_set_with_the_ideal_model(tmp_path, capsys, monkeypatch) -> None:
    # Bag-of-words vectors instead of the embedding model: the run takes seconds.
    monkeypatch.setattr(qa_module, "open_eval_kb", partial(qa_module.open_eval_kb, embedder=HashEmbedder()))
    argv = ["eval", "qa", str(QUESTIONS), "--corpus", str(DOCS), "--ideal", "--work", str(tmp_path / "w")]
    code, out, _ = run_cli(capsys, *argv, "--json", "--html", str(tmp_path / "r.html"))
    assert code == 0
    (score,) = json.loads(out)["strategies"]
    assert score["questions"] == 124 and score["failed"] == 0
    assert {g: s["questions"] for g, s in score["groups"].items()} == {"yes_no": 50, "span": 50, "absent": 24}
    assert sum(s["correct"] + s["abstained"] + s["wrong"] for s in score["groups"].values()) == 124
    results = Path(json.loads(out)["folder"]) / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        assert row["outcome"] == outcome(
            row["answers"], row.get("answerable", True), row["prediction"], row["abstained"]
        ), row["id"]
        # the ideal model declines; qa declines before asking it when no passage holds the question's names
        declined = row["prediction"] == "The passages do not say." or row["prediction"].startswith(
            "The documents don't say."
        )
        if row.get("answerable", True):
            # the ideal model gives the gold answer whenever it was shown the evidence sentence
            expected = ("abstained" if row["abstained"] else "wrong") if declined else "correct"
            assert row["outcome"] == expected, row["id"]
        else:
            assert declined  # it never answers a question the documents do not answer
    answered = score["groups"]["yes_no"]["correct"] + score["groups"]["span"]["correct"]
    assert answered >= 90  # retrieval shows the evidence of most questions, even with bag-of-words vectors
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Per group of questions" in page and "<td>yes_no</td>" in page
    code, out, _ = run_cli(capsys, *argv)  # resumed: the tables
    assert code == 0
    assert "| strategy | group |" in " ".join(out.split()) and "wrong/answered" in out
