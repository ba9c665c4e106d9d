"""What a search pays to see other processes' commits: search latency with and without the check.

Before every search the local index asks sqlite whether another connection committed
(``PRAGMA data_version``) and, when one did, catches up: reloads the BM25 searcher and reads
the vectors of the new chunks from sqlite. Rows, on one knowledge base of ``--chunks`` chunks:

- **no check**: searches with the check switched off (what a search cost before);
- **check, nothing new**: the usual case, the pragma alone;
- **check, 1 new document**: a second handle (its own sqlite connection, as another process
  would have) commits one document before each search, so every search catches up;
- **check, 1 deleted document**: the same with a delete (the catch-up reads the removed keys
  from the removal log; before it had one, it compared every key).

Rows run in interleaved rounds in one process, so a change in the machine's load is shared;
the table shows the median and 90th percentile of a hybrid search (top 10) in milliseconds.
The embedder is a hash of the words (no model), so the figures are the index's own cost.

Usage::

    python benchmarks/kb_freshness.py                     # 20,000 chunks, 7 rounds
    python benchmarks/kb_freshness.py --chunks 100000 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from reasonloop.config import Settings
from reasonloop.kb.embedding.embedders import Embedder
from reasonloop.kb.knowledge_base import KnowledgeBase

_WORD = re.compile(r"\w+")


class HashEmbedder(Embedder):
    """Bag-of-words vectors from hashed words: no model, so only the index is measured."""

    def __init__(self, dim: int = 384) -> None:
        self.name = "bench-hash"
        self.dim = dim
        self.max_batch = 64

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in _WORD.findall(text.lower()):
            v[int.from_bytes(hashlib.blake2b(w.encode(), digest_size=4).digest(), "little") % self.dim] += 1.0
        return v / (float(np.linalg.norm(v)) or 1.0)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vec(t) for t in texts])

    async def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vec(t) for t in texts])


WORDS = [f"w{i}" for i in range(5000)]


def text(i: int) -> str:
    rng = np.random.default_rng(i)
    return " ".join(WORDS[j] for j in rng.integers(0, len(WORDS), 40))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--searches", type=int, default=20, help="searches per row and round")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kb"
        settings = Settings(kb={"options": {"commit_chunks": 512}})
        kb = KnowledgeBase.open(path, settings=settings, embedder=HashEmbedder())
        began = time.perf_counter()
        await kb.ingest_records([(f"d{i}", "", text(i)) for i in range(args.chunks)])
        print(f"{args.chunks:,} chunks ingested in {time.perf_counter() - began:.1f}s", file=sys.stderr)
        other = KnowledgeBase.open(path, settings=settings, embedder=HashEmbedder())
        index = kb.index
        real_catch_up = index.catch_up
        rng = np.random.default_rng(0)
        serial = [0]

        async def no_check() -> None:
            index.catch_up = lambda **_: False  # type: ignore[method-assign]

        async def check() -> None:
            index.catch_up = real_catch_up  # type: ignore[method-assign]

        async def new_document() -> None:
            await check()
            serial[0] += 1
            await other.ingest_records([(f"new{serial[0]}", "", text(10_000_000 + serial[0]))])

        async def deleted_document() -> None:
            await check()
            await other.delete(f"new{serial[0]}")
            serial[0] -= 1

        rows = {
            "no check": no_check,
            "check, nothing new": check,
            "check, 1 new document": new_document,
            "check, 1 deleted document": deleted_document,
        }
        times: dict[str, list[float]] = {name: [] for name in rows}
        for round_ in range(args.rounds + 1):  # the first round warms up
            for name, before in rows.items():
                for _ in range(args.searches):
                    await before()
                    query = text(int(rng.integers(0, args.chunks)))[:60]
                    began = time.perf_counter()
                    await kb.search(query, top_k=10)
                    if round_:
                        times[name].append((time.perf_counter() - began) * 1000)
        await other.close()
        await kb.close()

    print(f"\nhybrid search, top 10, {args.chunks:,} chunks, {args.rounds} rounds x {args.searches} searches\n")
    print(f"| {'row':<28} | median ms | p90 ms |")
    print(f"|{'-' * 30}|----------:|-------:|")
    for name, values in times.items():
        p90 = statistics.quantiles(values, n=10)[-1]
        print(f"| {name:<28} | {statistics.median(values):9.3f} | {p90:6.3f} |")


if __name__ == "__main__":
    asyncio.run(main())
