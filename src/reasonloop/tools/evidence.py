"""A run's evidence: numbered once for the whole run, searched across every source, formatted to a budget.

Evidence numbers are shared by the whole run (one :class:`EvidenceLog`, in the run's
:class:`~reasonloop.tools.base.RunScope`): the same chunk keeps its number across searches and
sub-agents, so an answer can cite ``[3]`` from the first search and ``[7]`` from the second and
both map to :class:`~reasonloop.events.Citation` objects.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from typing import Any

from reasonloop.events import Citation
from reasonloop.kb.base import Hit, Retriever
from reasonloop.tokens import count_tokens, trim_to_tokens

__all__ = ["EvidenceLog", "format_evidence", "search_all"]


class EvidenceLog:
    """Numbers evidence for one run and remembers the citation behind each number."""

    __slots__ = ("_next", "_numbers", "citations", "hits")

    def __init__(self) -> None:
        self._numbers: dict[str, int] = {}
        self._next = 1
        self.citations: dict[int, Citation] = {}
        self.hits: dict[int, Hit] = {}
        """The passage behind each number (what an answer's citation quotes a sentence of)."""

    def add(self, hit: Hit) -> int:
        """The marker of ``hit`` (a new one the first time its chunk is seen)."""
        number = self._numbers.get(hit.chunk_id)
        if number is None:
            number = self._next
            self._next += 1
            self._numbers[hit.chunk_id] = number
            self.citations[number] = hit.citation(marker=number)
            self.hits[number] = hit
        return number

    def restore(self, number: int, hit: Hit) -> None:
        """Give ``hit`` the number it had before (a search replayed when a run resumes, not done
        again); nothing when its chunk or the number is taken. New passages are numbered after it."""
        if hit.chunk_id in self._numbers or number in self.hits:
            return
        self._numbers[hit.chunk_id] = number
        self.citations[number] = hit.citation(marker=number)
        self.hits[number] = hit
        self._next = max(self._next, number + 1)

    def add_citation(self, citation: Citation) -> None:
        """Keep a numbered citation produced by another tool (first one per number wins)."""
        if citation.marker is not None:
            self.citations.setdefault(citation.marker, citation)


def _accepts(retriever: Retriever, options: dict[str, Any]) -> dict[str, Any]:
    """The ``options`` the retriever's ``search`` takes (a plain :class:`Retriever` takes none)."""
    if not options:
        return options
    try:
        params = inspect.signature(retriever.search).parameters
    except (TypeError, ValueError):
        return {}
    return {k: v for k, v in options.items() if k in params}


async def search_all(retrievers: Sequence[Retriever], query: str, top_k: int, **options: Any) -> list[Hit]:
    """Search every retriever concurrently; merge by rank (round-robin), drop repeated chunks.

    Scores of different retrievers are not comparable, so hits are interleaved by their
    rank in each list. A failing retriever is skipped unless all of them fail. ``options``
    (``mode``, ``rerank``, ``candidates``) go to the retrievers whose ``search`` takes them.

    Raises:
        Exception: the first retriever's error, when every retriever failed.
    """
    if not retrievers:
        return []
    if len(retrievers) == 1:
        return list(await retrievers[0].search(query, top_k=top_k, **_accepts(retrievers[0], options)))[:top_k]
    results = await asyncio.gather(
        *(r.search(query, top_k=top_k, **_accepts(r, options)) for r in retrievers), return_exceptions=True
    )
    lists = [r for r in results if not isinstance(r, BaseException)]
    if not lists:
        first = results[0]
        assert isinstance(first, BaseException)
        raise first
    merged: list[Hit] = []
    seen: set[str] = set()
    for rank in range(max(len(hits) for hits in lists)):
        for hits in lists:
            if rank < len(hits) and hits[rank].chunk_id not in seen:
                seen.add(hits[rank].chunk_id)
                merged.append(hits[rank])
    return merged[:top_k]


def _label(hit: Hit) -> str:
    where = hit.source or hit.document_id
    page = hit.metadata.get("page")
    if page is not None:
        where += f", p. {page}"
    return f"{hit.title} ({where})" if hit.title else f"({where})"


def format_evidence(hits: Sequence[Hit], log: EvidenceLog, budget: int) -> tuple[str, list[Citation]]:
    """Numbered evidence blocks within ``budget`` tokens, and the citations they carry.

    Blocks are added in rank order; the one that crosses the budget is trimmed and the rest
    are left out, so the best evidence always survives.
    """
    blocks: list[str] = []
    citations: list[Citation] = []
    used = 0
    shown: set[str] = set()
    for hit in hits:
        if used >= budget:
            break
        if hit.chunk_id in shown:
            continue
        shown.add(hit.chunk_id)
        number = log.add(hit)
        header = f"[{number}] {_label(hit)}"
        body = hit.text.strip()
        cost = count_tokens(header) + count_tokens(body) + 1
        if used + cost > budget:
            body = trim_to_tokens(body, max(0, budget - used - count_tokens(header) - 1))
            if not body:
                break
            cost = budget - used
        blocks.append(f"{header}\n{body}")
        citations.append(log.citations[number])
        used += cost
    return "\n\n".join(blocks), citations
