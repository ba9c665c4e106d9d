"""A killed ingest leaves the index consistent: committed documents searchable, the rest redone."""

import asyncio
import os
import signal
import sqlite3
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from reasonloop.config import Settings
from reasonloop.kb.base import IngestProgress
from reasonloop.kb.knowledge_base import KnowledgeBase
from reasonloop.kb.retrieval.lexical import LexicalIndex
from reasonloop.kb.retrieval.vector import LocalVectorStore
from tests.waiting import await_until

from .helpers import HashEmbedder

REPO = Path(__file__).resolve().parents[2]
N = 120


def _records():
    return [(f"doc{i}", f"Title {i}", f"record number {i} mentions uniqueword{i} and shared text") for i in range(N)]


_CHILD = textwrap.dedent(
    """
    import asyncio, sys, time
    from reasonloop.config import Settings
    from reasonloop.kb.knowledge_base import KnowledgeBase
    from tests.kb.helpers import HashEmbedder
    from tests.kb.test_crash_safety import _records

    class Slow(HashEmbedder):
        async def embed_passages(self, texts):
            await asyncio.sleep(0.05)
            return await super().embed_passages(texts)

    async def main():
        kb = KnowledgeBase.open(sys.argv[1], settings=Settings(kb={"options": {"commit_chunks": 3}}), embedder=Slow())
        await kb.ingest_records(_records())

    asyncio.run(main())
    """
)


