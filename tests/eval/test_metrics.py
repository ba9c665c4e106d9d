"""Scoring functions of the evaluation harness on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from reasonloop.eval.metrics import (
    best_exact_match,
    best_f1,
    contains_answer,
    exact_match,
    f1_score,
    mrr,
    ndcg_at_k,
    normalize_answer,
    rank_with_ties,
    recall_at_k,
    strip_citations,
)


def test_squad_normalisation_drops_case_punctuation_and_articles() -> None:
    assert normalize_answer("The  Chief of Protocol!") == "chief of protocol"
    assert exact_match("the chief of protocol.", "Chief of Protocol") == 1.0


def test_english_f1_counts_words() -> None:
    # prediction: "chief of protocol of the united states" -> 6 tokens (article dropped); gold 3 tokens
    # common = chief, of, protocol = 3 -> P = 3/6, R = 3/3, F1 = 2/3
    assert f1_score("Chief of Protocol of the United States", "Chief of Protocol") == pytest.approx(2 / 3)
    assert f1_score("Paris", "London") == 0.0


def test_chinese_f1_counts_characters() -> None:
    # "北京大学" vs "北京": common 2 characters, P = 2/4, R = 2/2, F1 = 2/3
    assert f1_score("北京大学", "北京") == pytest.approx(2 / 3)
    # punctuation is not a character that counts; a Latin word among CJK counts as one token
    assert f1_score("1406年。", "1406年") == pytest.approx(1.0)
    assert exact_match("唐古拉 山脉", "唐古拉山脉") == 1.0


def test_best_over_several_gold_answers() -> None:
    assert best_f1("in 1889", ["1889", "the year 1889"]) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert best_exact_match("1889", ["eighteen eighty-nine", "1889"]) == 1.0


def test_citation_markers_are_not_part_of_the_answer() -> None:
    assert strip_citations("Chief of Protocol [2]") == "Chief of Protocol"
    assert strip_citations("1889 [1][3]。") == "1889。"


def test_contains_answer_respects_word_boundaries_and_cjk() -> None:
    assert contains_answer("It was completed in 1889 for the fair.", ["1889"])
    assert not contains_answer("It was completed in 18890.", ["1889"])
    assert contains_answer("长江发源于青藏高原的唐古拉山脉。", ["唐古拉 山脉"])


def test_ties_are_ordered_by_id_whatever_the_input_order() -> None:
    scored = [("d3", 0.5), ("d1", 0.5), ("d2", 0.9)]
    assert rank_with_ties(scored) == ["d2", "d1", "d3"]
    assert rank_with_ties(list(reversed(scored))) == ["d2", "d1", "d3"]
    # the tie decides nDCG: the relevant d3 at rank 3, not 2
    assert ndcg_at_k(rank_with_ties(scored), {"d3": 1}, 10) == pytest.approx(1 / math.log2(4))


def test_mrr_and_recall() -> None:
    assert mrr(["x", "y", "a"], {"a": 1}) == pytest.approx(1 / 3)
    assert mrr(["x", "y", "a"], {"a": 1}, k=2) == 0.0
    assert mrr(["a", "a", "b"], {"b": 1}) == pytest.approx(1 / 2)  # repeats keep their first rank
    assert recall_at_k(["a", "x", "b"], {"a": 1, "b": 1, "c": 1}, 2) == pytest.approx(1 / 3)
