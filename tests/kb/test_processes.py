"""One knowledge base, many processes: readers keep searching and see every writer's commits,
writers take turns, and a killed writer leaves nothing locked or inconsistent.

The other processes are real (tests/kb/kb_process.py); this one plays the long-running server.
"""

import asyncio
import json
import os
import signal
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from reasonloop.config import Settings
from reasonloop.kb.knowledge_base import KnowledgeBase

from .helpers import HashEmbedder

pytestmark = pytest.mark.integration

CHILD = Path(__file__).with_name("kb_process.py")


async def start(kb_dir: Path, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(CHILD),
        str(kb_dir),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def finish(proc: asyncio.subprocess.Process, limit_s: float = 60) -> tuple[int, str, str]:
    out, err = await asyncio.wait_for(proc.communicate(), limit_s)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def run(kb_dir: Path, *args: str) -> tuple[int, str, str]:
    return await finish(await start(kb_dir, *args))


def meta(db: Path, key: str) -> str | None:
    conn = sqlite3.connect(db)
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None
    finally:
        conn.close()


async def poll(condition, limit_s: float = 20, every: float = 0.05) -> None:
    deadline = time.monotonic() + limit_s
    while not await condition():
        assert time.monotonic() < deadline, "the condition did not come true"
        await asyncio.sleep(every)


def assert_consistent(kb: KnowledgeBase) -> None:
    keys = sorted(kb.index.store.all_keys().tolist())
    assert kb.index.lexical.keys() == keys
    assert sorted(kb.index.vectors.keys().tolist()) == keys


async def test_searches_go_on_while_other_processes_ingest_and_delete(tmp_path):
    kb_dir = tmp_path / "kb"
    server = KnowledgeBase.open(kb_dir, settings=Settings(), embedder=HashEmbedder())
    await server.ingest_records([(f"old{i}", f"Old {i}", f"an older note about oldword{i}") for i in range(20)])
    folder = tmp_path / "new"
    folder.mkdir()
    for i in range(200):
        (folder / f"file{i}.md").write_text(f"# File {i}\n\nThis file mentions freshword{i} once.", encoding="utf-8")

    ingester = await start(kb_dir, "ingest", str(folder), "0.02")
    deleter = await start(kb_dir, "delete", *(f"old{i}" for i in range(10)))
    searches = 0
    seen_during_ingest = False
    while ingester.returncode is None or deleter.returncode is None:
        i = searches % 200
        hits = await server.search(f"freshword{i} oldword{i % 20}", top_k=3)  # never raises
        searches += 1
        if ingester.returncode is None and any(h.source.endswith(f"file{i}.md") for h in hits):
            seen_during_ingest = True
        await asyncio.sleep(0.01)
    code, out, err = await finish(ingester)
    assert code == 0, err
    assert json.loads(out) == {"added": 200, "failed": {}}
    code, out, err = await finish(deleter)
    assert code == 0, err
    assert json.loads(out) == {"deleted": 10}
    assert searches > 10
    assert seen_during_ingest  # new documents were found while the ingest was still running

    async def all_found() -> bool:
        for i in range(200):
            hits = await server.search(f"freshword{i}", top_k=1, mode="lexical")
            if [h.source.rsplit("/", 1)[-1] for h in hits] != [f"file{i}.md"]:
                return False
        return True

    await poll(all_found)
    for i in range(20):
        found = [h.document_id for h in await server.search(f"oldword{i}", top_k=1, mode="lexical")]
        assert found == ([] if i < 10 else [f"old{i}"])
    assert_consistent(server)
    code, out, err = await run(kb_dir, "stats")
    assert code == 0, err
    stats = await server.stats()
    assert json.loads(out) == {"documents": stats.documents, "chunks": stats.chunks}
    assert stats.documents == 210
    await server.close()


async def test_a_writer_killed_mid_ingest_leaves_the_knowledge_base_writable_and_consistent(tmp_path):
    kb_dir = tmp_path / "kb"
    db = kb_dir / "kb.sqlite"
    reader = KnowledgeBase.open(kb_dir, settings=Settings(), embedder=HashEmbedder())
    writer = await start(kb_dir, "records", "120", "0.05")
    try:
        # Stop the writer in the middle of one of its turns (holding the lock, dirty flag set).
        while True:
            assert writer.returncode is None, "the ingest finished before it could be killed"
            if (await reader.stats()).documents >= 12:
                writer.send_signal(signal.SIGSTOP)
                if meta(db, "dirty") == "1":
                    break
                writer.send_signal(signal.SIGCONT)
            await asyncio.sleep(0.02)
    finally:
        writer.send_signal(signal.SIGKILL)
        await finish(writer)
    assert writer.returncode == -signal.SIGKILL
    committed = (await reader.stats()).documents
    assert 12 <= committed < 120
    assert meta(db, "dirty") == "1"

    # The reader, still open, keeps searching; it notices the writer is gone and repairs.
    async def repaired() -> bool:
        await reader.search("recword3", top_k=1)
        return meta(db, "dirty") == "0"

    await poll(repaired)
    assert_consistent(reader)
    for i in (0, committed - 1):
        assert [h.document_id for h in await reader.search(f"recword{i}", top_k=1, mode="lexical")] == [f"rec{i}"]

    code, out, err = await run(kb_dir, "records", "120", "0")  # another process writes: nothing is locked
    assert code == 0, err
    report = json.loads(out)
    assert report["unchanged"] == committed and report["added"] == 120 - committed

    async def everything_found() -> bool:
        hits = await reader.search("recword119", top_k=1, mode="lexical")
        return [h.document_id for h in hits] == ["rec119"]

    await poll(everything_found)
    assert (await reader.stats()).documents == 120
    assert_consistent(reader)
    await reader.close()


async def test_cli_ingest_while_another_process_holds_the_knowledge_base_open(tmp_path):
    kb_dir = tmp_path / "kb"
    (tmp_path / "a.md").write_text("# A\n\nThe first upload mentions alphaword.", encoding="utf-8")
    (tmp_path / "b.md").write_text("# B\n\nThe second file mentions betaword.", encoding="utf-8")
    (tmp_path / "c.md").write_text("# C\n\nThe third file mentions gammaword.", encoding="utf-8")
    server = KnowledgeBase.open(kb_dir, settings=Settings(), embedder=HashEmbedder())
    await server.ingest(str(tmp_path / "a.md"))  # as an upload through the server

    code, out, err = await run(kb_dir, "cli", "ingest", str(tmp_path / "b.md"))
    assert code == 0, err
    assert "added 1" in out
    code, out, err = await run(kb_dir, "cli", "search", "betaword", "--mode", "lexical", "--json")
    assert code == 0, err
    assert [h["source"].rsplit("/", 1)[-1] for h in json.loads(out)] == ["b.md"]

    async def found_b() -> bool:
        return [h.source for h in await server.search("betaword", top_k=1, mode="lexical")] == [
            str((tmp_path / "b.md").resolve())
        ]

    await poll(found_b)
    assert np.isin(server.index.store.all_keys(), server.index.vectors.keys()).all()

    # While this process writes (holds the writer lock), the CLI waits, says so, then ingests.
    server.index._writer.acquire()
    cli = await start(kb_dir, "cli", "ingest", str(tmp_path / "c.md"))
    said = b""
    assert cli.stderr is not None
    while b"waiting for" not in said:
        line = await asyncio.wait_for(cli.stderr.readline(), 60)
        assert line, "the CLI ended without waiting"
        said += line
    assert f"process {os.getpid()}".encode() in said
    server.index._writer.release()
    code, out, err = await finish(cli)
    assert code == 0, err
    assert "added 1" in out
    code, out, err = await run(kb_dir, "cli", "kb", "stats", "--json")
    assert code == 0, err
    assert json.loads(out)["documents"] == (await server.stats()).documents == 3
    await server.close()
