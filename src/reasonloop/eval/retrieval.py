"""Retrieval evaluation: how well the knowledge base ranks a set's relevant documents.

The documents reach the index one of two ways:

- ``records``: through :meth:`KnowledgeBase.ingest_records`, one record per document with its
  title (what ``benchmarks/retrieval.py`` measures);
- ``files``: written as Markdown files (``# title`` then the text) and ingested from their folder
  with the index's defaults, as ``reasonloop ingest`` does: the path a user takes.

Every query is searched in each mode through :meth:`KnowledgeBase.search`; its chunk hits are
folded into a document ranking by the knowledge base's own document-level search
(``per_document=True``; or, with ``fetch``, the best ``fetch`` chunks folded here, a document
ranking where its best chunk ranks, as the benchmark does), and scored: nDCG@10, recall@k, MRR@10, with the latency of each search.

Example::

    ds = load_retrieval_set("../shared/data/beir_scifact")
    report = await evaluate_retrieval(ds, workdir="eval-work", ingest="files")
    print(report.metrics["hybrid"]["nDCG@10"])
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reasonloop.config import KBSettings, Settings
from reasonloop.errors import ConfigError
from reasonloop.eval.datasets import RetrievalSet
from reasonloop.eval.metrics import mean, mrr, ndcg_at_k, percentile, recall_at_k
from reasonloop.kb.base import Hit, IngestProgress
from reasonloop.kb.embedding.embedders import Embedder
from reasonloop.kb.knowledge_base import KnowledgeBase

__all__ = ["MODES", "RetrievalReport", "build_index", "evaluate_retrieval", "rank_queries", "score_rankings"]

MODES = ("lexical", "dense", "hybrid")
RECALL_KS = (1, 5, 10, 100)
_SAFE_NAME = re.compile(r"^[\w.-]{1,100}$")


@dataclass
class RetrievalReport:
    """Per mode: the metrics, latency percentiles and each query's ranking."""

    name: str
    ingest: str
    depth: int
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)
    latency: dict[str, dict[str, float]] = field(default_factory=dict)
    rankings: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    samples: dict[str, list[float]] = field(default_factory=dict)
    """Per mode, the latency of every search in ms."""
    index: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ingest": self.ingest,
            "depth": self.depth,
            "metrics": self.metrics,
            "latency": self.latency,
            "index": self.index,
        }


def score_rankings(
    rankings: dict[str, list[str]], qrels: dict[str, dict[str, int]], ks: Sequence[int] = RECALL_KS
) -> dict[str, float]:
    """nDCG@10, recall at each k and MRR@10 averaged over the ranked queries."""
    out = {"nDCG@10": mean(ndcg_at_k(rankings[q], qrels[q], 10) for q in rankings)}
    for k in ks:
        out[f"R@{k}"] = mean(recall_at_k(rankings[q], qrels[q], k) for q in rankings)
    out["MRR@10"] = mean(mrr(rankings[q], qrels[q], 10) for q in rankings)
    return out


def _write_files(ds: RetrievalSet, folder: Path) -> dict[str, str]:
    """Each document as ``<id>.md`` (or ``d<n>.md`` for an id unfit for a file name); file name -> id."""
    folder.mkdir(parents=True, exist_ok=True)
    names: dict[str, str] = {}
    for n, doc in enumerate(ds.docs):
        name = f"{doc.id}.md" if _SAFE_NAME.match(doc.id) and not doc.id.startswith(".") else f"d{n}.md"
        body = (f"# {doc.title.strip()}\n\n" if doc.title.strip() else "") + doc.text.strip() + "\n"
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != body:
            path.write_text(body, encoding="utf-8")
        names[name] = doc.id
    (folder.parent / "ids.json").write_text(json.dumps(names), encoding="utf-8")
    return names


