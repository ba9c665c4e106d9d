"""Answers from retrieved evidence for a base model (one that continues text, not instructions).

A pretrained model as small as the packaged Gemma 3 270M does not follow a system prompt, a
ReAct format or a plan format: asked to, it talks past the evidence. With such a model
(:attr:`~reasonloop.llm.base.Capabilities.base_model`) every built-in strategy answers here
instead, and says so in the trace: retrieve first, then one of

- ``completion``: a few-shot completion prompt over the numbered passages (``Passages: … Question:
  … Answer:``) whose continuation, cut at the line end, is the answer;
- ``extractive`` (the default): the passages are split into sentences
  (:mod:`reasonloop.reasoning.evidence_sentences`), those most similar to the question (by the
  knowledge base's embedder; word overlap without one) are kept, and the
  same few-shot prompt over those few sentences extracts a short span. The span is kept only if it
  occurs in them; otherwise, and for how/why questions, the answer is the best sentence itself.
  The form the question asks for (:mod:`reasonloop.reasoning.answer_form`) constrains the rest:

  - a choice ("Who was born first, A or B?") is answered with one of its options: by the years
    the evidence gives each, for a question comparing dates; else by the option whose evidence
    states most of what the question asks; else by the model, its reply snapped to an option;
  - a yes/no question is answered yes when the evidence about each thing it names states at least
    :data:`SUPPORTED` of what it asserts ("same"/"different": whether their lead sentences share
    a name such as "American"), without a model call: a model this small says "yes" to anything.

  The trace says which of these decided.

Either way the answer cites the passage it came from as ``[n]``.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field

from reasonloop.events import Event, Progress
from reasonloop.llm.base import Message
from reasonloop.llm.sampling import Sampling, with_sampling
from reasonloop.reasoning.answer_form import (
    AnswerForm,
    answer_form,
    compare_years,
    is_open_question,
    option_words,
    predicate_words,
)
from reasonloop.reasoning.base import Budget, Reasoning, ReasoningSettings, RunContext
from reasonloop.reasoning.budget import BudgetTracker
from reasonloop.reasoning.evidence_sentences import (
    Sentence,
    descriptors,
    evidence_about,
    lead_sentence,
    score_sentences,
    sentences_about,
    support,
)
from reasonloop.reasoning.finish import close
from reasonloop.reasoning.intent import needs_no_retrieval
from reasonloop.reasoning.language import detect_language
from reasonloop.reasoning.llmcall import Turn, llm_turn
from reasonloop.reasoning.prompts import render, system_prompt
from reasonloop.reasoning.retrieval import Evidence, direct_answer, retrieve
from reasonloop.reasoning.retrieval_settings import RetrievalSettings
from reasonloop.registry import PluginInfo

__all__ = [
    "GroundedMode",
    "GroundedReasoning",
    "GroundedSettings",
    "grounded_answer",
    "is_open_question",
]

GroundedMode = Literal["completion", "extractive"]

SPAN_TOKENS = 24
"""Longest span the model may write (short answers are spans of a few words)."""
SENTENCES = 3
"""Sentences the extractive design keeps for the span prompt."""

_EXAMPLES = {
    "en": (
        "Read the passages and answer the question with a short answer copied from them.\n\n"
        "Passages: Shirley Temple Black (April 23, 1928 – February 10, 2014) was an American actress, "
        "singer and diplomat. As an adult, she served as Chief of Protocol of the United States.\n"
        "Question: What government position was held by Shirley Temple?\n"
        "Answer: Chief of Protocol\n\n"
        "Passages: The Eiffel Tower is a wrought-iron lattice tower in Paris. It was completed in 1889 "
        "as the entrance arch of the World's Fair.\n"
        "Question: When was the Eiffel Tower completed?\n"
        "Answer: 1889\n\n"
        "Passages: Lake Baikal is a rift lake in Siberia, Russia. It is the deepest lake in the world.\n"
        "Question: In which country is Lake Baikal?\n"
        "Answer: Russia\n\n"
    ),
    "zh": (
        "阅读文段，用文段中的原文简短回答问题。\n\n"
        "文段：故宫位于北京中轴线的中心，是明清两代的皇家宫殿，始建于1406年。\n"
        "问题：故宫始建于哪一年？\n"
        "答案：1406年\n\n"
        "文段：长江是亚洲第一长河，全长约6300公里，发源于青藏高原的唐古拉山脉。\n"
        "问题：长江发源于哪里？\n"
        "答案：青藏高原的唐古拉山脉\n\n"
    ),
}
_CHOICE_EXAMPLES = (
    "Read the passages and answer the question with one of the two names it gives.\n\n"
    "Passages: Mount Elbrus is the highest mountain in Europe, at 5,642 metres. Mont Blanc is the highest "
    "mountain of the Alps, at 4,806 metres.\n"
    "Question: Which mountain is higher, Mont Blanc or Mount Elbrus?\n"
    "Answer: Mount Elbrus\n\n"
    "Passages: The Danube flows through ten countries. The Rhine flows through six countries.\n"
    "Question: Which river flows through more countries, the Danube or the Rhine?\n"
    "Answer: Danube\n\n"
)
_QUESTION = {
    "en": "Passages: {passages}\nQuestion: {question}\nAnswer:",
    "zh": "文段：{passages}\n问题：{question}\n答案：",
}
_NOTE = {
    "en": "{model} is a base model that does not follow the {strategy} format: answering from retrieved evidence ({mode})",
    "zh": "{model} 是基础模型，不能遵循 {strategy} 的格式：直接根据检索到的证据作答（{mode}）",
}


def _snap(text: str, options: Sequence[str]) -> str | None:
    """The option ``text`` names most by the words that tell the options apart (``None`` when it
    names none, or as many of two)."""
    said = option_words(text)
    words = {o: option_words(o) for o in options}
    own = {o: words[o] - set().union(*(words[x] for x in options if x != o)) for o in options}
    overlap = {o: len(own[o] & said) / (len(own[o]) or 1) for o in options}
    best = max(overlap, key=overlap.__getitem__)
    ties = [o for o, v in overlap.items() if v == overlap[best]]
    return best if overlap[best] > 0 and len(ties) == 1 else None


def _shown(evidence: Evidence) -> list[tuple[object, int]]:
    """The hits that made it into the numbered evidence, with their numbers."""
    numbers = {c.chunk_id: c.marker for c in evidence.citations if c.marker is not None}
    return [(hit, numbers[hit.chunk_id]) for hit in evidence.hits if hit.chunk_id in numbers]


def _find(span: str, texts: Sequence[tuple[str, int]]) -> int | None:
    """The marker of the first text containing ``span`` (case and spacing ignored)."""
    needle = " ".join(span.lower().split())
    if len(needle) < 1:
        return None
    for text, marker in texts:
        if needle in " ".join(text.lower().split()):
            return marker
    return None


def _clean_span(text: str) -> str:
    span = text.strip().splitlines()[0].strip() if text.strip() else ""
    return span.strip(" \"'“”「」").rstrip("。.;；,，")


async def _complete(ctx: RunContext, tracker: BudgetTracker, prompt: str) -> AsyncIterator[Event | str]:
    """The model's continuation of ``prompt`` up to the line end (yielded last, as a string)."""
    llm = with_sampling(ctx.llm, Sampling(max_tokens=SPAN_TOKENS, temperature=0))
    turn = Turn()
    async for event in llm_turn(llm, [Message.completion(prompt)], turn, tracker, stop=["\n"]):
        yield event
    yield _clean_span(turn.text)


