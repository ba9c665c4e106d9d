"""``kb_stats()``: facts about the knowledge base that retrieval cannot give.

How many documents and chunks, which sources, which embedding model, when it last changed —
read from ``ctx.scope.kb`` (an :class:`~reasonloop.kb.base.Index`, or anything with an
async ``stats()``; a list of them is summed).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from reasonloop.errors import ToolUnavailable
from reasonloop.kb.base import KBStats
from reasonloop.registry import PluginInfo
from reasonloop.tools.base import Tool, ToolContext, ToolOutput

__all__ = ["KBStatsTool", "describe_stats"]

MAX_SOURCES_SHOWN = 20


class KBStatsParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


class KBStatsTool(Tool):
    """Report the size and freshness of the knowledge base."""

    info: ClassVar[PluginInfo] = PluginInfo.declared("tool", "kb_stats")
    name = "kb_stats"
    description = (
        "Facts about the knowledge base itself: how many documents and chunks it holds, which sources, "
        "the embedding model and when it was last updated. Use it for questions about the collection, not its content."
    )
    Params = KBStatsParams

    async def run(self, params: KBStatsParams, ctx: ToolContext) -> ToolOutput:
        kb = ctx.scope.kb
        if kb is None:
            raise ToolUnavailable("kb_stats: no knowledge base is attached to this run")
        indexes = kb if isinstance(kb, (list, tuple)) else [kb]
        stats = _merge(await asyncio.gather(*(index.stats() for index in indexes)))
        return ToolOutput(text=describe_stats(stats), data=stats.model_dump())


def _merge(items: list[Any]) -> KBStats:
    total = KBStats()
    models = []
    for s in items:
        s = s if isinstance(s, KBStats) else KBStats.model_validate(s)
        total.documents += s.documents
        total.chunks += s.chunks
        total.bytes += s.bytes
        for source, count in s.sources.items():
            total.sources[source] = total.sources.get(source, 0) + count
        if s.embedding_model and s.embedding_model not in models:
            models.append(s.embedding_model)
        if s.last_update is not None:
            total.last_update = max(total.last_update or 0.0, s.last_update)
    total.embedding_model = ", ".join(models) or None
    return total


def describe_stats(stats: KBStats) -> str:
    """The statistics as a few lines of text."""
    if stats.documents == 0 and stats.chunks == 0:
        return "The knowledge base is empty."
    lines = [
        f"Documents: {stats.documents}",
        f"Chunks: {stats.chunks}",
        f"Size: {stats.bytes:,} bytes" if stats.bytes else "",
        f"Embedding model: {stats.embedding_model}" if stats.embedding_model else "",
    ]
    if stats.last_update is not None:
        when = dt.datetime.fromtimestamp(stats.last_update, tz=dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        lines.append(f"Last update: {when}")
    if stats.sources:
        ranked = sorted(stats.sources.items(), key=lambda kv: (-kv[1], kv[0]))
        lines.append(f"Sources ({len(ranked)}):")
        lines += [f"- {source}: {count} chunks" for source, count in ranked[:MAX_SOURCES_SHOWN]]
        if len(ranked) > MAX_SOURCES_SHOWN:
            lines.append(f"- … and {len(ranked) - MAX_SOURCES_SHOWN} more")
    return "\n".join(line for line in lines if line)
