"""Multi-hop questions: the hops read from a set, per-hop evidence recall, and the strategies run
hop by hop by the ideal scripted model over a tiny corpus."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reasonloop.agents.agent import Agent
from reasonloop.eval.datasets import Doc, QAItem, load_qa_set
from reasonloop.eval.hops import Hop, hop_recall, hop_table, hotpot_hops, read_hops
from reasonloop.eval.oracle import ideal_model
from reasonloop.eval.qa import RecordingRetriever, evaluate_qa, open_eval_kb
from reasonloop.events import Answer, Searched, ToolCall, ToolResult

HOP1 = "The Aria 2 headphones are made by Northwind Audio."
HOP2 = "Northwind Audio was founded by Marta Lind in a garage."
# Each distractor shares more words with the question than the second hop's paragraph does, so a
# search for the question alone does not find the second hop.
DISTRACTORS = [
    "Who founded the company that makes cables? It was founded in Oslo.",
    "The company that makes speakers was founded by two brothers.",
    "Who makes the cases? A company founded in Berlin makes them.",
    "The company that makes chargers was founded after the war.",
    "A company founded by engineers makes the cables and the stands.",
    "Who founded the company that makes stands? A teacher founded it.",
    "The company that makes the boxes was founded in Lyon.",
    "Who makes amplifiers? The company founded in Turin makes them.",
]
QUESTION = "Who founded the company that makes the Aria 2 headphones?"


def _musique(tmp_path: Path) -> Path:
    paragraphs = [
        {"idx": 0, "title": "Aria 2", "paragraph_text": HOP1, "is_supporting": True},
        {"idx": 1, "title": "Northwind Audio", "paragraph_text": HOP2, "is_supporting": True},
    ]
    paragraphs += [
        {"idx": i + 2, "title": f"Note {i}", "paragraph_text": t, "is_supporting": False}
        for i, t in enumerate(DISTRACTORS)
    ]
    question = {
        "id": "2hop_aria",
        "question": QUESTION,
        "answer": "Marta Lind",
        "answer_aliases": [],
        "answerable": True,
        "paragraphs": paragraphs,
        "question_decomposition": [
            {
                "id": 1,
                "question": "Who makes the Aria 2 headphones?",
                "answer": "Northwind Audio",
                "paragraph_support_idx": 0,
            },
            {"id": 2, "question": "Who founded #1 ?", "answer": "Marta Lind", "paragraph_support_idx": 1},
        ],
    }
    path = tmp_path / "musique.json"
    path.write_text(json.dumps([question]), encoding="utf-8")
    return path


async def _run(strategy: str, llm: Any, retriever: Any) -> tuple[list[str], set[str], Answer]:
    """The search queries of one run, the documents it retrieved, and its answer."""
    recorder = RecordingRetriever(retriever)
    agent = Agent(reasoning=strategy, llm=llm, kb=recorder)
    queries, docs, answer = [], set(), None
    async for event in agent.stream(QUESTION):
        if event.depth:
            continue
        if isinstance(event, ToolCall):
            queries.append(str(event.input.get("query", event.input)))
        elif isinstance(event, Searched):  # a search the strategy made itself (decompose's)
            queries.append(event.query)
            docs |= {c.document_id for c in event.citations}
        elif isinstance(event, ToolResult):
            docs |= {c.document_id for c in event.citations}
        elif isinstance(event, Answer):
            answer = event
    assert answer is not None
    return queries, docs | {h.document_id for h in recorder.hits.values()}, answer


@pytest.fixture
async def two_hop(tmp_path, embedder):
    path = _musique(tmp_path)
    qa = load_qa_set(path)
    kb = await open_eval_kb(qa, tmp_path / "work", embedder=embedder)
    try:
        yield qa, read_hops(path, qa), kb
    finally:
        await kb.close()


def test_musique_hops_follow_the_sets_decomposition(tmp_path) -> None:
    path = _musique(tmp_path)
    qa = load_qa_set(path)
    assert read_hops(path, qa) == {
        "2hop_aria": (
            Hop("Aria 2", "Who makes the Aria 2 headphones?", "Northwind Audio"),
            Hop("Northwind Audio", "Who founded #1 ?", "Marta Lind"),
        )
    }


async def test_react_searches_for_the_bridge_entity_found_in_its_first_result(two_hop) -> None:
    qa, hops, kb = two_hop
    queries, docs, answer = await _run("react", ideal_model(qa.items, hops), kb.retriever())
    first, second = queries[0], queries[1]
    assert first == QUESTION
    assert "Northwind Audio" in second  # the entity it read in the first result
    assert len(queries) == 2
    assert {"Aria 2", "Northwind Audio"} <= docs
    assert answer.text.startswith("Marta Lind")


async def test_toolcall_searches_the_second_hop_too(two_hop) -> None:
    qa, hops, kb = two_hop
    queries, docs, answer = await _run("toolcall", ideal_model(qa.items, hops), kb.retriever())
    assert queries[0] == QUESTION and "Northwind Audio" in queries[1]
    assert {"Aria 2", "Northwind Audio"} <= docs
    assert answer.text.startswith("Marta Lind")


async def test_the_first_search_alone_misses_the_second_hop(two_hop) -> None:
    """What makes the tests above able to fail: one search for the question does not find it."""
    qa, _, kb = two_hop
    queries, docs, answer = await _run("react", ideal_model(qa.items), kb.retriever())
    assert len(queries) == 1
    assert "Aria 2" in docs and "Northwind Audio" not in docs
    assert "Marta Lind" not in answer.text


@pytest.mark.parametrize("strategy", ["react", "toolcall", "decompose", "rewoo", "ircot"])
async def test_a_bridge_never_shown_is_never_searched(two_hop, strategy) -> None:
    qa, hops, kb = two_hop
    await kb.delete("Aria 2")  # the only passage naming the bridge entity
    queries, docs, answer = await _run(strategy, ideal_model(qa.items, hops), kb.retriever())
    assert not any("Northwind" in q for q in queries)
    assert "Northwind Audio" not in docs
    assert "Marta Lind" not in answer.text


@pytest.mark.parametrize("strategy", ["decompose", "rewoo"])
async def test_decompose_and_rewoo_retrieve_both_hops(two_hop, strategy) -> None:
    qa, hops, kb = two_hop
    queries, docs, answer = await _run(strategy, ideal_model(qa.items, hops), kb.retriever())
    assert queries[0] == "Who makes the Aria 2 headphones?"
    assert "Northwind Audio" in queries[1]  # the trace shows the search as it was sent
    assert {"Aria 2", "Northwind Audio"} <= docs
    assert answer.text.startswith("Marta Lind")


async def test_ircot_states_the_first_hop_and_searches_with_that_sentence(two_hop) -> None:
    qa, hops, kb = two_hop
    queries, docs, answer = await _run("ircot", ideal_model(qa.items, hops), kb.retriever())
    assert queries[0] == QUESTION
    assert queries[1] == HOP1  # the sentence of the passage it was shown, naming the bridge entity
    assert len(queries) == 2
    assert {"Aria 2", "Northwind Audio"} <= docs
    assert answer.text.startswith("Marta Lind") and answer.stop_reason == "final"
    assert [c.document_id for c in answer.citations] == ["Northwind Audio"]


async def test_ircot_searches_a_hop_it_cannot_state_yet(two_hop) -> None:
    qa, _, kb = two_hop
    # hops in which the first one's answer is in no passage: the model asks for it in its sentence
    hops = {
        "2hop_aria": (
            Hop("Aria 2", "Who sells the Aria 2 headphones?", "Lumen Retail"),
            Hop("Northwind Audio", "Who founded #1 ?", "Marta Lind"),
        )
    }
    queries, _, answer = await _run("ircot", ideal_model(qa.items, hops), kb.retriever())
    assert queries == [QUESTION, "Who sells the Aria 2 headphones?"]  # asked once, then it stops
    assert "Marta Lind" not in answer.text


async def test_per_hop_recall_in_an_evaluation(two_hop, tmp_path) -> None:
    qa, hops, kb = two_hop
    strategies = ["qa", "react", "decompose"]
    report = await evaluate_qa(
        qa, strategies, llm=ideal_model(qa.items, hops), retriever=kb.retriever(), folder=tmp_path / "out"
    )
    recall = {s: hop_recall(s, report.rows[s], hops) for s in strategies}
    assert (recall["qa"].first, recall["qa"].second, recall["qa"].every) == (1, 0, 0)
    for s in ("react", "decompose"):
        assert (recall[s].questions, recall[s].first, recall[s].second, recall[s].every) == (1, 1, 1, 1)


def test_hop_recall_counts_each_hop_apart() -> None:
    hops = {
        "a": (Hop("A1", "q"), Hop("A2", "#1")),
        "b": (Hop("B1", "q"), Hop("B2", "#1"), Hop("B3", "#2")),
        "c": (Hop("C1", "q"), Hop("C2", "#1")),
    }
    use = {"llm_calls": 2, "prompt_tokens": 100, "completion_tokens": 20, "tool_calls": 1}
    rows = [
        {"id": "a", "retrieved": ["A2", "x"], "usage": use},  # second hop only
        {"id": "b", "retrieved": ["B1", "B2"], "usage": {**use, "tool_calls": 3, "searches": 1}},  # not the third
        {"id": "c", "retrieved": ["C1", "C2"], "error": {"code": "x"}},  # failed: not counted
        {"id": "d", "retrieved": ["D1"]},  # no hops known: not counted
    ]
    score = hop_recall("react", rows, hops)
    assert (score.questions, score.first, score.second, score.every) == (2, 1, 2, 0)
    assert score.share("second") == 1.0 and score.share("first") == 0.5
    table = hop_table([score])
    assert "| react | 2 | 50% | 100% | 0% | 2.00 | 120 | 2.00 | 0.50 |" in table


def test_hotpot_bridge_comparison_and_unclear_questions() -> None:
    docs = {
        "Kiss and Tell (1945 film)": Doc(
            "Kiss and Tell (1945 film)", "Kiss and Tell (1945 film)", "A comedy film starring Shirley Temple."
        ),
        "Shirley Temple": Doc("Shirley Temple", "Shirley Temple", "An actress who was Chief of Protocol."),
        "Ed Wood": Doc("Ed Wood", "Ed Wood", "An American filmmaker."),
        "Scott Derrickson": Doc("Scott Derrickson", "Scott Derrickson", "An American director."),
        "Lone": Doc("Lone", "Lone", "Unrelated text."),
    }
    bridge = QAItem(
        "b",
        "What position was held by the woman who starred in Kiss and Tell?",
        ("Chief of Protocol",),
        gold_ids=("Shirley Temple", "Kiss and Tell (1945 film)"),
    )
    assert hotpot_hops(bridge, docs) == (
        Hop("Kiss and Tell (1945 film)", "Kiss and Tell", "Shirley Temple"),
        Hop("Shirley Temple", "#1"),
    )
    comparison = QAItem(
        "c", "Were Scott Derrickson and Ed Wood of the same nationality?", ("yes",), ("Ed Wood", "Scott Derrickson")
    )
    assert hotpot_hops(comparison, docs) == (Hop("Scott Derrickson", "Scott Derrickson"), Hop("Ed Wood", "Ed Wood"))
    unclear = QAItem("u", "Which one?", ("x",), ("Lone", "Ed Wood"))
    assert hotpot_hops(unclear, docs) == ()


@pytest.mark.integration
def test_eval_qa_prints_evidence_per_hop_on_a_multi_hop_set(tmp_path, capsys) -> None:
    from tests.cli_run import run_cli

    path = _musique(tmp_path)
    argv = ["eval", "qa", str(path), "--reasoning", "qa,react", "--ideal", "--work", str(tmp_path / "w")]
    code, out, _ = run_cli(capsys, *argv)
    assert code == 0
    text = " ".join(out.split())
    assert "model scripted:ideal-hops" in text
    assert "Evidence per hop" in text
    assert "| qa | 1 | 100% | 0% | 0% |" in text and "| react | 1 | 100% | 100% | 100% |" in text
