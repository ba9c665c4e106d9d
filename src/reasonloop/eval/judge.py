"""Model-judged scores (off by default): faithfulness of an answer to its citations, answer relevance.

Any configured model can judge. It is asked one short question per score and must reply with
a verdict word; the verdict becomes 1.0 or 0.0, and a reply with no verdict scores None (not
counted) rather than a guess.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from reasonloop.llm.base import LLM, Message, collect

__all__ = ["Judge"]

FAITHFULNESS = (
    "You check answers against their sources. Sources:\n{sources}\n\nAnswer: {answer}\n\n"
    "Is every statement of the answer supported by the sources? Reply with one word: YES or NO."
)
RELEVANCE = (
    "Question: {question}\nAnswer: {answer}\n\n"
    "Does the answer address the question (whether or not it is correct)? Reply with one word: YES or NO."
)
_VERDICT = re.compile(r"\b(YES|NO)\b|(是|否|不是)", re.IGNORECASE)


def _verdict(text: str) -> float | None:
    m = _VERDICT.search(text)
    if not m:
        return None
    word = (m.group(1) or m.group(2)).upper()
    return 1.0 if word in ("YES", "是") else 0.0


class Judge:
    """Scores answers with ``llm``.

    Args:
        llm: The judging model.
        max_source_chars: Each cited passage is cut to this many characters in the prompt.
    """

    def __init__(self, llm: LLM, max_source_chars: int = 1500) -> None:
        self.llm = llm
        self.max_source_chars = max_source_chars

    async def _ask(self, prompt: str) -> float | None:
        reply = await collect(self.llm.stream([Message.user(prompt)], max_tokens=8, temperature=0))
        return _verdict(reply.text)

    async def score(self, question: str, answer: str, sources: Sequence[str]) -> dict[str, Any]:
        """``{"faithfulness": 1.0/0.0/None, "relevance": ...}``; faithfulness is None without sources."""
        out: dict[str, Any] = {"faithfulness": None, "relevance": None}
        if sources:
            numbered = "\n".join(f"[{i}] {s[: self.max_source_chars]}" for i, s in enumerate(sources, start=1))
            out["faithfulness"] = await self._ask(FAITHFULNESS.format(sources=numbered, answer=answer))
        out["relevance"] = await self._ask(RELEVANCE.format(question=question, answer=answer))
        return out