async def _choose(
    ctx: RunContext, tracker: BudgetTracker, question: str, options: Sequence[str], scored: Sequence[Sentence]
) -> AsyncIterator[Event | str]:
    """One of the question's ``options``, with the marker of a sentence about it (yielded last)."""
    about = {o: sentences_about(o, scored) for o in options}
    leads = {o: lead_sentence(o, about[o]) for o in options}
    dated = {o: lead.text for o, lead in leads.items() if lead is not None}
    compared = compare_years(question, dated) if len(dated) == len(options) else None
    if compared is not None:
        pick, years = compared
        read = ", ".join(f"{o} {y}" for o, y in years.items())
        yield Progress(message=f"compared the years the evidence gives: {read}")
        yield f"{pick} [{leads[pick].marker}]"  # type: ignore[union-attr]
        return
    claim = predicate_words(question, tuple(options))
    stated = {o: support(claim, evidence_about(o, scored)) for o in options}
    ranked = sorted(options, key=lambda o: -stated[o])
    if stated[ranked[0]] - stated[ranked[1]] >= 0.3:
        read = "; ".join(f"{o}: {v:.0%}" for o, v in stated.items())
        yield Progress(message=f"picked the option the evidence says most of the question about: {read}")
        best = about[ranked[0]][0] if about[ranked[0]] else scored[0]
        yield f"{ranked[0]} [{best.marker}]"
        return
    shown: list[Sentence] = []
    for o in options:
        shown += [s for s in about[o][:2] if s not in shown]
    shown = shown or list(scored[:SENTENCES])
    prompt = _CHOICE_EXAMPLES + _QUESTION["en"].format(passages=" ".join(s.text for s in shown), question=question)
    said = ""
    async for item in _complete(ctx, tracker, prompt):
        if isinstance(item, str):
            said = item
        else:
            yield item
    pick = _snap(said, options)
    if pick is None:  # the model named neither: the option the evidence is closest to the question about
        ranked = [(about[o][0].score if about[o] else float("-inf"), -i, o) for i, o in enumerate(options)]
        pick = max(ranked)[2]
    best = about[pick][0] if about[pick] else scored[0]
    yield f"{pick} [{best.marker}]"


