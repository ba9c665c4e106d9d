"""Steps shared by the retrieve-then-answer strategies (qa, decompose, rewoo's small talk).

Each helper is an async generator of events that leaves its result on a small holder, so
a strategy stays a readable sequence of ``async for event in step(...): yield event``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from reasonloop import telemetry
from reasonloop.events import Citation, Event, Step, ToolCall, ToolResult
from reasonloop.kb.base import Hit
from reasonloop.llm.base import LLM, Message
from reasonloop.reasoning.base import RunContext
from reasonloop.reasoning.budget import BudgetTracker
from reasonloop.reasoning.llmcall import Turn, llm_turn
from reasonloop.reasoning.prompts import conversation, render
from reasonloop.tools.evidence import format_evidence, search_all

__all__ = ["Evidence", "condense_question", "direct_answer", "retrieve"]


@dataclass
class Evidence:
    """Numbered evidence for one query."""

    query: str = ""
    hits: list[Hit] = field(default_factory=list)
    text: str = ""
    citations: list[Citation] = field(default_factory=list)


def _whole(text: str) -> str:
    return text


async def retrieve(
    ctx: RunContext, query: str, top_k: int, budget: int, into: Evidence, call_id: str
) -> AsyncIterator[Event]:
    """Search every retriever; number the hits in the run's evidence log; trace it as a docsearch call."""
    into.query = query
    yield ToolCall(call_id=call_id, tool="docsearch", input={"query": query, "top_k": top_k})
    ctx.searched()
    traced = telemetry.tracing
    searching = search_all(ctx.retrievers, query, top_k)
    if traced is None:
        into.hits = await searching
    else:
        into.hits = await traced.tool("docsearch", call_id, {"query": query, "top_k": top_k}, searching)
    into.text, into.citations = format_evidence(into.hits, ctx.scope.evidence_log(), budget)
    observation = into.text or "(no passages found)"
    ctx.steps.append(Step(action="docsearch", action_input={"query": query, "top_k": top_k}, observation=observation))
    yield ToolResult(call_id=call_id, tool="docsearch", output=observation, citations=into.citations)


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
    into.append(query.splitlines()[0] if query else question)


async def direct_answer(
    ctx: RunContext,
    tracker: BudgetTracker,
    llm: LLM,
    system: str,
    history: Sequence[Message],
    user: str,
    into: Turn,
    *,
    stream: bool = True,
) -> AsyncIterator[Event]:
    """One answer call over the conversation, streamed as answer deltas."""
    async for event in llm_turn(
        llm, conversation(system, history, user), into, tracker, deltas=_whole if stream else None, bounded=False
    ):
        yield event
