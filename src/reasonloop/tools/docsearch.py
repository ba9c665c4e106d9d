"""``docsearch``: search every knowledge source of the run, answer with numbered evidence.

Evidence numbers are shared by the whole run (:class:`EvidenceLog`, kept in
``ToolContext.services["evidence"]``): the same chunk keeps its number across searches, so
an answer can cite ``[3]`` from the first search and ``[7]`` from the second and both map
to :class:`~reasonloop.events.Citation` objects.

Example::

    out = await DocSearchTool().invoke({"query": "refund policy"}, ToolContext(services={"retrievers": [r]}))
    print(out.text)        # "[1] Refunds (policy.pdf, p. 2)\\n..."
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from reasonloop.events import Citation
from reasonloop.kb.base import Hit, Retriever
from reasonloop.registry import PluginInfo
from reasonloop.tokens import count_tokens, trim_to_tokens
from reasonloop.tools.base import Tool, ToolContext, ToolOutput

__all__ = ["DocSearchParams", "DocSearchTool", "EvidenceLog", "format_evidence", "search_all"]

DEFAULT_EVIDENCE_TOKENS = 1200
"""Token budget of one search's evidence: room for about five ~200-token chunks."""


class EvidenceLog:
    """Numbers evidence for one run and remembers the citation behind each number."""

    __slots__ = ("_numbers", "citations")

    def __init__(self) -> None:
        self._numbers: dict[str, int] = {}
        self.citations: dict[int, Citation] = {}

    def add(self, hit: Hit) -> int:
        """The marker of ``hit`` (a new one the first time its chunk is seen)."""
        number = self._numbers.get(hit.chunk_id)
        if number is None:
            number = len(self._numbers) + 1
            self._numbers[hit.chunk_id] = number
            self.citations[number] = hit.citation(marker=number)
        return number

    def add_citation(self, citation: Citation) -> None:
        """Keep a numbered citation produced by another tool (first one per number wins)."""
        if citation.marker is not None:
            self.citations.setdefault(citation.marker, citation)

    @classmethod
    def of(cls, services: dict[str, Any]) -> EvidenceLog:
        """The run's log in ``services`` (created on first use)."""
        log = services.get("evidence")
        if not isinstance(log, EvidenceLog):
            log = services["evidence"] = cls()
        return log


async def search_all(retrievers: Sequence[Retriever], query: str, top_k: int) -> list[Hit]:
    """Search every retriever concurrently; merge by rank (round-robin), drop repeated chunks.

    Scores of different retrievers are not comparable, so hits are interleaved by their
    rank in each list. A failing retriever is skipped unless all of them fail.

    Raises:
        Exception: the first retriever's error, when every retriever failed.
    """
    if not retrievers:
        return []
    if len(retrievers) == 1:
        return list(await retrievers[0].search(query, top_k=top_k))[:top_k]
    results = await asyncio.gather(*(r.search(query, top_k=top_k) for r in retrievers), return_exceptions=True)
    lists = [r for r in results if not isinstance(r, BaseException)]
    if not lists:
        first = results[0]
        assert isinstance(first, BaseException)
        raise first
    merged: list[Hit] = []
    seen: set[str] = set()
    for rank in range(max(len(hits) for hits in lists)):
        for hits in lists:
            if rank < len(hits) and hits[rank].chunk_id not in seen:
                seen.add(hits[rank].chunk_id)
                merged.append(hits[rank])
    return merged[:top_k]


def _label(hit: Hit) -> str:
    where = hit.source or hit.document_id
    page = hit.metadata.get("page")
    if page is not None:
        where += f", p. {page}"
    return f"{hit.title} ({where})" if hit.title else f"({where})"


def format_evidence(hits: Sequence[Hit], log: EvidenceLog, budget: int) -> tuple[str, list[Citation]]:
    """Numbered evidence blocks within ``budget`` tokens, and the citations they carry.

    Blocks are added in rank order; the one that crosses the budget is trimmed and the rest
    are left out, so the best evidence always survives.
    """
    blocks: list[str] = []
    citations: list[Citation] = []
    used = 0
    shown: set[str] = set()
    for hit in hits:
        if used >= budget:
            break
        if hit.chunk_id in shown:
            continue
        shown.add(hit.chunk_id)
        number = log.add(hit)
        header = f"[{number}] {_label(hit)}"
        body = hit.text.strip()
        cost = count_tokens(header) + count_tokens(body) + 1
        if used + cost > budget:
            body = trim_to_tokens(body, max(0, budget - used - count_tokens(header) - 1))
            if not body:
                break
            cost = budget - used
        blocks.append(f"{header}\n{body}")
        citations.append(log.citations[number])
        used += cost
    return "\n\n".join(blocks), citations


class DocSearchParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(description="What to look for, as a short search query.", min_length=1)
    top_k: int = Field(default=5, ge=1, le=20, description="How many passages to return.")


class DocSearchTool(Tool):
    """Search the knowledge base (every source of the run) and return numbered passages to cite."""

    info: ClassVar[PluginInfo] = PluginInfo(
        id="docsearch",
        name="Document search",
        description="Search the knowledge base and return numbered passages with their sources",
    )
    name: ClassVar[str] = "docsearch"
    description: ClassVar[str] = (
        "Search the user's documents. Returns numbered passages; cite them in the answer as [n]."
    )
    Params = DocSearchParams

    def __init__(self, max_evidence_tokens: int = DEFAULT_EVIDENCE_TOKENS) -> None:
        self.max_evidence_tokens = max_evidence_tokens

    async def run(self, params: DocSearchParams, ctx: ToolContext) -> ToolOutput:
        retrievers = ctx.services.get("retrievers") or []
        if not retrievers:
            return ToolOutput(text="The knowledge base is empty: there is nothing to search.", data=[])
        hits = await search_all(retrievers, params.query, params.top_k)
        if not hits:
            return ToolOutput(text=f"No passages match {params.query!r}.", data=[])
        budget = int(ctx.services.get("max_evidence_tokens") or self.max_evidence_tokens)
        text, citations = format_evidence(hits, EvidenceLog.of(ctx.services), budget)
        return ToolOutput(text=text, citations=citations, data=[c.model_dump() for c in citations])
