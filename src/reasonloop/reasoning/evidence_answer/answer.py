"""The one entry point of answering from evidence: retrieve, check, then quote, extract or decide.

1. **Search** the question (in a conversation, the previous question joined to it: a follow-up
   such as "And who owns it?" names its subject only there).
2. **Check** that the evidence speaks of what the question is about: a passage was found, every
   name or code the question holds occurs in one, and some sentence shares its words. If not,
   the answer says the documents don't say, with what was searched (an empty knowledge base says
   so instead). When an English content word of the question is in no passage ("chief
   *technology* officer" over passages naming only a chief executive), the answer says which,
   beside the closest sentence, and decides nothing.
3. **Answer** by the form of the question (:mod:`.form`):

   - how/why: the supporting sentence, quoted;
   - a span: the model's short span when it is verbatim in a supporting sentence (:mod:`.span`),
     else the closest sentence quoted, as the closest the documents come (not as an answer);
   - yes/no and either/or: decided only by the model's calibrated likelihoods, above a margin
     and past the guards of :mod:`.decision`, with the sentence quoted beside the decision;
     below it, the sentence is quoted and the answer says it does not settle the question.

Every citation of the answer is the sentence it rests on, with its offsets on the page.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from reasonloop.events import Citation, Event, Progress
from reasonloop.kb.base import Hit
from reasonloop.llm.base import Message
from reasonloop.reasoning.base import RunContext
from reasonloop.reasoning.evidence_answer.check import evidence_gap, not_found_text
from reasonloop.reasoning.evidence_answer.decision import Decision, decide_choice, decide_yes_no, names_option
from reasonloop.reasoning.evidence_answer.form import AnswerForm, answer_form
from reasonloop.reasoning.evidence_answer.span import extract_span
from reasonloop.reasoning.evidence_answer.texts import text
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.reasoning.steps.retrieval import Evidence, retrieve
from reasonloop.reasoning.steps.retrieval_settings import RetrievalSettings
from reasonloop.reasoning.steps.sentences import Sentence, rank_sentences, sentences_of
from reasonloop.reasoning.steps.terms import QuestionTerms, question_terms

__all__ = [
    "DEFAULT_MARGIN",
    "SENTENCES",
    "EvidenceAnswer",
    "answer_from_evidence",
    "search_query",
]

SENTENCES = 3
"""Supporting sentences the span prompt reads."""
DEFAULT_MARGIN = 1.0
"""How much (natural log) the evidence must favour one candidate over the other to decide
(benchmarks/README.md, "Honest answers", has how it was chosen)."""
QUERY_CHARS = 2000
"""Longest query searched (a longer question is cut: the embedder reads only its start anyway)."""


@dataclass
class EvidenceAnswer:
    """The answer: its text (with ``[n]`` markers), the citations of those markers, and whether it abstained."""

    text: str = ""
    citations: list[Citation] = field(default_factory=list)
    abstained: bool = False


def search_query(question: str, history: Sequence[Message]) -> str:
    """What to search: the question, after the previous question of the conversation when there is one."""
    previous = next((m.content for m in reversed(history) if m.role == "user" and m.content.strip()), "")
    query = f"{previous.strip()} {question.strip()}" if previous else question.strip()
    return query[-QUERY_CHARS:] if len(query) > QUERY_CHARS else query


def _shown(evidence: Evidence) -> list[tuple[Hit, int]]:
    numbers = {c.chunk_id: c.marker for c in evidence.citations if c.marker is not None}
    return [(hit, numbers[hit.chunk_id]) for hit in evidence.hits if hit.chunk_id in numbers]


async def _kb_empty(ctx: RunContext) -> bool:
    kb = ctx.scope.kb
    indexes = kb if isinstance(kb, list) else [kb] if kb is not None else []
    if not indexes:
        return False
    try:
        stats = await asyncio.gather(*(index.stats() for index in indexes))
    except Exception:  # a source that cannot tell is not said to be empty
        return False
    return all(s.documents == 0 for s in stats)


def _question_words(question: str, stems: Sequence[str]) -> list[str]:
    """The words of ``question`` that the ``stems`` come from, as the question writes them."""
    words = re.findall(r"[A-Za-z][A-Za-z\-']*", question)
    return [next((w for w in words if w.lower().startswith(stem)), stem) for stem in stems]


def _without(question: str, options: Sequence[str]) -> str:
    """``question`` with its options taken out: what it asks of them."""
    for option in options:
        question = question.replace(option, " ")
    return " ".join(question.split())


def _quote(sentence: Sentence) -> str:
    return " ".join(sentence.text.split())


async def _decide(
    ctx: RunContext,
    tracker: BudgetTracker,
    language: str,
    terms: QuestionTerms,
    question: str,
    form: AnswerForm,
    ranked: list[Sentence],
    best: Sentence,
    margin: float,
) -> tuple[Decision, Sentence]:
    """A yes/no or either/or decision, and the sentence to quote beside it."""
    if form.kind == "yes_no":
        return await decide_yes_no(ctx.llm, tracker.usage, language, terms, best.text, margin=margin), best
    # the sentence naming each option that best says what the question asks of them (ranked by
    # the question without the options: "Which is cheaper, … or …?")
    asked = _without(question, form.options)
    by_asked = await rank_sentences(asked, question_terms(asked), list(ranked), ctx.retrievers)
    about = [next((s for s in by_asked if names_option(s.text, o)), None) for o in form.options]
    picked = [s for i, s in enumerate(about) if s is not None and s not in about[:i]]
    passage = " ".join(s.text for s in picked) or best.text
    decision = await decide_choice(ctx.llm, tracker.usage, language, terms, passage, form.options, margin=margin)
    chosen = about[form.options.index(decision.choice)] if decision.choice is not None else None
    return decision, chosen or (picked[0] if picked else best)


async def answer_from_evidence(
    ctx: RunContext,
    tracker: BudgetTracker,
    question: str,
    language: str,
    *,
    top_k: int,
    budget: int,
    into: EvidenceAnswer,
    retrieval: RetrievalSettings | None = None,
    margin: float = DEFAULT_MARGIN,
) -> AsyncIterator[Event]:
    """Answer ``question`` from the run's knowledge sources into ``into`` (see the module docstring).

    ``retrieval``'s rerank overrides apply to the search; its query transforms do not (they need
    a model that follows an instruction)."""
    query = search_query(question, ctx.history)
    terms = question_terms(query)
    if terms.empty:
        into.text, into.abstained = text("no_words", language), True
        return
    if not ctx.retrievers:
        into.text, into.abstained = text("no_sources", language), True
        return
    evidence = Evidence()
    async for event in retrieve(ctx, query, top_k, budget, evidence, "retrieve_1", settings=retrieval):
        yield event
    shown = _shown(evidence)

    def not_found(detail: str) -> None:
        into.text = not_found_text(query, detail, language)
        into.abstained = True

    if not shown:
        if await _kb_empty(ctx):
            into.text, into.abstained = text("empty_kb", language), True
        else:
            not_found(text("nothing_found", language))
        return
    gap = evidence_gap(terms, [hit for hit, _ in shown], language)
    if gap is not None:
        not_found(gap)
        return
    ranked = await rank_sentences(query, terms, sentences_of(shown), ctx.retrievers)
    supporting = [s for s in ranked if terms.mentions(s.text)][:SENTENCES]
    if not supporting:
        not_found(text("off_topic", language))
        return

    log = ctx.scope.evidence_log().citations
    best = supporting[0]

    def cite(sentence: Sentence) -> tuple[str, list[Citation]]:
        return f"[{sentence.marker}]", [sentence.citation(log.get(sentence.marker))]

    unmentioned = terms.unmentioned_words(" ".join(f"{hit.title} {hit.text}" for hit, _ in shown))
    if unmentioned:  # part of what is asked is in no passage: say so beside the closest sentence
        marker, into.citations = cite(best)
        words = ", ".join(w for w in _question_words(question, unmentioned))
        into.text = text("partial", language, words=words, quote=_quote(best), marker=marker)
        into.abstained = True
        return

    form = answer_form(question)
    if form.kind in ("yes_no", "choice"):
        decision, best = await _decide(ctx, tracker, language, terms, question, form, ranked, best, margin)
        marker, into.citations = cite(best)
        if decision.choice is None:
            yield Progress(message=text("undecided_by", language, why=decision.why))
            key = "undecided_yes_no" if form.kind == "yes_no" else "undecided_choice"
            options = dict(zip("ab", form.options, strict=False))
            into.text = text(key, language, quote=_quote(best), marker=marker, **options)
            into.abstained = True
            return
        yield Progress(message=text("decided_by", language, why=decision.why))
        said = text(decision.choice, language) if form.kind == "yes_no" else decision.choice
        into.text = text("decided", language, decision=said, quote=_quote(best), marker=marker)
        return
    if form.kind == "span":
        found: list[tuple[str, Sentence]] = []
        async for event in extract_span(ctx.llm, tracker, language, question, supporting, found):
            yield event
        if found:
            span, sentence = found[0]
            marker, into.citations = cite(sentence)
            into.text = f"{span} {marker}"
            return
    marker, into.citations = cite(best)
    if form.kind == "span":  # no span came out of it: the sentence may not hold the answer
        into.text = text("closest", language, quote=_quote(best), marker=marker)
        into.abstained = True
        return
    into.text = text("says", language, quote=_quote(best), marker=marker)
