"""Steps shared by the retrieve-then-answer strategies (qa, decompose, rewoo's small talk).

Each helper is an async generator of events that leaves its result on a small holder, so
a strategy stays a readable sequence of ``async for event in step(...): yield event``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from reasonloop import telemetry
from reasonloop.events import Citation, Event, Progress, Searched, Step
from reasonloop.kb.base import Hit
from reasonloop.kb.retrieval.rerankers.base import RerankReport, collect_reports
from reasonloop.llm.base import LLM, Message
from reasonloop.reasoning.base import RunContext
from reasonloop.reasoning.formats.prompts import conversation
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.reasoning.steps.llmcall import Turn, llm_turn
from reasonloop.reasoning.steps.query_transforms import (
    condense_question,
    fuse_hit_lists,
    hypothetical_answer,
    rewrite_queries,
)
from reasonloop.reasoning.steps.retrieval_settings import RetrievalSettings
from reasonloop.tools.evidence import format_evidence, search_all

__all__ = ["Evidence", "Search", "condense_question", "direct_answer", "retrieve", "run_search", "transform"]


@dataclass
class Evidence:
    """Numbered evidence for one query."""

    query: str = ""
    hits: list[Hit] = field(default_factory=list)
    text: str = ""
    citations: list[Citation] = field(default_factory=list)


def _whole(text: str) -> str:
    return text


@dataclass
class Search:
    """One search of a run: the queries the transforms made, then what they found."""

    query: str = ""
    phrasings: list[str] = field(default_factory=list)
    passages: list[str] = field(default_factory=list)
    """Hypothetical answers (HyDE), searched by their embedding."""
    hits: list[Hit] = field(default_factory=list)
    reports: list[RerankReport] = field(default_factory=list)
    """The rerank steps of the searches."""

    def shown(self, top_k: int) -> dict[str, object]:
        """The search as a trace shows it (:meth:`~reasonloop.events.Searched.request`)."""
        return Searched(query=self.query, queries=self.phrasings, hypothetical=self.passages, top_k=top_k).request()

    def notes(self) -> list[Progress]:
        """The rerank steps as progress lines (a failed one at level ``warning``)."""
        return [Progress(message=r.summary(), level="warning" if r.warning else "info") for r in self.reports]

    def event(self, top_k: int, evidence: str, citations: list[Citation], step: str | None = None) -> Searched:
        """The search as the run's event: what was searched, what was found, what the model was shown."""
        return Searched(
            query=self.query,
            step=step,
            queries=list(self.phrasings),
            hypothetical=list(self.passages),
            top_k=top_k,
            hits=len(self.hits),
            hit_ids=[hit.chunk_id for hit in self.hits],
            evidence=evidence,
            citations=citations,
        )


async def transform(
    ctx: RunContext,
    tracker: BudgetTracker,
    query: str,
    settings: RetrievalSettings,
    language: str,
    into: Search,
) -> AsyncIterator[Event]:
    """The query transforms ``settings`` ask for: other phrasings, a hypothetical answer."""
    into.query = query
    if settings.multi_query:
        async for event in rewrite_queries(ctx, tracker, query, settings.multi_query, language, into.phrasings):
            yield event
    if settings.hyde:
        async for event in hypothetical_answer(ctx, tracker, query, language, into.passages):
            yield event


async def run_search(ctx: RunContext, top_k: int, settings: RetrievalSettings, into: Search) -> None:
    """Every search of ``into`` at once (the query, its phrasings, the hypothetical answers by their
    embedding), the hit lists fused; reranking follows the run's overrides."""
    options: dict[str, object] = {}
    if settings.rerank is not None:
        options["rerank"] = settings.rerank
    if settings.rerank_candidates is not None:
        options["candidates"] = settings.rerank_candidates
    searches = [search_all(ctx.retrievers, q, top_k, **options) for q in [into.query, *into.phrasings]]
    # a hypothetical answer is searched by its embedding only, and not reranked against itself
    hyde = {**options, "rerank": False}
    searches += [search_all(ctx.retrievers, p, top_k, mode="dense", **hyde) for p in into.passages]
    with collect_reports() as reports:
        lists = await asyncio.gather(*searches)
    into.reports = reports
    into.hits = fuse_hit_lists(lists, top_k)


async def retrieve(
    ctx: RunContext,
    query: str,
    top_k: int,
    budget: int,
    into: Evidence,
    search_id: str,
    *,
    tracker: BudgetTracker | None = None,
    settings: RetrievalSettings | None = None,
    language: str = "en",
) -> AsyncIterator[Event]:
    """Search every retriever; number the hits in the run's evidence log; report it as a
    :class:`~reasonloop.events.Searched` event (a search the strategy makes itself is no tool call;
    ``search_id`` names it in traces).

    With ``settings`` (and a ``tracker`` for their model calls), the query transforms run first,
    and every query they make is searched, the hit lists fused. Each rerank step of the search is
    traced as a progress line with its cost; a reranker that failed is a warning, and the
    retrieval order stands.
    """
    settings = settings or RetrievalSettings()
    into.query = query
    found = Search(query=query)
    if tracker is not None:
        async for event in transform(ctx, tracker, query, settings, language, found):
            yield event
    shown = found.shown(top_k)
    ctx.searched()
    traced = telemetry.tracing
    searching = run_search(ctx, top_k, settings, found)
    if traced is None:
        await searching
    else:
        await traced.tool("docsearch", search_id, shown, searching)
    for note in found.notes():
        yield note
    into.hits = found.hits
    into.text, into.citations = format_evidence(into.hits, ctx.scope.evidence_log(), budget)
    observation = into.text or "(no passages found)"
    ctx.steps.append(Step(action="docsearch", action_input=shown, observation=observation))
    yield found.event(top_k, observation, into.citations)


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
