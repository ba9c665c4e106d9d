"""The shared retrieval step: query transforms (condense, multi-query, HyDE) with the scripted
model, and how reranking shows in a run's trace (its cost, or a warning when it failed)."""

from __future__ import annotations

import json
import socket
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler

from reasonloop.agents import Agent
from reasonloop.config import Settings
from reasonloop.events import Answer, Progress, Searched
from reasonloop.kb.base import Filter, Hit
from reasonloop.kb.knowledge_base import KnowledgeBase
from reasonloop.llm.base import Message
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.reasoning.steps.query_transforms import fuse_hit_lists
from tests.kb.helpers import HashEmbedder, LoopbackServer, reply
from tests.reasoning.helpers import CORPUS, FakeRetriever, collect_events


class ModeRetriever(FakeRetriever):
    """A fake that also records the search mode and rerank options it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.options: list[dict[str, object]] = []

    async def search(
        self,
        query: str,
        top_k: int = 10,
        filters: Sequence[Filter] | None = None,
        *,
        mode: str | None = None,
        rerank: bool | None = None,
        candidates: int | None = None,
    ) -> list[Hit]:
        self.options.append({"mode": mode, "rerank": rerank, "candidates": candidates})
        return await super().search(query, top_k, filters)


async def test_multi_query_searches_every_phrasing_and_fuses_them() -> None:
    retriever = ModeRetriever()
    llm = ScriptedProvider(
        replies=["1. Eiffel Tower height\n2. capital of Germany\n3. Eiffel Tower height", "Done [1]."]
    )
    agent = Agent("qa", llm=llm, kb=retriever, settings={"retrieval": {"multi_query": 2}})
    events = await collect_events(agent, "How tall is the tower in Paris?")
    assert retriever.queries == ["How tall is the tower in Paris?", "Eiffel Tower height", "capital of Germany"]
    assert "2 different search queries" in llm.prompts[0][0].content
    searched = next(e for e in events if isinstance(e, Searched))
    assert searched.queries == ["Eiffel Tower height", "capital of Germany"]
    answer = events[-1]
    assert isinstance(answer, Answer)
    evidence = llm.prompts[1][-1].content
    assert "Eiffel Tower (eiffel.md)" in evidence and "Germany (germany.md" in evidence
    assert answer.usage.llm_calls == 2


async def test_hyde_searches_a_hypothetical_answer_by_its_embedding() -> None:
    retriever = ModeRetriever()
    passage = "The Eiffel Tower is a wrought-iron tower about 300 metres tall."
    llm = ScriptedProvider(replies=[passage, "330 metres [1]."])
    agent = Agent("qa", llm=llm, kb=retriever, settings={"retrieval": {"hyde": True}})
    events = await collect_events(agent, "How high is it, that iron thing?")
    assert retriever.queries == ["How high is it, that iron thing?", passage]
    assert [o["mode"] for o in retriever.options] == [None, "dense"]
    assert [o["rerank"] for o in retriever.options] == [None, False]  # the made-up answer is not reranked against
    assert "hypothetical" not in llm.prompts[0][-1].content and "passage" in llm.prompts[0][0].content
    searched = next(e for e in events if isinstance(e, Searched))
    assert searched.hypothetical == [passage]
    assert isinstance(events[-1], Answer) and events[-1].citations[0].source == "eiffel.md"


async def test_condensing_is_a_transform_that_can_be_turned_off() -> None:
    history = [Message.user("Tell me about Germany."), Message.assistant("Germany is in Europe.")]
    retriever = FakeRetriever()
    llm = ScriptedProvider(replies=["capital of Germany", "Berlin [1]."])
    await Agent("qa", llm=llm, kb=retriever).run("And its capital?", history=history)
    assert retriever.queries == ["capital of Germany"]
    retriever = FakeRetriever()
    llm = ScriptedProvider(replies=["Berlin [1]."])
    agent = Agent("qa", llm=llm, kb=retriever, settings={"retrieval": {"condense": False}})
    await agent.run("And its capital?", history=history)
    assert retriever.queries == ["And its capital?"] and len(llm.prompts) == 1


async def test_a_failing_transform_leaves_the_question_as_it_was() -> None:
    retriever = ModeRetriever()
    llm = ScriptedProvider(replies=["", "Paris [1]."])
    agent = Agent("qa", llm=llm, kb=retriever, settings={"retrieval": {"multi_query": 3}})
    result = await agent.run("What is the capital of France?")
    assert retriever.queries == ["What is the capital of France?"]
    assert result.citations[0].source == "france.md"


async def test_per_run_rerank_options_reach_the_retriever() -> None:
    retriever = ModeRetriever()
    llm = ScriptedProvider(replies=["Paris [1]."])
    settings = {"retrieval": {"rerank": False, "rerank_candidates": 7}}
    await Agent("qa", llm=llm, kb=retriever, settings=settings).run("What is the capital of France?")
    assert retriever.options == [{"mode": None, "rerank": False, "candidates": 7}]


def test_fusing_hit_lists_ranks_what_several_queries_found_first() -> None:
    france, germany, eiffel = CORPUS
    fused = fuse_hit_lists([[germany, france], [eiffel, france], [france]], 3)
    assert [h.chunk_id for h in fused] == ["c1", "c2", "c3"]
    assert fuse_hit_lists([[germany, france]], 1) == [germany]


# -- reranking in the trace ------------------------------------------------------------------------------
def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _prefer_last(handler: BaseHTTPRequestHandler) -> None:
    texts = json.loads(handler.rfile.read(int(handler.headers.get("Content-Length") or 0)))["texts"]
    reply(
        handler, json.dumps([{"index": i, "score": float(i)} for i in range(len(texts))]).encode(), "application/json"
    )


async def _kb(tmp_path, base_url: str) -> KnowledgeBase:
    options = {"reranker": {"id": "http", "base_url": base_url, "format": "tei", "max_retries": 0}}
    kb = KnowledgeBase.open(tmp_path / "kb", Settings(kb={"options": options}), embedder=HashEmbedder())
    await kb.ingest_records(
        [("a", "Paris", "Paris is the capital of France."), ("b", "Lyon", "Lyon is a city in France.")]
    )
    return kb


async def test_the_trace_shows_the_rerank_step_and_its_cost(tmp_path) -> None:
    with LoopbackServer({"/rerank": _prefer_last}) as server:
        kb = await _kb(tmp_path, server.url)
        llm = ScriptedProvider(replies=["France [1]."])
        events = await collect_events(Agent("qa", llm=llm, kb=kb, settings={"top_k": 2}), "capital of France?")
        await kb.close()
    notes = [e for e in events if isinstance(e, Progress)]
    assert len(notes) == 1 and notes[0].level == "info"
    assert notes[0].message.startswith("reranked 2 candidates by http:tei in ")
    assert isinstance(events[-1], Answer)


async def test_a_reranker_that_is_down_is_a_warning_and_the_run_goes_on(tmp_path) -> None:
    kb = await _kb(tmp_path, f"http://127.0.0.1:{_closed_port()}")
    llm = ScriptedProvider(replies=["Paris is the capital [1]."])
    events = await collect_events(Agent("qa", llm=llm, kb=kb), "What is the capital of France?")
    plain = await kb.search("What is the capital of France?", top_k=5, rerank=False)
    await kb.close()
    warnings = [e for e in events if isinstance(e, Progress) and e.level == "warning"]
    assert len(warnings) == 1 and "kept the retrieval order" in warnings[0].message
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.text == "Paris is the capital [1]."
    assert [c.chunk_id for c in answer.citations] == [plain[0].chunk_id]


async def test_decompose_transforms_each_sub_question_and_passes_rerank_options() -> None:
    def reply(messages: list[Message], tools) -> str:
        system, last = messages[0].content, messages[-1].content
        if "sub-questions" in system and "Split" in system:
            return "1. What is the capital of France?\n2. How tall is the Eiffel Tower?"
        if "different search queries" in system:
            return "Eiffel Tower metres" if "Eiffel" in last else "Paris France capital"
        if last.startswith("Sub-questions"):
            return "Paris [1]; 330 m [2]."
        return "sub answer"

    retriever = ModeRetriever()
    settings = {"retrieval": {"multi_query": 1, "rerank": False}}
    result = await Agent("decompose", llm=ScriptedProvider(replies=reply), kb=retriever, settings=settings).run(
        "Capital of France and the height of its tower?"
    )
    assert sorted(retriever.queries) == sorted(
        [
            "What is the capital of France?",
            "Paris France capital",
            "How tall is the Eiffel Tower?",
            "Eiffel Tower metres",
        ]
    )
    assert {o["rerank"] for o in retriever.options} == {False}
    assert result.usage.llm_calls == 6  # split, two phrasings, two sub-answers, synthesis
