"""Command-line start-up: each command as a fresh process, beside the imports it cannot avoid.

Rows, each a whole process timed from spawn to exit (wall clock):

- **floor: typer** ``python -c "import typer"``: the CLI framework alone; ``--version``,
  ``--help`` and ``plugins`` are compared with it (goal for the first two: <= 1.5x);
- **typer app --help**: a two-command typer app printing its help, for reference: typer's own
  help renderer (rich, with its Markdown support) costs more than importing typer, so this row
  shows how much of ``reasonloop --help`` any typer app pays;
- **floor: search** ``python -c "import onnxruntime, sentencepiece, tantivy, usearch, jieba"``: the engines a
  search needs; ``search`` is compared with it (goal: <= 1.5x);
- ``reasonloop search`` on a small knowledge base the script ingests first, in English and
  in Chinese. ``Chinese, first`` starts with no jieba dictionary cache (the process prepares
  the dictionary and writes the cache); ``Chinese, cached`` runs right after it and reads it.
  ``English, lexical`` skips the query embedding: the embedding engine's threads are slowed
  down badly by other work on the machine, and this row shows the start-up without them.

Every command runs ``--repeat`` times in interleaved rounds (one run of each row per round,
after one warm-up round), so a change in the machine's load is shared by all rows; the table
shows the median, min and max of wall time and the median CPU time (user + system). The
processes run in a scratch directory with their own ``TMPDIR`` and ``XDG_CACHE_HOME`` (where
jieba's cache goes), no ``reasonloop.toml``, no ``REASONLOOP_*`` variables, and with bytecode
writing on (``PYTHONDONTWRITEBYTECODE`` dropped), as an installed package runs.

Usage::

    python benchmarks/startup.py                    # 7 rounds
    python benchmarks/startup.py --quick            # 3 rounds
    python benchmarks/startup.py --python /other/venv/bin/python   # another checkout's install
    python benchmarks/startup.py --json startup.json

``--python`` with ``PYTHONPATH=/other/checkout/src`` measures another checkout against the
same installed dependencies (how benchmarks/README.md compares before and after).

The exit status is 1 when a command failed (its output is printed), else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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

TYPER_APP = '''import typer

app = typer.Typer(name="app", no_args_is_help=True, add_completion=False)


@app.command()
def hello(name: str) -> None:
    """Say hello to NAME."""


@app.command()
def bye(name: str) -> None:
    """Say goodbye to NAME."""


app()
'''
"""The reference typer app: two commands, typer's defaults (rich help)."""

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
    cpu: list[float] = field(default_factory=list)
    """User + system CPU seconds of each run: less moved by other work on the machine than wall time."""


def _reasonloop(python: str) -> list[str]:
    script = Path(python).with_name("reasonloop")
    if script.exists():
        return [str(script)]
    return [python, "-c", "import sys; from reasonloop.cli import main; sys.argv[0] = 'reasonloop'; main()"]


def _environment(scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REASONLOOP_")}
    # Bytecode as an installed package has it: the warm-up round writes what is missing, so no
    # counted run compiles a module from source.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for name in ("tmp", "cache"):
        (scratch / name).mkdir(exist_ok=True)
    env["TMPDIR"] = str(scratch / "tmp")
    env["XDG_CACHE_HOME"] = str(scratch / "cache")
    return env


def _forget_jieba(scratch: Path) -> None:
    for where in (scratch / "tmp", scratch / "cache"):
        for cache in where.rglob("jieba*.cache"):
            cache.unlink()


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall seconds, CPU seconds and the outcome of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def _check(row: Row, done: subprocess.CompletedProcess[str]) -> str | None:
    """Why the run does not count (it failed, or a search found nothing), or None."""
    if done.returncode != 0:
        return f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    if row.name.startswith("search") and "1." not in done.stdout:
        return f"no hits\n{done.stdout[-2000:]}"
    return None


WIDTHS = (26, 7, 6, 6, 6, 13, 12, 6)


def _line(cells: tuple[str, ...]) -> str:
    """One row of the Markdown table: the command left-aligned, the figures right-aligned."""
    padded = (c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, WIDTHS, strict=True)))
    return "| " + " | ".join(padded) + " |"


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
        (scratch / "typer_app.py").write_text(TYPER_APP, encoding="utf-8")
        seconds, _, done = _run([*cli, "ingest", str(docs), "--kb", str(kb)], env, scratch)
        if done.returncode != 0:
            print(f"ingest failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
            return 1
        print(f"ingested {len(list(docs.iterdir()))} documents in {seconds:.1f}s")

        search = [*cli, "search", "--kb", str(kb), "--top-k", "3"]
        rows = [
            Row("floor: typer", [python, "-c", "import typer"]),
            Row("typer app --help", [python, str(scratch / "typer_app.py"), "--help"], "floor: typer"),
            Row("reasonloop --version", [*cli, "--version"], "floor: typer", 1.5),
            Row("reasonloop --help", [*cli, "--help"], "floor: typer", 1.5),
            Row("reasonloop plugins", [*cli, "plugins"], "floor: typer"),
            Row("floor: search", [python, "-c", "import onnxruntime, sentencepiece, tantivy, usearch, jieba"]),
            Row("search (English)", [*search, ENGLISH_QUERY], "floor: search", 1.5),
            Row("search (English, lexical)", [*search, "--mode", "lexical", ENGLISH_QUERY], "floor: search"),
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
                seconds, cpu, done = _run(row.argv, env, scratch)
                problem = _check(row, done)
                if problem:
                    failures[row.name] = problem
                elif round_no:
                    row.times.append(seconds)
                    row.cpu.append(cpu)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    medians = {row.name: statistics.median(row.times) for row in rows if row.times}
    cpu_medians = {row.name: statistics.median(row.cpu) for row in rows if row.cpu}
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"python {sys.version.split()[0]} ({python}), {rounds} rounds, load average {load}\n")
    print(_line(("command", "wall s", "min s", "max s", "cpu s", "wall vs floor", "cpu vs floor", "goal")))
    print("|" + "|".join("-" * (w + 2) if i == 0 else "-" * (w + 1) + ":" for i, w in enumerate(WIDTHS)) + "|")
    report = []
    for row in rows:
        if not row.times:
            print(_line((row.name, "failed", "", "", "", "", "", "")))
            continue
        median, cpu = medians[row.name], cpu_medians[row.name]
        floor = row.floor if row.floor in medians else None
        ratio = median / medians[floor] if floor else None
        cpu_ratio = cpu / cpu_medians[floor] if floor else None
        over = ratio is not None and row.goal is not None and ratio > row.goal
        cells = (
            row.name,
            f"{median:.3f}",
            f"{min(row.times):.3f}",
            f"{max(row.times):.3f}",
            f"{cpu:.3f}",
            f"{ratio:.2f}x" if ratio is not None else "",
            f"{cpu_ratio:.2f}x" if cpu_ratio is not None else "",
            f"{'!' if over else ''}{row.goal:.1f}x" if row.goal else "",
        )
        print(_line(cells))
        report.append(
            {
                "command": row.name,
                "median_s": median,
                "cpu_median_s": cpu,
                "times_s": row.times,
                "cpu_s": row.cpu,
                "vs_floor": ratio,
                "cpu_vs_floor": cpu_ratio,
            }
        )
    print("\n'!' marks a wall-time ratio over its goal.")
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
