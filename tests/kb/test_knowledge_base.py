import json

import pytest

from reasonloop.errors import KBError, KBModelMismatch
from reasonloop.kb.base import Filter, Retriever
from reasonloop.kb.knowledge_base import KnowledgeBase

from .helpers import HashEmbedder, LoopbackServer, make_pdf, reply


def _names(hits):
    return [h.source.rsplit("/", 1)[-1] for h in hits]


@pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
async def test_empty_kb_search_returns_nothing(make_kb, mode):
    kb = make_kb()
    assert await kb.search("anything at all", mode=mode) == []
    assert await kb.search("x", filters=[Filter(field="page", op="eq", value=1)]) == []
    stats = await kb.stats()
    assert (stats.documents, stats.chunks, stats.embedding_model) == (0, 0, None)
    await kb.close()


@pytest.mark.integration
async def test_ingest_folder_and_search_every_mode(make_kb, corpus):
    kb = make_kb()
    progress = []
    report = await kb.ingest(str(corpus), on_progress=progress.append)
    assert sorted(_names([type("H", (), {"source": s}) for s in report.added])) == sorted(
        ["cats.txt", "markets.md", "zh.md", "manual.pdf", "notes.docx"]
    )
    assert report.failed == {} and report.chunks_added == report.chunks_embedded > 0
    assert progress[-1].files_done == progress[-1].files_total == 5
    assert progress[-1].chunks_done == progress[-1].chunks_total == report.chunks_added
    assert [p.chunks_done for p in progress] == sorted(p.chunks_done for p in progress)
    for mode in ("hybrid", "dense", "lexical"):
        hits = await kb.search("how many hours do cats sleep", top_k=2, mode=mode)
        assert _names(hits)[0] == "cats.txt", mode
    hit = (await kb.search("stock markets interest rates", top_k=1))[0]
    assert hit.title == "Markets"
    assert hit.metadata["start"] == 0 and hit.metadata["end"] == len(hit.text)
    assert hit.chunk_id == f"{hit.document_id}:0"
    assert _names(await kb.search("首都", top_k=1, mode="lexical")) == ["zh.md"]
    await kb.close()


@pytest.mark.integration
async def test_progress_says_which_sources_are_committed_as_it_goes(make_kb, corpus):
    """At every progress report, the sources it calls finished are in the index (or needed nothing),
    and the first one it calls pending is the next in reading order."""
    (corpus / "binary.txt").write_bytes(bytes(range(256)) * 8)  # fails: finished, with nothing to commit
    (corpus / "records.jsonl").write_text(
        "\n".join(json.dumps({"id": str(i), "text": f"record {i} text"}) for i in range(5)), encoding="utf-8"
    )
    kb = make_kb(commit_chunks=2)
    seen = []

    def check(p):
        stored = {d.source for d in kb.index.store.documents()}
        order = kb_order[0]
        for source in order[: p.files_committed]:
            if source.endswith("records.jsonl"):
                assert {f"{source}#{i}" for i in range(5)} <= stored
            elif not source.endswith("binary.txt"):
                assert source in stored, (source, p)
        assert p.first_pending == (order[p.files_committed] if p.files_committed < len(order) else "")
        seen.append(p)

    kb_order = [sorted(str(f) for f in corpus.rglob("*") if f.is_file())]
    report = await kb.ingest(str(corpus), on_progress=check)
    assert [p.files_committed for p in seen] == sorted(p.files_committed for p in seen)
    assert seen[0].files_committed > 0 or seen[0].first_pending == kb_order[0][0]
    assert seen[-1].files_committed == seen[-1].files_total == 7 and seen[-1].first_pending == ""
    assert seen[-1].failed == len(report.failed) == 1
    assert seen[-1].embed_seconds > 0
    await kb.close()


