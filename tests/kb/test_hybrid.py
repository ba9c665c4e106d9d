import pytest

from reasonloop.kb.base import Filter, Hit, Retriever
from reasonloop.kb.hybrid import HybridRetriever, rrf_fuse


def test_rrf_scores_and_order():
    fused = rrf_fuse([["a", "b", "c"], ["c", "a"]], k=10)
    scores = dict(fused)
    assert scores["a"] == pytest.approx(1 / 11 + 1 / 12)
    assert scores["c"] == pytest.approx(1 / 13 + 1 / 11)
    assert scores["b"] == pytest.approx(1 / 12)
    assert [x for x, _ in fused] == ["a", "c", "b"]


def test_rrf_weights_and_k():
    assert rrf_fuse([["a"], ["b"]], weights=[1.0, 2.0])[0][0] == "b"
    assert rrf_fuse([["a"], ["b"]], weights=[0.0, 1.0])[-1] == ("a", 0.0)
    high_k = dict(rrf_fuse([["a", "b"]], k=1000))
    low_k = dict(rrf_fuse([["a", "b"]], k=1))
    assert high_k["a"] / high_k["b"] < low_k["a"] / low_k["b"]


def test_rrf_ties_are_deterministic():
    # x is 1st/3rd, y is 3rd/1st: equal scores; the better single rank ties too, so the
    # earlier ranking (first list) wins.
    fused = rrf_fuse([["x", "m", "y"], ["y", "n", "x"]])
    assert fused[0][1] == fused[1][1]
    assert [f[0] for f in fused[:2]] == ["x", "y"]
    assert [f[0] for f in rrf_fuse([["y", "m", "x"], ["x", "n", "y"]])[:2]] == ["y", "x"]
    # same best rank, same list: smaller key first
    assert [f[0] for f in rrf_fuse([[5], [3]], weights=[1, 1])] == [5, 3]
    assert [f[0] for f in rrf_fuse([[], [3, 2]])] == [3, 2]
    assert rrf_fuse([[7, 7, 8]]) == rrf_fuse([[7, 8]])  # duplicates count once


def test_rrf_rejects_bad_parameters():
    with pytest.raises(ValueError, match="positive"):
        rrf_fuse([["a"]], k=0)
    with pytest.raises(ValueError, match="weights"):
        rrf_fuse([["a"], ["b"]], weights=[1.0])


class FakeBackend:
    def __init__(self):
        self.calls: list[tuple] = []
        self.dense = [(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.1)]
        self.lex = [(3, 5.0), (4, 4.0), (1, 1.0)]

    async def dense_search(self, query, k, allowed):
        self.calls.append(("dense", k, allowed))
        return [h for h in self.dense if allowed is None or h[0] in allowed][:k]

    def lexical_search(self, query, k, allowed):
        self.calls.append(("lexical", k, allowed))
        return [h for h in self.lex if allowed is None or h[0] in allowed][:k]

    def allowed_keys(self, filters):
        self.calls.append(("filters", tuple(f.field for f in filters)))
        return {4} if filters[0].field == "only4" else set()

    def hydrate(self, scored):
        return [Hit(chunk_id=str(k), document_id="d", source="s", text=f"t{k}", score=s) for k, s in scored]


async def test_hybrid_fuses_both_retrievers():
    backend = FakeBackend()
    r = HybridRetriever(backend, candidates=20)
    assert isinstance(r, Retriever)
    hits = await r.search("q", top_k=2)
    assert [h.chunk_id for h in hits] == ["1", "3"]
    assert ("dense", 20, None) in backend.calls and ("lexical", 20, None) in backend.calls
    assert hits[0].score == pytest.approx(1 / 61 + 1 / 63)


async def test_single_modes():
    r = HybridRetriever(FakeBackend())
    assert [h.chunk_id for h in await r.search("q", 2, mode="dense")] == ["1", "2"]
    assert [h.chunk_id for h in await r.search("q", 2, mode="lexical")] == ["3", "4"]
    with pytest.raises(ValueError, match="mode"):
        await r.search("q", mode="fuzzy")
    with pytest.raises(ValueError, match="mode"):
        HybridRetriever(FakeBackend(), mode="nope")


async def test_filters_restrict_both_retrievers_before_top_k():
    backend = FakeBackend()
    hits = await HybridRetriever(backend).search("q", 1, [Filter(field="only4")])
    assert [h.chunk_id for h in hits] == ["4"]
    assert ("dense", 100, {4}) in backend.calls and ("lexical", 100, {4}) in backend.calls


async def test_no_allowed_keys_means_no_search():
    backend = FakeBackend()
    assert await HybridRetriever(backend).search("q", 5, [Filter(field="ghost")]) == []
    assert [c[0] for c in backend.calls] == ["filters"]


async def test_blank_query_and_zero_top_k():
    backend = FakeBackend()
    r = HybridRetriever(backend)
    assert await r.search("   ") == [] and await r.search("q", 0) == []
    assert backend.calls == []


@pytest.mark.parametrize("is_async", [False, True])
async def test_reranker_hook_sees_candidates_and_reorders(is_async):
    seen = []

    def rerank(query, hits):
        seen.append((query, [h.chunk_id for h in hits]))
        return list(reversed(hits))

    async def arerank(query, hits):
        return rerank(query, hits)

    r = HybridRetriever(FakeBackend(), reranker=arerank if is_async else rerank, rerank_depth=3)
    hits = await r.search("q", 2)
    assert seen == [("q", ["1", "3", "4"])]
    assert [h.chunk_id for h in hits] == ["4", "3"]
