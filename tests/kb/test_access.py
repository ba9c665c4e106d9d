"""Who may read a document, in both indexes: readers set at ingest (argument, sidecar file),
changed later, and applied inside the index query before ranking, failing closed."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import pytest

from reasonloop.config import Settings
from reasonloop.errors import DocumentNotFound, RequestInvalid
from reasonloop.kb.access import EVERYONE, Reader, parse_readers
from reasonloop.kb.base import Filter
from reasonloop.kb.knowledge_base import KnowledgeBase

ALICE = Reader.of("alice", ["finance"])
BOB = Reader.of("bob", ["staff"])
NOBODY = Reader.of(None)


@pytest.fixture(scope="module")
def milvus_file(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("milvus") / "shared.db"


@pytest.fixture(params=["local", pytest.param("milvus", marks=pytest.mark.integration)])
def open_index(request, tmp_path, embedder):
    def _open(path: Path | None = None):
        options: dict = {}
        if request.param == "milvus":
            options = {"milvus_uri": str(request.getfixturevalue("milvus_file")), "milvus_tenant": uuid.uuid4().hex}
        settings = Settings(kb={"index": request.param, "options": options})
        return KnowledgeBase.open(path or tmp_path / "kb", settings=settings, embedder=embedder)

    return _open


def _salary(i: int) -> tuple[str, str, str]:
    return (f"pay{i}", f"Salary table {i}", f"salary figures budget quarter payroll row {i}")


async def _three_kinds(kb: KnowledgeBase) -> None:
    """Finance documents (alice's group), bob's own, and shared ones, all about the same words."""
    await kb.ingest_records([_salary(i) for i in range(12)], readers="group:finance")
    await kb.ingest_records([("bobnote", "Bob's salary note", "salary figures budget quarter bob")], readers=["bob"])
    await kb.ingest_records([("open", "Open salary policy", "salary figures budget policy for everyone")])


async def _ids(kb: KnowledgeBase, mode: str = "hybrid", k: int = 5, **kw) -> list[str]:
    return [h.document_id for h in await kb.search("salary figures budget", top_k=k, mode=mode, **kw)]


@pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
async def test_a_reader_ranks_only_what_it_may_read(open_index, mode):
    kb = open_index()
    await _three_kinds(kb)
    bob = kb.for_reader(BOB)
    # Twelve finance documents match better than bob's; none of them takes one of his two places.
    assert sorted(await _ids(bob, mode, k=2)) == ["bobnote", "open"]
    assert sorted(await _ids(bob, mode, k=10)) == ["bobnote", "open"]
    assert sorted(await _ids(bob, mode, k=2, per_document=True)) == ["bobnote", "open"]
    alice = await _ids(kb.for_reader(ALICE), mode, k=20)
    assert "bobnote" not in alice and "open" in alice and len(alice) == 13
    assert await _ids(kb.for_reader(NOBODY), mode) == ["open"]
    assert len(await _ids(kb, mode, k=20)) == 14  # the owner reads everything
    await kb.close()


async def test_filters_and_readers_apply_together(open_index):
    kb = open_index()
    await _three_kinds(kb)
    bob = kb.for_reader(BOB)
    assert await _ids(bob, filters=[Filter(field="document_id", op="eq", value="pay3")]) == []
    assert await _ids(kb.for_reader(ALICE), filters={"document_id": "pay3"}) == ["pay3"]
    await kb.close()


async def test_listings_documents_pages_and_counts_follow_the_reader(open_index):
    kb = open_index()
    await _three_kinds(kb)
    bob = kb.for_reader(BOB)
    assert sorted(d.id for d in await bob.documents()) == ["bobnote", "open"]
    assert await bob.document("pay1") is None
    assert await bob.text("pay1") is None
    with pytest.raises(DocumentNotFound):
        await bob.page("pay1", 1)
    stats = await bob.stats()
    assert (stats.documents, stats.chunks, sorted(stats.sources)) == (2, 2, ["bobnote", "open"])
    assert (await kb.stats()).documents == 14
    await kb.ingest_records([("late", "Late finance memo", "salary memo")], readers="group:finance")
    updated = {d.id: d.updated for d in await kb.documents()}
    assert (await bob.stats()).last_update == max(updated["bobnote"], updated["open"]) < updated["late"]
    assert (await kb.for_reader(Reader.of("x", ["none"])).stats()).last_update == updated["open"]
    with pytest.raises(Exception, match="no document"):
        await bob.delete("pay1")
    assert await kb.document("pay1") is not None
    rows = {d.id: d.readers for d in await kb.documents()}
    assert rows["pay1"] == ["group:finance"] and rows["bobnote"] == ["user:bob"] and rows["open"] is None
    await kb.close()


async def test_readers_change_later_and_the_next_search_follows(open_index):
    kb = open_index()
    await _three_kinds(kb)
    bob = kb.for_reader(BOB)
    await kb.set_readers("pay4", "bob, group:finance")
    assert "pay4" in await _ids(bob, k=10)
    await kb.set_readers("open", ["group:finance"])
    assert "open" not in await _ids(bob, k=10)
    await kb.set_readers("open", None)
    assert "open" in await _ids(bob, k=10)
    with pytest.raises(DocumentNotFound):  # bob may not regrant what he may not read
        await bob.set_readers("pay1", "bob")
    # A re-ingest of changed text without readers keeps the document's readers.
    await kb.ingest_records([("pay1", "Salary table 1", "salary figures budget changed text")])
    assert "pay1" not in await _ids(bob, k=20)
    await kb.close()


async def test_unreadable_readers_are_read_by_no_one(open_index):
    kb = open_index()
    await _three_kinds(kb)
    with sqlite3.connect(kb.path / "kb.sqlite") as db:
        db.execute("UPDATE documents SET access = 'not json' WHERE id = 'open'")
        db.execute("UPDATE documents SET access = '{\"user:bob\": 1}' WHERE id = 'bobnote'")
    bob = kb.for_reader(BOB)
    assert await _ids(bob, k=10) == []
    assert await bob.documents() == []
    assert (await bob.stats()).documents == 0
    assert {d.id: d.readers for d in await kb.documents()}["open"] == ["!unreadable"]
    await kb.close()


async def test_an_error_in_the_access_condition_finds_nothing(open_index, monkeypatch):
    kb = open_index()
    await _three_kinds(kb)

    def broken(*args, **kwargs):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(kb.index.store, "allowed_keys", broken)
    monkeypatch.setattr(kb.index.store, "readable_documents", broken)
    assert await _ids(kb.for_reader(BOB), k=10) == []
    await kb.close()


async def test_a_folder_takes_its_readers_from_the_nearest_sidecar(open_index, tmp_path):
    kb = open_index()
    root = tmp_path / "docs"
    (root / "finance" / "q3").mkdir(parents=True)
    (root / "finance" / ".readers").write_text("# the finance team\ngroup:finance\nalice\n")
    (root / "finance" / "q3" / "plan.txt").write_text("quarterly salary budget plan")
    (root / "finance" / "ledger.txt").write_text("salary ledger budget")
    (root / "handbook.txt").write_text("salary policy handbook budget")
    report = await kb.ingest(str(root))
    assert len(report.added) == 3 and not report.failed
    readers = {Path(d.source).name: d.readers for d in await kb.documents()}
    assert readers == {
        "plan.txt": ["group:finance", "user:alice"],
        "ledger.txt": ["group:finance", "user:alice"],
        "handbook.txt": None,
    }
    assert [Path(h.source).name for h in await kb.for_reader(BOB).search("salary budget")] == ["handbook.txt"]
    # A sidecar written later applies to unchanged files on the next ingest.
    (root / ".readers").write_text("group:staff")
    await kb.ingest(str(root))
    assert {Path(d.source).name: d.readers for d in await kb.documents()}["handbook.txt"] == ["group:staff"]
    await kb.close()


async def test_a_sidecar_that_names_no_reader_fails_its_files_instead_of_opening_them(open_index, tmp_path):
    kb = open_index()
    root = tmp_path / "docs"
    root.mkdir()
    (root / ".readers").write_text("group:\n")
    (root / "secret.txt").write_text("salary secret")
    report = await kb.ingest(str(root))
    assert "not a reader" in report.failed[str((root / "secret.txt").resolve())]
    assert await kb.documents() == []
    await kb.close()


def test_readers_are_checked_and_made_canonical():
    assert parse_readers("alice, group:finance,user:alice") == ["group:finance", "user:alice"]
    for bad in ("", " , ", "group:", "role:x", "a b", "alice;DROP"):
        with pytest.raises(RequestInvalid):
            parse_readers(bad)
    assert EVERYONE.may_read('["user:x"]') and not NOBODY.may_read('["user:x"]') and NOBODY.may_read(None)
    assert not ALICE.may_read("garbage") and ALICE.may_read('["group:finance"]')


async def test_readers_changed_by_another_process_hold_for_the_next_search(make_kb, tmp_path):
    kb = make_kb(tmp_path / "kb")
    await _three_kinds(kb)
    bob = kb.for_reader(BOB)
    assert "pay2" not in await _ids(bob, k=20)  # bob's allowed keys are now worked out and kept
    other = make_kb(tmp_path / "kb")  # its own sqlite connection, as another process has
    await other.set_readers("pay2", "bob")
    assert "pay2" in await _ids(bob, k=20)
    await other.set_readers("pay2", "group:finance")
    assert "pay2" not in await _ids(bob, k=20)
    await other.close()
    await kb.close()


def test_a_reader_is_written_as_principal_and_groups():
    assert Reader.parse("alice:finance, hr") == Reader.of("alice", ["finance", "hr"])
    assert Reader.parse("bob") == Reader.of("bob") and Reader.parse(":finance") == Reader.of(None, ["finance"])
    with pytest.raises(RequestInvalid, match="--reader"):
        Reader.parse("al ice", field_name="--reader")
    assert Reader.from_dict(ALICE.to_dict()) == ALICE and Reader.from_dict(None) is EVERYONE
    assert Reader.of("user:alice", ["group:finance"]) == ALICE and ALICE.names == ["group:finance", "user:alice"]


async def test_documents_of_many_chunks_are_filtered_by_document_or_by_chunk(open_index):
    """Milvus names a reader's documents or its chunks, whichever list is shorter: both ways
    (long documents here, one-chunk ones above) rank only what the reader may read."""
    kb = open_index()
    long = " ".join(f"salary budget paragraph {i} of the report, with more words to fill it." for i in range(400))
    await kb.ingest_records([("open-long", "Open report", long)])
    await kb.ingest_records([("fin-long", "Finance report", long.replace("report", "ledger"))], readers="group:finance")
    await kb.ingest_records([_salary(i) for i in range(3)], readers="group:finance")
    assert (await kb.stats()).chunks > 10
    bob, alice = kb.for_reader(BOB), kb.for_reader(ALICE)
    assert set(await _ids(bob, k=50)) == {"open-long"}
    assert {"open-long", "fin-long", "pay0"} <= set(await _ids(alice, k=50))
    for view in (bob, alice):  # here the documents are the shorter list (the one-chunk tests above: the chunks)
        keys = kb.index.store.allowed_keys([], view.reader)
        docs = kb.index.store.readable_documents(view.reader)
        assert len(docs) < len(keys)
    await kb.close()
