"""Reading the research planner's, judge's and report writer's replies as small models write them."""

from __future__ import annotations

import pytest

from reasonloop.reasoning.formats.research_replies import (
    json_object,
    parse_judgement,
    parse_questions,
    parse_report,
)


@pytest.mark.parametrize(
    "text",
    [
        '{"decision": "gap", "gaps": ["a?"]}',
        'Sure! Here is my decision:\n```json\n{"decision": "gap", "gaps": ["a?"]}\n```\nHope it helps.',
        "{'decision': 'gap', 'gaps': ['a?']}",
        '{"Decision": "gap", "gaps": ["a?"],}',
        'My verdict: {"decision": "gap", "gaps": ["a?"]} and that is all',
    ],
)
def test_the_json_object_is_found_however_it_is_wrapped(text):
    assert json_object(text) == {"decision": "gap", "gaps": ["a?"]}


def test_no_object_is_none():
    assert json_object("The findings answer the question.") is None
    assert json_object("{not json at all}") is None


@pytest.mark.parametrize(
    ("decision", "outcome"),
    [
        ("answer", "answer"),
        ("Sufficient", "answer"),
        ("answer with caveat", "caveat"),
        ("answer (with caveat)", "caveat"),
        ("follow-up", "gap"),
        ("contradiction", "reconcile"),
        ("cannot answer", "unanswerable"),
        ("无法回答", "unanswerable"),
    ],
)
def test_the_judge_s_decision_is_read_in_its_usual_wordings(decision, outcome):
    judged = parse_judgement(
        f'{{"verdict": "{decision}", "missing": ["x?"], "conflict": "1998 vs 2001", "reason": "r"}}', 4
    )
    assert judged is not None and judged.outcome == outcome
    assert judged.gaps == (["x?"] if outcome == "gap" else [])
    assert judged.contradiction == ("1998 vs 2001" if outcome == "reconcile" else "")


def test_a_gap_without_a_named_piece_is_a_caveat_and_an_unknown_decision_is_unreadable():
    assert parse_judgement('{"decision": "gap", "reason": "more needed"}', 4).outcome == "caveat"
    assert parse_judgement('{"decision": "maybe"}', 4) is None
    assert parse_judgement('{"reason": "no decision"}', 4) is None
    gaps = parse_judgement('{"decision": "gap", "gaps": ["a", "b", "A", "c"]}', 2)
    assert gaps.gaps == ["a", "b"]  # without repeats, at most the limit


@pytest.mark.parametrize(
    "text",
    [
        '{"questions": ["Who?", "Where?"]}',
        '```json\n["Who?", "Where?"]\n```',
        "Here is the plan:\n1. Who?\n2. Where?",
        '{"research_questions": [{"question": "Who?"}, {"question": "Where?"}]}',
    ],
)
def test_research_questions_are_read_from_an_object_a_list_or_numbered_lines(text):
    assert parse_questions(text, 5) == ["Who?", "Where?"]


def test_a_report_s_sections_and_what_was_not_established():
    text = "## Maker\nNorthwind makes it [1].\n\n## City\nOslo [2].\n\n## Not established\n- the year\n- the size\n"
    sections, unestablished = parse_report(text)
    assert [(s.title, s.text) for s in sections] == [("Maker", "Northwind makes it [1]."), ("City", "Oslo [2].")]
    assert unestablished == ["the year", "the size"]
    sections, unestablished = parse_report("Just an answer [1].")
    assert [(s.title, s.text) for s in sections] == [("Answer", "Just an answer [1].")] and unestablished == []
    _, unestablished = parse_report("## 回答\n奥斯陆 [1]。\n\n## 未能确定\n- 无")
    assert unestablished == ["无"]  # the strategy drops such a "none"
