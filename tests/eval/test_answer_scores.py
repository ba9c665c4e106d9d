"""EM and F1 against the official scorers' rules, on cases computed by hand from those rules.

English: SQuAD v1.1 (lower case, ASCII punctuation deleted, a/an/the dropped, white space
collapsed; F1 over a bag of words). Chinese: CMRC 2018 (its 33 marks deleted, CJK characters one
token each, other text split into words; F1 from the longest common run of tokens).
"""

from __future__ import annotations

import pytest

from reasonloop.eval.answer_scores import (
    answer_language,
    best_exact_match,
    best_f1,
    cmrc_exact_text,
    cmrc_tokens,
    exact_match,
    f1_score,
    normalize_answer,
    squad_tokens,
)


# -- SQuAD v1.1 ---------------------------------------------------------------------------------
def test_squad_deletes_punctuation_instead_of_splitting_at_it() -> None:
    assert normalize_answer("1,250 kilometres") == "1250 kilometres"
    assert normalize_answer("U.S.A.") == "usa"
    assert normalize_answer("The  Chief of Protocol!") == "chief of protocol"
    assert normalize_answer("rock-and-roll") == "rockandroll"
    # only ASCII punctuation: a curly quote or a Chinese comma stays, as in the official script
    assert normalize_answer("“Hi”，there") == "“hi”，there"
    # articles only as whole words; "theatre" keeps its "the"
    assert normalize_answer("An apple a day at the theatre") == "apple day at theatre"


def test_squad_exact_match_and_f1_of_the_punctuation_cases() -> None:
    assert exact_match("1,250 kilometres", "1250 kilometres", "en") == 1.0
    assert f1_score("1,250 kilometres", "1250 kilometres", "en") == 1.0
    assert exact_match("the U.S.A.", "USA", "en") == 1.0
    assert exact_match("9,984", "9984", "en") == 1.0


def test_squad_f1_is_a_bag_of_words() -> None:
    # pred: chief of protocol of united states (6, "the" dropped); gold: chief of protocol (3)
    # shared with multiplicity: chief, of, protocol = 3 -> P 3/6, R 3/3, F1 = 2/3
    assert f1_score("Chief of Protocol of the United States", "Chief of Protocol", "en") == pytest.approx(2 / 3)
    # order does not matter: "b a" against "a b" shares 2 of 2
    assert f1_score("york new", "new york", "en") == 1.0
    # multiplicity: "x x y" against "x y" shares min(2, 1) + 1 = 2 -> P 2/3, R 1
    assert f1_score("x x y", "x y", "en") == pytest.approx(2 * (2 / 3) / (2 / 3 + 1))
    assert f1_score("Paris", "London", "en") == 0.0


def test_squad_f1_of_nothing_is_zero_but_exact_match_of_nothing_is_one() -> None:
    # v1.1: no shared token gives F1 0, even when both sides normalise to nothing
    assert f1_score("The", "a", "en") == 0.0
    assert exact_match("The", "a", "en") == 1.0
    assert squad_tokens("...") == []


# -- CMRC 2018 ----------------------------------------------------------------------------------
def test_a_number_does_not_swallow_the_chinese_characters_after_it() -> None:
    assert cmrc_tokens("1902年建成") == ["1902", "年", "建", "成"]
    assert cmrc_tokens("364.6公里") == ["364.6", "公", "里"]
    # pred 1902|年|建|成 (4), gold 1902|年 (2): longest common run 2 -> P 2/4, R 2/2, F1 = 2/3
    assert f1_score("1902年建成", "1902年", "zh") == pytest.approx(2 / 3)
    assert f1_score("10号", "10号", "zh") == 1.0


def test_chinese_f1_is_the_longest_common_run_not_a_bag() -> None:
    # 大学北京 against 北京大学: shared runs 北京 or 大学, length 2 -> P 2/4, R 2/4, F1 0.5
    assert f1_score("大学北京", "北京大学", "zh") == pytest.approx(0.5)
    # 北京大学 against 北京: run 2 -> P 2/4, R 2/2, F1 2/3
    assert f1_score("北京大学", "北京", "zh") == pytest.approx(2 / 3)
    # 中国北京 against 北京中国人: runs 中国 / 北京 are 2 long, 中国 and 北京 are not adjacent in the same order
    # in both -> P 2/4, R 2/5, F1 = 2 * 0.5 * 0.4 / 0.9
    assert f1_score("中国北京", "北京中国人", "zh") == pytest.approx(2 * 0.5 * 0.4 / 0.9)


