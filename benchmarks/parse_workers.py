"""What parsing in worker processes costs, beside parsing in the ingesting process, in one run.

Two folders are made in a temporary directory:

- ``small``: 300 small text files (Markdown and ``.txt``, a paragraph each) and 60 small HTML
  pages: the case where a worker costs most beside the parse itself;
- ``mixed``: text PDFs, scanned (image-only) PDFs, ``.docx`` and ``.xlsx`` files: the case
  parallel parsing is for.

Each row parses every file of a folder once, through the same code the ingest uses
(:class:`reasonloop.kb.ingest.parsing.ParsePool`), and reports the wall time per file:

- ``in-process``: :func:`load_bytes` in this process, no limits (the floor);
- ``pool``: the pool as the ingest uses it (text kinds in-process, the rest in reused workers);
- ``pool, all in workers``: every file in a worker, ``files_per_worker`` 64 (the default);
- ``pool, a process per file``: every file in a fresh worker (``files_per_worker`` 1);
- on ``mixed``, the pool with 1 worker and with one per core, files parsed at once as the ingest
  does (threads handing files to the pool).

Run::

    python benchmarks/parse_workers.py            # needs the documents extra for scans, .xlsx
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reasonloop.kb.ingest.limits import ParseLimits
from reasonloop.kb.ingest.loaders import load_bytes
from reasonloop.kb.ingest.parsing import ParsePool

PARAGRAPH = (
    "The harbour master logs every vessel that enters after dark, with its flag, its cargo and the "
    "berth it was given; the log is read each morning by the port authority."
)


def small_folder(root: Path, texts: int, pages: int) -> list[Path]:
    root.mkdir()
    for i in range(texts):
        suffix = ".md" if i % 2 else ".txt"
        (root / f"note{i:04d}{suffix}").write_text(f"# Note {i}\n\n{PARAGRAPH} ({i})\n", encoding="utf-8")
    for i in range(pages):
        html = f"<html><head><title>Page {i}</title></head><body><article><p>{PARAGRAPH}</p></article></body></html>"
        (root / f"page{i:03d}.html").write_text(html, encoding="utf-8")
    return sorted(root.iterdir())


def mixed_folder(root: Path) -> list[Path]:
    from tests.kb import documents
    from tests.kb.helpers import make_docx

    root.mkdir()
    for i in range(8):
        (root / f"text{i}.pdf").write_bytes(documents.text_pdf([f"{PARAGRAPH} page {n}" for n in range(1, 6)]))
        (root / f"doc{i}.docx").write_bytes(make_docx([PARAGRAPH] * 20))
    for i in range(4):
        (root / f"scan{i}.pdf").write_bytes(documents.scanned_pdf([[PARAGRAPH[:60], PARAGRAPH[60:120]]]))
        (root / f"sheet{i}.xlsx").write_bytes(
            documents.xlsx({"S": [["Name", "Note"]] + [[f"r{n}", PARAGRAPH] for n in range(50)]})
        )
    return sorted(root.iterdir())


def parse_all(files: list[Path], parse, threads: int = 1) -> float:
    started = time.perf_counter()

    def one(path: Path) -> None:
        parse(path.read_bytes(), str(path), suffix=path.suffix.lower(), default_title=path.stem)

    if threads == 1:
        for path in files:
            one(path)
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, files))
    return time.perf_counter() - started


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    cores = os.cpu_count() or 1
    print(f"cores: {cores}, python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as tmp:
        small = small_folder(Path(tmp) / "small", 300, 60)
        mixed = mixed_folder(Path(tmp) / "mixed")
        rows: list[tuple[str, str, int, float, int]] = []

        def row(folder: str, name: str, files: list[Path], limits: ParseLimits, threads: int = 1, **kw) -> None:
            if name == "in-process":
                seconds, started = parse_all(files, load_bytes), 0
            else:
                with ParsePool(limits, **kw) as pool:
                    seconds = parse_all(files, pool.parse, threads)
                started = pool.started
            rows.append((folder, name, len(files), seconds, started))

        parse_all(small[:5], load_bytes)  # imports, once, before anything is timed
        row("small", "in-process", small, ParseLimits())
        row("small", "pool", small, ParseLimits(workers=1))
        row("small", "pool, all in workers", small, ParseLimits(workers=1), in_process=False)
        row("small", "pool, a process per file", small, ParseLimits(workers=1, files_per_worker=1), in_process=False)
        parse_all([p for p in mixed if p.stem.endswith("0")], load_bytes)  # one of each kind: imports, OCR model
        row("mixed", "in-process", mixed, ParseLimits())
        row("mixed", "pool, 1 worker", mixed, ParseLimits(workers=1))
        row("mixed", f"pool, {cores} workers", mixed, ParseLimits(workers=cores), threads=cores)
    print()
    print("| folder | how | files | seconds | ms per file | workers started |")
    print("|---|---|---:|---:|---:|---:|")
    for folder, name, count, seconds, started in rows:
        print(f"| {folder} | {name} | {count} | {seconds:.2f} | {1000 * seconds / count:.1f} | {started} |")


if __name__ == "__main__":
    main()
