"""Every built-in strategy with the scripted model replaying ideal replies: one search, the gold answer."""

from __future__ import annotations

import pytest

from reasonloop.eval.datasets import load_qa_set
from reasonloop.eval.oracle import ideal_model
from reasonloop.eval.qa import evaluate_qa, open_eval_kb

STRATEGIES = ["qa", "decompose", "react", "toolcall", "rewoo", "ircot", "auto"]


async def test_every_strategy_reaches_the_gold_answer_with_one_search(tmp_path, qa_files, embedder) -> None:
    questions, corpus = qa_files
    qa = load_qa_set(questions, corpus=corpus)
    kb = await open_eval_kb(qa, tmp_path / "work", embedder=embedder)
    try:
        report = await evaluate_qa(
            qa, STRATEGIES, llm=ideal_model(qa.items), retriever=kb.retriever(), folder=tmp_path / "out"
        )
    finally:
        await kb.close()
    by_id = {s.strategy: s for s in report.scores}
    for strategy in STRATEGIES:
        score = by_id[strategy]
        assert score.failed == 0, score.errors
        assert score.em == pytest.approx(100.0), (strategy, report.rows[strategy])
        if strategy in ("qa", "decompose", "ircot", "auto"):  # they search themselves: no tool call
            assert score.tool_calls == 0.0 and score.searches >= 1.0
        else:
            assert score.searches == 0.0 and score.tool_calls >= 1.0
        assert score.citation_precision == pytest.approx(1.0)
    # the answer is the model's last call: qa needs one call, the agents at least two
    assert by_id["qa"].llm_calls == 1.0
    assert by_id["toolcall"].llm_calls == 2.0
    assert by_id["react"].llm_calls == 2.0
    assert by_id["rewoo"].llm_calls >= 2.0
    assert by_id["ircot"].llm_calls == 1.0  # its first sentence gives the answer
    assert by_id["auto"].llm_calls == 2.0  # the router's decision (one hop: single), then qa's answer


async def test_the_ideal_model_does_not_answer_beyond_its_evidence(tmp_path, qa_files, embedder) -> None:
    questions, corpus = qa_files
    qa = load_qa_set(questions, corpus=corpus)
    kb = await open_eval_kb(qa, tmp_path / "work", embedder=embedder)
    try:
        await kb.delete("lake")  # the passage answering q2 is gone
        report = await evaluate_qa(
            qa, ["qa"], llm=ideal_model(qa.items), retriever=kb.retriever(), folder=tmp_path / "o"
        )
    finally:
        await kb.close()
    rows = {r["id"]: r for r in report.rows["qa"]}
    # qa finds no passage naming Lake Baikal and says so before the model is asked
    assert rows["q2"]["prediction"].startswith("The documents don't say.") and rows["q2"]["f1"] == 0.0
    assert rows["q1"]["em"] == 1.0
