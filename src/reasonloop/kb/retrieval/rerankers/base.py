"""The reranker contract, and the step that applies one to a search's candidates.

A :class:`Reranker` scores candidate texts against a query. :class:`RerankStep` wraps one
into the hook :class:`~reasonloop.kb.retrieval.hybrid.HybridRetriever` calls with the fused hits: it
re-orders them by the new scores (each hit keeps its retrieval ``score`` and gains
``rerank_score``), and when the reranker fails — endpoint down, garbage answer, unparseable
ranking — it keeps the retrieval order and says why. Either way it files a
:class:`RerankReport` (what ran, on how many candidates, how long, which tokens) with the
reports being collected (:func:`collect_reports`), which is how a run's trace shows the step
without the retriever knowing about runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from reasonloop.errors import ConfigError
from reasonloop.kb.base import Hit
from reasonloop.registry import Registry, resolve

__all__ = ["RerankReport", "RerankScores", "RerankStep", "Reranker", "collect_reports", "create_reranker"]

logger = logging.getLogger(__name__)


@dataclass
class RerankScores:
    """What a reranker returns: one score per text (higher is more relevant), and its cost."""

    scores: list[float]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 1
    note: str = ""
    """Something the caller should know although the scores are usable (a partial ranking)."""


@runtime_checkable
class Reranker(Protocol):
    """A reranker plugin (kind ``reranker``), built from its options table."""

    name: str
    """``id:model`` as shown in traces."""

    async def score(self, query: str, texts: Sequence[str]) -> RerankScores:
        """One relevance score per text, in the order given.

        Raises:
            Exception: any failure; :class:`RerankStep` turns it into a warning.
        """
        ...

    async def aclose(self) -> None: ...


@dataclass
class RerankReport:
    """One rerank step as the trace shows it."""

    reranker: str
    candidates: int
    seconds: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    warning: str = ""
    """Why the retrieval order was kept (empty when the reranker's order was used)."""
    note: str = ""

    def summary(self) -> str:
        """One line for the trace."""
        cost = f"{self.seconds:.2f} s"
        if self.prompt_tokens or self.completion_tokens:
            cost += f", {self.prompt_tokens} prompt + {self.completion_tokens} completion tokens"
        if self.warning:
            return f"rerank by {self.reranker} failed after {cost}: {self.warning}; kept the retrieval order"
        text = f"reranked {self.candidates} candidates by {self.reranker} in {cost}"
        return f"{text} ({self.note})" if self.note else text


_reports: contextvars.ContextVar[list[RerankReport] | None] = contextvars.ContextVar("rerank_reports", default=None)


@contextlib.contextmanager
def collect_reports() -> Iterator[list[RerankReport]]:
    """Collect the reports of every rerank step run inside the block (tasks it starts included)."""
    reports: list[RerankReport] = []
    token = _reports.set(reports)
    try:
        yield reports
    finally:
        _reports.reset(token)


def _file(report: RerankReport) -> None:
    sink = _reports.get()
    if sink is not None:
        sink.append(report)
    if report.warning:
        logger.warning("%s", report.summary())


class RerankStep:
    """The hook a retriever calls with its fused hits: re-ordered by ``reranker``, never lost.

    Args:
        reranker: Scores the candidates.
        max_chars: Text of each hit given to the reranker (title first).
    """

    def __init__(self, reranker: Reranker, *, max_chars: int = 4000) -> None:
        self.reranker = reranker
        self.max_chars = max_chars

    async def __call__(self, query: str, hits: list[Hit]) -> list[Hit]:
        if not hits:
            return hits
        texts = [(f"{h.title}\n{h.text}" if h.title else h.text)[: self.max_chars] for h in hits]
        began = time.perf_counter()
        report = RerankReport(reranker=self.reranker.name, candidates=len(hits), seconds=0.0)
        try:
            result = await self.reranker.score(query, texts)
            if len(result.scores) != len(hits):
                raise ValueError(f"{len(result.scores)} scores for {len(hits)} candidates")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            report.seconds = time.perf_counter() - began
            report.warning = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            _file(report)
            return hits
        report.seconds = time.perf_counter() - began
        report.prompt_tokens, report.completion_tokens = result.prompt_tokens, result.completion_tokens
        report.calls, report.note = result.calls, result.note
        _file(report)
        order = sorted(range(len(hits)), key=lambda i: -result.scores[i])  # stable: ties keep retrieval order
        return [hits[i].model_copy(update={"rerank_score": float(result.scores[i])}) for i in order]


def create_reranker(options: Mapping[str, Any] | None, registry: Registry | None = None) -> Reranker | None:
    """The reranker an options table names (``{"id": "http", ...}``), or ``None`` without one.

    Raises:
        ConfigError: no ``id``, or options the plugin refuses.
        PluginNotFound: unknown reranker id.
    """
    if not options:
        return None
    rest = dict(options)
    plugin_id = rest.pop("id", None)
    if not isinstance(plugin_id, str) or not plugin_id:
        raise ConfigError("the reranker table needs an id (http, llm or llama_cpp)")
    factory: Any = resolve("reranker", plugin_id, registry)
    return factory(rest)  # type: ignore[no-any-return]