def _count(db: Path, sql: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute(sql).fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


@pytest.mark.integration
async def test_sigkill_mid_ingest_then_reopen_and_resume(tmp_path):
    kb_dir = tmp_path / "kb"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", _CHILD, str(kb_dir), cwd=REPO, env=env)
    db = kb_dir / "kb.sqlite"
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if db.exists() and _count(db, "SELECT count(*) FROM documents") >= 12:
                break
            assert child.returncode is None, "ingest finished before it could be killed"
            await asyncio.sleep(0.02)
        else:
            raise AssertionError("ingest made no progress")
    finally:
        child.send_signal(signal.SIGKILL)
        await asyncio.wait_for(child.wait(), 10)
    assert child.returncode == -signal.SIGKILL
    committed = _count(db, "SELECT count(*) FROM documents")
    assert 12 <= committed < N
    assert _count(db, "SELECT count(*) FROM meta WHERE key = 'dirty' AND value = '1'") == 1

    embedder = HashEmbedder()
    kb = KnowledgeBase.open(kb_dir, settings=Settings(), embedder=embedder)
    index = kb.index
    stats = await kb.stats()
    assert stats.documents >= committed  # the child may have committed more before dying
    chunk_keys = sorted(index.store.all_keys().tolist())
    assert index.lexical.keys() == chunk_keys
    assert sorted(index.vectors.keys().tolist()) == chunk_keys
    assert not index.store.dirty
    for doc in await kb.documents():
        n = doc.id.removeprefix("doc")
        assert [h.document_id for h in await kb.search(f"uniqueword{n}", top_k=1, mode="lexical")] == [doc.id]
        assert (await kb.search(f"record number {n} uniqueword{n}", top_k=1, mode="dense"))[0].document_id == doc.id

    report = await kb.ingest_records(_records())
    assert len(report.unchanged) == stats.documents
    assert len(report.added) == N - stats.documents
    assert report.chunks_embedded <= N - stats.documents  # vectors cached before the kill are reused
    assert (await kb.stats()).documents == N
    await kb.close()


async def test_reopen_repairs_derived_indexes_left_behind(tmp_path, embedder):
    settings = Settings()
    kb = KnowledgeBase.open(tmp_path / "kb", settings=settings, embedder=embedder)
    await kb.ingest_records(_records()[:10])
    keys = sorted(kb.index.store.all_keys().tolist())
    await kb.close()

    # Simulate a crash between the sqlite commit and the derived-index updates: BM25 lost two
    # entries, the HNSW file lost one vector and holds an orphan, and the dirty flag is set.
    lex = LexicalIndex(tmp_path / "kb" / "lexical")
    lex.delete(keys[:2])
    lex.commit()
    lex.close()
    vec = LocalVectorStore(tmp_path / "kb" / "vectors.usearch", embedder.dim)
    vec.remove([keys[3]])
    vec.add([10_000], np.ones((1, embedder.dim), np.float32) / np.sqrt(embedder.dim))
    vec.flush()
    conn = sqlite3.connect(tmp_path / "kb" / "kb.sqlite")
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'dirty'")
    conn.commit()
    conn.close()

    kb = KnowledgeBase.open(tmp_path / "kb", settings=settings, embedder=embedder)
    assert kb.index.lexical.keys() == keys
    assert sorted(kb.index.vectors.keys().tolist()) == keys
    assert [h.document_id for h in await kb.search("uniqueword0", top_k=1, mode="lexical")] == ["doc0"]
    await kb.close()


async def test_failed_ingest_reconciles_in_process(tmp_path, embedder):
    class Failing(HashEmbedder):
        calls_before_failure = 2

        async def embed_passages(self, texts):
            self.calls_before_failure -= 1
            if self.calls_before_failure < 0:
                raise RuntimeError("embedding service died")
            return await super().embed_passages(texts)

    kb = KnowledgeBase.open(
        tmp_path / "kb", settings=Settings(kb={"options": {"commit_chunks": 2}}), embedder=Failing()
    )
    try:
        await kb.ingest_records(_records()[:20])
    except RuntimeError as exc:
        assert "died" in str(exc)
    else:
        raise AssertionError("ingest should have failed")
    stats = await kb.stats()
    assert 0 < stats.documents < 20
    assert kb.index.lexical.keys() == sorted(kb.index.store.all_keys().tolist())
    assert not kb.index.store.dirty
    await kb.close()


async def test_a_second_writer_waits_its_turn_and_readers_do_not_repair(tmp_path, embedder):
    kb = KnowledgeBase.open(tmp_path / "kb", settings=Settings(), embedder=embedder)
    await kb.ingest_records(_records()[:3])
    # While this handle holds the writer lock (as during a writer's turn), another opener must
    # neither "repair" half-finished work nor write: it waits, saying so, and writes after.
    kb.index._writer.acquire()
    kb.index.store.dirty = True
    other = KnowledgeBase.open(tmp_path / "kb", settings=Settings(), embedder=HashEmbedder())
    assert other.index.store.dirty  # left for the writer
    assert len(await other.search("uniqueword1", mode="lexical")) == 1  # reading works
    assert other.index.store.dirty
    waits: list[str] = []
    task = asyncio.create_task(
        other.ingest_records(_records()[3:4], on_progress=lambda p: p.waiting and waits.append(p.waiting))
    )
    await await_until(lambda: waits, what="the ingest saying it waits")
    assert f"waiting for process {os.getpid()}" in waits[0]
    assert not task.done()
    kb.index.store.dirty = False
    kb.index._writer.release()
    report = await asyncio.wait_for(task, 30)
    assert report.added == ["doc3"]
    assert (await kb.stats()).documents == (await other.stats()).documents == 4
    assert [h.document_id for h in await kb.search("uniqueword3", top_k=1, mode="lexical")] == ["doc3"]
    await other.close()
    await kb.close()


async def test_cancelled_ingest_leaves_a_consistent_index(tmp_path):
    class Slow(HashEmbedder):
        async def embed_passages(self, texts):
            await asyncio.sleep(0.01)
            return await super().embed_passages(texts)

    kb = KnowledgeBase.open(tmp_path / "kb", settings=Settings(kb={"options": {"commit_chunks": 2}}), embedder=Slow())
    midway = asyncio.Event()

    def on_progress(p):
        if p.chunks_done >= 12:
            midway.set()

    task = asyncio.create_task(kb.ingest_records(_records(), on_progress=on_progress))
    await midway.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    keys = sorted(kb.index.store.all_keys().tolist())
    assert 6 <= len(keys) < N
    assert kb.index.lexical.keys() == keys
    assert sorted(kb.index.vectors.keys().tolist()) == keys
    assert not kb.index.store.dirty
    report = await kb.ingest_records(_records())  # the lock was released; the rest is redone
    assert len(report.unchanged) == len(keys) and (await kb.stats()).documents == N
    await kb.close()


async def test_two_handles_on_one_index_stay_consistent(tmp_path, embedder):
    a = KnowledgeBase.open(tmp_path / "kb", settings=Settings(), embedder=embedder)
    await a.ingest_records(_records()[:2])
    b = KnowledgeBase.open(tmp_path / "kb", settings=Settings(), embedder=HashEmbedder())
    await a.ingest_records(_records()[2:6])  # b's in-memory view is now behind
    await a.delete("doc0")
    await a.close()
    await b.ingest_records(_records()[6:7])  # b writes: it first catches up under the lock
    assert [h.document_id for h in await b.search("uniqueword4", top_k=1, mode="dense")] == ["doc4"]
    assert [h.document_id for h in await b.search("uniqueword5", top_k=1, mode="lexical")] == ["doc5"]
    await b.close()
    c = KnowledgeBase.open(tmp_path / "kb", settings=Settings(), embedder=HashEmbedder())
    keys = sorted(c.index.store.all_keys().tolist())
    assert len(keys) == 6
    assert sorted(c.index.vectors.keys().tolist()) == keys
    assert c.index.lexical.keys() == keys
    await c.close()


async def test_unreadable_derived_files_are_rebuilt_from_sqlite(tmp_path, embedder):
    kb = KnowledgeBase.open(tmp_path / "kb", settings=Settings(), embedder=embedder)
    await kb.ingest_records(_records()[:5])
    await kb.close()
    (tmp_path / "kb" / "vectors.npz").write_bytes(b"not numpy at all")
    (tmp_path / "kb" / "lexical" / "meta.json").write_text("{broken", encoding="utf-8")
    kb = KnowledgeBase.open(tmp_path / "kb", settings=Settings(), embedder=embedder)
    keys = sorted(kb.index.store.all_keys().tolist())
    assert len(keys) == 5
    assert sorted(kb.index.vectors.keys().tolist()) == keys and kb.index.lexical.keys() == keys
    assert [h.document_id for h in await kb.search("uniqueword3", top_k=1, mode="lexical")] == ["doc3"]
    await kb.close()


def test_corrupt_metadata_database_is_a_clear_error(tmp_path, embedder):
    from reasonloop.errors import KBError

    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "kb.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(KBError, match="not a reasonloop index database"):
        KnowledgeBase.open(tmp_path / "kb", settings=Settings(), embedder=embedder)


async def test_cancelling_an_ingest_during_a_commit_settles_after_that_commit(tmp_path):
    kb = KnowledgeBase.open(
        tmp_path / "kb", settings=Settings(kb={"options": {"commit_chunks": 2}}), embedder=HashEmbedder()
    )
    store = kb.index.store
    real_commit = store.commit_documents
    in_commit = asyncio.Event()
    release = threading.Event()
    loop = asyncio.get_running_loop()

    def held_commit(writes):  # runs in the ingest's worker thread, until the ingest is cancelled
        loop.call_soon_threadsafe(in_commit.set)
        release.wait(60)
        return real_commit(writes)

    store.commit_documents = held_commit
    task = asyncio.create_task(kb.ingest_records(_records()))
    await in_commit.wait()
    task.cancel()  # the cancellation lands while this commit is still running
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    keys = sorted(store.all_keys().tolist())
    assert keys and kb.index.lexical.keys() == keys
    assert sorted(kb.index.vectors.keys().tolist()) == keys
    store.commit_documents = real_commit
    await kb.close()


async def test_an_ingest_cancelled_during_a_commit_reports_every_file_that_commit_holds(tmp_path):
    """Ctrl-C while a group is committed: the files the last progress calls committed are the
    files the index holds, the file that filled the group included (its end is read after it)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(1, 21):
        (docs / f"n{i:02}.txt").write_text(f"Note {i:02}: pump {i:02} goes before filter {i:02}.", encoding="utf-8")
    kb = KnowledgeBase.open(
        tmp_path / "kb", settings=Settings(kb={"options": {"commit_chunks": 2}}), embedder=HashEmbedder()
    )
    store = kb.index.store
    real_commit = store.commit_documents
    commits: list[int] = []
    in_commit = asyncio.Event()
    release = threading.Event()
    loop = asyncio.get_running_loop()

    def held_commit(writes):  # runs in the ingest's worker thread; the third is held until cancelled
        commits.append(len(writes))
        if len(commits) == 3:
            loop.call_soon_threadsafe(in_commit.set)
            release.wait(60)
        return real_commit(writes)

    store.commit_documents = held_commit
    seen: list[IngestProgress] = []
    task = asyncio.create_task(kb.ingest([str(docs)], on_progress=seen.append))
    await in_commit.wait()
    (consumer,) = [t for t in asyncio.all_tasks() if t.get_coro().__qualname__ == "Ingestor.consume"]
    task.cancel()  # reaches the consumer at once: it waits for the commit only to count it
    # The ingest cancels it again once the reader has stopped (gather ends with its first
    # cancelled task): the commit is still counted.
    await await_until(lambda: consumer.cancelling() >= 2, what="the consumer cancelled twice")
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    held = sorted(d.source for d in store.documents())
    last = seen[-1]
    assert len(commits) == 3 and len(held) == sum(commits)
    assert last.files_committed == len(held)
    assert held == [str(docs / f"n{i:02}.txt") for i in range(1, len(held) + 1)]
    assert last.first_pending == str(docs / f"n{len(held) + 1:02}.txt")
    store.commit_documents = real_commit
    await kb.close()


async def test_a_reader_learns_of_deletes_from_the_removal_log_not_by_comparing_every_key(
    tmp_path, embedder, monkeypatch
):
    a = KnowledgeBase.open(tmp_path / "kb", settings=Settings(), embedder=embedder)
    await a.ingest_records(_records()[:8])
    b = KnowledgeBase.open(tmp_path / "kb", settings=Settings(), embedder=HashEmbedder())
    await b.search("uniqueword1", top_k=1)  # b's view is current
    compared = []
    every_key = b.index.store.all_keys
    monkeypatch.setattr(b.index.store, "all_keys", lambda: compared.append(1) or every_key())
    await a.delete("doc0")
    await a.ingest_records([{"id": "doc3", "text": "uniqueword3 now reads otherwise"}, *_records()[8:10]])
    hits = await b.search("uniqueword3", top_k=3, mode="dense")
    assert compared == []  # the removals came from the log
    assert sorted(b.index.vectors.keys().tolist()) == sorted(b.index.store.all_keys().tolist())
    assert "doc0" not in {h.document_id for h in await b.search("uniqueword0", top_k=10, mode="dense")}
    assert hits[0].document_id == "doc3" and "otherwise" in hits[0].text
    await a.close()
    await b.close()


async def test_a_reader_further_behind_than_the_removal_log_compares_every_key(tmp_path, embedder, monkeypatch):
    from reasonloop.kb.storage import store

    monkeypatch.setattr(store, "REMOVED_KEPT", 1)
    a = KnowledgeBase.open(tmp_path / "kb", settings=Settings(), embedder=embedder)
    await a.ingest_records(_records()[:8])
    b = KnowledgeBase.open(tmp_path / "kb", settings=Settings(), embedder=HashEmbedder())
    await b.search("uniqueword1", top_k=1)
    compared = []
    every_key = b.index.store.all_keys
    monkeypatch.setattr(b.index.store, "all_keys", lambda: compared.append(1) or every_key())
    for doc in ("doc0", "doc1", "doc2"):  # a chunk each; the log keeps the last removed key only
        await a.delete(doc)
    await b.search("uniqueword4", top_k=1)
    assert compared  # the log did not reach back: every key was compared, and the view is right
    assert sorted(b.index.vectors.keys().tolist()) == sorted(every_key().tolist())
    assert len(every_key()) == 5
    await a.close()
    await b.close()
