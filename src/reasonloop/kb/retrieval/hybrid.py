"""Hybrid retrieval: dense and BM25 results fused by normalised scores or by reciprocal rank.

:func:`score_fuse` (the default, ``fusion = "zscore"``) normalises each retriever's scores per
query (z-score, or min-max to [0, 1]) and sums them with weights. Unlike RRF it keeps how far
apart the scores are: a clear winner in one retriever is not levelled with a near-tie. Measured,
score fusion ranks above RRF at nearly every weight, and the weight has a plateau around equal
shares (benchmarks/README.md, "Fusion").

BM25 has a natural zero: a text that shares no word with the query scores 0
(:data:`LEXICAL_LOW`), and every candidate BM25 returns scores above it. Score fusion measures
BM25 from there. Standardising BM25 over its own candidates alone loses a rare word: when one
chunk holds it (a product code, a name, an error number), the lone candidate's z-score is 0,
as low as the texts BM25 did not return, and the vectors alone decide; two or three candidates
get -1 / +1 whatever their scores. So the z-scores of BM25 are taken over every fused item,
those BM25 did not return counted at 0 (min-max scales from 0 to the best BM25 score). A lone
match then stands far above the rest, and a few matches keep the size of their scores. Dense
scores (cosines) have no such zero and are standardised over their candidates, an item below
the cut-off getting the lowest of them.

:func:`rrf_fuse` is a pure function. Each ranking contributes ``weight / (k + rank)`` for every
item it ranks (rank starts at 1); ``k`` damps the head so that one retriever's first place does
not drown the other's agreement (k = 60 is the value of the original RRF paper, Cormack et al.
2009). Equal-weight RRF produces many exact ties (an item ranked 1st by one retriever and 3rd by
the other scores the same as the reverse), so ties are broken deliberately: best single rank
first, then the earlier ranking (dense by default) wins, then the smaller key.

:class:`HybridRetriever` applies metadata filters *before* top-k: the backend turns the filters
into what it can search under (the local index: the set of allowed chunk keys; Milvus: an
expression it evaluates itself), and both retrievers search only among those. Who may read
which document (:mod:`reasonloop.kb.access`) is one more such condition: a retriever made for a
:class:`~reasonloop.kb.access.Reader` always searches under it, so a document that reader may not
read never takes a place in a ranking; when the condition cannot be worked out, the search
finds nothing.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any, Literal, Protocol

from reasonloop.errors import KBError
from reasonloop.kb.access import EVERYONE, Reader
from reasonloop.kb.base import Filter, Hit

__all__ = [
    "FusionMethod",
    "HybridRetriever",
    "Reranker",
    "SearchBackend",
    "SearchMode",
    "normalise_scores",
    "rrf_fuse",
    "score_fuse",
]

SearchMode = Literal["hybrid", "dense", "lexical"]
FusionMethod = Literal["zscore", "minmax", "rrf"]
Reranker = Callable[[str, list[Hit]], list[Hit] | Awaitable[list[Hit]]]
"""Re-orders (and may re-score or drop) the fused candidates for a query."""


logger = logging.getLogger(__name__)

_NOTHING = object()
"""What ``_allowed`` returns when a search can find nothing (an empty query, top_k 0, filters matching none)."""


def rrf_fuse(
    rankings: Sequence[Sequence[Hashable]], *, k: float = 60.0, weights: Sequence[float] | None = None
) -> list[tuple[Any, float]]:
    """Fuse rankings (best first) into one ``(item, score)`` list, best first.

    Args:
        rankings: One ranked list of items per retriever; a repeated item keeps its first rank.
        k: Rank damping constant (> 0).
        weights: One weight per ranking (default all 1.0).

    Raises:
        ValueError: ``k`` is not positive, or the weights do not match the rankings.
    """
    if k <= 0:
        raise ValueError(f"RRF k must be positive, got {k!r}")
    weights = list(weights) if weights is not None else [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    score: dict[Any, float] = {}
    best: dict[Any, tuple[int, int]] = {}
    for which, (ranking, weight) in enumerate(zip(rankings, weights, strict=True)):
        seen: set[Any] = set()
        for item in ranking:
            if item in seen:
                continue
            seen.add(item)
            rank = len(seen)
            score[item] = score.get(item, 0.0) + weight / (k + rank)
            if item not in best or (rank, which) < best[item]:
                best[item] = (rank, which)
    return sorted(score.items(), key=lambda kv: (-kv[1], best[kv[0]], _sortable(kv[0])))


def normalise_scores(
    scored: Sequence[tuple[Hashable, float]], how: str = "zscore", *, low: float | None = None
) -> dict[Any, float]:
    """``{item: normalised score}``: ``zscore`` to zero mean and unit deviation, ``minmax`` to [0, 1].

    Args:
        low: The score of an item the retriever does not match at all (BM25: 0), when it has
            one. ``minmax`` then scales from it rather than from the lowest candidate, so a lone
            candidate or a few scores apart keep their size (a lone candidate scores 1).

    Raises:
        ValueError: unknown ``how``.
    """
    if how not in ("zscore", "minmax"):
        raise ValueError(f"score normalisation must be zscore or minmax, got {how!r}")
    values = [s for _, s in scored]
    if not values:
        return {}
    if how == "minmax":
        bottom = min(values) if low is None else min(low, *values)
        span = max(values) - bottom
        if span <= 0:
            return {item: (1.0 if low is not None else 0.0) for item, _ in scored}
        return {item: (s - bottom) / span for item, s in scored}
    mean = math.fsum(values) / len(values)
    deviation = math.sqrt(math.fsum((s - mean) ** 2 for s in values) / len(values)) or 1.0
    return {item: (s - mean) / deviation for item, s in scored}


LEXICAL_LOW = 0.0
"""BM25's score for a text that shares no word with the query (every matching text scores above it)."""

