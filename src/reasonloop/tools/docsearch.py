"""``docsearch``: search every knowledge source of the run, answer with numbered evidence.

Evidence numbers are shared by the whole run (the :class:`~reasonloop.tools.evidence.EvidenceLog`
of the run's :class:`~reasonloop.tools.base.RunScope`): the same chunk keeps its number across
searches.

Example::

    out = await DocSearchTool().invoke({"query": "refund policy"}, ToolContext(scope=RunScope(retrievers=[r])))
    print(out.text)        # "[1] Refunds (policy.pdf, p. 2)\\n..."
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from reasonloop.registry import PluginInfo
from reasonloop.tools.base import Tool, ToolContext, ToolOutput
from reasonloop.tools.evidence import format_evidence, search_all

__all__ = ["DocSearchParams", "DocSearchTool"]

DEFAULT_EVIDENCE_TOKENS = 1200
"""Token budget of one search's evidence: room for about five ~200-token chunks."""


class DocSearchParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(description="What to look for, as a short search query.", min_length=1)
    top_k: int = Field(default=5, ge=1, le=20, description="How many passages to return.")


class DocSearchTool(Tool):
    """Search the knowledge base (every source of the run) and return numbered passages to cite."""

    info: ClassVar[PluginInfo] = PluginInfo.declared("tool", "docsearch")
    name: ClassVar[str] = "docsearch"
    description: ClassVar[str] = (
        "Search the user's documents. Returns numbered passages; cite them in the answer as [n]."
    )
    Params = DocSearchParams

    def __init__(self, max_evidence_tokens: int = DEFAULT_EVIDENCE_TOKENS) -> None:
        self.max_evidence_tokens = max_evidence_tokens

    async def run(self, params: DocSearchParams, ctx: ToolContext) -> ToolOutput:
        retrievers = ctx.scope.retrievers
        if not retrievers:
            return ToolOutput(text="The knowledge base is empty: there is nothing to search.", data=[])
        hits = await search_all(retrievers, params.query, params.top_k)
        if not hits:
            return ToolOutput(text=f"No passages match {params.query!r}.", data=[])
        budget = int(ctx.scope.max_evidence_tokens or self.max_evidence_tokens)
        text, citations = format_evidence(hits, ctx.scope.evidence_log(), budget)
        return ToolOutput(text=text, citations=citations, data=[c.model_dump() for c in citations])
