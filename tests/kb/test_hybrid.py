import pytest

from reasonloop.kb.base import Filter, Hit, Retriever
from reasonloop.kb.retrieval.hybrid import HybridRetriever, normalise_scores, rrf_fuse, score_fuse


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

    def documents_of(self, keys):
        return dict.fromkeys(keys, "d")


async def test_hybrid_fuses_both_retrievers():
    backend = FakeBackend()
    r = HybridRetriever(backend, candidates=20, fusion="rrf")
    assert isinstance(r, Retriever)
    hits = await r.search("q", top_k=2)
    assert [h.chunk_id for h in hits] == ["1", "3"]
    assert ("dense", 20, None) in backend.calls and ("lexical", 20, None) in backend.calls
    assert hits[0].score == pytest.approx(1 / 61 + 1 / 63)


async def test_default_fusion_sums_z_scores():
    # dense 0.9 0.8 0.7 0.1 and BM25 5 4 1; chunk 2 shares no query word: BM25 0, and BM25 is
    # standardised over all four (1, 0, 5, 4)
    hits = await HybridRetriever(FakeBackend()).search("q", top_k=4)
    assert [h.chunk_id for h in hits] == ["3", "1", "2", "4"]
    dense_sd = ((0.275**2 + 0.175**2 + 0.075**2 + 0.525**2) / 4) ** 0.5
    lex_sd = ((1.5**2 + 2.5**2 + 2.5**2 + 1.5**2) / 4) ** 0.5
    assert hits[0].score == pytest.approx((0.7 - 0.625) / dense_sd + (5 - 2.5) / lex_sd)


def test_score_fuse_minmax_weights_and_missing_items():
    dense = [("a", 0.9), ("b", 0.5), ("c", 0.1)]
    lexical = [("c", 10.0), ("a", 0.0)]
    fused = dict(score_fuse([dense, lexical], how="minmax"))
    assert fused == pytest.approx({"a": 1.0, "b": 0.5, "c": 1.0})
    # a tie keeps first appearance (dense first); weights shift the balance
    assert [k for k, _ in score_fuse([dense, lexical], how="minmax")] == ["a", "c", "b"]
    assert score_fuse([dense, lexical], weights=[0.5, 1.0], how="minmax")[0][0] == "c"


def test_score_fuse_rejects_bad_parameters():
    with pytest.raises(ValueError, match="weights"):
        score_fuse([[("a", 1.0)]], weights=[1.0, 2.0])
    with pytest.raises(ValueError, match="zscore or minmax"):
        normalise_scores([("a", 1.0)], "rank")
    with pytest.raises(ValueError, match="fusion"):
        HybridRetriever(FakeBackend(), fusion="mean")
    assert normalise_scores([], "zscore") == {} and score_fuse([[], []]) == []
    assert normalise_scores([("a", 2.0), ("b", 2.0)], "zscore") == {"a": 0.0, "b": 0.0}


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

    r = HybridRetriever(FakeBackend(), fusion="rrf", reranker=arerank if is_async else rerank, rerank_depth=3)
    hits = await r.search("q", 2)
    assert seen == [("q", ["1", "3", "4"])]
    assert [h.chunk_id for h in hits] == ["4", "3"]


def test_score_fuse_minmax_hand_computed() -> None:
    dense = [("a", 0.9), ("b", 0.8), ("c", 0.5)]  # min-max: a 1, b 0.75, c 0
    lexical = [("c", 12.0), ("b", 10.0), ("d", 2.0)]  # min-max: c 1, b 0.8, d 0
    fused = score_fuse([dense, lexical], weights=[0.5, 0.5], how="minmax")
    # a is missing from lexical and d from dense: each gets that run's lowest normalised score (0)
    assert dict(fused) == pytest.approx({"a": 0.5, "b": 0.775, "c": 0.5, "d": 0.0})
    assert [doc for doc, _ in fused] == ["b", "a", "c", "d"]  # a and c tie: first appearance wins


def test_zscore_normalisation_hand_computed() -> None:
    assert normalise_scores([("a", 3.0), ("b", 1.0)]) == pytest.approx({"a": 1.0, "b": -1.0})
    assert normalise_scores([("a", 2.0), ("b", 2.0)], "minmax") == {"a": 0.0, "b": 0.0}


