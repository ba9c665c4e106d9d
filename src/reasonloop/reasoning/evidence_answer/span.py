"""A short span, kept only when it is verbatim inside a sentence that supports it.

The model continues a few-shot completion prompt over the supporting sentences; its continuation,
cut at the line end, is a candidate span. It is kept only when it occurs in one of those
sentences (case and spacing ignored), that sentence (with its passage's title) holds at least
half of the question's content words and no fewer than any other sentence shown, and the span says something the question does not (a span
made of the question's own words answers nothing); otherwise the caller quotes the sentence.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence

from reasonloop.events import Event
from reasonloop.llm.base import LLM, Message
from reasonloop.llm.sampling import Sampling, with_sampling
from reasonloop.reasoning.budget import BudgetTracker
from reasonloop.reasoning.evidence_answer.sentences import Sentence
from reasonloop.reasoning.evidence_answer.terms import STOP_WORDS, question_terms
from reasonloop.reasoning.llmcall import Turn, llm_turn
from reasonloop.tokens import trim_to_tokens

__all__ = ["SPAN_TOKENS", "extract_span", "span_in"]

SPAN_TOKENS = 24
"""Longest span the model may write (short answers are spans of a few words)."""
QUESTION_TOKENS = 200
SUPPORTED = 0.5
"""Share of the question's content words the sentence holding a span must contain (with its
passage's title) for the span to be kept."""
_TOKEN = re.compile(r"\w+")

_PROMPT = {
    "en": (
        "Read the passage and answer the question with a short answer copied from it.\n\n"
        "Passage: The museum's east wing was rebuilt in 1998 after a fire. Entry costs 12 euros.\n"
        "Question: How much does entry cost?\nAnswer: 12 euros\n\n"
        "Passage: Our support desk in Porto answers calls from 8:00 to 18:00. Email is answered within two days.\n"
        "Question: Where is the support desk?\nAnswer: Porto\n\n"
        "Passage: {passage}\nQuestion: {question}\nAnswer:"
    ),
    "zh": (
        "阅读文段，用文段中的原文简短回答问题。\n\n"
        "文段：新馆于2015年落成，位于城市东区，共有三层展厅。\n问题：新馆位于哪里？\n答案：城市东区\n\n"
        "文段：年假申请须提前五个工作日提交给直属主管审批。\n问题：年假申请需要提前几天提交？\n答案：五个工作日\n\n"
        "文段：{passage}\n问题：{question}\n答案："
    ),
}


def _clean(text: str) -> str:
    span = text.strip().splitlines()[0].strip() if text.strip() else ""
    return span.strip(" \"'“”「」").rstrip("。.;；,，")


def span_in(span: str, sentences: Sequence[Sentence]) -> Sentence | None:
    """The first sentence containing ``span`` (case and spacing ignored)."""
    needle = " ".join(span.lower().split())
    if not needle:
        return None
    for sentence in sentences:
        if needle in " ".join(sentence.text.lower().split()):
            return sentence
    return None


def _says_more_than(span: str, question: str) -> bool:
    """Whether ``span`` holds a word, number or Chinese character pair that the question does not."""
    own = question_terms(span)
    asked = question_terms(question)
    if own.words - asked.words:
        return True
    tokens = {t.lower() for t in _TOKEN.findall(span)}
    return bool(tokens - {t.lower() for t in _TOKEN.findall(question)} - STOP_WORDS)


async def extract_span(
    llm: LLM,
    tracker: BudgetTracker,
    language: str,
    question: str,
    sentences: Sequence[Sentence],
    into: list[tuple[str, Sentence]],
) -> AsyncIterator[Event]:
    """The model's span over ``sentences``; ``(span, sentence)`` is appended to ``into`` when it is
    verbatim in one of them and says more than the question."""
    lang = "zh" if language == "zh" else "en"
    prompt = _PROMPT[lang].format(
        passage=" ".join(s.text for s in sentences), question=trim_to_tokens(question.strip(), QUESTION_TOKENS)
    )
    turn = Turn()
    model = with_sampling(llm, Sampling(max_tokens=SPAN_TOKENS, temperature=0))
    async for event in llm_turn(model, [Message.completion(prompt)], turn, tracker, stop=["\n"]):
        yield event
    span = _clean(turn.text)
    found = span_in(span, sentences) if span else None
    if found is None or not _says_more_than(span, question):
        return
    # the sentence holding the span must say most of what is asked (itself or by its passage's
    # title), and no less of it than another sentence shown: "the sales team is led by Tom" does
    # not answer who leads the support team when "the support team is led by Maria" is there too
    terms = question_terms(question)
    covered = {id(s): terms.coverage(f"{s.hit.title} {s.text}") for s in sentences}
    if covered[id(found)] < max(SUPPORTED, *covered.values()):
        return
    into.append((span, found))
