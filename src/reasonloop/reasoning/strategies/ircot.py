"""IRCoT: interleave one sentence of reasoning with one retrieval (Trivedi et al., 2023).

The question is searched; then, step by step, the model writes ONE next sentence of a chain of
thought over the numbered passages found so far and the sentences so far; the sentence is searched
in turn, and the passages it finds that are new (one per chunk) join the others, up to
``max_passages``. A two-hop question's first sentence names the bridge entity ("The Aria 2 is made
by Northwind Audio [1].") and searching it finds the second hop's passage. When a sentence gives
the answer (``So the answer is: X``, ``所以答案是：X`` and the forms small models write:
:mod:`reasonloop.reasoning.formats.ircot_step`), the run answers with it, citing the passages it
rests on, each citation quoting the sentence of its passage that supports the answer.

Limits: ``max_steps`` reasoning sentences (and the run's budget: rounds, tokens, wall time, and
the tool-call budget, which bounds its searches: they are made without a tool round, reported as
``Searched`` events and counted as searches, not tool calls, but each stands where another agent's
search tool call would). When one ends the chain before an answer, one last call answers from the
passages and the reasoning, and the answer names the limit (``stop_reason``). A reply with no new sentence (empty,
or only sentences already written) ends the chain the same way, without a limit. A follow-up
question is condensed into a standalone one first, as ``qa`` does.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import ClassVar

from pydantic import Field

from reasonloop.events import Citation, Event, Progress, Step, Thought
from reasonloop.kb.base import Hit
from reasonloop.llm.base import Message
from reasonloop.plugin_table import field_text
from reasonloop.reasoning.base import Budget, Reasoning, ReasoningSettings
from reasonloop.reasoning.formats.ircot_step import IRCoTStep, parse_step
from reasonloop.reasoning.formats.language import detect_language
from reasonloop.reasoning.formats.prompts import render, system_prompt
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.reasoning.steps.citations import markers, supporting_sentence
from reasonloop.reasoning.steps.finish import close, forced_answer
from reasonloop.reasoning.steps.intent import needs_no_retrieval
from reasonloop.reasoning.steps.llmcall import Turn, llm_turn
from reasonloop.reasoning.steps.query_transforms import condense_question
from reasonloop.reasoning.steps.retrieval import Evidence, direct_answer, retrieve
from reasonloop.reasoning.steps.retrieval_settings import RetrievalSettings
from reasonloop.registry import PluginInfo
from reasonloop.tools.evidence import EvidenceLog, format_evidence

__all__ = ["IRCoTReasoning", "IRCoTSettings"]

_MARKERS = re.compile(r"\s*[\[【]\^?\d{1,3}(?:\s*[,，、]\s*\^?\d{1,3})*[\]】]")
_UNQUOTABLE = frozenset({"yes", "no", "是", "否", "不是", "对", "不对"})
"""Answers no passage quotes: a yes/no answer cites the passages the reasoning used instead."""


class IRCoTSettings(ReasoningSettings):
    max_steps: int = Field(
        default=6,
        ge=1,
        le=20,
        **field_text(
            en=("Reasoning steps", "Most reasoning sentences (one model call each) before the run must answer."),
            zh=("推理步数上限", "必须作答之前最多的推理句数（每句一次模型调用）。"),
        ),
    )
    top_k: int = Field(
        default=4,
        ge=1,
        le=20,
        **field_text(
            en=("Passages per search", "Passages retrieved for the question and for each reasoning sentence."),
            zh=("每次检索的段落数", "为问题和每句推理检索的段落数。"),
        ),
    )
    max_passages: int = Field(
        default=15,
        ge=1,
        le=100,
        **field_text(
            en=("Passages kept", "Most passages the reasoning keeps; once it holds them, sentences are not searched."),
            zh=("保留段落上限", "推理最多保留的段落数；达到后不再用推理句检索。"),
        ),
    )
    max_evidence_tokens: int = Field(
        default=3000,
        ge=50,
        **field_text(
            en=("Evidence tokens", "Most tokens of passages shown with each step (the first found are kept whole)."),
            zh=("证据词元上限", "每一步给模型看的段落最多的词元数（先找到的完整保留）。"),
        ),
    )
    retrieval: RetrievalSettings = Field(
        default_factory=RetrievalSettings,
        **field_text(
            en=(
                "Retrieval",
                "Condensing follow-ups, extra phrasings and HyDE apply to the question's search; "
                "reranking to every search.",
            ),
            zh=("检索", "改写追问、额外问法和 HyDE 用于问题本身的检索；重排序用于每次检索。"),
        ),
    )


class IRCoTReasoning(Reasoning):
    """Interleave one reasoning sentence and one retrieval until the answer, citing what it used."""

    info: ClassVar[PluginInfo] = PluginInfo.declared("reasoning", "ircot")
    Settings = IRCoTSettings
    _shown: set[int]
    """The passage numbers the latest step was shown (what an answer may cite)."""

    async def stream(self, question: str) -> AsyncIterator[Event]:
        ctx, settings = self.ctx, self.settings
        language = ctx.language or detect_language(question)
        budget = ctx.budget or Budget(max_rounds=settings.max_steps, max_tool_calls=settings.max_steps)
        tracker = BudgetTracker(budget, ctx.usage, ctx.scope.pauses)
        if needs_no_retrieval(question):
            answer = Turn()
            system = system_prompt("chat", language, ctx.instructions)
            async for event in direct_answer(ctx, tracker, ctx.llm, system, ctx.history, question, answer):
                yield event
            yield close(ctx, settings, tracker, answer.text, language)
            return

        query: list[str] = []
        if settings.retrieval.condense and ctx.retrievers:
            async for event in condense_question(ctx, tracker, question, language, query):
                yield event
        asked = query[0] if query else question
        kept: list[Hit] = []
        if ctx.retrievers:
            async for event in self._search(asked, 1, kept, tracker, language, first=True):
                yield event
        if not kept and not ctx.history:
            yield close(ctx, settings, tracker, render("dont_know", language), language, abstained=True)
            return

        sentences: list[str] = []
        self._shown = set()
        for n in range(1, settings.max_steps + 1):
            if tracker.exhausted() is not None:
                break
            tracker.start_round()
            turn = Turn()
            messages = self._step_messages(question, sentences, kept, language)
            async for event in llm_turn(ctx.llm, messages, turn, tracker):
                yield event
            step = parse_step(turn.text, [question, *sentences])  # the question echoed is no step either
            if step.empty:
                problem = "an empty reply" if not turn.text.strip() else "no new sentence"
                yield Progress(message=f"the model wrote {problem}: answering from the passages found", level="warning")
                ctx.steps.append(Step(action="reason", action_input=n, observation=turn.text.strip()))
                break
            yield Thought(text=step.sentence)
            ctx.steps.append(Step(action="reason", action_input=n, observation=step.sentence))
            if step.answer is not None:
                text, citations = _cited(step, sentences, self._shown, ctx.scope.evidence_log())
                yield close(ctx, settings, tracker, text, language, citations=citations)
                return
            sentences.append(step.sentence)
            if n == settings.max_steps:
                tracker.hit("max_rounds")
                break
            if len(kept) >= settings.max_passages:
                continue  # the chain holds all the passages it may: reason on over them
            if ctx.usage.tool_calls + ctx.usage.searches >= budget.max_tool_calls:  # its searches are its calls
                tracker.hit("max_tool_calls")
                break
            async for event in self._search(_MARKERS.sub("", step.sentence).strip(), n + 1, kept, tracker, language):
                yield event

        # The chain ended without an answer: one last call answers from the passages and the reasoning.
        user = render(
            "ircot_answer_user",
            language,
            question=question,
            reasoning=_numbered(sentences, language),
            passages=self._passages(kept) or "(none)",
        )
        system = system_prompt("qa", language, ctx.instructions)
        if tracker.stop_reason is not None:
            yield Progress(message=f"reasoning stopped: {tracker.stop_reason.replace('_', ' ')}")
            messages = [Message.system(system), *ctx.history, Message.user(user)]
            async for event in forced_answer(ctx, settings, tracker, ctx.llm, messages, language):
                yield event
            return
        answer = Turn()
        async for event in direct_answer(ctx, tracker, ctx.llm, system, ctx.history, user, answer):
            yield event
        yield close(ctx, settings, tracker, answer.text, language)

    async def _search(
        self, query: str, index: int, kept: list[Hit], tracker: BudgetTracker, language: str, *, first: bool = False
    ) -> AsyncIterator[Event]:
        """Search ``query`` with the shared retrieval step; keep its new passages (one per chunk)."""
        settings = self.settings
        found = Evidence()
        async for event in retrieve(
            self.ctx,
            query,
            settings.top_k,
            settings.max_evidence_tokens,
            found,
            f"retrieve_{index}",
            tracker=tracker if first else None,  # transforms cost model calls: the question's search only
            settings=settings.retrieval,
            language=language,
        ):
            yield event
        seen = {h.chunk_id for h in kept}
        new: list[Hit] = []
        for hit in found.hits:
            if hit.chunk_id not in seen:
                seen.add(hit.chunk_id)
                new.append(hit)
        room = max(0, settings.max_passages - len(kept))
        kept.extend(new[:room])
        if not first:
            dropped = f", {len(new) - room} over the limit of {settings.max_passages}" if len(new) > room else ""
            yield Progress(message=f"{min(len(new), room)} new passages ({len(kept)} in all{dropped})")

    def _step_messages(self, question: str, sentences: list[str], kept: list[Hit], language: str) -> list[Message]:
        user = render(
            "ircot_user",
            language,
            question=question,
            reasoning=_numbered(sentences, language),
            passages=self._passages(kept) or "(none)",
        )
        system = system_prompt("ircot", language, self.ctx.instructions)
        return [Message.system(system), *self.ctx.history, Message.user(user)]

    def _passages(self, kept: list[Hit]) -> str:
        """The kept passages, numbered, within the evidence budget; remembers which numbers were shown."""
        text, citations = format_evidence(kept, self.ctx.scope.evidence_log(), self.settings.max_evidence_tokens)
        self._shown = {c.marker for c in citations if c.marker is not None}
        return text


def _numbered(sentences: list[str], language: str) -> str:
    if not sentences:
        return "（暂无）" if language == "zh" else "(none yet)"
    return "\n".join(sentences)


def _cited(step: IRCoTStep, sentences: list[str], numbers: set[int], log: EvidenceLog) -> tuple[str, list[Citation]]:
    """The answer's text and citations among the passages ``numbers`` shown: those its sentence
    cites; else those that hold the answer word for word; else, for a yes/no answer (which no
    passage quotes), those the reasoning cited. An answer that none of these support (one saying the
    passages do not tell) cites nothing. Each citation quotes the sentence of its passage that the
    sentences citing it rest on."""
    answer = step.answer or ""
    bare = _MARKERS.sub("", answer).strip()
    chosen = [n for n in markers(step.sentence) if n in numbers]
    text = answer if chosen else bare
    if not chosen and bare.casefold() in _UNQUOTABLE:
        chosen = list(dict.fromkeys(n for s in sentences for n in markers(s) if n in numbers))
    elif not chosen and bare:
        holds = re.compile(rf"(?<!\w){re.escape(bare.casefold())}(?!\w)")
        chosen = [n for n in sorted(numbers) if n in log.hits and holds.search(log.hits[n].text.casefold())]
    if chosen and not markers(text):
        text = f"{text} " + "".join(f"[{n}]" for n in chosen)
    claims = [*sentences, step.sentence]
    citations = []
    for n in markers(text):
        if n not in log.citations or n not in log.hits:
            continue
        claim = " ".join(s for s in claims if n in markers(s)) or bare
        citations.append(supporting_sentence(claim, log.citations[n], log.hits[n]))
    return text.strip(), citations
