"""The tables ``retrieval.py`` prints: one per set, ours beside the published baselines, then costs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

__all__ = ["print_footer", "print_set", "published_baselines"]

GOALS = {"scifact": ("nDCG@10", 0.72), "cmrc2018": ("R@5", 0.90)}
TITLES = {
    "scifact": "BEIR SciFact (test)",
    "cmrc2018": "CMRC 2018 dev (Chinese): is the question's paragraph among the first k?",
    "hotpotqa": "HotpotQA dev IRCoT-500: both / any supporting paragraph in the first k",
}


def published_baselines(path: Path) -> list[tuple[str, float, float | None]]:
    """``(system, nDCG@10, R@100 or None)`` rows of the markdown table in BASELINES.md."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not line.lstrip().startswith("|"):
            continue
        ndcg = re.search(r"\d\.\d+", cells[1])
        if ndcg is None:
            continue
        recall = re.search(r"R@100\s+(\d\.\d+)", cells[1])
        rows.append((cells[0], float(ndcg.group()), float(recall.group(1)) if recall else None))
    return rows


def _table(header: list[str], rows: list[list[str]], *, numeric: bool = True) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    right = [bool(i) and numeric for i in range(len(header))]
    fmt = "| " + " | ".join(f"{{:{'>' if r else '<'}{w}}}" for w, r in zip(widths, right, strict=True)) + " |"
    sep = (
        "|"
        + "|".join(("-" * (w + 1) + ":") if r else ("-" * (w + 2)) for w, r in zip(widths, right, strict=True))
        + "|"
    )
    return "\n".join([fmt.format(*header), sep, *(fmt.format(*map(str, r)) for r in rows)])


def _quality(result: dict[str, Any], data_dir: Path) -> str:
    name = result["name"]
    metrics = result["metrics"]
    keys = list(next(iter(metrics.values())))
    rows = [[f"reasonloop {mode}", *(f"{metrics[mode][k]:.4f}" for k in keys)] for mode in metrics]
    if name == "scifact":
        baselines = data_dir / "beir_scifact" / "BASELINES.md"
        if baselines.exists():
            for system, ndcg, r100 in published_baselines(baselines):
                rows.append([f"published: {system}", f"{ndcg:.4f}", f"{r100:.4f}" if r100 is not None else "-"])
    return _table(["system", *keys], rows)


def _sweep(result: dict[str, Any]) -> str:
    sweep = result["sweep"]
    keys = [k for k in sweep[0] if k != "fusion"]
    rows = [[r["fusion"], *(f"{r[k]:.4f}" for k in keys)] for r in sweep]
    return _table(["fusion of the dense and lexical document rankings", *keys], rows)


def _costs(result: dict[str, Any]) -> str:
    ing = result["ingest"]
    rows = [
        [
            "ingest (vectors from cache where present)",
            f"{ing['chunks']} chunks, {ing['embedded']} embedded, {ing['seconds']:.1f} s = "
            f"{ing['chunks'] / ing['seconds']:.1f} chunks/s",
        ]
    ]
    tp = result.get("throughput")
    if tp:
        rows.append(
            [
                f"cold ingest vs bare embedder ({tp['docs']} docs, {tp['chunks']} chunks, x{tp.get('rounds', 1)})",
                f"pipeline {tp['pipeline_chunks_per_s']:.2f} chunks/s, embedder {tp['raw_chunks_per_s']:.2f} "
                f"chunks/s, ratio {tp['overhead']:.2f}",
            ]
        )
    for mode, lat in result["latency"].items():
        rows.append(
            [f"query latency {mode} (top 10, n={lat['n']})", f"p50 {lat['p50_ms']:.1f} ms, p95 {lat['p95_ms']:.1f} ms"]
        )
    parts = ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sorted(result["index_parts"].items()))
    rows.append(["index on disk", f"{result['index_bytes'] / 1e6:.1f} MB ({parts})"])
    rows.append(["peak RSS of the process so far", f"{result['peak_rss_mb']:.0f} MB"])
    return _table(["cost", "figure"], rows, numeric=False)


def print_set(result: dict[str, Any], embedder: str, data_dir: Path) -> None:
    """Print one set's quality table, fusion sweep and cost table as markdown."""
    name = result["name"]
    opts = result["options"]
    print(f"\n## {TITLES.get(name, name)}\n")
    print(
        f"{result['subset']}: {result['docs']} documents, {result['queries']} queries; "
        f"chunks of {opts.get('chunk_tokens')} tokens (overlap {opts.get('chunk_overlap')}); "
        f"embedder {embedder}\n"
    )
    print(_quality(result, data_dir))
    if name in GOALS:
        key, goal = GOALS[name]
        got = result["metrics"]["hybrid"][key]
        if result["subset"] == "full":
            print(f"\nGoal: hybrid {key} >= {goal:.2f}: {'met' if got >= goal else 'NOT met'} ({got:.4f})")
        else:
            print(f"\nGoal (judged on the full set only): hybrid {key} >= {goal:.2f}")
    print(
        "\nFusion sensitivity (chosen on these queries, so indicative only; "
        "the hybrid row above is the index's own setting):\n"
    )
    print(_sweep(result))
    print()
    print(_costs(result), flush=True)


def print_footer(meta: dict[str, Any]) -> None:
    """The command, wall time, machine load and peak memory of the run."""
    load = ", ".join(f"{x:.1f}" for x in meta["load_avg"])
    print(
        f"\n`{meta['command']}`: {meta['seconds']:.0f} s on {meta['cpus']} CPUs "
        f"(load average at the end {load}), peak RSS {meta['peak_rss_mb']:.0f} MB",
        flush=True,
    )
