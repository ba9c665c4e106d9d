"""Tool routing: scores on hand-computed rows, and a run with a scripted tool-calling model."""

from __future__ import annotations

import pytest

from reasonloop.agents.agent import Agent
from reasonloop.eval.datasets import RoutingItem
from reasonloop.eval.routing import evaluate_routing, score_routing
from reasonloop.llm.scripted import ScriptedProvider


def test_scores_by_hand() -> None:
    rows = [
        {"id": "1", "question": "a", "expected": ["docsearch"], "called": ["docsearch"]},
        {"id": "2", "question": "b", "expected": ["kb_stats"], "called": ["docsearch"]},
        {"id": "3", "question": "c", "expected": [], "called": []},
        {"id": "4", "question": "d", "expected": [], "called": ["docsearch"]},
        {"id": "5", "question": "e", "expected": ["docsearch"], "error": {"code": "llm.error"}, "called": []},
    ]
    report = score_routing(rows)
    assert (report.questions, report.failed) == (5, 1)
    assert report.accuracy == pytest.approx(2 / 4)
    assert report.per_tool["docsearch"] == {"precision": pytest.approx(1 / 3), "recall": 1.0, "support": 1.0}
    assert report.per_tool["kb_stats"]["recall"] == 0.0
    assert report.confusion == {
        "docsearch": {"docsearch": 1},
        "kb_stats": {"docsearch": 1},
        "none": {"docsearch": 1, "none": 1},
    }
    assert [w["id"] for w in report.wrong] == ["2", "4"]


async def test_routing_run_with_a_scripted_model(tmp_path, embedder) -> None:
    from reasonloop.config import Settings
    from reasonloop.kb.knowledge_base import KnowledgeBase

    kb = KnowledgeBase.open(tmp_path / "kb", Settings(), embedder=embedder)
    await kb.ingest_records([("d1", "Policy", "Business class is allowed on flights over six hours.")])

    def reply(messages, tools):
        question = next(m.content for m in messages if m.role == "user")
        if any(m.role == "tool" for m in messages):
            return "done"
        if "How many" in question:
            return {"tool_calls": [{"name": "kb_stats", "arguments": {}}]}
        if "Hello" in question:
            return "Hi!"
        return {"tool_calls": [{"name": "docsearch", "arguments": {"query": question}}]}

    items = [
        RoutingItem("k", "What does the policy say about business class?", ("docsearch",)),
        RoutingItem("s", "How many documents are there?", ("kb_stats",)),
        RoutingItem("g", "Hello there", ()),
        RoutingItem("f", "That answer was wrong, note it.", ("feedback",)),
    ]
    llm = ScriptedProvider(replies=reply)
    try:
        report = await evaluate_routing(
            items,
            make_agent=lambda: Agent(reasoning="toolcall", llm=llm, kb=kb, tools=["docsearch", "kb_stats"]),
            folder=tmp_path / "out",
            manifest={"model": "scripted"},
            tools=["docsearch", "kb_stats", "feedback"],
        )
    finally:
        await kb.close()
    assert report.failed == 0
    assert report.accuracy == pytest.approx(3 / 4)
    assert report.wrong == [
        {"id": "f", "question": items[3].question, "expected": ["feedback"], "called": ["docsearch"]}
    ]
    assert report.confusion["feedback"] == {"docsearch": 1}
