"""Scoring functions of the evaluation harness on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from reasonloop.eval.metrics import (
    contains_answer,
    mrr,
    ndcg_at_k,
    normalize_for_matching,
    rank_with_ties,
    recall_at_k,
    strip_citations,
)


def test_citation_markers_are_not_part_of_the_answer() -> None:
    assert strip_citations("Chief of Protocol [2]") == "Chief of Protocol"
    assert strip_citations("1889 [1][3]。") == "1889。"


def test_matching_makes_any_punctuation_a_space() -> None:
    # looking for an answer inside a sentence: the marks around it must not glue it to its neighbours
    assert normalize_for_matching("Paris,France「北京」") == "paris france 北京"


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
