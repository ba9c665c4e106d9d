"""What every index plugin must do, run against each of them: the local index and Milvus (on
Milvus Lite, the Milvus engine in a local file).

Each test gets a fresh knowledge base from ``open_index``. The Milvus ones share one Milvus Lite
file and one collection for the whole module, each knowledge base under its own tenant, as the
knowledge bases of a server's tenants share a Milvus collection.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from reasonloop.config import Settings
from reasonloop.errors import KBError
from reasonloop.kb.base import Filter
from reasonloop.kb.knowledge_base import KnowledgeBase
from reasonloop.kb.retrieval.hybrid import LEXICAL_LOW, score_fuse

INDEXES = ["local", pytest.param("milvus", marks=pytest.mark.integration)]  # Milvus Lite is a process of its own


@pytest.fixture(scope="module")
def milvus_file(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("milvus") / "shared.db"


@pytest.fixture(params=INDEXES)
def open_index(request, tmp_path, embedder):
    opened: list[KnowledgeBase] = []

    def _open(path: Path | None = None, emb=None, **options):
        if request.param == "milvus":
            options = {"milvus_uri": str(request.getfixturevalue("milvus_file")), **options}
            options.setdefault("milvus_tenant", f"t{uuid.uuid4().hex[:12]}")
        settings = Settings(kb={"index": request.param, "options": options})
        kb = KnowledgeBase.open(path or tmp_path / "kb", settings=settings, embedder=emb or embedder)
        opened.append(kb)
        return kb

    _open.index = request.param  # type: ignore[attr-defined]
    yield _open


RECORDS = [
    ("cats", "Cats", "Cats sleep up to sixteen hours a day in warm sunny places."),
    ("markets", "Markets", "Stock markets fell sharply after the bank raised interest rates."),
    ("pump", "Pump manual", "Install the pump before the filter and replace the filter monthly."),
    ("beijing", "北京", "北京是中华人民共和国的首都，也是政治和文化中心。"),
]


@pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
async def test_an_empty_index_finds_nothing(open_index, mode):
    kb = open_index()
    assert await kb.search("anything at all", mode=mode) == []
    await kb.close()


async def test_every_mode_finds_the_right_document(open_index):
    kb = open_index()
    report = await kb.ingest_records(RECORDS)
    assert sorted(report.added) == sorted(r[0] for r in RECORDS) and report.chunks_added == 4
    for mode in ("hybrid", "dense", "lexical"):
        hits = await kb.search("cats sleep in sunny places", top_k=2, mode=mode)
        assert hits[0].document_id == "cats", mode
        assert hits[0].title == "Cats" and hits[0].text == RECORDS[0][2]
        assert hits[0].metadata["start"] == 0
    assert [h.document_id for h in await kb.search("首都", top_k=1, mode="lexical")] == ["beijing"]
    assert [h.document_id for h in await kb.search("interest rates", top_k=1, mode="lexical")] == ["markets"]
    assert await kb.search("zebra quantum", mode="lexical") == []
    stats = await kb.stats()
    assert (stats.documents, stats.chunks, stats.embedding_model) == (4, 4, "hash-test")
    await kb.close()


async def test_hybrid_is_the_score_fusion_of_dense_and_bm25(open_index):
    kb = open_index()
    await kb.ingest_records([(f"d{i}", "", f"filter pump {'water ' * i} {'cats ' * (5 - i)}") for i in range(6)])
    query = "pump water cats"
    dense = await kb.search(query, top_k=50, mode="dense")
    lexical = await kb.search(query, top_k=50, mode="lexical")
    hybrid = await kb.search(query, top_k=50, mode="hybrid")
    expected = score_fuse(
        [[(h.chunk_id, h.score) for h in dense], [(h.chunk_id, h.score) for h in lexical]], lows=[None, LEXICAL_LOW]
    )
    assert [h.chunk_id for h in hybrid] == [c for c, _ in expected]
    assert [round(h.score, 6) for h in hybrid] == [round(s, 6) for _, s in expected]
    await kb.close()


async def test_filters_apply_before_top_k(open_index):
    kb = open_index()
    records = [
        {
            "id": f"r{i}",
            "title": f"Doc {i}",
            "text": f"shared words about gardening number {i}",
            "year": 2000 + i,
            "tags": ["even" if i % 2 == 0 else "odd", "all"],
            "lang": "en",
        }
        for i in range(10)
    ]
    await kb.ingest_records(records)

    async def ids(filters, mode="hybrid", k=10):
        return sorted(h.document_id for h in await kb.search("gardening words", top_k=k, filters=filters, mode=mode))

    assert await ids([Filter(field="year", op="eq", value=2003)], k=1) == ["r3"]
    assert await ids({"year": 2007}, mode="lexical", k=1) == ["r7"]
    assert await ids([{"field": "document_id", "op": "in", "value": ["r1", "r8"]}], mode="dense") == ["r1", "r8"]
    assert await ids([Filter(field="year", op="in", value=[2002, 2009])]) == ["r2", "r9"]
    assert await ids([Filter(field="year", op="range", value=[2004, 2006])]) == ["r4", "r5", "r6"]
    assert await ids([Filter(field="year", op="range", value=[None, 2001])]) == ["r0", "r1"]
    assert await ids(
        [Filter(field="tags", op="contains", value="odd"), Filter(field="year", op="range", value=[2005, None])]
    ) == ["r5", "r7", "r9"]
    assert await ids([Filter(field="title", op="contains", value="oc 2")]) == ["r2"]
    assert await ids([Filter(field="source", op="eq", value="r4")]) == ["r4"]
    assert await ids([Filter(field="lang", op="contains", value="e")]) == [f"r{i}" for i in range(10)]
    assert await ids([Filter(field="lang", op="eq", value='en" or "1"=="1')]) == []
    assert await ids([Filter(field="no_such_field", op="eq", value=1)]) == []
    assert await ids([Filter(field="no_such_field", op="range", value=[0, 9])]) == []
    assert await ids([Filter(field="bad'; DROP TABLE chunks; --", op="eq", value=1)]) == []
    with pytest.raises(KBError, match="unknown filter operator"):
        await ids([Filter(field="year", op="like", value=1)])
    with pytest.raises(KBError, match="range"):
        await ids([Filter(field="year", op="range", value=5)])
    assert len(await ids(None)) == 10
    await kb.close()


async def test_deletes_leave_every_search_mode(open_index):
    kb = open_index()
    await kb.ingest_records(RECORDS)
    assert await kb.delete("cats") == ["cats"]
    for mode in ("hybrid", "dense", "lexical"):
        assert "cats" not in [h.document_id for h in await kb.search("cats sleep", top_k=10, mode=mode)]
    assert (await kb.stats()).documents == 3
    with pytest.raises(KBError, match="no document"):
        await kb.delete("cats")
    await kb.close()


async def test_reingest_is_incremental(open_index, embedder):
    kb = open_index()
    await kb.ingest_records(RECORDS)
    embedded = len(embedder.calls)
    report = await kb.ingest_records(RECORDS)
    assert len(report.unchanged) == 4 and not report.added and len(embedder.calls) == embedded
    changed = [*RECORDS[:1], ("markets", "Markets", "Parrots can learn many words."), *RECORDS[2:]]
    report = await kb.ingest_records(changed)
    assert report.updated == ["markets"] and embedder.calls[embedded:] == ["Markets\nParrots can learn many words."]
    assert [h.document_id for h in await kb.search("parrots words", top_k=1, mode="lexical")] == ["markets"]
    assert await kb.search("interest rates", mode="lexical") == []  # the old chunk is gone
    assert (await kb.stats()).chunks == 4
    await kb.close()


@pytest.mark.integration
async def test_files_are_ingested_and_removed_files_pruned(open_index, corpus):
    kb = open_index()
    report = await kb.ingest(str(corpus))
    assert len(report.added) == 5
    hits = await kb.search("replace the filter", top_k=1)
    assert hits[0].source.endswith("manual.pdf") and "page" in hits[0].metadata
    (corpus / "sub" / "markets.md").unlink()
    report = await kb.ingest(str(corpus), prune=True)
    assert [s.rsplit("/", 1)[-1] for s in report.deleted] == ["markets.md"]
    assert await kb.search("stock markets", mode="lexical") == []
    await kb.close()


async def test_a_reopened_index_keeps_its_documents(open_index, tmp_path):
    tenant = {"milvus_tenant": f"reopened{uuid.uuid4().hex[:8]}"} if open_index.index == "milvus" else {}
    kb = open_index(**tenant)
    await kb.ingest_records(RECORDS)
    await kb.close()
    kb = open_index(**tenant)
    assert [h.document_id for h in await kb.search("pump filter", top_k=1)] == ["pump"]
    await kb.close()


async def test_two_knowledge_bases_never_see_each_other(open_index, tmp_path):
    """Two tenants of a server: for Milvus, two tenants of one collection (named from their directories)."""
    named = {"milvus_tenant": ""} if open_index.index == "milvus" else {}
    first = open_index(tmp_path / "tenants" / "first", **named)
    second = open_index(tmp_path / "tenants" / "second", **named)
    await first.ingest_records(RECORDS[:2])
    await second.ingest_records([("cats", "Cats", "A different text about cats and dogs.")])
    for mode in ("hybrid", "dense", "lexical"):
        assert [h.text for h in await second.search("cats", mode=mode)] == ["A different text about cats and dogs."]
        assert {h.document_id for h in await first.search("cats markets", mode=mode)} <= {"cats", "markets"}
    await second.delete("cats")
    assert [h.document_id for h in await first.search("cats sleep", top_k=1)] == ["cats"]
    await first.close()
    await second.close()