class _FixedBackend:
    """Fixed dense and lexical chunk results; chunk ``b2`` belongs to document ``B``."""

    def __init__(self, dense, lexical):
        self.names = sorted({k for k, _ in dense} | {k for k, _ in lexical})
        self.dense = [(self.names.index(k), s) for k, s in dense]
        self.lexical = [(self.names.index(k), s) for k, s in lexical]

    async def dense_search(self, query, k, allowed):
        return self.dense[:k]

    def lexical_search(self, query, k, allowed):
        return self.lexical[:k]

    def allowed_keys(self, filters):
        return None

    def hydrate(self, scored):
        from reasonloop.kb.base import Hit

        out = []
        for key, score in scored:
            name = self.names[key]
            out.append(Hit(chunk_id=name, document_id=name[0].upper(), source=name, text=name, score=score))
        return out

    def documents_of(self, keys):
        return {key: self.names[key][0].upper() for key in keys}


async def test_document_search_folds_each_retriever_before_fusing():
    from reasonloop.kb.retrieval.hybrid import HybridRetriever

    dense = [("c2", 0.99), ("c1", 0.85), ("b1", 0.83), ("b2", 0.57), ("b3", 0.28), ("a1", 0.21), ("b4", 0.06)]
    lexical = [("b4", 3.0), ("b2", 2.1), ("c2", 2.1), ("b3", 0.6), ("a1", 0.1)]
    retriever = HybridRetriever(_FixedBackend(dense, lexical))
    # Fused chunk by chunk, C's two strong dense chunks and B's four chunks all weigh in the
    # normalisation and C comes first; as documents (C 0.99 / 2.1, B 0.83 / 3.0, A 0.21 / 0.1),
    # B, the best lexical document and close behind in dense, ranks first.
    chunk_first = {}
    for hit in await retriever.search("q", top_k=7):
        chunk_first.setdefault(hit.document_id, hit)
    assert list(chunk_first) == ["C", "B", "A"]
    docs = await retriever.search_documents("q", top_k=3)
    assert [h.document_id for h in docs] == ["B", "C", "A"]
    assert [h.chunk_id for h in docs] == ["b1", "c2", "a1"]  # each document's best chunk (dense first)
    assert docs[0].score > docs[1].score > docs[2].score
    assert [h.document_id for h in await retriever.search_documents("q", top_k=1)] == ["B"]


async def test_document_search_lets_the_reranker_promote_a_document_from_below_top_k():
    from reasonloop.kb.retrieval.hybrid import HybridRetriever

    dense = [("c2", 0.99), ("c1", 0.85), ("b1", 0.83), ("b2", 0.57), ("b3", 0.28), ("a1", 0.21), ("b4", 0.06)]
    lexical = [("b4", 3.0), ("b2", 2.1), ("c2", 2.1), ("b3", 0.6), ("a1", 0.1)]
    seen = []

    def last_first(query, hits):  # a reranker that prefers what retrieval put last
        seen.append([h.document_id for h in hits])
        return list(reversed(hits))

    retriever = HybridRetriever(_FixedBackend(dense, lexical), reranker=last_first, rerank_depth=3)
    docs = await retriever.search_documents("q", top_k=1)
    assert seen == [["B", "C", "A"]]  # the reranker saw rerank_depth documents, not top_k
    assert [h.document_id for h in docs] == ["A"]


async def test_document_search_fetches_chunks_for_its_documents_and_reads_only_the_kept_ones():
    from reasonloop.kb.retrieval.hybrid import CHUNKS_PER_DOCUMENT, HybridRetriever

    dense = [("c2", 0.99), ("c1", 0.85), ("b1", 0.83), ("b2", 0.57), ("b3", 0.28), ("a1", 0.21), ("b4", 0.06)]
    lexical = [("b4", 3.0), ("b2", 2.1), ("c2", 2.1), ("b3", 0.6), ("a1", 0.1)]
    backend = _FixedBackend(dense, lexical)
    asked, read = [], []
    search, hydrate = backend.dense_search, backend.hydrate

    async def dense_search(query, k, allowed):
        asked.append(k)
        return await search(query, k, allowed)

    def hydrate_counted(scored):
        read.append(len(scored))
        return hydrate(scored)

    backend.dense_search, backend.hydrate = dense_search, hydrate_counted
    retriever = HybridRetriever(backend, candidates=2)
    docs = await retriever.search_documents("q", top_k=2)
    assert asked == [CHUNKS_PER_DOCUMENT * 2]  # candidates documents' worth of chunks
    assert read == [2]  # one chunk per kept document is read, not every candidate
    assert [h.document_id for h in docs] == ["B", "C"]


async def test_a_chunk_deleted_during_a_document_search_is_left_out():
    from reasonloop.kb.retrieval.hybrid import HybridRetriever

    backend = _FixedBackend([("a1", 0.9), ("b1", 0.5)], [("b1", 2.0)])
    known = backend.documents_of
    backend.documents_of = lambda keys: {k: d for k, d in known(keys).items() if d != "A"}
    docs = await HybridRetriever(backend).search_documents("q", top_k=5)
    assert [h.document_id for h in docs] == ["B"]
