"""Correct, abstained or wrong: the decision an answer opens with, a span's match, each path of an outcome."""

from __future__ import annotations

import pytest

from reasonloop.eval.outcomes import is_yes_no, mentions, outcome, wrong_share, yes_no_of


@pytest.mark.parametrize(
    ("answer", "decision"),
    [
        ("Yes.", "yes"),
        ("yes, the Halo Max is rated IP67 [2].", "yes"),
        ("**No** - the Aria 2 does not support LDAC [1].", "no"),
        ("No.", "no"),
        ("Nope", "no"),
        ("[3] Yes, it does.", "yes"),
        ("> Answer: no", "no"),
        ("Final Answer: Yes", "yes"),
        ('"No", the Austin office is closed on Fridays.', "no"),
        ("- yeah", "yes"),
        # no decision in the opening
        ("Nobody leads it.", None),
        ("Not on Fridays.", None),
        ("The Aria 2 does not support LDAC.", None),
        ("It is not supported, so no.", None),
        ("The passages do not say.", None),
        ("Yesterday it was.", None),
        ("", None),
        ("42", None),
        # Chinese
        ("是的，Halo Max 可以浸没在水中。", "yes"),
        ("是。", "yes"),
        ("可以报销 [1]", "yes"),
        ("能。", "yes"),
        ("有，包装内附一根充电线。", "yes"),
        ("支持。", "yes"),
        ("不能。Halo Mini 只能单独使用 [1]。", "no"),
        ("不是，试用期为三个月。", "no"),
        ("不支持 Google 快速配对。", "no"),
        ("否", "no"),
        ("没有，公司不提供班车。", "no"),
        ("无法享受保修。", "no"),
        ("答：不可以。", "no"),
        ("**不**", "no"),
        ("不一定，要看情况。", None),
        ("不确定。", None),
        ("可能可以。", None),
        ("没有提到这一点。", None),
        ("是否可以报销，文档没有说明。", None),
        ("文档没有说明。", None),
        ("Halo Mini 不能组成立体声。", None),
    ],
)
def test_the_decision_an_answer_opens_with(answer, decision) -> None:
    assert yes_no_of(answer) == decision


def test_yes_no_questions_are_those_whose_answers_are_all_yes_or_no() -> None:
    assert is_yes_no(["yes"]) and is_yes_no(["No"]) and is_yes_no(["yes", "Yes."])
    assert not is_yes_no([]) and not is_yes_no(["yes", "maybe"]) and not is_yes_no(["$329"])


@pytest.mark.parametrize(
    ("answer", "golds", "found"),
    [
        ("The Aria 2 Pro costs $329 [1].", ["$329"], True),
        ("It costs 329 dollars.", ["$329"], True),
        ("Replacement cushions cost $299.", ["$29"], False),  # not inside a longer number
        ("It costs $2,399.", ["2399"], True),  # thousands separators dropped on both sides
        ("售价 2,399 元", ["2399元"], True),
        ("售价为2399元。", ["2399"], True),  # Chinese characters may touch a number
        ("售价为12399元。", ["2399"], False),
        ("由王立凯负责。", ["王立凯"], True),
        ("由 王 立 凯 负责", ["王立凯"], True),  # spaces ignored for Chinese
        ("Oskar Lindqvist leads it.", ["oskar lindqvist"], True),
        ("The Bristol office.", ["Bristol office", "Lisbon"], True),
        ("Daniel Okafor", ["Dan"], False),  # whole words only
        ("anything", [""], False),
    ],
)
def test_a_span_answer_mentions_an_accepted_answer(answer, golds, found) -> None:
    assert mentions(answer, golds) is found


def test_answerable_yes_no_question_every_path() -> None:
    assert outcome(["no"], True, "No, the Aria 2 does not support LDAC [1].", False) == "correct"
    assert outcome(["no"], True, "不支持。", False) == "correct"
    assert outcome(["no"], True, "Yes, it does.", False) == "wrong"
    assert outcome(["yes"], True, "能。", False) == "correct"
    # a right-sounding answer that opens without a decision is not correct
    assert outcome(["no"], True, "The Aria 2 does not support LDAC [1].", False) == "wrong"
    # quoting the evidence and leaving the decision open is wrong unless the run says it abstained
    assert outcome(["no"], True, "The passages do not say.", False) == "wrong"
    assert outcome(["no"], True, "The passages do not say.", True) == "abstained"
    # the flag decides, whatever the text says
    assert outcome(["no"], True, "No.", True) == "abstained"


def test_answerable_span_question_every_path() -> None:
    assert outcome(["$329"], True, "The Aria 2 Pro costs $329 [1].", False) == "correct"
    # no accepted answer in it, but a token F1 of at least 0.5 (2/3) and the same numbers
    assert outcome(["Oskar Lindqvist"], True, "Oskar", False) == "correct"
    assert outcome(["15 January"], True, "until 15 January", False) == "correct"  # mentioned
    assert outcome(["until 15 January 2025"], True, "15 January 2025", False) == "correct"  # F1 6/7
    # F1 of at least 0.5, but a number of the accepted answer is missing: not a match
    assert outcome(["60 days"], True, "30 days [2]", False) == "wrong"  # F1 exactly 0.5
    assert outcome(["7 business days"], True, "30 business days", False) == "wrong"  # F1 2/3
    assert outcome(["15 January 2025"], True, "until 15 January", False) == "wrong"  # F1 2/3, no 2025
    # no mention and an F1 below 0.5 (one token in common: 0.29)
    assert outcome(["Tomasz Wierzbicki"], True, "Tomasz leads it with others", False) == "wrong"
    assert outcome(["$329"], True, "The Aria 2 costs $249.", False) == "wrong"
    assert outcome(["$329"], True, "$329", True) == "abstained"


def test_unanswerable_question_is_correct_only_when_abstained() -> None:
    assert outcome([], False, "The documents do not mention an Aria 3.", True) == "correct"
    assert outcome([], False, "The documents do not mention an Aria 3.", False) == "wrong"
    assert outcome([], False, "The Aria 3 costs $399.", False) == "wrong"
    assert outcome([], False, "No.", False) == "wrong"


def test_wrong_share_of_answered() -> None:
    assert wrong_share(3, 1) == 0.25
    assert wrong_share(0, 0) is None


def test_the_table_names_what_actually_answered() -> None:
    from reasonloop.eval.qa import summarize
    from reasonloop.eval.report import qa_table

    usage = {"llm_calls": 1, "prompt_tokens": 10, "completion_tokens": 2, "tool_calls": 1}
    row = {"id": "q1", "answers": ["yes"], "prediction": "Yes.", "seconds": 1.0, "usage": usage}
    swapped = summarize("react", [{**row, "ran": "react → evidence answer: base model"}], [])
    plain = summarize("qa", [row], [])
    assert swapped.ran == "react → evidence answer: base model" and plain.ran == ""
    table = qa_table([swapped, plain])
    assert "| react → evidence answer: base model |" in table and "| qa " in table
