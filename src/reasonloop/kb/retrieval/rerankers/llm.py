"""The ``llm`` reranker: listwise reranking by a chat model.

The model sees the query and the numbered candidates (each trimmed so that all of them fit the
token budget) and answers with the numbers, most relevant first: ``[3] > [1] > [2]``. Any text
around the numbers is ignored; numbers out of range or repeated are skipped; candidates it left
out follow the ones it ranked, in retrieval order (and the trace says how many it ranked). An
answer with no usable number is a failure, and the search keeps the retrieval order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reasonloop.errors import ConfigError, LLMBadResponse
from reasonloop.kb.retrieval.rerankers.base import RerankScores
from reasonloop.llm.base import LLM, Message
from reasonloop.registry import PluginInfo
from reasonloop.tokens import count_tokens, trim_to_tokens

__all__ = ["LLMReranker", "LLMRerankerOptions", "parse_ranking"]

PROMPT = """You rank search results by how well they answer a query.
Reply with the passage numbers only, most relevant first, separated by ">", for example: [2] > [5] > [1].
Rank every passage."""

_NUMBER = re.compile(r"\d+")


class LLMRerankerOptions(BaseModel):
    """The ``[kb.options.reranker]`` table of ``id = "llm"``."""

    model_config = ConfigDict(extra="forbid")

    llm: str = ""
    """``provider:model`` of the ranking model; empty uses the configured ``[llm]``."""
    max_prompt_tokens: int = Field(default=3000, ge=200)
    """Budget of the whole prompt: each candidate gets an equal share of what the query leaves."""
    max_candidates: int = Field(default=20, ge=2)
    """Candidates shown to the model at most; the rest follow in retrieval order."""
    max_tokens: int = Field(default=200, ge=8)
    """Length limit of the model's answer."""


def parse_ranking(text: str, n: int) -> list[int]:
    """Zero-based candidate indexes in the order the answer names them (1-based numbers in it),
    skipping numbers out of range and repeats; ``[]`` when it names none."""
    order: list[int] = []
    seen: set[int] = set()
    for match in _NUMBER.finditer(text):
        index = int(match.group()) - 1
        if 0 <= index < n and index not in seen:
            seen.add(index)
            order.append(index)
    return order


class LLMReranker:
    """Listwise reranking by a chat model.

    Args:
        options: :class:`LLMRerankerOptions` or its table.
        llm: The model to use (default: built from ``options.llm`` or the ``[llm]`` config on first use).

    Raises:
        ConfigError: invalid options.
    """

    info: ClassVar[PluginInfo] = PluginInfo.declared("reranker", "llm")

    def __init__(self, options: Mapping[str, Any] | LLMRerankerOptions | None = None, *, llm: LLM | None = None):
        try:
            self.options = options if isinstance(options, LLMRerankerOptions) else LLMRerankerOptions(**(options or {}))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"invalid llm reranker options: {problems}") from None
        self._llm = llm
        self._owns_llm = llm is None

    @property
    def llm(self) -> LLM:
        if self._llm is None:
            from reasonloop.llm.resolve import create_llm  # provider SDKs load when a ranking is asked for

            self._llm = create_llm(self.options.llm or None)
        return self._llm

    @property
    def name(self) -> str:
        return f"llm:{self._llm.name}" if self._llm is not None else f"llm:{self.options.llm or 'default'}"

    def prompt(self, query: str, texts: Sequence[str]) -> list[Message]:
        """The ranking request: the query and the numbered candidates, within the token budget."""
        fixed = count_tokens(PROMPT) + count_tokens(query) + 8 * len(texts) + 16
        share = max(16, (self.options.max_prompt_tokens - fixed) // max(len(texts), 1))
        passages = "\n\n".join(f"[{i}] {trim_to_tokens(t, share)}" for i, t in enumerate(texts, 1))
        return [Message.system(PROMPT), Message.user(f"Query: {query}\n\nPassages:\n{passages}\n\nRanking:")]

    async def score(self, query: str, texts: Sequence[str]) -> RerankScores:
        """Scores from the model's ranking: ``n - position`` for ranked candidates, below them the rest.

        Raises:
            LLMBadResponse: the answer names no candidate.
            LLMError: the model call failed.
        """
        shown = list(texts[: self.options.max_candidates])
        completion = await self.llm.complete(self.prompt(query, shown), max_tokens=self.options.max_tokens)
        order = parse_ranking(completion.text, len(shown))
        if not order:
            raise LLMBadResponse(f"the ranking model named no candidate: {completion.text[:120]!r}")
        n = len(texts)
        scores = [0.0] * n
        ranked = set(order)
        for position, index in enumerate(order):
            scores[index] = float(n - position)
        rest = [i for i in range(n) if i not in ranked]
        for offset, index in enumerate(rest):
            scores[index] = float(n - len(order) - offset) - 0.5  # below every ranked one, retrieval order kept
        note = "" if len(order) == len(shown) else f"the model ranked {len(order)} of {len(shown)}"
        return RerankScores(
            scores,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            note=note,
        )

    async def aclose(self) -> None:
        if self._owns_llm and self._llm is not None:
            await self._llm.aclose()