@pytest.mark.integration
async def test_pdf_pages_and_offsets_in_hits(make_kb, tmp_path):
    (tmp_path / "d").mkdir()
    pages = [f"Page {n} sentence about topic{n}. " * 40 for n in (1, 2, 3)]
    (tmp_path / "d" / "long.pdf").write_bytes(make_pdf(pages))
    kb = make_kb(chunk_tokens=64, chunk_overlap=0)
    await kb.ingest(str(tmp_path / "d"))
    hit = (await kb.search("topic3", top_k=1, mode="lexical"))[0]
    assert hit.metadata["page"] == 3
    citation = hit.citation(marker=1)
    assert citation.page == 3 and citation.start == hit.metadata["start"]
    await kb.close()


@pytest.mark.integration
async def test_bad_files_reported_rest_ingested(make_kb, corpus):
    pdf = make_pdf(["truncated"])
    (corpus / "broken.pdf").write_bytes(pdf[: len(pdf) // 2])
    (corpus / "binary.txt").write_bytes(bytes(range(256)) * 8)
    (corpus / "empty.txt").write_bytes(b"")
    (corpus / "latin1.txt").write_bytes("naïve café".encode("latin-1"))
    (corpus / "records.jsonl").write_text('{"id": "a", "text": "alpha record"}\nnot json\n', encoding="utf-8")
    kb = make_kb()
    report = await kb.ingest([str(corpus), str(corpus / "missing.txt")])
    failed = {k.rsplit("/", 1)[-1]: v for k, v in report.failed.items()}
    assert set(failed) == {"broken.pdf", "binary.txt", "empty.txt", "latin1.txt", "records.jsonl:2", "missing.txt"}
    assert "PDF" in failed["broken.pdf"] and "binary" in failed["binary.txt"]
    assert "empty" in failed["empty.txt"] and "UTF-8" in failed["latin1.txt"]
    assert len(report.added) == 6  # the 5 good files + the good record
    assert _names(await kb.search("alpha record", top_k=1, mode="lexical")) == ["records.jsonl#a"]
    await kb.close()


@pytest.mark.integration
async def test_incremental_unchanged_changed_removed(make_kb, corpus, embedder):
    kb = make_kb()
    await kb.ingest(str(corpus))
    embedded = len(embedder.calls)
    report = await kb.ingest(str(corpus))
    assert len(report.unchanged) == 5 and not report.added and not report.updated
    assert len(embedder.calls) == embedded  # no work at all

    (corpus / "cats.txt").write_text(
        "Cats sleep up to sixteen hours a day.\n\nParrots can learn many words.", encoding="utf-8"
    )
    report = await kb.ingest(str(corpus))
    assert _names([type("H", (), {"source": s}) for s in report.updated]) == ["cats.txt"]
    assert len(report.unchanged) == 4
    assert _names(await kb.search("parrots words", top_k=1, mode="lexical")) == ["cats.txt"]
    assert await kb.search("sunny windows", mode="lexical") == []  # old chunk is gone
    stats = await kb.stats()
    assert stats.sources[str(corpus / "cats.txt")] == 1

    (corpus / "sub" / "markets.md").unlink()
    report = await kb.ingest(str(corpus), prune=True)
    assert _names([type("H", (), {"source": s}) for s in report.deleted]) == ["markets.md"]
    assert await kb.search("stock markets", mode="lexical") == []
    assert (await kb.stats()).documents == 4
    await kb.close()


async def test_changed_document_reembeds_only_new_chunks(make_kb, tmp_path, embedder):
    (tmp_path / "d").mkdir()
    paras = [f"Paragraph {i} is about subject{i} and nothing else at all." for i in range(6)]
    f = tmp_path / "d" / "a.txt"
    f.write_text("\n\n".join(paras), encoding="utf-8")
    kb = make_kb(chunk_tokens=20, chunk_overlap=0, embed_title=False)
    await kb.ingest(str(f))
    before = len(embedder.calls)
    f.write_text("\n\n".join([*paras, "A brand new closing paragraph."]), encoding="utf-8")
    report = await kb.ingest(str(f))
    assert report.updated == [str(f)]
    assert embedder.calls[before:] == ["A brand new closing paragraph."]
    assert report.chunks_embedded == 1 and report.chunks_added == 7
    await kb.close()


@pytest.mark.integration
async def test_delete_by_source_id_and_folder(make_kb, corpus):
    kb = make_kb()
    await kb.ingest(str(corpus))
    docs = await kb.documents()
    assert len(docs) == 5 and all(d.content_hash and d.bytes > 0 and d.mtime for d in docs)
    assert await kb.delete(str(corpus / "cats.txt")) == [str(corpus / "cats.txt")]
    target = next(d for d in docs if d.source.endswith("zh.md"))
    assert await kb.delete(target.id) == [target.source]
    assert await kb.delete(str(corpus / "sub")) == [str(corpus / "sub" / "markets.md")]
    assert await kb.search("cats sleep", mode="lexical") == []
    assert await kb.search("cats sleep", mode="dense") != []  # other documents remain
    assert {h.source for h in await kb.search("cats sleep", mode="dense", top_k=10)} == {
        str(corpus / "manual.pdf"),
        str(corpus / "notes.docx"),
    }
    with pytest.raises(KBError, match="no document"):
        await kb.delete("nothing-like-this")
    await kb.close()


async def test_model_mismatch_is_a_clear_error(make_kb, corpus, tmp_path):
    kb = make_kb()
    await kb.ingest(str(corpus / "cats.txt"))
    await kb.close()
    with pytest.raises(KBModelMismatch) as info:
        make_kb(emb=HashEmbedder(name="other-model"))
    err = info.value
    assert err.code == "kb.model_mismatch"
    assert "hash-test" in err.message and "other-model" in err.message and "re-index" in err.message
    reopened = make_kb()  # the original model opens fine
    assert (await reopened.stats()).documents == 1
    await reopened.close()


async def test_dimension_change_is_a_mismatch(make_kb, corpus):
    kb = make_kb()
    await kb.ingest(str(corpus / "cats.txt"))
    await kb.close()
    kb = make_kb(emb=HashEmbedder(dim=32))  # same name, different vectors
    with pytest.raises(KBModelMismatch):
        await kb.ingest(str(corpus / "zh.md"))


async def test_filters_apply_before_top_k(make_kb):
    kb = make_kb()
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
    assert await ids([Filter(field="year", op="range", value=[2004, 2006])]) == ["r4", "r5", "r6"]
    assert await ids([Filter(field="year", op="range", value=[None, 2001])]) == ["r0", "r1"]
    assert await ids(
        [Filter(field="tags", op="contains", value="odd"), Filter(field="year", op="range", value=[2005, None])]
    ) == ["r5", "r7", "r9"]
    assert await ids([Filter(field="title", op="contains", value="Doc 2")]) == ["r2"]
    assert await ids([Filter(field="lang", op="contains", value="e")]) == [f"r{i}" for i in range(10)]
    assert await ids([Filter(field="no_such_field", op="eq", value=1)]) == []
    assert await ids([Filter(field="no_such_field", op="range", value=[0, 9])]) == []
    assert await ids([Filter(field="bad'; DROP TABLE chunks; --", op="eq", value=1)]) == []
    with pytest.raises(KBError, match="unknown filter operator"):
        await ids([Filter(field="year", op="like", value=1)])
    with pytest.raises(KBError, match="range"):
        await ids([Filter(field="year", op="range", value=5)])
    assert len(await ids(None)) == 10
    await kb.close()


async def test_ingest_records_ids_and_unchanged(make_kb, embedder):
    kb = make_kb()
    report = await kb.ingest_records([("d1", "Title One", "first body text"), {"_id": "d2", "text": "second body"}])
    assert report.added == ["d1", "d2"]
    hit = (await kb.search("first body", top_k=1))[0]
    assert (hit.document_id, hit.title) == ("d1", "Title One")
    calls = len(embedder.calls)
    report = await kb.ingest_records([("d1", "Title One", "first body text"), ("d3", "t", "  ")])
    assert report.unchanged == ["d1"] and report.failed == {"d3": "empty text"}
    assert len(embedder.calls) == calls
    await kb.close()


@pytest.mark.integration
async def test_ingest_urls_from_loopback_server(make_kb):
    html = b"<html><head><title>Remote Page</title></head><body><p>Remote content about volcanoes erupting.</p></body></html>"
    routes = {
        "/page": lambda h: reply(h, html, "text/html"),
        "/paper.pdf": lambda h: reply(h, make_pdf(["Glaciers retreat in summer."]), "application/pdf"),
        "/missing": lambda h: reply(h, b"", "text/plain", status=404),
        "/blob": lambda h: reply(h, b"\x00\x01", "application/octet-stream"),
    }
    with LoopbackServer(routes) as server:
        kb = make_kb()
        report = await kb.ingest([server.url + p for p in routes])
    assert sorted(report.added) == [server.url + "/page", server.url + "/paper.pdf"]
    assert "HTTP 404" in report.failed[server.url + "/missing"]
    assert "unsupported" in report.failed[server.url + "/blob"]
    hit = (await kb.search("volcanoes", top_k=1))[0]
    assert hit.title == "Remote Page" and hit.source == server.url + "/page"
    assert (await kb.search("glaciers", top_k=1))[0].metadata["page"] == 1
    await kb.close()


async def test_json_file_records(make_kb, tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "faq.json").write_text(
        json.dumps([{"id": "q1", "title": "Refunds", "text": "Refunds take five days.", "category": "billing"}]),
        encoding="utf-8",
    )
    kb = make_kb()
    await kb.ingest(str(tmp_path / "d"))
    hit = (await kb.search("refunds", top_k=1, filters={"category": "billing"}))[0]
    assert hit.title == "Refunds" and hit.source.endswith("faq.json#q1")
    assert await kb.delete(str(tmp_path / "d" / "faq.json")) == [hit.source]
    await kb.close()


@pytest.mark.integration
async def test_retriever_and_stats(make_kb, corpus):
    kb = make_kb()
    await kb.ingest(str(corpus))
    retriever = kb.retriever({"mode": "lexical", "top_k": 1})
    assert isinstance(retriever, Retriever)
    assert _names(await retriever.search("filter pump")) == ["manual.pdf"]
    stats = await kb.stats()
    assert stats.documents == 5 and stats.chunks == sum(stats.sources.values()) and stats.bytes > 0
    assert stats.embedding_model == "hash-test" and stats.last_update is not None
    with pytest.raises(Exception, match="mode"):
        kb.retriever({"mode": "weird"})
    await kb.close()


@pytest.mark.integration
async def test_reranker_hook(make_kb, corpus):
    kb = make_kb()
    await kb.ingest(str(corpus))

    def prefer_pdf(query, hits):
        return sorted(hits, key=lambda h: not h.source.endswith(".pdf"))

    hits = await kb.search("cats sleep", top_k=1, reranker=prefer_pdf)
    assert _names(hits) == ["manual.pdf"]
    await kb.close()


@pytest.mark.integration
async def test_qdrant_vector_store_option(make_kb, corpus, tmp_path):
    kb = make_kb(vector_store="qdrant")
    await kb.ingest(str(corpus))
    assert _names(await kb.search("cats sleep hours", top_k=1, mode="dense")) == ["cats.txt"]
    assert (tmp_path / "kb" / "qdrant").is_dir()
    await kb.delete(str(corpus / "cats.txt"))
    assert "cats.txt" not in _names(await kb.search("cats sleep hours", top_k=5, mode="dense"))
    await kb.close()


async def test_invalid_options_are_config_errors(make_kb):
    from reasonloop.errors import ConfigError

    with pytest.raises(ConfigError, match="chunk_tokenz"):
        make_kb(chunk_tokenz=5)
    with pytest.raises(ConfigError, match="chunk_overlap"):
        make_kb(chunk_tokens=40, chunk_overlap=30)


async def test_open_defaults_to_settings_path(tmp_path, monkeypatch, embedder):
    from reasonloop.config import Settings

    monkeypatch.chdir(tmp_path)
    kb = KnowledgeBase.open(settings=Settings(), embedder=embedder)
    assert kb.path == tmp_path / ".reasonloop"
    await kb.close()
    (tmp_path / "file").write_text("x")
    with pytest.raises(KBError, match="not a directory"):
        KnowledgeBase.open(tmp_path / "file", settings=Settings(), embedder=embedder)


@pytest.mark.integration
async def test_cpu_work_runs_off_the_event_loop(make_kb, corpus, monkeypatch):
    import threading

    from reasonloop.kb.ingest.chunking import Chunker
    from reasonloop.kb.retrieval.lexical import LexicalIndex
    from reasonloop.kb.storage.store import MetadataStore

    loop_thread = threading.current_thread()
    seen: dict[str, set[bool]] = {"chunk": set(), "lexical": set(), "commit": set()}

    def spy(name, fn):
        def wrapper(*args, **kwargs):
            seen[name].add(threading.current_thread() is loop_thread)
            return fn(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(Chunker, "split", spy("chunk", Chunker.split))
    monkeypatch.setattr(LexicalIndex, "add", spy("lexical", LexicalIndex.add))
    monkeypatch.setattr(MetadataStore, "commit_documents", spy("commit", MetadataStore.commit_documents))
    kb = make_kb()
    await kb.ingest(str(corpus))
    await kb.ingest_records([("r1", "", "a record")])
    assert seen == {"chunk": {False}, "lexical": {False}, "commit": {False}}
    await kb.close()


async def test_index_and_embedder_come_from_the_registry(tmp_path):
    from reasonloop.config import Settings
    from reasonloop.errors import PluginNotFound
    from reasonloop.kb.indexes.local import LocalIndex
    from reasonloop.registry import Registry

    class TaggedIndex(LocalIndex):
        opened_with: tuple = ()

        def __init__(self, path, embedder, options):
            TaggedIndex.opened_with = (path, embedder.name, options)
            super().__init__(path, embedder, options)

    registry = Registry(use_entry_points=False)
    registry.register("index", "tagged", TaggedIndex)
    registry.register("embedder", "hashy", HashEmbedder)
    settings = Settings(kb={"index": "tagged", "embedder": "hashy", "options": {"chunk_tokens": 64}})
    kb = KnowledgeBase.open(tmp_path / "kb", settings=settings, registry=registry)
    assert isinstance(kb.index, TaggedIndex)
    assert TaggedIndex.opened_with == (tmp_path / "kb", "hash-test", {"chunk_tokens": 64})
    assert kb.index.chunker.chunk_tokens == 64
    await kb.close()
    with pytest.raises(PluginNotFound, match="nope"):
        KnowledgeBase.open(tmp_path / "kb2", settings=Settings(kb={"index": "nope"}), registry=registry)
    builtin = KnowledgeBase.open(tmp_path / "kb3", settings=Settings(kb={"embedder": "hashy"}), registry=registry)
    assert isinstance(builtin.index, LocalIndex)  # "local" is built in even without an entry point
    await builtin.close()


async def test_index_directory_inside_an_ingested_folder_is_skipped(tmp_path, embedder):
    from reasonloop.config import Settings

    (tmp_path / "notes.txt").write_text("a note about lighthouses", encoding="utf-8")
    kb = KnowledgeBase.open(tmp_path / "kbdir", settings=Settings(), embedder=embedder)
    await kb.ingest(str(tmp_path))
    report = await kb.ingest(str(tmp_path))  # kbdir now holds tantivy's meta.json and more
    assert report.failed == {} and report.unchanged == [str(tmp_path / "notes.txt")]
    assert [d.source for d in await kb.documents()] == [str(tmp_path / "notes.txt")]
    await kb.close()


async def test_records_removed_from_a_jsonl_file_leave_the_index(make_kb, tmp_path, embedder):
    f = tmp_path / "faq.jsonl"
    rows = [
        {"id": "a", "text": "alpha answer"},
        {"id": "b", "text": "beta answer"},
        {"id": "c", "text": "gamma answer"},
    ]
    f.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    kb = make_kb()
    await kb.ingest(str(f))
    calls = len(embedder.calls)
    f.write_text("\n".join(json.dumps(r) for r in rows[:2]), encoding="utf-8")
    report = await kb.ingest(str(f))
    assert report.deleted == [f"{f}#c"] and sorted(report.unchanged) == [f"{f}#a", f"{f}#b"]
    assert len(embedder.calls) == calls
    assert sorted(d.source for d in await kb.documents()) == [f"{f}#a", f"{f}#b"]
    # a file with a broken line keeps the records it had (nothing is deleted on a partial read)
    f.write_text(json.dumps(rows[0]) + "\n{oops", encoding="utf-8")
    report = await kb.ingest(str(f))
    assert report.deleted == [] and f"{f}:2" in report.failed
    assert len(await kb.documents()) == 2
    await kb.close()


async def test_per_document_search_groups_chunks(make_kb, tmp_path):
    kb = make_kb(chunk_tokens=16, chunk_overlap=0)
    long_text = " ".join(f"Paragraph about apples number {i}." for i in range(12))
    await kb.ingest_records([("long", "", long_text), ("short", "", "apples are red"), ("other", "", "pears")])
    chunks = await kb.search("apples", top_k=3, mode="lexical")
    assert [h.document_id for h in chunks].count("long") >= 2
    docs = await kb.search("apples", top_k=3, mode="lexical", per_document=True)
    assert sorted(h.document_id for h in docs) == ["long", "short"]
    await kb.close()


async def test_repeated_queries_are_embedded_once(make_kb, tmp_path):
    class Counting(HashEmbedder):
        def __init__(self):
            super().__init__()
            self.queries: list[str] = []

        async def embed_queries(self, texts):
            self.queries.extend(texts)
            return await super().embed_queries(texts)

    emb = Counting()
    kb = make_kb(emb=emb)  # the default keeps them
    await kb.ingest_records([("a", "", "alpha")])
    for mode in ("dense", "hybrid", "dense"):
        await kb.search("alpha", mode=mode)
    assert emb.queries == ["alpha"]
    await kb.close()
    emb = Counting()
    kb = make_kb(path=tmp_path / "kb1", emb=emb, query_cache=2)
    await kb.ingest_records([("a", "", "alpha"), ("b", "", "beta")])
    for q in ["alpha", "alpha", "beta", "alpha", "gamma", "beta"]:
        await kb.search(q, mode="dense")
    # "beta" was evicted by "gamma" (least recently used), the rest came from memory
    assert emb.queries == ["alpha", "beta", "gamma", "beta"]
    await kb.close()
    emb = Counting()
    kb = make_kb(path=tmp_path / "kb2", emb=emb, query_cache=0)
    await kb.ingest_records([("a", "", "alpha")])
    await kb.search("alpha", mode="dense")
    await kb.search("alpha", mode="hybrid")
    assert emb.queries == ["alpha", "alpha"]  # disabled: every search embeds
    await kb.close()


async def test_a_markdown_pages_heading_is_its_title_and_is_embedded_once(make_kb, tmp_path, embedder):
    page = tmp_path / "lyon.md"
    page.write_text("# Lyon\n\nLyon is a city in France.\n", encoding="utf-8")
    note = tmp_path / "note.txt"
    note.write_text("Lyon is a city in France.\n", encoding="utf-8")
    kb = make_kb()
    await kb.ingest([str(page), str(note)])
    # the page's chunk opens with its title as a heading: not prepended again; the note gets its title
    assert sorted(embedder.calls) == sorted(["# Lyon\n\nLyon is a city in France.", "note\nLyon is a city in France."])
    await kb.close()


def test_titled_heads_a_chunk_with_its_title_once() -> None:
    from reasonloop.kb.ingest.records import titled

    assert titled("Lyon", "# Lyon\n\nA city.") == "# Lyon\n\nA city."
    assert titled("Lyon", "## Lyon ##\nA city.") == "## Lyon ##\nA city."
    assert titled("Lyon", "Lyon is a city.") == "Lyon\nLyon is a city."  # prose opening with the title: headed
    assert titled("Lyon", "# Paris\n\nA city.") == "Lyon\n# Paris\n\nA city."
    assert titled("", "A city.") == "A city."
