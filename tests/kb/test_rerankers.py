"""Rerankers: each wire format against a loopback server, the listwise LLM one with the scripted
model, the llama.cpp one's calls, and what happens when any of them fails (order kept, warned)."""

from __future__ import annotations

import json
import socket
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import pytest

from reasonloop.errors import ConfigError, LLMNotConfigured
from reasonloop.kb.base import Hit
from reasonloop.kb.retrieval.rerankers.base import RerankStep, collect_reports, create_reranker
from reasonloop.kb.retrieval.rerankers.http import HTTPReranker
from reasonloop.kb.retrieval.rerankers.llama_cpp import LlamaCppReranker
from reasonloop.kb.retrieval.rerankers.llm import LLMReranker, parse_ranking
from reasonloop.llm.scripted import ScriptedProvider

from .helpers import LoopbackServer, reply


def _hits(*texts: str) -> list[Hit]:
    return [
        Hit(chunk_id=f"c{i}", document_id=f"d{i}", source=f"s{i}", text=t, score=1.0 - i / 10)
        for i, t in enumerate(texts)
    ]


class Recorder:
    """Routes that record each request body and answer from a list (the last one repeats)."""

    def __init__(self, answers: list[tuple[int, Any]]) -> None:
        self.answers = answers
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []

    def __call__(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        self.bodies.append(json.loads(handler.rfile.read(length)))
        self.headers.append(dict(handler.headers))
        status, payload = self.answers[min(len(self.bodies), len(self.answers)) - 1]
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        reply(handler, body, "application/json", status)


async def test_tei_format_reorders_and_keeps_both_scores():
    route = Recorder([(200, [{"index": 2, "score": 0.9}, {"index": 0, "score": 0.5}, {"index": 1, "score": 0.1}])])
    with LoopbackServer({"/rerank": route}) as server:
        reranker = HTTPReranker({"base_url": server.url, "format": "tei"})
        step = RerankStep(reranker)
        with collect_reports() as reports:
            hits = await step("which is best?", _hits("alpha", "beta", "gamma"))
        await reranker.aclose()
    assert [h.chunk_id for h in hits] == ["c2", "c0", "c1"]
    assert [h.rerank_score for h in hits] == [0.9, 0.5, 0.1]
    assert [h.score for h in hits] == [0.8, 1.0, 0.9]  # the retrieval scores stay
    assert route.bodies == [{"query": "which is best?", "texts": ["alpha", "beta", "gamma"], "truncate": True}]
    assert len(reports) == 1 and reports[0].candidates == 3 and not reports[0].warning
    assert "reranked 3 candidates by http:tei" in reports[0].summary()


@pytest.mark.parametrize("suffix", ["", "/v1"])
async def test_v1_format_sends_model_key_and_reads_usage(suffix, monkeypatch):
    monkeypatch.setenv("RL_TEST_RERANK_KEY", "sekrit")
    answer = {
        "results": [{"index": 1, "relevance_score": 0.7}, {"index": 0, "relevance_score": 0.2}],
        "usage": {"total_tokens": 42},
    }
    route = Recorder([(200, answer)])
    with LoopbackServer({"/v1/rerank": route}) as server:
        reranker = create_reranker(
            {
                "id": "http",
                "base_url": server.url + suffix,
                "model": "bge-reranker-base",
                "api_key_env": "RL_TEST_RERANK_KEY",
            }
        )
        assert reranker is not None
        with collect_reports() as reports:
            hits = await RerankStep(reranker)("q", _hits("first", "second"))
        await reranker.aclose()
    assert [h.chunk_id for h in hits] == ["c1", "c0"]
    assert route.bodies[0] == {"query": "q", "documents": ["first", "second"], "top_n": 2, "model": "bge-reranker-base"}
    assert route.headers[0]["Authorization"] == "Bearer sekrit"
    assert reports[0].prompt_tokens == 42 and reports[0].reranker == "http:bge-reranker-base"


async def test_retryable_failures_are_retried_others_are_not():
    ok = [{"index": 0, "score": 0.1}, {"index": 1, "score": 0.9}]
    flaky = Recorder([(503, {"error": "busy"}), (200, ok)])
    refused = Recorder([(400, {"error": "bad"}), (200, ok)])
    with LoopbackServer({"/rerank": flaky, "/bad/rerank": refused}) as server:
        reranker = HTTPReranker({"base_url": server.url, "format": "tei", "backoff_base_s": 0})
        result = await reranker.score("q", ["a", "b"])
        assert result.scores == [0.1, 0.9] and result.calls == 2 and len(flaky.bodies) == 2
        strict = HTTPReranker({"base_url": server.url + "/bad", "format": "tei", "backoff_base_s": 0})
        with collect_reports() as reports:
            hits = await RerankStep(strict)("q", _hits("a", "b"))
        await reranker.aclose()
        await strict.aclose()
    assert len(refused.bodies) == 1  # a 400 is not worth another try
    assert [h.chunk_id for h in hits] == ["c0", "c1"] and "HTTP 400" in reports[0].warning


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_endpoint_down_keeps_the_retrieval_order_with_a_warning(caplog):
    reranker = HTTPReranker(
        {"base_url": f"http://127.0.0.1:{_closed_port()}", "format": "tei", "max_retries": 1, "backoff_base_s": 0}
    )
    hits = _hits("a", "b", "c")
    with collect_reports() as reports:
        out = await RerankStep(reranker)("q", hits)
    await reranker.aclose()
    assert out == hits and all(h.rerank_score is None for h in out)
    assert "cannot reach the server" in reports[0].warning
    assert "kept the retrieval order" in reports[0].summary()
    assert "kept the retrieval order" in caplog.text


@pytest.mark.parametrize(
    ("wire", "payload"),
    [
        ("tei", b"<html>oops</html>"),
        ("tei", {"scores": [1, 2]}),
        ("tei", [{"index": 0, "score": 0.5}]),  # one of two candidates scored
        ("tei", [{"index": 0, "score": "high"}, {"index": 1, "score": 0.1}]),
        ("tei", [{"index": 7, "score": 0.5}, {"index": 1, "score": 0.1}]),
        ("v1", {"data": []}),
        ("v1", {"results": [{"index": 0, "relevance_score": float("nan")}, {"index": 1, "relevance_score": 1}]}),
    ],
)
async def test_garbage_answers_keep_the_retrieval_order(wire, payload):
    route = Recorder([(200, payload)])
    path = "/rerank" if wire == "tei" else "/v1/rerank"
    with LoopbackServer({path: route}) as server:
        reranker = HTTPReranker({"base_url": server.url, "format": wire})
        hits = _hits("a", "b")
        with collect_reports() as reports:
            out = await RerankStep(reranker)("q", hits)
        await reranker.aclose()
    assert [h.chunk_id for h in out] == ["c0", "c1"] and reports[0].warning


def test_bad_options_are_config_errors(monkeypatch):
    with pytest.raises(ConfigError, match="base_url"):
        HTTPReranker({"format": "tei"})
    with pytest.raises(ConfigError, match="format"):
        HTTPReranker({"base_url": "http://x", "format": "soap"})
    with pytest.raises(ConfigError, match="needs an id"):
        create_reranker({"base_url": "http://x"})
    monkeypatch.delenv("RL_UNSET_KEY", raising=False)
    with pytest.raises(LLMNotConfigured, match="RL_UNSET_KEY"):
        HTTPReranker({"base_url": "http://x", "api_key_env": "RL_UNSET_KEY"})


# -- listwise by a chat model ---------------------------------------------------------------------------
def test_parse_ranking_survives_what_models_write():
    assert parse_ranking("[3] > [1] > [2]", 3) == [2, 0, 1]
    assert parse_ranking("Ranking: 2, 2, 9, 1 (the rest are irrelevant)", 3) == [1, 0]
    assert parse_ranking("I cannot rank these passages.", 3) == []


async def test_llm_reranker_orders_by_the_model_and_counts_its_tokens():
    llm = ScriptedProvider(replies=["[3] > [1] > [2]"])
    with collect_reports() as reports:
        hits = await RerankStep(LLMReranker(llm=llm))("capital of France", _hits("Lyon", "Nice", "Paris"))
    assert [h.chunk_id for h in hits] == ["c2", "c0", "c1"]
    prompt = llm.prompts[0][-1].content
    assert "Query: capital of France" in prompt and "[3] Paris" in prompt
    assert reports[0].prompt_tokens > 0 and reports[0].completion_tokens > 0
    assert reports[0].reranker == "llm:scripted"


async def test_llm_reranker_partial_ranking_keeps_the_rest_in_retrieval_order():
    llm = ScriptedProvider(replies=["Passage 3 is the best."])
    with collect_reports() as reports:
        hits = await RerankStep(LLMReranker(llm=llm))("q", _hits("a", "b", "c", "d"))
    assert [h.chunk_id for h in hits] == ["c2", "c0", "c1", "c3"]
    assert "ranked 1 of 4" in reports[0].summary()


async def test_llm_reranker_malformed_answer_falls_back_and_says_so():
    llm = ScriptedProvider(replies=["Sorry, I can't help with ranking."])
    hits = _hits("a", "b", "c")
    with collect_reports() as reports:
        out = await RerankStep(LLMReranker(llm=llm))("q", hits)
    assert out == hits
    assert "named no candidate" in reports[0].warning and "kept the retrieval order" in reports[0].summary()


async def test_llm_reranker_keeps_to_its_token_budget():
    from reasonloop.tokens import count_tokens

    llm = ScriptedProvider(replies=["[1]"])
    long = "word " * 5000
    reranker = LLMReranker({"max_prompt_tokens": 600, "max_candidates": 5}, llm=llm)
    await reranker.score("q", [long] * 8)
    shown = llm.prompts[0]
    assert sum(count_tokens(m.content) for m in shown) <= 600
    assert "[5]" in shown[-1].content and "[6]" not in shown[-1].content


def test_llm_reranker_bad_options():
    with pytest.raises(ConfigError, match="max_prompt_tokens"):
        LLMReranker({"max_prompt_tokens": 5})


# -- a local GGUF model through llama-cpp-python ------------------------------------------------------
class FakeLlama:
    """Stands in for ``llama_cpp.Llama``: records how it was opened and what it scored."""

    opened: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, **kwargs: Any) -> None:
        FakeLlama.opened.append(kwargs)
        self.inputs: list[list[str]] = []
        self.closed = False

    def embed(self, inputs: list[str], normalize: bool = False, truncate: bool = True) -> list[list[float]]:
        self.inputs.append(inputs)
        assert normalize is False and truncate is True
        return [[float(len(text)), 0.0, 0.0] for text in inputs]  # rank pooling: the score comes first

    def close(self) -> None:
        self.closed = True


