"""Folders and files as they are found, not as they should be: a file that changes while it is
read, a folder of thousands of files, a file name that is not UTF-8, symbolic link loops and
links leading out of the folder."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import tracemalloc
from pathlib import Path

import pytest

from reasonloop.cli import main
from reasonloop.kb.ingest import reading
from reasonloop.kb.ingest.loaders import walk
from reasonloop.kb.ingest.names import path_of, source_name

HERONS = "Grey herons nest in the alder wood by the mill pond."
GOOD = "The ferry to the island leaves at seven every morning."


def run_cli(argv, capsys):
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err


def folder_with(tmp_path: Path, **files: str) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


# -- a file that changes while it is read ---------------------------------------------------------


def change_while_read(monkeypatch, target: Path, change, times: int | None = 1) -> list[int]:
    """Make ``change(target)`` happen right after the bytes of ``target`` are read, ``times``
    times (``None``: every time); returns the count of reads of ``target``."""
    reads = [0]
    plain = reading._read_open

    def read_then_change(f):
        data = plain(f)
        if Path(f.name) == target:
            reads[0] += 1
            if times is None or reads[0] <= times:
                change(target)
        return data

    monkeypatch.setattr(reading, "_read_open", read_then_change)
    return reads


def grow(path: Path) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(" They fish at dusk.")


def shrink(path: Path) -> None:
    with open(path, "r+b") as f:
        f.truncate(20)


def replace(path: Path) -> None:
    fresh = path.with_name("fresh.tmp")
    fresh.write_text("Kingfishers dive from the willow branches.", encoding="utf-8")
    os.replace(fresh, path)


@pytest.mark.parametrize(
    ("change", "stored"),
    [
        (grow, HERONS + " They fish at dusk."),
        (shrink, HERONS[:20].strip()),
        (replace, "Kingfishers dive from the willow branches."),
    ],
    ids=["grows", "shrinks", "is replaced"],
)
async def test_a_file_changed_during_its_read_is_read_again_and_stored_as_it_now_is(
    make_kb, tmp_path, monkeypatch, change, stored
):
    folder = folder_with(tmp_path, **{"herons.txt": HERONS, "ferry.txt": GOOD})
    target = folder / "herons.txt"
    reads = change_while_read(monkeypatch, target, change)
    kb = make_kb()
    report = await kb.ingest(str(folder))
    assert reads[0] == 2  # the read that saw the change, then one of a version that held still
    assert not report.failed
    assert sorted(Path(s).name for s in report.added) == ["ferry.txt", "herons.txt"]
    doc, chunks = await kb.document(str(target))
    assert "".join(c.text for c in chunks) == stored
    assert doc.bytes == target.stat().st_size and doc.mtime == target.stat().st_mtime
    # The hash stored is the hash of what is stored: the file as it is now is unchanged.
    again = await kb.ingest(str(folder))
    assert sorted(Path(s).name for s in again.unchanged) == ["ferry.txt", "herons.txt"]


async def test_a_file_that_keeps_changing_fails_alone_and_is_not_recorded(make_kb, tmp_path, monkeypatch):
    folder = folder_with(tmp_path, **{"herons.txt": HERONS, "ferry.txt": GOOD})
    target = folder / "herons.txt"
    monkeypatch.setattr(reading, "_PAUSE_S", 0.0)
    reads = change_while_read(monkeypatch, target, grow, times=None)
    kb = make_kb()
    report = await kb.ingest(str(folder))
    assert reads[0] == reading.READ_TRIES
    assert [Path(s).name for s in report.added] == ["ferry.txt"]
    assert report.failed == {
        str(target): f"changed while it was read, {reading.READ_TRIES} times in a row: left out "
        "(ingest it again once it is written)"
    }
    assert kb.index.store.content_hashes([str(target)]) == {}  # no hash recorded: the next ingest reads it
    monkeypatch.undo()
    again = await kb.ingest(str(folder))
    assert [Path(s).name for s in again.added] == ["herons.txt"]
    assert (await kb.search("herons fish at dusk", top_k=1))[0].source == str(target)


async def test_a_file_rewritten_by_another_thread_is_stored_as_one_of_its_versions(make_kb, tmp_path):
    """A real writer, no hook: whenever the reads fall, what is stored is one whole version (or
    the file fails with a reason), never a mix of two. Each version is under a page and written
    in one call, so the file itself never holds a mix."""
    versions = [f"Version {n}. " + "The tide tables are printed weekly. " * (5 + 40 * (n % 3)) for n in range(60)]
    folder = folder_with(tmp_path, **{"tides.txt": versions[0], "ferry.txt": GOOD})
    target = folder / "tides.txt"
    stop = threading.Event()

    def rewrite() -> None:
        n = 0
        while not stop.is_set():
            n = (n + 1) % len(versions)
            with open(target, "r+b") as f:  # in place: same inode, emptied, then one write
                f.truncate()
                f.write(versions[n].encode())

    writer = threading.Thread(target=rewrite)
    writer.start()
    kb = make_kb()
    try:
        outcomes = []
        for _ in range(5):
            report = await kb.ingest(str(folder))
            if str(target) in report.failed:
                outcomes.append(report.failed[str(target)])
                continue
            doc, _ = await kb.document(str(target))
            text = kb.index.store.page(doc.id, 1)
            outcomes.append("stored")
            assert text is not None and text.strip() in {v.strip() for v in versions}, text[:80]
    finally:
        stop.set()
        writer.join()
    for outcome in outcomes:
        assert outcome == "stored" or outcome.startswith(("changed while it was read", "empty")), outcome


# -- a folder of thousands of small files --------------------------------------------------------


@pytest.mark.integration
async def test_a_folder_of_thousands_of_small_files_ingests_with_bounded_memory_and_true_progress(make_kb, tmp_path):
    """2,000 files here; benchmarks/many_files.py measures 1,000 against 10,000."""
    count = 2000
    folder = tmp_path / "notes"
    for i in range(count):
        sub = folder / f"part{i // 500}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"n{i:04d}.md").write_text(f"Note {i}: the weir at lock {i} was inspected.", encoding="utf-8")
    kb = make_kb()
    seen = []
    tracemalloc.start()
    try:
        report = await kb.ingest(str(folder), on_progress=seen.append)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(report.added) == count and not report.failed
    # Memory: the ingest holds a bounded queue of parsed files, not the folder (a generous bound).
    assert peak < 64 * 1024 * 1024, f"{peak / 2**20:.0f} MB traced"
    # Progress: never backwards, never past the total, and ends at the total.
    assert all(p.files_total == count for p in seen)
    for field in ("files_done", "files_committed", "chunks_done"):
        values = [getattr(p, field) for p in seen]
        assert values == sorted(values), field
    assert all(p.files_committed <= p.files_done <= count and p.chunks_done <= p.chunks_total for p in seen)
    assert (seen[-1].files_done, seen[-1].files_committed, seen[-1].first_pending) == (count, count, "")
    hits = await kb.search("weir at lock 1234", top_k=3, mode="lexical")
    assert any("lock 1234 " in h.text for h in hits)
    again = await kb.ingest(str(folder))
    assert len(again.unchanged) == count and not again.added


def test_the_documents_under_a_prefix_are_found_through_the_source_index(make_kb, tmp_path):
    """An ingest asks, for each file it reads, which records of it are stored: a range of the
    index on ``source``, not a scan of every document (which made a big folder quadratic)."""
    kb = make_kb()
    store = kb.index.store
    plan = store.conn.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM documents WHERE source >= ? AND substr(source, 1, ?) = ? AND source < ?",
        ("/a#", 3, "/a#", "/a$"),
    ).fetchall()
    assert any("USING INDEX" in str(row[-1]) for row in plan), plan
    from reasonloop.kb.storage.store import DocumentWrite

    store.commit_documents(
        [
            DocumentWrite(str(n), src, "", "h", 1, None, {})
            for n, src in enumerate(["/a#1", "/a#2", "/a", "/a.txt", "/a#\U0010ffff", "/b#1", "/\u00e9#1"])
        ]
    )
    assert [d.source for d in store.documents("/a#")] == ["/a#1", "/a#2", "/a#\U0010ffff"]
    assert [d.source for d in store.documents("/\u00e9")] == ["/\u00e9#1"]
    assert len(store.documents("")) == len(store.documents()) == 7


# -- a file name that is not UTF-8 ---------------------------------------------------------------

LATIN1 = b"caf\xe9 menu.txt"
"""``café menu.txt`` written by a system that uses Latin-1: not valid UTF-8."""


def write_bytes_name(folder: Path, name: bytes, text: str) -> str:
    path = os.path.join(os.fsencode(folder), name)
    with open(path, "wb") as f:
        f.write(text.encode())
    return os.fsdecode(path)


def test_a_name_that_is_not_utf8_is_stored_as_text_and_maps_back_to_the_file(tmp_path):
    path = write_bytes_name(tmp_path, LATIN1, "x")
    name = source_name(path)
    assert name == str(tmp_path) + "/caf\\xe9 menu.txt"
    name.encode("utf-8")  # storable, printable, JSON
    assert path_of(name) == path and Path(path_of(name)).read_text() == "x"
    assert source_name(str(tmp_path / "plain café.txt")) == str(tmp_path / "plain café.txt")
    assert source_name("lone \ud800") == "lone \\ud800"


async def test_a_file_whose_name_is_not_utf8_is_ingested_searched_cited_and_pruned(make_kb, tmp_path):
    folder = folder_with(tmp_path, **{"ferry.txt": GOOD})
    path = write_bytes_name(folder, LATIN1, "The cafe serves lentil soup on Tuesdays.")
    name = source_name(path)
    kb = make_kb()
    report = await kb.ingest(str(folder))
    assert not report.failed
    assert sorted(report.added) == sorted([name, str(folder / "ferry.txt")])
    json.loads(report.model_dump_json())
    hit = (await kb.search("lentil soup", top_k=1))[0]
    assert (hit.source, hit.title) == (name, "caf\\xe9 menu")
    cited = json.loads(hit.citation(1).model_dump_json())
    assert cited["source"] == name and "lentil" in cited["quote"]
    assert (await kb.stats()).sources[name] == 1
    again = await kb.ingest(str(folder), prune=True)  # the stored name leads back to the file: kept
    assert name in again.unchanged and not again.deleted
    assert (await kb.ingest(path)).unchanged == [name]  # named directly, as a shell passes it
    os.remove(path)
    pruned = await kb.ingest(str(folder), prune=True)
    assert pruned.deleted == [name]


async def test_a_file_whose_name_is_not_utf8_can_be_deleted_by_its_path_or_its_stored_name(make_kb, tmp_path):
    folder = folder_with(tmp_path, **{"ferry.txt": GOOD})
    path = write_bytes_name(folder, LATIN1, "The cafe serves lentil soup on Tuesdays.")
    kb = make_kb()
    await kb.ingest(str(folder))
    assert await kb.delete(path) == [source_name(path)]
    await kb.ingest(str(folder))
    assert await kb.delete(source_name(path)) == [source_name(path)]


@pytest.mark.integration
def test_the_cli_ingests_searches_and_lists_a_name_that_is_not_utf8_in_text_and_json(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    folder = folder_with(tmp_path, **{"ferry.txt": GOOD})
    path = write_bytes_name(folder, LATIN1, "The cafe serves lentil soup on Tuesdays.")
    name = source_name(path)
    code, out, err = run_cli(["ingest", str(folder), "--json"], capsys)
    assert code == 0, err
    assert name in json.loads(out)["added"]
    code, out, _ = run_cli(["search", "lentil soup", "--top-k", "1", "--json"], capsys)
    assert code == 0 and json.loads(out)[0]["source"] == name
    code, out, _ = run_cli(["search", "lentil soup", "--top-k", "1"], capsys)
    assert code == 0 and "caf\\xe9 menu.txt" in out.replace("\n", "")
    code, out, _ = run_cli(["kb", "list", "--json"], capsys)
    assert code == 0 and name in [d["source"] for d in json.loads(out)]
    code, out, _ = run_cli(["kb", "delete", path], capsys)
    assert code == 0


@pytest.mark.integration
async def test_the_server_searches_and_shows_a_document_whose_name_is_not_utf8(tmp_path):
    """The knowledge base a server has open, fed by another handle (as another process would)."""
    import httpx

    from reasonloop.kb.knowledge_base import KnowledgeBase
    from reasonloop.server import create_app
    from tests.runs.helpers import GatedRunner
    from tests.server.helpers import make_settings, serve

    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    settings = make_settings(tmp_path)
    folder = folder_with(tmp_path, **{"ferry.txt": GOOD})
    path = write_bytes_name(folder, LATIN1, "The cafe serves lentil soup on Tuesdays.")
    async with (
        serve(create_app(settings, runner=GatedRunner()), settings) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as http,
    ):
        kb = KnowledgeBase.open(settings.kb.path, settings=settings)
        try:
            await kb.ingest([str(folder)])
        finally:
            await kb.close()
        hits = (await http.get("/v1/kb/search", params={"q": "lentil soup", "top_k": 1})).json()
        assert hits[0]["source"] == source_name(path)
        docs = (await http.get("/v1/kb/documents")).json()
        doc = next(d for d in docs if d["source"] == source_name(path))
        page = await http.get(f"/v1/documents/{doc['id']}/pages/1")
        assert page.status_code == 200 and "lentil" in page.text


# -- symbolic links ------------------------------------------------------------------------------


@pytest.fixture
def linked(tmp_path) -> tuple[Path, Path]:
    """A folder holding every kind of link, and a folder outside it."""
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "secret.txt").write_text("The safe code is 4471.", encoding="utf-8")
    folder = folder_with(tmp_path, **{"ferry.txt": GOOD})
    (folder / "sub").mkdir()
    (folder / "sub" / "herons.md").write_text(HERONS, encoding="utf-8")
    (folder / "sub" / "up").symlink_to("..")  # a loop: back to the folder
    (folder / "sub" / "top").symlink_to(folder)  # a loop, absolute
    (folder / "self.txt").symlink_to("self.txt")  # a link to itself
    (folder / "ping.txt").symlink_to("pong.txt")
    (folder / "pong.txt").symlink_to("ping.txt")
    (folder / "ferry-again.txt").symlink_to("ferry.txt")  # inside: read once, as ferry.txt
    (folder / "herons").symlink_to("sub")  # a folder inside: its files are read where they are
    (folder / "secret.txt").symlink_to(outside / "secret.txt")
    (folder / "private").symlink_to(outside)
    (folder / "gone.md").symlink_to("missing.md")
    return folder, outside


def test_a_folder_walk_ends_on_link_loops_and_says_what_it_left_out(linked):
    folder, outside = linked
    skipped: dict[str, str] = {}
    found = list(walk(folder, skipped=skipped))
    assert [p.relative_to(folder).as_posix() for p in found] == ["ferry-again.txt", "ferry.txt", "sub/herons.md"]
    why = {Path(k).relative_to(folder).as_posix(): v for k, v in skipped.items()}
    assert set(why) == {"sub/up", "sub/top", "self.txt", "ping.txt", "pong.txt", "secret.txt", "private", "gone.md"}
    assert why["sub/up"] == f"a symbolic link loop (it leads back to {folder}): not walked"
    assert why["self.txt"] == why["ping.txt"] == "a symbolic link loop: left out"
    real = outside.resolve()
    assert why["secret.txt"] == (
        f"a symbolic link to a file outside the folder ({real / 'secret.txt'}): left out; name it to ingest it"
    )
    assert why["private"].startswith(f"a symbolic link to a folder outside the folder ({real})")
    assert why["gone.md"] == "a broken symbolic link: left out"


async def test_an_ingest_of_a_folder_with_link_loops_ends_reads_each_file_once_and_keeps_links_out(make_kb, linked):
    folder, outside = linked
    kb = make_kb()
    report = await asyncio.wait_for(kb.ingest(str(folder)), 60)
    assert sorted(report.added) == [str(folder / "ferry.txt"), str(folder / "sub" / "herons.md")]
    assert not report.failed
    assert set(report.skipped) == {
        str(folder / n)
        for n in ("sub/up", "sub/top", "self.txt", "ping.txt", "pong.txt", "secret.txt", "private", "gone.md")
    }
    assert not await kb.search("safe code", top_k=3, mode="lexical")
    # Named itself, a file behind a link is read: the rule is about what a folder walk reaches.
    named = await kb.ingest(str(folder / "secret.txt"))
    assert named.added == [str((outside / "secret.txt").resolve())]


@pytest.mark.integration
def test_the_cli_says_which_links_it_left_out_and_exits_0(linked, tmp_path, monkeypatch, capsys):
    folder, _ = linked
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["ingest", str(folder)], capsys)
    assert code == 0, err
    assert "added 2," in out
    lines = " ".join(err.split())
    assert f"skipped {folder / 'sub' / 'up'}: a symbolic link loop" in lines
    assert "outside the folder" in lines
