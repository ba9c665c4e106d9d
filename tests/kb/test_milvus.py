"""The milvus index beyond the conformance suite: its own file by default, a server that does not
answer, a collection of another vector size, and recovery after an interrupted ingest."""

from __future__ import annotations

import socket

import pytest

from reasonloop.config import Settings
from reasonloop.errors import ConfigError, KBModelMismatch, KBUnavailable
from reasonloop.kb.indexes.milvus import MilvusIndex
from reasonloop.kb.knowledge_base import KnowledgeBase

from .helpers import HashEmbedder

RECORDS = [
    ("cats", "Cats", "Cats sleep up to sixteen hours a day."),
    ("pump", "Pump", "Install the pump before the filter."),
    ("tea", "茶", "绿茶是中国最古老的茶类。"),
]


def _open(path, emb=None, **options) -> KnowledgeBase:
    settings = Settings(kb={"index": "milvus", "options": options})
    return KnowledgeBase.open(path, settings=settings, embedder=emb or HashEmbedder())


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.integration
async def test_milvus_lite_lives_in_the_index_directory(tmp_path):
    kb = _open(tmp_path / "kb")
    await kb.ingest_records(RECORDS)
    assert (tmp_path / "kb" / "milvus.db").exists()
    assert [h.document_id for h in await kb.search("绿茶", top_k=1, mode="lexical")] == ["tea"]
    await kb.close()


async def test_a_milvus_that_does_not_answer_is_a_clear_error(tmp_path):
    uri = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(KBUnavailable, match=f"milvus at {uri} did not answer within 0.2 s"):
        _open(tmp_path / "kb", milvus_uri=uri, milvus_timeout_s=0.2)


@pytest.mark.integration
async def test_a_collection_of_another_vector_size_is_refused(tmp_path):
    shared = str(tmp_path / "shared.db")
    kb = _open(tmp_path / "a", milvus_uri=shared)
    await kb.ingest_records(RECORDS[:1])
    await kb.close()
    other = _open(tmp_path / "b", HashEmbedder(dim=32), milvus_uri=shared)
    with pytest.raises(KBModelMismatch, match="64-d vectors"):
        await other.ingest_records(RECORDS[:1])
    await other.close()


@pytest.mark.integration
async def test_an_interrupted_ingest_is_reconciled_on_open(tmp_path):
    kb = _open(tmp_path / "kb")
    await kb.ingest_records(RECORDS)
    index = kb.index
    assert isinstance(index, MilvusIndex)
    keys = {int(k) for k in index.store.all_keys()}
    # As if the process died between the sqlite commit and Milvus: one chunk missing there,
    # a stray entry of a chunk that no longer exists, and the dirty flag still set.
    lost = min(keys)
    index._delete_keys([lost])
    index._insert(
        [(9999, "ghost", "ghost", "", "ghost text about cats", {})], index.store.vectors_for("hash-test", [lost])[1]
    )
    index.store.dirty = True
    await kb.close()

    kb = _open(tmp_path / "kb")
    index = kb.index
    assert isinstance(index, MilvusIndex)
    assert {int(k) for k in index._milvus_keys()} == keys and not index.store.dirty
    assert [h.document_id for h in await kb.search("cats sleep", top_k=3, mode="lexical")] == ["cats"]
    await kb.close()


def test_bad_milvus_options_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="milvus_collection"):
        _open(tmp_path / "kb", milvus_collection="no spaces please")
    with pytest.raises(ConfigError, match="milvus_timeout_s"):
        _open(tmp_path / "kb", milvus_timeout_s=0)


@pytest.mark.integration
async def test_searches_wait_on_milvus_off_the_event_loop(tmp_path, monkeypatch):
    import threading

    kb = _open(tmp_path / "kb")
    await kb.ingest_records(RECORDS)
    index = kb.index
    assert isinstance(index, MilvusIndex)
    seen: list[bool] = []
    search = index._search

    def recording(*args, **kwargs):
        seen.append(threading.current_thread() is threading.main_thread())
        return search(*args, **kwargs)

    monkeypatch.setattr(index, "_search", recording)
    hits = await kb.search("cats sleep", top_k=2)
    assert hits[0].document_id == "cats" and seen == [False, False]  # dense and BM25, both in worker threads
    await kb.close()