def test_cmrc_deletes_only_its_own_marks() -> None:
    # "。" is on the list: deleted, so 1406年。 is 1406|年 like the gold
    assert f1_score("1406年。", "1406年", "zh") == 1.0
    # "-" and "/" are on the list and deleted without splitting: covid-19 is one word covid19
    assert cmrc_tokens("covid-19疫苗") == ["covid19", "疫", "苗"]
    # ASCII "(" ")" "," "." are not on the list: they stay, as tokens of their own
    assert cmrc_tokens("(1902年),") == ["(", "1902", "年", ")", ","]
    # a comma followed by a digit stays inside the number; a final period is a token
    assert cmrc_tokens("约1,250公里") == ["约", "1,250", "公", "里"]
    assert cmrc_tokens("U.S.A.的") == ["u.s.a", ".", "的"]
    # pred 1,250|公|里 against gold 1250|公|里: the numbers differ -> run 公里 = 2, P = R = 2/3
    assert f1_score("1,250公里", "1250公里", "zh") == pytest.approx(2 / 3)


def test_cmrc_exact_match_keeps_inner_spaces_and_ascii_marks() -> None:
    assert cmrc_exact_text(" 《红楼梦》 ") == "红楼梦"
    assert exact_match("《红楼梦》", "红楼梦", "zh") == 1.0
    # a space inside counts for exact match (the official script compares the strings)...
    assert exact_match("唐古拉 山脉", "唐古拉山脉", "zh") == 0.0
    # ...but not for F1, where white space only separates words
    assert f1_score("唐古拉 山脉", "唐古拉山脉", "zh") == 1.0
    assert exact_match("1902年.", "1902年", "zh") == 0.0  # an ASCII period is not on the list


def test_english_words_among_chinese_are_words() -> None:
    assert cmrc_tokens("Apple公司的iPhone 15") == ["apple", "公", "司", "的", "iphone", "15"]
    # pred apple|公|司 (3) against gold apple|公|司|的|iphone (5): run 3 -> P 1, R 3/5, F1 = 0.75
    assert f1_score("Apple公司", "Apple公司的iPhone", "zh") == pytest.approx(0.75)


# -- choosing the rules and the best gold ------------------------------------------------------
def test_the_language_is_the_question_s_or_its_answers() -> None:
    assert answer_language("长江发源于哪里？", ["1902"]) == "zh"
    assert answer_language("Who wrote it?", ["曹雪芹"]) == "zh"
    assert answer_language("When was it built?", ["1902"]) == "en"
    # a Chinese question with a Latin answer is scored by the Chinese rules: 1902年 is 1902|年
    lang = answer_language("哪一年建成？", ["1902"])
    assert f1_score("1902年", "1902", lang) == pytest.approx(2 * 0.5 / 1.5)
    # the same answer by the English rules is one word "1902年", which shares nothing with "1902"
    assert f1_score("1902年", "1902", "en") == 0.0


def test_unset_language_follows_the_texts() -> None:
    assert f1_score("1902年建成", "1902年") == pytest.approx(2 / 3)
    assert exact_match("1,250 kilometres", "1250 kilometres") == 1.0


def test_best_over_several_gold_answers() -> None:
    # "in 1889" against "1889": P 1/2, R 1 -> 2/3; against "year 1889" ("the" dropped): P 1/2, R 1/2 -> 1/2
    assert best_f1("in 1889", ["1889", "the year 1889"], "en") == pytest.approx(2 / 3)
    assert best_exact_match("1889", ["eighteen eighty-nine", "1889"], "en") == 1.0
    assert best_f1("北京大学", ["大学", "北京大学"], "zh") == 1.0
    assert best_f1("x", [], "en") == 0.0 and best_exact_match("x", [], "zh") == 0.0


def test_non_chinese_text_is_split_as_nltk_splits_one_line() -> None:
    # quotes become `` and '' tokens; the final period leaves its word even before a closing quote
    assert cmrc_tokens('他说"Kiss and Tell."') == ["他", "说", "``", "kiss", "and", "tell", ".", "''"]
    # possessives and n't split; en dashes stand alone; a comma before a digit stays in the number
    assert cmrc_tokens("Clinton's 1870–71 don't 9,984") == ["clinton", "'s", "1870", "–", "71", "do", "n't", "9,984"]
    # an ASCII single quote that opens a word stands alone; "'re" does not open anything
    assert cmrc_tokens("'hello they're") == ["'", "hello", "they", "'re"]
    # so the F1 of a quote against its gold counts those tokens: pred `` tell . '' (4) vs tell (1)
    assert f1_score('"Tell."', "tell", "zh") == pytest.approx(2 * 0.25 / 1.25)
