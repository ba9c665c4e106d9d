"""docsearch: every retriever, numbered evidence with citations, shared numbering, token budget."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from reasonloop.events import Citation
from reasonloop.kb.base import Filter, Hit
from reasonloop.tokens import count_tokens
from reasonloop.tools.base import RunScope, ToolContext
from reasonloop.tools.docsearch import DocSearchTool
from reasonloop.tools.evidence import EvidenceLog, format_evidence, search_all


def hit(n: int, text: str = "", **meta) -> Hit:
    return Hit(
        chunk_id=f"c{n}",
        document_id=f"d{n}",
        source=f"doc{n}.pdf",
        title=f"Doc {n}",
        text=text or f"passage number {n}",
        score=1.0 / n,
        metadata=meta,
    )


class ListRetriever:
    def __init__(self, hits: Sequence[Hit], fail: bool = False) -> None:
        self.hits, self.fail, self.calls = list(hits), fail, []

    async def search(self, query: str, top_k: int = 10, filters: Sequence[Filter] | None = None) -> list[Hit]:
        self.calls.append((query, top_k))
        await asyncio.sleep(0)
        if self.fail:
            raise ConnectionError("index offline")
        return self.hits[:top_k]


def ctx(*retrievers, **services) -> ToolContext:
    return ToolContext(scope=RunScope(retrievers=list(retrievers), **services))


async def test_numbered_evidence_with_full_citations() -> None:
    retriever = ListRetriever([hit(1, page=4, start=10, end=30), hit(2)])
    out = await DocSearchTool().invoke({"query": "passage"}, ctx(retriever))
    assert out.ok and retriever.calls == [("passage", 5)]
    assert out.text == "[1] Doc 1 (doc1.pdf, p. 4)\npassage number 1\n\n[2] Doc 2 (doc2.pdf)\npassage number 2"
    first = out.citations[0]
    assert (first.marker, first.chunk_id, first.document_id, first.source, first.page, first.start, first.end) == (
        1,
        "c1",
        "d1",
        "doc1.pdf",
        4,
        10,
        30,
    )
    assert first.quote == "passage number 1"
    assert [c["marker"] for c in out.data] == [1, 2]


async def test_every_retriever_is_searched_and_merged_by_rank() -> None:
    a = ListRetriever([hit(1), hit(2), hit(3)])
    b = ListRetriever([hit(4), hit(1), hit(5)])
    hits = await search_all([a, b], "q", top_k=4)
    assert [h.chunk_id for h in hits] == ["c1", "c4", "c2", "c3"]
    assert a.calls == b.calls == [("q", 4)]


async def test_one_failing_retriever_is_skipped_but_all_failing_is_an_error() -> None:
    hits = await search_all([ListRetriever([], fail=True), ListRetriever([hit(7)])], "q", 3)
    assert [h.chunk_id for h in hits] == ["c7"]
    out = await DocSearchTool().invoke({"query": "q"}, ctx(ListRetriever([], fail=True), ListRetriever([], fail=True)))
    assert out.error["type"] == "ConnectionError" and "index offline" in out.error["error"]


async def test_numbers_are_shared_across_searches_of_one_run() -> None:
    scope = RunScope(retrievers=[ListRetriever([hit(2), hit(3)])])
    tool = DocSearchTool()
    await tool.invoke({"query": "a", "top_k": 1}, ToolContext(scope=scope))
    out = await tool.invoke({"query": "b"}, ToolContext(scope=scope))
    assert out.text.startswith("[1] Doc 2") and "[2] Doc 3" in out.text
    assert sorted(scope.evidence.citations) == [1, 2]


async def test_evidence_is_trimmed_to_the_token_budget() -> None:
    long = " ".join(f"word{i}" for i in range(400))
    out = await DocSearchTool(max_evidence_tokens=120).invoke(
        {"query": "q"}, ctx(ListRetriever([hit(1, long), hit(2)]))
    )
    assert count_tokens(out.text) <= 120 + 5
    assert out.text.startswith("[1] Doc 1") and "…[trimmed]" in out.text and "[2]" not in out.text
    assert [c.marker for c in out.citations] == [1]


async def test_run_wide_budget_from_the_run_scope_wins() -> None:
    out = await DocSearchTool().invoke({"query": "q"}, ctx(ListRetriever([hit(1, "x " * 500)]), max_evidence_tokens=60))
    assert count_tokens(out.text) <= 65


async def test_empty_kb_no_hits_and_bad_arguments() -> None:
    assert "empty" in (await DocSearchTool().invoke({"query": "q"}, ToolContext())).text
    assert "No passages" in (await DocSearchTool().invoke({"query": "q"}, ctx(ListRetriever([])))).text
    bad = await DocSearchTool().invoke({"query": ""}, ctx(ListRetriever([hit(1)])))
    assert bad.error["type"] == "ToolArgumentsInvalid"
    too_many = await DocSearchTool().invoke({"query": "q", "top_k": 500}, ctx(ListRetriever([hit(1)])))
    assert too_many.error["type"] == "ToolArgumentsInvalid"


def test_format_evidence_and_log() -> None:
    log = EvidenceLog()
    text, cites = format_evidence([hit(1), hit(1)], log, 500)
    assert text.count("[1]") == 1 and len(log.citations) == 1 and len(cites) == 1
    log.add_citation(Citation(marker=9, source="other"))
    log.add_citation(Citation(marker=9, source="later"))
    log.add_citation(Citation(source="unnumbered"))
    assert log.citations[9].source == "other" and len(log.citations) == 2
    scope = RunScope()
    assert scope.evidence_log() is scope.evidence_log() and scope.evidence is not None  # one per run, made on first use


def test_spec_is_what_models_see() -> None:
    spec = DocSearchTool().spec()
    assert spec.name == "docsearch" and spec.parameters["required"] == ["query"]
    assert spec.parameters["properties"]["top_k"]["default"] == 5
