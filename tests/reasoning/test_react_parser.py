"""The ReAct parser against a corpus of replies real models write, and the answer spotter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reasonloop.reasoning.formats.answer_spotter import AnswerSpotter
from reasonloop.reasoning.formats.react_parser import cut_observation, parse_react

CORPUS = json.loads((Path(__file__).parent / "react_corpus.json").read_text(encoding="utf-8"))


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 30


@pytest.mark.parametrize("case", CORPUS, ids=[c["name"] for c in CORPUS])
def test_corpus_case(case: dict) -> None:
    parsed = parse_react(case["reply"])
    expect = case["expect"]
    assert parsed.kind == expect["kind"]
    if "action" in expect:
        assert parsed.action == expect["action"]
    if "input" in expect:
        assert parsed.action_input == expect["input"]
    if "answer" in expect:
        assert parsed.text_answer() == expect["answer"]
    if "thought" in expect:
        assert parsed.thought == expect["thought"]


def test_cut_observation_drops_invented_observations() -> None:
    assert cut_observation("Action: x\nObservation: made up\nThought: more") == "Action: x\n"


def feed_all(spotter: AnswerSpotter, text: str, size: int) -> str:
    return "".join(spotter.feed(text[i : i + size]) for i in range(0, len(text), size))


@pytest.mark.parametrize("size", [1, 3, 7, 100])
def test_spotter_streams_only_the_final_answer(size: int) -> None:
    text = "Thought: I know it.\nFinal Answer: Paris is the capital [1]."
    assert feed_all(AnswerSpotter(), text, size) == "Paris is the capital [1]."


@pytest.mark.parametrize("size", [1, 4, 50])
def test_spotter_streams_nothing_for_an_action(size: int) -> None:
    text = 'Thought: search first\nAction: docsearch\nAction Input: {"query": "x"}'
    assert feed_all(AnswerSpotter(), text, size) == ""


def test_direct_spotter_streams_plain_text_and_skips_labels() -> None:
    assert feed_all(AnswerSpotter(direct=True), "The answer is forty-two, as found [2].", 5) == (
        "The answer is forty-two, as found [2]."
    )
    assert feed_all(AnswerSpotter(direct=True), "Thought: wrap up\nFinal Answer: 42", 3) == "42"


def test_chinese_final_answer_marker() -> None:
    assert feed_all(AnswerSpotter(), "思考：好的\n最终答案：巴黎[1]", 2) == "巴黎[1]"