async def test_llama_cpp_reranker_opens_the_model_in_ranking_mode(tmp_path):
    import llama_cpp

    model = tmp_path / "bge-reranker-v2-m3-Q4_K_M.gguf"
    model.write_bytes(b"GGUF")
    FakeLlama.opened.clear()
    reranker = LlamaCppReranker({"model_path": str(model), "n_ctx": 512}, llama_factory=FakeLlama)
    hits = await RerankStep(reranker)("q", _hits("short", "a much longer text", "mid text"))
    assert [h.chunk_id for h in hits] == ["c1", "c2", "c0"]
    assert len(FakeLlama.opened) == 1
    opened = FakeLlama.opened[0]
    assert opened["model_path"] == str(model) and opened["embedding"] is True
    assert opened["pooling_type"] == llama_cpp.LLAMA_POOLING_TYPE_RANK and opened["n_ctx"] == 512
    model_obj = reranker._model
    await reranker.score("q", ["x"])  # opened once, reused
    assert len(FakeLlama.opened) == 1 and model_obj.inputs[0] == ["q\nshort", "q\na much longer text", "q\nmid text"]
    assert reranker.name == "llama_cpp:bge-reranker-v2-m3-Q4_K_M"
    await reranker.aclose()
    assert model_obj.closed


def test_llama_cpp_reranker_needs_the_model_file(tmp_path):
    with pytest.raises(ConfigError, match="no model file"):
        LlamaCppReranker({"model_path": str(tmp_path / "missing.gguf")})


