"""The third held-out honest_answers set: its documents hold every evidence sentence and answer."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from reasonloop.eval.datasets import load_qa_set
from reasonloop.eval.outcomes import is_yes_no, mentions

ROOT = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "honest_answers"
QUESTIONS, DOCS = ROOT / "heldout-3.jsonl", ROOT / "docs-heldout-3"


def test_every_evidence_sentence_is_in_a_gold_document_and_holds_its_answer() -> None:
    honest = load_qa_set(QUESTIONS, corpus=DOCS)
    raw = {r["id"]: r for r in map(json.loads, QUESTIONS.read_text(encoding="utf-8").splitlines())}
    assert len(raw) == len(honest.items)  # no id repeats
    text = {d.id: " ".join(f"{d.title}\n{d.text}".split()) for d in honest.docs}
    for item in honest.items:
        if not item.answerable:
            assert item.answers == () and item.gold_ids == () and not item.evidence, item.id
            continue
        assert any(" ".join(item.evidence.split()) in text[g] for g in item.gold_ids), item.id
        assert is_yes_no(item.answers) == (item.group == "yes_no"), item.id
        if item.group == "span":
            assert mentions(item.evidence, item.answers), item.id
        if raw[item.id]["language"] == "zh":
            assert all(g.startswith("zh/") for g in item.gold_ids), item.id
    yes_no = [r for r in raw.values() if r["group"] == "yes_no"]
    assert sum(r["negated"] for r in yes_no) * 2 >= len(yes_no)
    assert Counter(i.group for i in honest.items) == {"yes_no": 15, "span": 17, "absent": 10}