SUPPORTED = 0.6
"""Share of what a yes/no question asserts that the evidence about each named thing must state for a yes."""
_SAME = re.compile(r"\b(same|different)\b", re.I)


def _yes_or_no(question: str, pair: Sequence[str], scored: Sequence[Sentence]) -> tuple[bool, str]:
    """Yes when the evidence states what the question asserts (of each named thing), with why."""
    if len(pair) == 2 and (same := _SAME.search(question)):
        leads = [lead_sentence(o, sentences_about(o, scored)) for o in pair]
        shared = descriptors(leads[0], pair) & descriptors(leads[1], pair)
        agree = bool(shared) != (same[1].lower() == "different")
        why = (
            f"their lead sentences share {', '.join(sorted(shared))}"
            if shared
            else "their lead sentences share no name"
        )
        return agree, why
    if len(pair) == 2:
        claim = predicate_words(question, tuple(pair))
        stated = {o: support(claim, evidence_about(o, scored)) for o in pair}
        why = "; ".join(f"{o}: {v:.0%} of it stated" for o, v in stated.items())
        return min(stated.values()) >= SUPPORTED, why
    # one named thing, the subject of the best passage: its name is no evidence of the claim
    claim = predicate_words(question, (scored[0].title,))
    share = support(claim, scored[:SENTENCES])
    return share >= SUPPORTED, f"{share:.0%} of it stated"


