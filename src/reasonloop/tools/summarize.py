"""``summarize(topic, max_docs=5)``: retrieve on a topic, then summarise what was found.

Two steps: every retriever of the run (``ctx.scope.retrievers``) is searched for the
topic and the best passages of up to ``max_docs`` distinct documents are kept; then a second
LLM call (``ctx.scope.llm``) writes a summary that cites them as ``[n]``. Passages are
numbered through the run's evidence log when there is one (``ctx.scope.evidence``,
anything with ``add(hit) -> int``), so the numbers match other searches of the same run.

When the strategy will hand this tool's output to the user as the final answer, it sets
``ctx.scope.stream_answer = True``; the summary then also streams out as
:class:`~reasonloop.events.AnswerDelta` events through ``ctx.emit`` while it is written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from reasonloop.errors import ToolUnavailable
from reasonloop.events import AnswerDelta, Usage
from reasonloop.kb.base import Hit, Retriever
from reasonloop.llm.base import LLM, Done, Message, TextDelta
from reasonloop.registry import PluginInfo
from reasonloop.tokens import trim_to_tokens
from reasonloop.tools.base import Tool, ToolContext, ToolOutput

__all__ = ["SummarizeTool"]

TOKENS_PER_DOC = 500
"""Each document's passages are trimmed to this many tokens in the summary prompt."""

SYSTEM_PROMPT = (
    "You summarise documents for a reader. Use only the numbered documents below. "
    "Cite every statement with the number of its document in square brackets, like [2]. "
    "Write a concise summary of what the documents say about the topic; if they disagree, say so. "
    "If they say nothing about the topic, answer exactly: NO RELEVANT CONTENT."
)


class SummarizeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    topic: Annotated[str, Field(min_length=1, description="What the summary is about.")]
    max_docs: Annotated[int, Field(ge=1, le=20, description="How many documents to summarise.")] = 5


class SummarizeTool(Tool):
    """Summarise what the knowledge base says about a topic, with citations."""

    info: ClassVar[PluginInfo] = PluginInfo.declared("tool", "summarize")
    name = "summarize"
    description = (
        "Summarise what the user's documents say about a topic, with citations [n]. "
        "Use it for overview questions ('what do my notes say about X?') rather than specific facts."
    )
    Params = SummarizeParams
    timeout_s = 180.0

    async def run(self, params: SummarizeParams, ctx: ToolContext) -> ToolOutput:
        llm = ctx.scope.llm
        if not isinstance(llm, LLM):
            raise ToolUnavailable("summarize: no language model is attached to this run")
        hits = await _documents(_retrievers(ctx.scope.retrievers), params.topic, params.max_docs)
        if not hits:
            return ToolOutput(text=f"No documents about {params.topic!r} to summarise.", data={"documents": 0})
        evidence = ctx.scope.evidence
        blocks, citations = [], []
        for i, hit in enumerate(hits, 1):
            number = evidence.add(hit) if hasattr(evidence, "add") else i
            citation = hit.citation(marker=number)
            citations.append(citation)
            label = hit.title or hit.source or hit.document_id
            blocks.append(f"[{number}] {label}\n{trim_to_tokens(hit.text.strip(), TOKENS_PER_DOC)}")
        messages = [
            Message.system(SYSTEM_PROMPT),
            Message.user(f"Topic: {params.topic}\n\nDocuments:\n\n" + "\n\n".join(blocks)),
        ]
        stream = ctx.scope.stream_answer and ctx.emit is not None
        parts: list[str] = []
        async for chunk in llm.stream(messages):
            if isinstance(chunk, Done):
                if ctx.usage is not None:  # the run's token budget covers this call too
                    ctx.usage.add(
                        Usage(llm_calls=1, prompt_tokens=chunk.prompt_tokens, completion_tokens=chunk.completion_tokens)
                    )
            elif isinstance(chunk, TextDelta) and chunk.text:
                parts.append(chunk.text)
                if stream:
                    assert ctx.emit is not None
                    await ctx.emit(AnswerDelta(text=chunk.text, depth=ctx.depth))
        summary = "".join(parts).strip()
        used = [c for c in citations if f"[{c.marker}]" in summary] or citations
        return ToolOutput(
            text=summary,
            citations=used,
            data={"topic": params.topic, "documents": len(hits), "streamed": stream},
        )


def _retrievers(value: Any) -> list[Retriever]:
    if value is None:
        return []
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


async def _documents(retrievers: Sequence[Retriever], topic: str, max_docs: int) -> list[Hit]:
    """The best passage of each of up to ``max_docs`` documents, interleaving retrievers by rank.

    A failing retriever is skipped unless every one fails.
    """
    if not retrievers:
        return []
    top_k = max_docs * 3  # several chunks of one document often rank together
    results = await asyncio.gather(*(r.search(topic, top_k=top_k) for r in retrievers), return_exceptions=True)
    lists = [list(r) for r in results if not isinstance(r, BaseException)]
    if not lists:
        first = results[0]
        assert isinstance(first, BaseException)
        raise first
    chosen: dict[str, Hit] = {}
    for rank in range(max((len(hits) for hits in lists), default=0)):
        for hits in lists:
            if rank < len(hits) and hits[rank].document_id not in chosen and len(chosen) < max_docs:
                chosen[hits[rank].document_id] = hits[rank]
    return list(chosen.values())