async def build_index(
    ds: RetrievalSet,
    workdir: str | Path,
    *,
    ingest: str = "records",
    options: dict[str, Any] | None = None,
    embedder: Embedder | None = None,
    on_progress: Callable[[IngestProgress], None] | None = None,
) -> tuple[KnowledgeBase, Callable[[Hit], str]]:
    """Open (or reuse) the set's index under ``workdir`` and ingest what it lacks.

    Returns:
        The knowledge base (the caller closes it) and the function mapping a hit to the set's document id.

    Raises:
        ConfigError: ``ingest`` is neither ``records`` nor ``files``.
    """
    if ingest not in ("records", "files"):
        raise ConfigError(f"ingest must be records or files, got {ingest!r}")
    root = Path(workdir)
    kb_path = root / "kb"
    settings = Settings(kb=KBSettings(path=str(kb_path), options=dict(options or {})))
    kb = KnowledgeBase.open(kb_path, settings, embedder=embedder)
    try:
        if ingest == "records":
            await kb.ingest_records([(d.id, d.title, d.text) for d in ds.docs], on_progress=on_progress)
            return kb, lambda hit: hit.document_id
        names = _write_files(ds, root / "docs")
        await kb.ingest([str(root / "docs")], on_progress=on_progress)
    except BaseException:
        await kb.close()
        raise
    return kb, lambda hit: names.get(Path(hit.source).name, hit.source)


async def rank_queries(
    kb: KnowledgeBase,
    queries: Sequence[tuple[str, str]],
    mode: str,
    depth: int,
    *,
    doc_of: Callable[[Hit], str] = lambda hit: hit.document_id,
    fetch: int | None = None,
    on_query: Callable[[str, int, int], None] | None = None,
) -> tuple[dict[str, list[tuple[str, float]]], list[float]]:
    """Each query's document ranking (``depth`` ``(document, best chunk's score)``, best first) and
    each search's latency in ms.

    Without ``fetch`` the knowledge base folds chunks into documents (``search(per_document=True)``);
    with it, the best ``fetch`` chunks are folded here, a document ranking where its best chunk ranks.
    """
    ranks: dict[str, list[tuple[str, float]]] = {}
    times: list[float] = []
    for n, (qid, text) in enumerate(queries, start=1):
        started = time.perf_counter()
        if fetch:
            hits = await kb.search(text, top_k=fetch, mode=mode)  # type: ignore[arg-type]
        else:
            hits = await kb.search(text, top_k=depth, mode=mode, per_document=True)  # type: ignore[arg-type]
        times.append((time.perf_counter() - started) * 1000)
        best: dict[str, float] = {}
        for hit in hits:
            best.setdefault(doc_of(hit), hit.score)
        ranks[qid] = list(best.items())[:depth]
        if on_query:
            on_query(mode, n, len(queries))
    return ranks, times


async def evaluate_retrieval(
    ds: RetrievalSet,
    *,
    workdir: str | Path,
    ingest: str = "records",
    modes: Sequence[str] = MODES,
    depth: int = 100,
    options: dict[str, Any] | None = None,
    embedder: Embedder | None = None,
    limit: int | None = None,
    fetch: int | None = None,
    on_progress: Callable[[IngestProgress], None] | None = None,
    on_query: Callable[[str, int, int], None] | None = None,
) -> RetrievalReport:
    """Ingest ``ds`` (reusing the index in ``workdir``), search every query in each mode, score.

    Args:
        depth: Documents ranked per query (recall@k is reported for k up to it).
        options: ``[kb.options]`` of the index (default: the index's defaults).
        limit: Only the first ``limit`` queries.
        fetch: Fold the best ``fetch`` chunk hits into documents here (a document ranks where its
            best chunk ranks) instead of the knowledge base's document-level search.
        on_query: ``(mode, done, total)`` after each search.

    Raises:
        ConfigError: an unknown mode or ingest path.
    """
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ConfigError(f"unknown retrieval mode {unknown[0]!r} (choose from {', '.join(MODES)})")
    queries = ds.queries[:limit] if limit else ds.queries
    report = RetrievalReport(ds.name, ingest, depth)
    kb, doc_of = await build_index(
        ds, workdir, ingest=ingest, options=options, embedder=embedder, on_progress=on_progress
    )
    try:
        stats = await kb.stats()
        report.index = {"documents": stats.documents, "chunks": stats.chunks, "path": str(kb.path)}
        for mode in modes:
            scored, times = await rank_queries(kb, queries, mode, depth, doc_of=doc_of, fetch=fetch, on_query=on_query)
            ranks = {qid: [doc for doc, _ in pairs] for qid, pairs in scored.items()}
            report.rankings[mode] = ranks
            report.samples[mode] = times
            report.metrics[mode] = score_rankings(ranks, ds.qrels, [k for k in RECALL_KS if k <= depth])
            report.latency[mode] = {"p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95)}
    finally:
        await kb.close()
    return report