async def grounded_answer(
    ctx: RunContext,
    tracker: BudgetTracker,
    question: str,
    language: str,
    *,
    strategy: str,
    mode: GroundedMode,
    top_k: int,
    budget: int,
    into: Turn,
    retrieval: RetrievalSettings | None = None,
) -> AsyncIterator[Event]:
    """Retrieve, then answer with ``mode``; the answer text (with its ``[n]``) is left in ``into.text``.

    ``retrieval``'s rerank overrides apply to the search; its query transforms do not (they need
    a model that follows an instruction)."""
    lang = "zh" if language == "zh" else "en"
    yield Progress(message=_NOTE[lang].format(model=ctx.llm.name, strategy=strategy, mode=mode))
    evidence = Evidence()
    if ctx.retrievers:
        async for event in retrieve(ctx, question, top_k, budget, evidence, "retrieve_1", settings=retrieval):
            yield event
    into.text = ""
    if not evidence.citations:
        return
    shown = [(hit.text, m, hit.title) for hit, m in _shown(evidence)]  # type: ignore[attr-defined]
    if mode == "completion":
        passages = "\n".join(f"[{m}] {text.strip()}" for text, m, _ in shown)
        prompt = _EXAMPLES[lang] + _QUESTION[lang].format(passages=passages, question=question.strip())
        async for item in _complete(ctx, tracker, prompt):
            if isinstance(item, str):
                marker = _find(item, [(t, m) for t, m, _ in shown]) if item else None
                into.text = f"{item} [{marker}]" if marker is not None else item
            else:
                yield item
        return
    scored = await score_sentences(question, shown, ctx.retrievers)
    if not scored:
        return
    form = answer_form(question) if lang == "en" else AnswerForm("open" if is_open_question(question) else "span")
    if form.kind == "open":
        into.text = f"{scored[0].text} [{scored[0].marker}]"
        return
    if form.kind in ("choice", "yes_no"):
        if form.kind == "yes_no":
            yes, why = _yes_or_no(question, form.options, scored)
            yield Progress(message=f"yes/no from what the evidence states: {why}")
            into.text = f"{'Yes' if yes else 'No'} [{scored[0].marker}]"
            return
        async for item in _choose(ctx, tracker, question, form.options, scored):
            if isinstance(item, str):
                into.text = item
            else:
                yield item
        return
    picked = scored[:SENTENCES]
    context = [(s.text, s.marker) for s in picked]
    prompt = _EXAMPLES[lang] + _QUESTION[lang].format(
        passages=" ".join(s.text for s in picked), question=question.strip()
    )
    async for item in _complete(ctx, tracker, prompt):
        if isinstance(item, str):
            marker = _find(item, context) if item else None
            # a span not in the sentences shown gives way to the best sentence itself
            into.text = f"{item} [{marker}]" if marker is not None else f"{picked[0].text} [{picked[0].marker}]"
        else:
            yield item


class GroundedSettings(ReasoningSettings):
    top_k: int = Field(default=5, ge=1, le=50)
    """Passages retrieved for the question."""
    mode: GroundedMode = "extractive"
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    """The run's retrieval settings (its rerank overrides are followed)."""


class GroundedReasoning(Reasoning):
    """What a strategy that needs an agent format runs with a base model: retrieve, then answer
    from the evidence (the trace says so and names the strategy that was asked for)."""

    info: ClassVar[PluginInfo] = PluginInfo(
        id="grounded", name="Grounded answer", description="Retrieve, then extract the answer from the evidence"
    )
    Settings = GroundedSettings

    def __init__(self, settings: Any, ctx: RunContext, *, asked_for: str = "grounded") -> None:
        super().__init__(settings, ctx)
        self.asked_for = asked_for

    async def stream(self, question: str) -> AsyncIterator[Event]:
        ctx, settings = self.ctx, self.settings
        language = ctx.language or detect_language(question)
        tracker = BudgetTracker(ctx.budget or Budget(), ctx.usage)
        answer = Turn()
        if needs_no_retrieval(question):  # greetings, translation, creative writing: no search
            system = system_prompt("chat", language, ctx.instructions)
            async for event in direct_answer(ctx, tracker, ctx.llm, system, ctx.history, question, answer):
                yield event
            yield close(ctx, settings, tracker, answer.text, language)
            return
        async for event in grounded_answer(
            ctx,
            tracker,
            question,
            language,
            strategy=self.asked_for,
            mode=settings.mode,
            top_k=settings.top_k,
            budget=settings.max_evidence_tokens,
            into=answer,
            retrieval=settings.retrieval,
        ):
            yield event
        text = answer.text or render("dont_know", language)
        yield close(ctx, settings, tracker, text, language)
