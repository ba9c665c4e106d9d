"""Whether the passages found can answer a question: found at all, naming every name or code the
question holds, speaking of what it asks; if not, the answer saying the documents don't say."""

from __future__ import annotations

from collections.abc import Sequence

from reasonloop.kb.base import Hit
from reasonloop.reasoning.evidence_answer.texts import text
from reasonloop.reasoning.steps.terms import QuestionTerms

__all__ = ["evidence_gap", "not_found_text"]


def evidence_gap(terms: QuestionTerms, hits: Sequence[Hit], language: str, *, words: bool = True) -> str | None:
    """Why ``hits`` cannot answer the question of ``terms`` (``None`` when they may): none found, a
    name or code of the question in none of them, or (with ``words``) none sharing a word with it.
    A model that follows instructions reads paraphrases ("how high" of a passage saying "tall"),
    so its callers leave ``words`` off."""
    if not hits:
        return text("nothing_found", language)
    missing = terms.missing_names(" ".join(f"{hit.title} {hit.text}" for hit in hits))
    if missing:
        return text("names_missing", language, names=", ".join(missing))
    if words and not any(terms.mentions(f"{hit.title} {hit.text}") for hit in hits):
        return text("off_topic", language)
    return None


def not_found_text(query: str, detail: str, language: str) -> str:
    """The answer saying the documents don't say, with what was searched."""
    return text("not_found", language, query=query[:200], detail=detail)
