"""Query transforms: what the shared retrieval step may do to a question before it searches.

* **condense** — a follow-up question is rewritten, with the conversation, into a standalone
  query (a question without history is searched as it is);
* **multi-query** — the model writes ``n`` other phrasings; every phrasing is searched and the
  hit lists are fused by reciprocal rank (a chunk several phrasings find rises);
* **HyDE** — the model writes a hypothetical answer, whose embedding is searched (dense search:
  the passage stands in for the question's vector) beside the question itself, fused the same way.

They are :class:`~reasonloop.reasoning.steps.retrieval_settings.RetrievalSettings` of every retrieve-then-answer strategy (``settings.retrieval``),
beside the per-run reranking overrides. Each model call counts against the run's budget; a call
that fails or answers nothing leaves the question as it was.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from reasonloop.events import Event
from reasonloop.kb.base import Hit
from reasonloop.kb.retrieval.hybrid import rrf_fuse
from reasonloop.llm.base import Message
from reasonloop.reasoning.base import RunContext
from reasonloop.reasoning.formats.prompts import render
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.reasoning.steps.llmcall import Turn, llm_turn
from reasonloop.reasoning.steps.retrieval_settings import RetrievalSettings

__all__ = ["RetrievalSettings", "condense_question", "fuse_hit_lists", "hypothetical_answer", "rewrite_queries"]

MAX_QUERY_CHARS = 500
"""A rewritten query longer than this is cut (a model that rambles does not get to flood the search)."""


async def _ask(ctx: RunContext, tracker: BudgetTracker, messages: list[Message], turn: Turn) -> AsyncIterator[Event]:
    try:
        async for event in llm_turn(ctx.llm, messages, turn, tracker):
            yield event
    except Exception:  # a transform is an improvement, never a reason to fail the search
        turn.text = ""


async def condense_question(
    ctx: RunContext, tracker: BudgetTracker, question: str, language: str, into: list[str]
) -> AsyncIterator[Event]:
    """A standalone search query for a follow-up question (the question itself without history)."""
    if not ctx.history:
        into.append(question)
        return
    turn = Turn()
    messages = [Message.system(render("condense", language)), *ctx.history, Message.user(question)]
    async for event in llm_turn(ctx.llm, messages, turn, tracker):
        yield event
    query = turn.text.strip().strip('"').strip()
    into.append(query.splitlines()[0][:MAX_QUERY_CHARS] if query else question)


def _lines(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        line = line.strip().lstrip("-*•0123456789.)、 ").strip().strip('"').strip()
        if line:
            out.append(line[:MAX_QUERY_CHARS])
    return out


async def rewrite_queries(
    ctx: RunContext, tracker: BudgetTracker, query: str, n: int, language: str, into: list[str]
) -> AsyncIterator[Event]:
    """Up to ``n`` other phrasings of ``query`` (none repeated, the query itself left out) into ``into``."""
    turn = Turn()
    messages = [Message.system(render("multi_query", language, n=n)), Message.user(query)]
    async for event in _ask(ctx, tracker, messages, turn):
        yield event
    seen = {query.strip().casefold()}
    for line in _lines(turn.text):
        if line.casefold() not in seen and len(into) < n:
            seen.add(line.casefold())
            into.append(line)


async def hypothetical_answer(
    ctx: RunContext, tracker: BudgetTracker, query: str, language: str, into: list[str]
) -> AsyncIterator[Event]:
    """A hypothetical answer passage to ``query`` into ``into`` (nothing when the model gave none)."""
    turn = Turn()
    messages = [Message.system(render("hyde", language)), Message.user(query)]
    async for event in _ask(ctx, tracker, messages, turn):
        yield event
    passage = turn.text.strip()
    if passage:
        into.append(passage[: MAX_QUERY_CHARS * 4])


def fuse_hit_lists(lists: Sequence[Sequence[Hit]], top_k: int) -> list[Hit]:
    """Hit lists of several queries fused by reciprocal rank (the first list wins ties)."""
    if len(lists) == 1:
        return list(lists[0])[:top_k]
    by_id: dict[str, Hit] = {}
    for hits in lists:
        for hit in hits:
            by_id.setdefault(hit.chunk_id, hit)
    fused = rrf_fuse([[h.chunk_id for h in hits] for hits in lists])
    return [by_id[chunk_id] for chunk_id, _ in fused[:top_k]]
