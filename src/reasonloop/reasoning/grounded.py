"""Answers from retrieved evidence for a base model (one that continues text, not instructions).

A pretrained model as small as the packaged Gemma 3 270M does not follow a system prompt, a
ReAct format or a plan format: asked to, it talks past the evidence. With such a model
(:attr:`~reasonloop.llm.base.Capabilities.base_model`) every built-in strategy answers here
instead, and says so in the trace: retrieve first, then one of

- ``completion``: a few-shot completion prompt over the numbered passages (``Passages: … Question:
  … Answer:``) whose continuation, cut at the line end, is the answer;
- ``extractive`` (the default): the passages are split into sentences, the sentences most similar
  to the question (by the knowledge base's embedder; word overlap without one) are kept, and the
  same few-shot prompt over those few sentences extracts a short span. The span is kept only if it
  occurs in them; otherwise, and for how/why questions, the answer is the best sentence itself.

Either way the answer cites the passage it came from as ``[n]``.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field

from reasonloop.events import Event, Progress
from reasonloop.kb.chunking import sentence_spans
from reasonloop.llm.base import Message
from reasonloop.llm.sampling import Sampling, with_sampling
from reasonloop.reasoning.base import Budget, Reasoning, ReasoningSettings, RunContext
from reasonloop.reasoning.budget import BudgetTracker
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
    "pick_sentences",
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
_QUESTION = {
    "en": "Passages: {passages}\nQuestion: {question}\nAnswer:",
    "zh": "文段：{passages}\n问题：{question}\n答案：",
}
_NOTE = {
    "en": "{model} is a base model that does not follow the {strategy} format: answering from retrieved evidence ({mode})",
    "zh": "{model} 是基础模型，不能遵循 {strategy} 的格式：直接根据检索到的证据作答（{mode}）",
}
_OPEN = re.compile(
    r"^\s*(how(?!\s+(much|many|old|long|far|big|tall|often|large|high|deep|few)\b)|why|explain|describe)\b"
    r"|为什么|如何|怎么|怎样|为何",
    re.I,
)
_WORD = re.compile(r"[\u4e00-\u9fff]|\w+")
_PROSE = re.compile(r"[.!?。！？；…][\"'”’)\]」』）]*$")


def is_open_question(question: str) -> bool:
    """A how/why question, answered with a sentence rather than a span."""
    return bool(_OPEN.search(question))


@dataclass
class _Sentence:
    text: str
    marker: int
    score: float = 0.0


def _overlap(question: str, text: str) -> float:
    q = {w.lower() for w in _WORD.findall(question) if len(w) > 2 or not w.isascii()}
    words = [w.lower() for w in _WORD.findall(text)]
    return len(q.intersection(words)) / (len(q) or 1)


def _is_prose(text: str) -> bool:
    """A sentence of prose: it does not start in lower case (a command) and ends with a full stop."""
    return bool(_PROSE.search(text)) and "`" not in text and not ("a" <= text[0] <= "z")


async def pick_sentences(
    question: str, passages: Sequence[tuple[str, int]], retrievers: Sequence[object], keep: int = SENTENCES
) -> list[_Sentence]:
    """The ``keep`` sentences of the numbered ``(text, number)`` passages most similar to ``question``."""
    pieces = [_Sentence(text[a:b], marker) for text, marker in passages for a, b in sentence_spans(text) if b - a > 3]
    # Prose, not the headings, commands and table rows of a Markdown page (they end without a full stop).
    sentences = [p for p in pieces if _is_prose(p.text)] or pieces
    if not sentences:
        return []
    scores = None
    for retriever in retrievers:
        similarity = getattr(retriever, "similarity", None)
        if similarity is not None:
            scores = await similarity(question, [s.text for s in sentences])
            if scores is not None:
                break
    for i, s in enumerate(sentences):
        # Word overlap breaks near-ties of the embedder and is the whole score without one.
        s.score = (scores[i] if scores else 0.0) + 0.1 * _overlap(question, s.text)
    return sorted(sentences, key=lambda s: -s.score)[:keep]


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
    if not evidence.citations:
        into.text = ""
        return
    shown = [(hit.text, m) for hit, m in _shown(evidence)]  # type: ignore[attr-defined]
    if mode == "extractive":
        picked = await pick_sentences(question, shown, ctx.retrievers)
        if not picked:
            into.text = ""
            return
        if is_open_question(question):
            into.text = f"{picked[0].text} [{picked[0].marker}]"
            return
        passages = " ".join(s.text for s in picked)
        context = [(s.text, s.marker) for s in picked]
    else:
        passages = "\n".join(f"[{m}] {text.strip()}" for text, m in shown)
        context = shown
    prompt = _EXAMPLES[lang] + _QUESTION[lang].format(passages=passages, question=question.strip())
    llm = with_sampling(ctx.llm, Sampling(max_tokens=SPAN_TOKENS, temperature=0))
    turn = Turn()
    async for event in llm_turn(llm, [Message.completion(prompt)], turn, tracker, stop=["\n"]):
        yield event
    span = _clean_span(turn.text)
    marker = _find(span, context) if span else None
    if marker is not None:
        into.text = f"{span} [{marker}]"
    elif mode == "extractive":
        into.text = f"{picked[0].text} [{picked[0].marker}]"
    else:
        into.text = span


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
