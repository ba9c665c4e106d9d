"""What the onnxruntime e5 engine keeps in memory (kb/e5_tokenizer.py, kb/e5_onnx.py; figures in
benchmarks/README.md, "embedding.py"): the tokenizer's model, a session, and what a batch of passages
leaves behind. Measured in a fresh process, as resident memory. These tests pin how the code is built
(tests/perf/README.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

TOKENIZER_MB = 120
"""Budget for the tokenizer. Measured at 41-64 MB (SentencePiece's double-array trie of the 250,002
pieces); it was 263 MB with the ``tokenizers`` library's Unigram model."""
ENGINE_MB = 280
"""Budget for the tokenizer and one session. Measured at 130 MB; it was about 400 MB with the
``tokenizers`` model and a graph that carried its weights inside (onnxruntime then kept the bytes it
read beside its packed copy)."""
LEFT_BY_A_BATCH_MB = 60
"""Budget for what one call of 4,000 tokens leaves resident. Measured at 1-24 MB with the arena shrunk
after each call, 145 MB without (the arena grows by doubling and kept what it took)."""

CODE = textwrap.dedent(
    """
    import gc, json, sys
    from reasonloop.kb.embedding.e5_weights import E5Weights, default_weight_file
    import onnxruntime, sentencepiece  # the libraries' own code is not what is measured

    def rss():
        status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
        return int(status["VmRSS"].split()[0]) / 1024

    cache = sys.argv[1]
    weights = E5Weights(default_weight_file())
    from reasonloop.kb.embedding.e5_onnx import OnnxE5, graph_file
    from reasonloop.kb.embedding.e5_tokenizer import E5Tokenizer, model_file
    graph_file(weights, "fp32", cache), model_file(weights, cache)  # built before: only loading is measured
    gc.collect()
    start = rss()
    engine = OnnxE5(weights, threads=1, cache_dir=cache)  # its own tokenizer and a session
    engine.embed(["warm up"])
    engine_mb = rss() - start
    start = rss()
    tokenizer = E5Tokenizer(weights, cache)  # a second one, measured alone
    tokenizer_mb = rss() - start
    before = rss()
    engine.embed([" ".join(["cats sleep most of the day"] * 35)] * 16)  # 16 x 250 tokens: one call
    print(json.dumps({"tokenizer": tokenizer_mb, "engine": engine_mb, "left": rss() - before}))
    """
)


@pytest.fixture(scope="module")
def footprint(tmp_path_factory) -> dict[str, float]:
    cache = tmp_path_factory.mktemp("e5-cache")
    out = subprocess.run([sys.executable, "-c", CODE, str(cache)], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_tokenizer_holds_its_pieces_compactly(footprint):
    assert 5 < footprint["tokenizer"] <= TOKENIZER_MB, footprint


def test_a_session_holds_one_copy_of_the_weights(footprint):
    assert 40 < footprint["engine"] <= ENGINE_MB, footprint


def test_a_batch_gives_its_working_memory_back(footprint):
    assert footprint["left"] <= LEFT_BY_A_BATCH_MB, footprint
