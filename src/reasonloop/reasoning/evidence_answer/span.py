"""A short span, kept only when it is verbatim inside a sentence that supports it.

The model continues a few-shot completion prompt over the supporting sentences; its continuation,
cut at the line end, is a candidate span. It is kept only when it occurs in one of those
sentences (case and spacing ignored), that sentence holds every name of the question (or its
passage's subject does: the title, the headings above the sentence and the passage's opening
sentence), and, with its title and headings, at least half of the question's other content words and no
fewer of them than any other sentence shown that names the same, and the span says something the question does not (a span made of the
question's own words answers nothing); otherwise the caller quotes the sentence. A sentence that
gives the cap "in hotels" does not answer for London when London is named elsewhere, and a date
in a line that does not say "launched" does not date a launch.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence

from reasonloop.events import Event
from reasonloop.llm.base import LLM, Message
from reasonloop.llm.sampling import Sampling, with_sampling
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.reasoning.steps.llmcall import Turn, llm_turn
from reasonloop.reasoning.steps.sentences import Sentence
from reasonloop.reasoning.steps.terms import STOP_WORDS, QuestionTerms, question_terms
from reasonloop.tokens import trim_to_tokens

__all__ = ["SPAN_TOKENS", "extract_span", "span_in"]

SPAN_TOKENS = 24
"""Longest span the model may write (short answers are spans of a few words)."""
QUESTION_TOKENS = 200
SUPPORTED = 0.5
"""Share of the question's content words other than its names that the sentence holding a span
must contain (with its passage's title and headings) for the span to be kept."""
_TOKEN = re.compile(r"\w+")
_HEADING_LINE = re.compile(r"^\s*#{1,6}\s+(.+)$", re.M)
_FIRST_SENTENCE = re.compile(r"^(?:\s*#{1,6}\s.*\n)*\s*(.+?(?:[.!?。！？](?=\s)|$))", re.S)

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
    # the sentence holding the span must name what the question names (itself or by its passage's
    # subject) and say most of what is asked about it, no less than another sentence naming the same:
    # "the sales team is led by Tom" does not answer who leads the support team when "the support
    # team is led by Maria" is there too
    terms = question_terms(question)
    named = [s for s in sentences if names_held(terms, s)]
    if found not in named:
        return
    asked = _other_words(terms)
    covered = {id(s): asked.coverage(f"{subject(s, opening=False)} {s.text}") for s in named}
    if covered[id(found)] < max(SUPPORTED, *covered.values()):
        return
    into.append((span, found))


def subject(sentence: Sentence, *, opening: bool = True) -> str:
    """What ``sentence``'s passage is about: its title, the headings above the sentence and (with
    ``opening``) the passage's opening sentence, which may name the passage's subject but does not
    say what its other sentences say about it."""
    before = sentence.hit.text[: sentence.start]
    headings = " ".join(m.group(1) for m in _HEADING_LINE.finditer(before))
    first = _FIRST_SENTENCE.match(sentence.hit.text) if opening else None
    return " ".join([sentence.hit.title or "", headings, first.group(1) if first else ""])


def names_held(terms: QuestionTerms, sentence: Sentence) -> bool:
    """Whether every name of the question is in ``sentence`` or in its passage's subject, and none
    only inside a longer name ("Aria 2" as "Aria 2 Pro") in the sentence or the heading right above it."""
    context = f"{subject(sentence)} {sentence.text}"
    headings = _HEADING_LINE.findall(sentence.hit.text[: sentence.start])
    nearest = f"{headings[-1]}\n{sentence.text}" if headings else sentence.text  # "## Halo Max" above "Weight: 2.4 kg"
    return not terms.missing_names(context) and not terms.names_elsewhere(nearest)


def _other_words(terms: QuestionTerms) -> QuestionTerms:
    """``terms`` without the words of its names (what is asked about them)."""
    named = question_terms(" ".join(terms.names)).words if terms.names else set()
    rest = terms.words - named
    return QuestionTerms(question=terms.question, words=rest or terms.words, names=terms.names, negated=terms.negated)
