"""What the readers condition costs a search: latency with and without it, side by side.

A knowledge base of ``--chunks`` one-chunk documents: a third readable by the ``finance`` group,
a third by the user ``bob`` alone, a third open to everyone. The same hybrid search (top 10) is
timed, in interleaved rounds in one process, as:

- **owner, no condition**: the knowledge base itself (it reads everything: no condition at all);
- **bob**: the view of a reader who may read two thirds (his own and the open ones);
- **finance member**: the view of a reader in the finance group (two thirds, another two);
- **no principal**: a reader who may read only the open third;
- **metadata filter, owner**: for scale, the owner with an equality filter on a chunk field
  that two thirds of the chunks match (the same allowed-set path with no readers).

The condition is applied inside the index query (the local index: the allowed chunk keys as
the vector search's mask and a BM25 term-set filter; Milvus: a ``key in [...]`` or
``doc_id in [...]`` expression), so every row ranks only what its reader may read. The table gives the median and 90th
percentile in milliseconds and the ratio of medians to the owner's. The embedder hashes words
(no model), so the figures are the index's own cost.

Usage::

    nice -n 10 python benchmarks/access_filter.py                         # local, 5,000 chunks
    nice -n 10 python benchmarks/access_filter.py --index milvus          # Milvus Lite
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kb_freshness import HashEmbedder, text

from reasonloop.config import Settings
from reasonloop.kb.access import Reader
from reasonloop.kb.knowledge_base import KnowledgeBase

READERS = ["group:finance", "user:bob", None]
"""Who may read document ``i``: ``READERS[i % 3]`` (``None``: everyone)."""


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--searches", type=int, default=20, help="searches per row and round")
    parser.add_argument("--index", choices=["local", "milvus"], default="local")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kb"
        options: dict = {"commit_chunks": 512}
        if args.index == "milvus":
            options["milvus_uri"] = str(Path(tmp) / "milvus.db")
        settings = Settings(kb={"index": args.index, "options": options})
        kb = KnowledgeBase.open(path, settings=settings, embedder=HashEmbedder())
        began = time.perf_counter()
        for which, readers in enumerate(READERS):
            records = [
                {"id": f"d{i}", "title": "", "text": text(i), "part": "kept" if i % 3 else "other"}
                for i in range(which, args.chunks, len(READERS))
            ]
            await kb.ingest_records(records, readers=None if readers is None else [readers])
        print(f"{args.chunks:,} chunks ingested in {time.perf_counter() - began:.1f}s", file=sys.stderr)

        views = {
            "owner, no condition": (kb, None),
            "bob": (kb.for_reader(Reader.of("bob", ["staff"])), None),
            "finance member": (kb.for_reader(Reader.of("carol", ["finance"])), None),
            "no principal": (kb.for_reader(Reader.of(None)), None),
            "metadata filter, owner": (kb, {"part": "kept"}),
        }
        expected = {"owner, no condition": 1.0, "bob": 2 / 3, "finance member": 2 / 3, "no principal": 1 / 3}
        for name, share in expected.items():  # each view searches what it should, no more
            view, _ = views[name]
            got = (await view.stats()).chunks
            assert abs(got - share * args.chunks) <= len(READERS), (name, got)
        rng = np.random.default_rng(0)
        times: dict[str, list[float]] = {name: [] for name in views}
        for round_ in range(args.rounds + 1):  # the first round warms up
            for name, (view, filters) in views.items():
                for _ in range(args.searches):
                    query = text(int(rng.integers(0, args.chunks)))[:60]
                    began = time.perf_counter()
                    hits = await view.search(query, top_k=10, filters=filters)
                    elapsed = (time.perf_counter() - began) * 1000
                    assert hits, name
                    if round_:
                        times[name].append(elapsed)
        await kb.close()

    base = statistics.median(times["owner, no condition"])
    print(
        f"\n{args.index} index, hybrid search, top 10, {args.chunks:,} chunks, "
        f"{args.rounds} rounds x {args.searches} searches\n"
    )
    print(f"| {'row':<24} | median ms | p90 ms | ratio to owner |")
    print(f"|{'-' * 26}|----------:|-------:|---------------:|")
    for name, values in times.items():
        p90 = statistics.quantiles(values, n=10)[-1]
        median = statistics.median(values)
        print(f"| {name:<24} | {median:9.3f} | {p90:6.3f} | {median / base:14.2f} |")


if __name__ == "__main__":
    asyncio.run(main())