# -- configured per knowledge base, overridden per search -------------------------------------------------
def _reverse_tei(handler: BaseHTTPRequestHandler) -> None:
    """A TEI endpoint that likes the candidates it is sent in reverse order."""
    length = int(handler.headers.get("Content-Length") or 0)
    texts = json.loads(handler.rfile.read(length))["texts"]
    n = len(texts)
    reply(handler, json.dumps([{"index": i, "score": float(i) / n} for i in range(n)]).encode(), "application/json")


async def test_knowledge_base_reranker_is_configured_and_overridable(make_kb):
    with LoopbackServer({"/rerank": _reverse_tei}) as server:
        kb = make_kb(reranker={"id": "http", "base_url": server.url, "format": "tei"}, retriever={"rerank_depth": 3})
        await kb.ingest_records([(f"d{i}", "", f"alpha beta {'gamma ' * i}") for i in range(6)])
        plain = await kb.search("alpha beta", top_k=6, rerank=False)
        assert all(h.rerank_score is None for h in plain)
        reranked = await kb.search("alpha beta", top_k=3)
        assert [h.chunk_id for h in reranked] == [h.chunk_id for h in plain[:3]][::-1]
        assert all(h.rerank_score is not None for h in reranked)
        wider = await kb.search("alpha beta", top_k=2, candidates=5)
        assert [h.chunk_id for h in wider] == [plain[4].chunk_id, plain[3].chunk_id]
        await kb.close()


async def test_rerank_on_without_a_reranker_is_a_config_error(make_kb):
    kb = make_kb()
    await kb.ingest_records([("d", "", "alpha")])
    with pytest.raises(ConfigError, match="no reranker is configured"):
        await kb.search("alpha", rerank=True)
    await kb.close()
