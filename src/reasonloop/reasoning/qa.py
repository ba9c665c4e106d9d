"""Retrieval-QA: retrieve, number the evidence, answer once with citations.

The classic retrieve-then-read pipeline: a follow-up question is first rewritten into a
standalone query (and, as ``settings.retrieval`` asks, rephrased or answered hypothetically to
search better: :mod:`reasonloop.reasoning.query_transforms`); the hits of every knowledge source become numbered evidence; one
streamed answer cites it as ``[n]``. With no evidence (and no conversation to draw on) the
strategy says it doesn't know without asking the model to guess. Greetings, small talk,
translation and creative writing are answered directly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from reasonloop.events import Event
from reasonloop.reasoning.base import Budget, Reasoning, ReasoningSettings
from reasonloop.reasoning.budget import BudgetTracker
from reasonloop.reasoning.finish import close
from reasonloop.reasoning.grounded import grounded_answer
from reasonloop.reasoning.intent import needs_no_retrieval
from reasonloop.reasoning.language import detect_language
from reasonloop.reasoning.llmcall import Turn
from reasonloop.reasoning.prompts import render, system_prompt
from reasonloop.reasoning.query_transforms import condense_question
from reasonloop.reasoning.retrieval import Evidence, direct_answer, retrieve
from reasonloop.reasoning.retrieval_settings import RetrievalSettings
from reasonloop.registry import PluginInfo

__all__ = ["QAReasoning", "QASettings"]


class QASettings(ReasoningSettings):
    top_k: int = Field(default=5, ge=1, le=50)
    """Passages retrieved for the question."""
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    """Query transforms (condensing follow-ups, multi-query, HyDE) and reranking for this run."""
    base_model_answer: Literal["chat", "completion", "extractive"] = "extractive"
    """How a base model (``Capabilities.base_model``) answers: ``extractive`` and ``completion`` as
    :mod:`reasonloop.reasoning.grounded` describes, ``chat`` with the instruction prompt other models get."""

    @model_validator(mode="before")
    @classmethod
    def _earlier_names(cls, data: Any) -> Any:
        # ``rewrite_followups`` is now the retrieval step's ``condense`` transform.
        if isinstance(data, dict) and "rewrite_followups" in data:
            data = dict(data)
            retrieval = dict(data.get("retrieval") or {})
            retrieval.setdefault("condense", data.pop("rewrite_followups"))
            data["retrieval"] = retrieval
        return data


class QAReasoning(Reasoning):
    """Retrieve, build numbered evidence, one streamed answer with [n] citations."""

    info: ClassVar[PluginInfo] = PluginInfo(
        id="qa",
        name="Retrieval QA",
        description="Retrieve, then one streamed answer citing the numbered evidence",
    )
    Settings = QASettings

    async def stream(self, question: str) -> AsyncIterator[Event]:
        ctx, settings = self.ctx, self.settings
        language = ctx.language or detect_language(question)
        tracker = BudgetTracker(ctx.budget or Budget(), ctx.usage)
        answer = Turn()

        if needs_no_retrieval(question):
            system = system_prompt("chat", language, ctx.instructions)
            async for event in direct_answer(ctx, tracker, ctx.llm, system, ctx.history, question, answer):
                yield event
            yield close(ctx, settings, tracker, answer.text, language)
            return

        if ctx.llm.capabilities.base_model and settings.base_model_answer != "chat" and not ctx.history:
            async for event in grounded_answer(
                ctx,
                tracker,
                question,
                language,
                strategy="qa",
                mode=settings.base_model_answer,
                top_k=settings.top_k,
                budget=settings.max_evidence_tokens,
                into=answer,
                retrieval=settings.retrieval,
            ):
                yield event
            yield close(ctx, settings, tracker, answer.text or render("dont_know", language), language)
            return

        evidence = Evidence()
        if ctx.retrievers:
            query: list[str] = []
            if settings.retrieval.condense:
                async for event in condense_question(ctx, tracker, question, language, query):
                    yield event
            async for event in retrieve(
                ctx,
                query[0] if query else question,
                settings.top_k,
                settings.max_evidence_tokens,
                evidence,
                "retrieve_1",
                tracker=tracker,
                settings=settings.retrieval,
                language=language,
            ):
                yield event

        if not evidence.text and not ctx.history:
            yield close(ctx, settings, tracker, render("dont_know", language), language)
            return
        user = render("qa_user", language, evidence=evidence.text or "(none)", question=question)
        system = system_prompt("qa", language, ctx.instructions)
        async for event in direct_answer(ctx, tracker, ctx.llm, system, ctx.history, user, answer):
            yield event
        yield close(ctx, settings, tracker, answer.text, language)