CHUNKS_PER_DOCUMENT = 3
"""Chunks fetched per document wanted in a document search: a document's chunks crowd each other
in a run, and the fused scores are normalised over the documents that remain."""


def score_fuse(
    runs: Sequence[Sequence[tuple[Hashable, float]]],
    *,
    weights: Sequence[float] | None = None,
    how: str = "zscore",
    lows: Sequence[float | None] | None = None,
) -> list[tuple[Any, float]]:
    """Fuse scored runs (each best first) into one ``(item, score)`` list, best first.

    Each run's scores are normalised (:func:`normalise_scores`) and summed with ``weights``. An
    item a run did not return gets what that run gives a non-match: with a ``low`` for the run
    (BM25's 0), the normalised ``low``; without one, the run's lowest normalised score (the item
    fell below the cut-off). For ``zscore`` with a ``low``, the run is standardised over every
    fused item, those it did not return counted at ``low``: one or two matches then stand out
    by how far they are above a non-match instead of being standardised among themselves.
    Ties keep the order of first appearance, earlier runs first (dense before lexical).

    Args:
        lows: One per run: the score of an item the retriever does not match, or None.

    Raises:
        ValueError: the weights or lows do not match the runs, or ``how`` is unknown.
    """
    weights = list(weights) if weights is not None else [1.0] * len(runs)
    lows = list(lows) if lows is not None else [None] * len(runs)
    if len(weights) != len(runs) or len(lows) != len(runs):
        raise ValueError(f"{len(weights)} weights and {len(lows)} lows for {len(runs)} runs")
    order: dict[Any, int] = {}
    for run in runs:
        for item, _ in run:
            order.setdefault(item, len(order))
    normed: list[dict[Any, float]] = []
    floors: list[float] = []
    for run, low in zip(runs, lows, strict=True):
        if how == "zscore" and low is not None and run:
            raw = dict(run)
            full = normalise_scores([(item, raw.get(item, low)) for item in order], how)
            normed.append(full)
            floors.append(0.0)  # unused: every fused item has a score here
            continue
        n = normalise_scores(run, how, low=low)
        normed.append(n)
        if low is not None and how == "minmax" and n:
            floors.append(0.0)
        else:
            floors.append(min(n.values()) if n else 0.0)
    fused = {
        item: sum(w * n.get(item, floor) for n, w, floor in zip(normed, weights, floors, strict=True)) for item in order
    }
    return sorted(fused.items(), key=lambda kv: (-kv[1], order[kv[0]]))


async def _maybe(result: Any) -> Any:
    return await result if inspect.isawaitable(result) else result


def _best_per_document(run: Sequence[tuple[int, float]], owner: dict[int, str]) -> dict[str, tuple[int, float]]:
    """Each document's best ``(chunk key, score)``, in the order of the documents' best chunks
    (a key ``owner`` does not know, a chunk deleted meanwhile, is left out)."""
    out: dict[str, tuple[int, float]] = {}
    for key, score in run:
        doc = owner.get(key)
        if doc is not None:
            out.setdefault(doc, (key, score))
    return out


def _sortable(item: Any) -> tuple[int, Any]:
    return (0, item) if isinstance(item, int | float) else (1, str(item))


