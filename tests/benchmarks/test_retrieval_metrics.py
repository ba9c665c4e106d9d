"""The ranking metrics of benchmarks/retrieval_metrics.py on hand-computed examples."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.benchmarks.loading import load_benchmark

m = load_benchmark("retrieval_metrics")


def test_ndcg_perfect_ranking_is_one() -> None:
    assert m.ndcg_at_k(["a", "b", "c"], {"a": 1, "b": 1}, 10) == pytest.approx(1.0)


def test_ndcg_binary_hand_computed() -> None:
    # relevant at ranks 2 and 4: DCG = 1/log2(3) + 1/log2(5); ideal: ranks 1 and 2 = 1 + 1/log2(3)
    got = m.ndcg_at_k(["x", "a", "y", "b"], {"a": 1, "b": 1}, 10)
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert got == pytest.approx(expected)
    assert got == pytest.approx(0.6509209, abs=1e-6)


def test_ndcg_graded_uses_linear_gain_and_ideal_order() -> None:
    # grades a=2, b=1 ranked b, a: DCG = 1 + 2/log2(3); IDCG = 2 + 1/log2(3)
    got = m.ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, 10)
    assert got == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    assert m.ndcg_at_k(["a", "b"], {"a": 2, "b": 1}, 10) == pytest.approx(1.0)


def test_ndcg_cutoff_ignores_hits_below_k_and_caps_the_ideal() -> None:
    assert m.ndcg_at_k(["x", "y", "a"], {"a": 1}, 2) == 0.0
    # three relevant, k=1: a hit at rank 1 is perfect (ideal is cut at k too)
    assert m.ndcg_at_k(["a", "x"], {"a": 1, "b": 1, "c": 1}, 1) == pytest.approx(1.0)


def test_ndcg_ignores_zero_grades_duplicates_and_no_relevant() -> None:
    assert m.ndcg_at_k(["z", "a"], {"z": 0, "a": 1}, 10) == pytest.approx(1 / math.log2(3))
    # a repeated document counts once, at its first rank; the repeat does not push "a" down
    assert m.ndcg_at_k(["a", "a", "b"], {"a": 1, "b": 1}, 10) == pytest.approx(1.0)
    assert m.ndcg_at_k(["a"], {"a": 0}, 10) == 0.0
    with pytest.raises(ValueError):
        m.ndcg_at_k(["a"], {"a": 1}, 0)


def test_recall_at_k() -> None:
    qrels = {"a": 1, "b": 1, "c": 1, "d": 0}
    assert m.recall_at_k(["a", "x", "b", "c"], qrels, 3) == pytest.approx(2 / 3)
    assert m.recall_at_k(["d", "x"], qrels, 10) == 0.0
    assert m.recall_at_k(["a", "a", "b"], {"a": 1, "b": 1}, 2) == pytest.approx(1.0)
    assert m.recall_at_k(["a"], {}, 10) == 0.0


def test_all_and_any_in_top() -> None:
    qrels = {"p": 1, "q": 1}
    assert m.all_in_top(["p", "x", "q"], qrels, 3)
    assert not m.all_in_top(["p", "x", "q"], qrels, 2)
    assert m.any_in_top(["p", "x", "q"], qrels, 2)
    assert not m.any_in_top(["x", "y", "p"], qrels, 2)
    assert not m.all_in_top(["x"], {}, 10)


def test_mean_and_percentile() -> None:
    assert m.mean([True, False, True, True]) == pytest.approx(0.75)
    assert m.mean([]) == 0.0
    values = [10.0, 20.0, 30.0, 40.0, 50.0]
    assert m.percentile(values, 50) == 30.0
    assert m.percentile(values, 95) == pytest.approx(48.0)  # 40 + 0.8 * 10
    assert m.percentile([5.0], 95) == 5.0
    with pytest.raises(ValueError):
        m.percentile([], 50)
    with pytest.raises(ValueError):
        m.percentile(values, 101)


def test_published_baselines_parses_the_markdown_table(tmp_path: Path) -> None:
    report = load_benchmark("retrieval_report")
    md = tmp_path / "BASELINES.md"
    md.write_text(
        "# Published\n\n| system | nDCG@10 | source |\n|---|---|---|\n"
        "| BM25 flat | **0.6789** (R@100 0.9253) | anserini |\n"
        "| MiniLM | 0.6451 (leaderboard 64.51) | mteb |\n"
        "| no figure | n/a | x |\n\nExpectation: around 0.66-0.68.\n",
        encoding="utf-8",
    )
    assert report.published_baselines(md) == [("BM25 flat", 0.6789, 0.9253), ("MiniLM", 0.6451, None)]
