"""Retrieval-QA: retrieve, number the evidence, answer once with citations.

The classic retrieve-then-read pipeline: a follow-up question is first rewritten into a
standalone query (and, as ``settings.retrieval`` asks, rephrased or answered hypothetically to
search better: :mod:`reasonloop.reasoning.steps.query_transforms`); the hits of every knowledge source become numbered evidence; one
streamed answer cites it as ``[n]``. With no evidence (and no conversation to draw on) the
strategy says it doesn't know without asking the model to guess; when nothing is found, or a name
or code the question holds is in none of the passages, the answer says the documents don't say,
with what was searched. Greetings, small talk,
translation and creative writing are answered directly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

from pydantic import Field, model_validator

from reasonloop.events import Event
from reasonloop.plugin_table import field_text
from reasonloop.reasoning.base import Budget, Reasoning, ReasoningSettings
from reasonloop.reasoning.evidence_answer.check import evidence_gap, not_found_text
from reasonloop.reasoning.formats.language import detect_language
from reasonloop.reasoning.formats.prompts import render, system_prompt
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.reasoning.steps.finish import close
from reasonloop.reasoning.steps.intent import needs_no_retrieval
from reasonloop.reasoning.steps.llmcall import Turn
from reasonloop.reasoning.steps.query_transforms import condense_question
from reasonloop.reasoning.steps.retrieval import Evidence, direct_answer, retrieve
from reasonloop.reasoning.steps.retrieval_settings import RetrievalSettings
from reasonloop.reasoning.steps.terms import question_terms
from reasonloop.registry import PluginInfo

__all__ = ["QAReasoning", "QASettings"]


class QASettings(ReasoningSettings):
    top_k: int = Field(
        default=5,
        ge=1,
        le=50,
        **field_text(en=("Passages", "Passages retrieved for the question."), zh=("段落数", "为问题检索的段落数。")),
    )
    retrieval: RetrievalSettings = Field(
        default_factory=RetrievalSettings,
        **field_text(
            en=(
                "Retrieval",
                "Query transforms (condensing follow-ups, extra phrasings, HyDE) and reranking for this run.",
            ),
            zh=("检索", "本次运行的查询改写（改写追问、额外问法、HyDE）与重排序。"),
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _earlier_names(cls, data: Any) -> Any:
        # ``rewrite_followups`` is now the retrieval step's ``condense`` transform; how a base model
        # answers is no longer a setting of qa's (the agent runs the evidence answer for one).
        if isinstance(data, dict) and "base_model_answer" in data:
            data = {k: v for k, v in data.items() if k != "base_model_answer"}
        if isinstance(data, dict) and "rewrite_followups" in data:
            data = dict(data)
            retrieval = dict(data.get("retrieval") or {})
            retrieval.setdefault("condense", data.pop("rewrite_followups"))
            data["retrieval"] = retrieval
        return data


class QAReasoning(Reasoning):
    """Retrieve, build numbered evidence, one streamed answer with [n] citations."""

    info: ClassVar[PluginInfo] = PluginInfo.declared("reasoning", "qa")
    Settings = QASettings

    async def stream(self, question: str) -> AsyncIterator[Event]:
        ctx, settings = self.ctx, self.settings
        language = ctx.language or detect_language(question)
        tracker = BudgetTracker(ctx.budget or Budget(), ctx.usage, ctx.scope.pauses)
        answer = Turn()

        if needs_no_retrieval(question):
            system = system_prompt("chat", language, ctx.instructions)
            async for event in direct_answer(ctx, tracker, ctx.llm, system, ctx.history, question, answer):
                yield event
            yield close(ctx, settings, tracker, answer.text, language)
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

        if ctx.retrievers and not ctx.history:
            searched = query[0] if query else question
            # nothing found, or a name or code of the question in no passage: no model is asked to guess
            gap = evidence_gap(question_terms(searched), evidence.hits, language, words=False)
            if gap is not None:
                yield close(ctx, settings, tracker, not_found_text(searched, gap, language), language, abstained=True)
                return
        if not evidence.text and not ctx.history:
            yield close(ctx, settings, tracker, render("dont_know", language), language, abstained=True)
            return
        user = render("qa_user", language, evidence=evidence.text or "(none)", question=question)
        system = system_prompt("qa", language, ctx.instructions)
        async for event in direct_answer(ctx, tracker, ctx.llm, system, ctx.history, user, answer):
            yield event
        yield close(ctx, settings, tracker, answer.text, language)
