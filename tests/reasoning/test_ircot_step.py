"""Reading IRCoT's next sentence, and its answer, out of what models write."""

from __future__ import annotations

import pytest

from reasonloop.reasoning.formats.ircot_step import IRCoTStep, answer_of, parse_step, same_sentence


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("So the answer is: Marta Lind [2].", "Marta Lind [2]"),
        ("So the answer is Marta Lind.", "Marta Lind"),
        ("Therefore, the answer is Dr. Smith.", "Dr. Smith"),  # an abbreviation is no sentence end
        ("The answer is: Washington, D.C.", "Washington, D.C."),
        ("Answer: yes", "yes"),
        ("**Final answer:** 1947", "1947"),
        ("So the answer is:\nMarta Lind", "Marta Lind"),  # on the next line
        ("Marta Lind founded it [2], so the answer is Marta Lind.", "Marta Lind"),
        ("所以答案是：林玛尔塔[2]。", "林玛尔塔[2]"),
        ("因此答案是北京。", "北京"),
        ("答案：北京", "北京"),
    ],
)
def test_answer_forms(reply, answer) -> None:
    step = parse_step(reply)
    assert step.answer == answer and not step.empty


@pytest.mark.parametrize(
    ("reply", "sentence"),
    [
        ("The Aria 2 is made by Northwind Audio [1].", "The Aria 2 is made by Northwind Audio [1]."),
        ("**Next sentence:** The Aria 2 is made by Northwind Audio. [1]", "The Aria 2 is made by Northwind Audio. [1]"),
        ("1. Thought: Paris is the capital of France [1].", "Paris is the capital of France [1]."),
        ("- Step 2: Berlin is in Germany.", "Berlin is in Germany."),
        ("Reasoning so far:\nReply: Berlin is in Germany.", "Berlin is in Germany."),  # the prompt's labels echoed
        ("下一句：Aria 2 由诺斯温德生产[1]。后面的话。", "Aria 2 由诺斯温德生产[1]。"),
        # only the first sentence counts: the rest was written before its search
        ("Northwind makes the Aria 2 [1]. So the answer is: Northwind.", "Northwind makes the Aria 2 [1]."),
        # "the answer is" that is no conclusion
        ("The question's answer is the founder of Northwind.", "The question's answer is the founder of Northwind."),
    ],
)
def test_the_first_new_sentence_without_its_label(reply, sentence) -> None:
    assert parse_step(reply) == IRCoTStep(sentence)


def test_sentences_already_written_are_skipped() -> None:
    written = ["The Aria 2 is made by Northwind Audio [1]."]
    reply = "The Aria 2 is made by Northwind Audio [1].\nNorthwind Audio was founded by Marta Lind [2]."
    assert parse_step(reply, written).sentence == "Northwind Audio was founded by Marta Lind [2]."
    assert parse_step("the aria 2 is made by northwind audio", written).empty  # a repeat is no new sentence


@pytest.mark.parametrize(
    "reply", ["", "  \n\t", "**", "Next sentence:", "So the answer is:", "[1]", "Reasoning so far:\nPassages:"]
)
def test_replies_with_no_sentence_are_empty(reply) -> None:
    assert parse_step(reply).empty and parse_step(reply).answer is None


def test_helpers() -> None:
    assert answer_of("no conclusion here") is None
    assert answer_of("So the answer is:") == ""
    assert same_sentence("Paris is big [1].", "paris is BIG") and not same_sentence("Paris", "Berlin")