class SearchBackend(Protocol):
    """What a hybrid retriever needs from an index (integer chunk keys throughout)."""

    async def dense_search(self, query: str, k: int, allowed: Any) -> list[tuple[int, float]]: ...

    def lexical_search(
        self, query: str, k: int, allowed: Any
    ) -> list[tuple[int, float]] | Awaitable[list[tuple[int, float]]]:
        """BM25 results; a backend whose search waits on I/O (a server) returns an awaitable."""
        ...

    def allowed_keys(self, filters: Sequence[Filter], reader: Reader = EVERYONE) -> Any:
        """What the filters allow among the documents ``reader`` may read, in the backend's own
        terms (the local index: a set of chunk keys; Milvus: an expression), given back to both
        searches; empty when nothing matches."""
        ...

    def hydrate(self, scored: Sequence[tuple[int, float]]) -> list[Hit]: ...

    def documents_of(self, keys: Sequence[int]) -> dict[int, str]:
        """The document id of each chunk key that exists."""
        ...


class HybridRetriever:
    """Search an index by dense vectors, BM25, or both fused.

    Args:
        backend: The index to search.
        mode: ``hybrid``, ``dense`` or ``lexical``.
        top_k: Default number of hits.
        fusion: ``zscore`` (default) or ``minmax`` score fusion, or ``rrf``.
        rrf_k: RRF damping constant (``fusion = "rrf"``).
        weights: ``{"dense": w, "lexical": w}`` for fusion.
        candidates: Depth fetched from each retriever before fusing (at least ``top_k``); a
            document search fetches :data:`CHUNKS_PER_DOCUMENT` times as many chunks.
        reranker: Optional hook re-ordering the fused candidates.
        rerank_depth: How many fused candidates the reranker sees.
        reader: Whom every search is for: only the documents it may read are searched
            (:data:`~reasonloop.kb.access.EVERYONE` by default).

    Raises:
        ValueError: unknown mode, or non-positive sizes.
    """

    def __init__(
        self,
        backend: SearchBackend,
        *,
        mode: SearchMode = "hybrid",
        top_k: int = 10,
        fusion: FusionMethod = "zscore",
        rrf_k: float = 60.0,
        weights: dict[str, float] | None = None,
        candidates: int = 100,
        reranker: Reranker | None = None,
        rerank_depth: int = 50,
        reader: Reader = EVERYONE,
    ) -> None:
        if mode not in ("hybrid", "dense", "lexical"):
            raise ValueError(f"search mode must be hybrid, dense or lexical, got {mode!r}")
        if top_k <= 0 or candidates <= 0 or rrf_k <= 0:
            raise ValueError(f"top_k, candidates and rrf_k must be positive (got {top_k}, {candidates}, {rrf_k})")
        if fusion not in ("zscore", "minmax", "rrf"):
            raise ValueError(f"fusion must be zscore, minmax or rrf, got {fusion!r}")
        self.backend = backend
        self.mode = mode
        self.fusion = fusion
        self.top_k = top_k
        self.rrf_k = rrf_k
        self.weights = {"dense": 1.0, "lexical": 1.0, **(weights or {})}
        self.candidates = candidates
        self.reranker = reranker
        self.rerank_depth = rerank_depth
        self.reader = reader

    def fuse(
        self, dense: Sequence[tuple[Hashable, float]], lexical: Sequence[tuple[Hashable, float]]
    ) -> list[tuple[Any, float]]:
        """One dense and one BM25 run (each best first) fused by this retriever's fusion and weights.

        BM25 scores a text sharing no query word 0 (:data:`LEXICAL_LOW`), and score fusion
        measures BM25 candidates from there, so one or two candidates keep their weight.
        """
        weights = [self.weights["dense"], self.weights["lexical"]]
        if self.fusion == "rrf":
            return rrf_fuse([[key for key, _ in dense], [key for key, _ in lexical]], k=self.rrf_k, weights=weights)
        return score_fuse([dense, lexical], weights=weights, how=self.fusion, lows=[None, LEXICAL_LOW])

    async def similarity(self, query: str, texts: Sequence[str]) -> list[float] | None:
        """Cosine similarity of ``query`` to each of ``texts`` with the index's embedder (None without one).

        For ranking pieces of retrieved passages (sentences) against the question.
        """
        embedder = getattr(self.backend, "embedder", None)
        if embedder is None or not texts:
            return None if embedder is None else []
        import numpy as np

        q = np.asarray(await embedder.embed_queries([query]), dtype=np.float32)[0]
        p = np.asarray(await embedder.embed_passages(list(texts)), dtype=np.float32)
        norms = np.linalg.norm(p, axis=1) * (np.linalg.norm(q) or 1.0)
        return [float(v) for v in (p @ q) / np.where(norms > 0, norms, 1.0)]

    def _mode(self, mode: SearchMode | None) -> SearchMode:
        mode = mode or self.mode
        if mode not in ("hybrid", "dense", "lexical"):
            raise ValueError(f"search mode must be hybrid, dense or lexical, got {mode!r}")
        return mode

    def _allowed(self, query: str, top_k: int, filters: Sequence[Filter] | None) -> Any:
        """The chunk keys the filters allow (None: all), or ``_NOTHING`` when no search can find anything."""
        if top_k <= 0 or not query.strip():
            return _NOTHING
        if self.reader.everything:
            allowed = self.backend.allowed_keys(filters) if filters else None
            return _NOTHING if allowed is not None and not allowed else allowed
        try:
            allowed = self.backend.allowed_keys(filters or [], self.reader)
        except KBError:
            raise  # a malformed filter of the caller's: said as it is
        except Exception:  # failing closed: what the reader may read is unknown, so nothing is searched
            logger.exception("the access condition of a search failed; the search finds nothing")
            return _NOTHING
        return allowed if allowed else _NOTHING  # None (a backend that ignores readers) finds nothing too

    async def search_documents(
        self,
        query: str,
        top_k: int | None = None,
        filters: Sequence[Filter] | None = None,
        *,
        mode: SearchMode | None = None,
    ) -> list[Hit]:
        """The best chunk of each of the ``top_k`` best documents, ranked as documents.

        Each retriever's candidates (:data:`CHUNKS_PER_DOCUMENT` times ``candidates`` chunks, so
        that about ``candidates`` documents, at least ``top_k``, remain) are folded into documents
        first, a document scoring as its best chunk, and the document runs are fused:
        a document split into several chunks is neither counted twice in the normalisation nor
        pushed down by its own weaker chunks.
        The hit returned for a document is its best chunk, carrying the document's fused score.
        """
        top_k = self.top_k if top_k is None else top_k
        mode = self._mode(mode)
        allowed = self._allowed(query, top_k, filters)
        if allowed is _NOTHING:
            return []
        depth = CHUNKS_PER_DOCUMENT * max(self.candidates, top_k)
        runs: list[list[tuple[int, float]]] = []
        if mode in ("dense", "hybrid"):
            runs.append(await self.backend.dense_search(query, depth, allowed))
        if mode in ("lexical", "hybrid"):
            runs.append(await _maybe(self.backend.lexical_search(query, depth, allowed)))
        # Fold on chunk keys; only the chunks that stand for a kept document are read in full.
        owner = self.backend.documents_of(list({key for run in runs for key, _ in run}))
        folded = [_best_per_document(run, owner) for run in runs]
        if len(folded) == 1:
            ranked = [(doc, score) for doc, (_, score) in folded[0].items()]
        else:
            dense_docs, lexical_docs = ([(doc, score) for doc, (_, score) in run.items()] for run in folded)
            ranked = self.fuse(dense_docs, lexical_docs)
        best: dict[str, int] = {}
        for run in folded:  # the best chunk by the first retriever that found the document
            for doc, (key, _) in run.items():
                best.setdefault(doc, key)
        pool = max(top_k, self.rerank_depth) if self.reranker is not None else top_k  # the reranker may promote
        hits = self.backend.hydrate([(best[doc], score) for doc, score in ranked[:pool]])
        if self.reranker is not None and hits:
            result = self.reranker(query, hits)
            hits = await result if inspect.isawaitable(result) else result
        return hits[:top_k]

    async def search(
        self,
        query: str,
        top_k: int | None = None,
        filters: Sequence[Filter] | None = None,
        *,
        mode: SearchMode | None = None,
        rerank: bool | None = None,
        candidates: int | None = None,
    ) -> list[Hit]:
        """Best ``top_k`` chunks for ``query`` among those matching every filter.

        Args:
            rerank: ``False`` skips this retriever's reranker for this search (``None``/``True`` use it).
            candidates: How many fused candidates the reranker sees (default ``rerank_depth``).
        """
        top_k = self.top_k if top_k is None else top_k
        reranker = None if rerank is False else self.reranker
        depth = self.rerank_depth if candidates is None else max(1, candidates)
        mode = self._mode(mode)
        allowed = self._allowed(query, top_k, filters)
        if allowed is _NOTHING:
            return []
        pool = max(top_k, depth) if reranker else top_k
        if mode == "dense":
            scored = await self.backend.dense_search(query, pool, allowed)
        elif mode == "lexical":
            scored = await _maybe(self.backend.lexical_search(query, pool, allowed))
        else:
            fetch = max(self.candidates, pool)
            dense_task = asyncio.ensure_future(self.backend.dense_search(query, fetch, allowed))
            try:
                lexical = await _maybe(self.backend.lexical_search(query, fetch, allowed))
            except BaseException:
                dense_task.cancel()
                raise
            dense = await dense_task
            scored = self.fuse(dense, lexical)[:pool]
        hits = self.backend.hydrate(scored)
        if reranker is not None and hits:
            result = reranker(query, hits)
            hits = await result if inspect.isawaitable(result) else result
        return hits[:top_k]
