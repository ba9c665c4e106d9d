"""The strategy a base model runs: answer from retrieved evidence, whatever strategy was asked for.

A pretrained model as small as the packaged Gemma 3 270M does not follow a system prompt, a
ReAct format or a plan: asked to, it talks past the evidence. The agent reads the model's
profile (:class:`~reasonloop.llm.base.Capabilities`) once and, for a base model, runs this
strategy instead of the one asked for; the run records both (``RunStarted.ran``), and the trace
says so. Greetings, translation and creative writing are answered by the model directly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

from pydantic import Field

from reasonloop.events import Event, Progress
from reasonloop.reasoning.base import Budget, Reasoning, ReasoningSettings, RunContext
from reasonloop.reasoning.evidence_answer.answer import DEFAULT_MARGIN, EvidenceAnswer, answer_from_evidence
from reasonloop.reasoning.evidence_answer.texts import text
from reasonloop.reasoning.formats.language import detect_language
from reasonloop.reasoning.formats.prompts import system_prompt
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.reasoning.steps.finish import close
from reasonloop.reasoning.steps.intent import needs_no_retrieval
from reasonloop.reasoning.steps.llmcall import Turn
from reasonloop.reasoning.steps.retrieval import direct_answer
from reasonloop.reasoning.steps.retrieval_settings import RetrievalSettings
from reasonloop.registry import PluginInfo

__all__ = ["EvidenceAnswerReasoning", "EvidenceAnswerSettings"]


class EvidenceAnswerSettings(ReasoningSettings):
    top_k: int = Field(default=5, ge=1, le=50)
    """Passages retrieved for the question."""
    margin: float = Field(default=DEFAULT_MARGIN, ge=0)
    """How much (natural log) the evidence must favour yes over no, or one option over the other,
    for the answer to decide; below it the answer quotes the evidence without deciding."""
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    """The run's retrieval settings (its rerank overrides are followed)."""


class EvidenceAnswerReasoning(Reasoning):
    """Retrieve, then quote, extract a verbatim span, or decide by calibrated likelihoods."""

    info: ClassVar[PluginInfo] = PluginInfo(
        id="evidence",
        name="Evidence answer",
        description="Retrieve, then quote the supporting sentence, extract a span from it, or decide yes/no by scoring",
    )
    Settings = EvidenceAnswerSettings
    needs_instructions = False

    def __init__(self, settings: Any, ctx: RunContext, *, asked_for: str = "evidence") -> None:
        super().__init__(settings, ctx)
        self.asked_for = asked_for

    async def stream(self, question: str) -> AsyncIterator[Event]:
        ctx, settings = self.ctx, self.settings
        language = ctx.language or detect_language(question)
        tracker = BudgetTracker(ctx.budget or Budget(), ctx.usage, ctx.scope.pauses)
        if needs_no_retrieval(question):  # greetings, translation, creative writing: no search
            turn = Turn()
            system = system_prompt("chat", language, ctx.instructions)
            async for event in direct_answer(ctx, tracker, ctx.llm, system, ctx.history, question, turn):
                yield event
            yield close(ctx, settings, tracker, turn.text, language)
            return
        yield Progress(message=text("note", language, model=ctx.llm.name, strategy=self.asked_for))
        answer = EvidenceAnswer()
        async for event in answer_from_evidence(
            ctx,
            tracker,
            question,
            language,
            top_k=settings.top_k,
            budget=settings.max_evidence_tokens,
            into=answer,
            retrieval=settings.retrieval,
            margin=settings.margin,
        ):
            yield event
        yield close(
            ctx, settings, tracker, answer.text, language, citations=answer.citations, abstained=answer.abstained
        )
