"""The sentences of retrieved passages, as a base-model answer reads them: scored against the
question, found about a named thing, its passage's lead sentence, and how much of a claim they state.

Used by :mod:`reasonloop.reasoning.grounded`; the embedder of the knowledge base scores the
sentences (word overlap without one).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from reasonloop.kb.chunking import sentence_spans
from reasonloop.reasoning.answer_form import option_words, stems

__all__ = [
    "Sentence",
    "descriptors",
    "evidence_about",
    "lead_sentence",
    "score_sentences",
    "sentences_about",
    "support",
]

_WORD = re.compile(r"[\u4e00-\u9fff]|\w+")
_PROSE = re.compile(r"[.!?。！？；…][\"'”’)\]」』）]*$")


@dataclass
class Sentence:
    text: str
    marker: int
    score: float = 0.0
    title: str = ""
    position: int = 0
    """The sentence's place in its passage (0: the lead sentence)."""


def _overlap(question: str, text: str) -> float:
    q = {w.lower() for w in _WORD.findall(question) if len(w) > 2 or not w.isascii()}
    words = [w.lower() for w in _WORD.findall(text)]
    return len(q.intersection(words)) / (len(q) or 1)


def _is_prose(text: str) -> bool:
    """A sentence of prose: it does not start in lower case (a command) and ends with a full stop."""
    return bool(_PROSE.search(text)) and "`" not in text and not ("a" <= text[0] <= "z")


async def score_sentences(
    question: str, passages: Sequence[tuple[str, int] | tuple[str, int, str]], retrievers: Sequence[object]
) -> list[Sentence]:
    """The sentences of the numbered ``(text, number[, title])`` passages, most similar to
    ``question`` first."""
    pieces: list[Sentence] = []
    for passage in passages:
        text, marker, title = passage[0], passage[1], passage[2] if len(passage) > 2 else ""  # type: ignore[misc]
        spans = [(a, b) for a, b in sentence_spans(text) if b - a > 3]
        pieces += [Sentence(text[a:b], marker, title=title, position=i) for i, (a, b) in enumerate(spans)]
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
    return sorted(sentences, key=lambda s: -s.score)


def _mentions(option: str, sentence: Sentence) -> float:
    """How much of ``option`` the sentence (or its passage's title) names, from 0 to 1."""
    words = option_words(option)
    if not words:
        return 0.0
    named = option_words(sentence.text) | option_words(sentence.title)
    return len(words & named) / len(words)


def sentences_about(option: str, scored: Sequence[Sentence]) -> list[Sentence]:
    """The sentences about ``option``, most similar to the question first: those naming at least
    half of it, or else the one naming most of it."""
    named = [s for s in scored if _mentions(option, s) >= 0.5]
    if named:
        return named
    best = max(scored, key=lambda s: _mentions(option, s), default=None)
    return [best] if best is not None and _mentions(option, best) > 0 else []


def lead_sentence(option: str, about: Sequence[Sentence]) -> Sentence | None:
    """The first sentence of the passage titled ``option`` (where dates of birth and release
    are written), or else the best sentence about it."""
    words = option_words(option)
    titled = [s for s in about if s.title and words <= option_words(s.title) | option_words(s.text)]
    # those whose passage's title names most of the option, when there are such
    titled = [s for s in titled if len(words & option_words(s.title)) >= 0.5 * len(words)] or titled
    if titled:
        return min(titled, key=lambda s: s.position)
    return about[0] if about else None


def support(claim: set[str], sentences: Sequence[Sentence]) -> float:
    """Share of the ``claim``'s stems that ``sentences`` contain."""
    if not claim:
        return 0.0
    said = set().union(*(stems(s.text) for s in sentences)) if sentences else set()
    return len(claim & said) / len(claim)


def evidence_about(option: str, scored: Sequence[Sentence]) -> list[Sentence]:
    """The best four sentences about ``option`` and its passage's lead sentence."""
    about = sentences_about(option, scored)
    lead = lead_sentence(option, about)
    return [*about[:4], *([lead] if lead is not None and lead not in about[:4] else [])]


_CALENDAR = {
    *("january", "february", "march", "april", "may", "june", "july", "august", "september", "october"),
    *("november", "december", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
}


def descriptors(sentence: Sentence | None, names: Sequence[str]) -> set[str]:
    """The capitalised words a lead sentence uses besides the names and dates ("American", "Istanbul")."""
    if sentence is None:
        return set()
    skip = set().union(*(option_words(n) for n in names)) | option_words(sentence.title) | _CALENDAR
    words = _WORD.findall(sentence.text)[1:]
    return {w.lower() for w in words if w[:1].isupper() and w.lower() not in skip and len(w) > 2}
