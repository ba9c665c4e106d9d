"""Framework time per tool-calling step, reasonloop beside other agent frameworks.

Every agent answers the same question with a fake model that costs nothing: it calls a
no-op tool once per turn for ``--steps`` turns (20 by default), then answers. What a run
takes is then the framework's own work: building prompts, parsing the reply, dispatching
the tool, keeping history and, for reasonloop, emitting and consuming the event stream.
One run is timed from the call to the returned answer (for reasonloop: until the event
stream is exhausted); per-step time is that time divided by ``--steps``. Each framework
runs in its own subprocess, one at a time, after a few untimed warm-up runs; the runs are
split over interleaved rounds so that a change in the machine's load is shared by all.
Every timed run is checked to have called the tool ``--steps`` times and answered.

The peers are not dependencies of reasonloop: install them in a separate environment
(``benchmarks/peers/setup.sh``) and point ``--python`` at its interpreter. reasonloop and
the plain loops run in the interpreter running this script.

Usage::

    python benchmarks/overhead.py                          # 200 timed runs each, in 4 rounds
    python benchmarks/overhead.py --quick                  # 30 timed runs each, 1 round
    python benchmarks/overhead.py --python /work/benchenv/bin/python --only smolagents,reasonloop-toolcall
    python benchmarks/overhead.py --quick --only reasonloop-toolcall,reasonloop-toolcall/traced,reasonloop-react,reasonloop-react/traced

The ``/traced`` rows run with OpenTelemetry tracing on (spans to the SDK's in-memory exporter); the
table ends with what tracing adds per tool step beside the same strategy with it off.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import inspect
import json
import os
import platform
import pstats
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from overhead_frameworks import ANSWER, BUILDERS, Script  # noqa: E402

OURS = ("reasonloop-toolcall", "reasonloop-react", "reasonloop-toolcall/min-llm", "reasonloop-react/min-llm")
TRACED = {"reasonloop-toolcall/traced": "reasonloop-toolcall", "reasonloop-react/traced": "reasonloop-react"}
"""Runs with OpenTelemetry tracing on (in-memory exporter), beside the same runs with it off."""
FLOORS = ("plain", "plain-async")
PEERS = ("smolagents", "langgraph", "pydantic-ai", "llamaindex")
DEFAULT_PEER_PYTHON = Path("/work/benchenv/bin/python")
GOAL = 10.0
"""reasonloop should take less than 1/GOAL of the fastest peer's time per step."""


# -- worker: runs inside the subprocess ------------------------------------------------------------
def _version(dist: str) -> str:
    if not dist:
        return platform.python_version()
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "?"


def _measure(
    name: str, runs: int, warmup: int, steps: int, cpu: bool, profiler: cProfile.Profile | None
) -> dict[str, Any]:
    clock = time.process_time_ns if cpu else time.perf_counter_ns
    dist, build = BUILDERS[name]
    script = Script(steps)
    run, tools_called = build(script)
    samples: list[float] = []
    if profiler:  # the runs only, not imports and construction
        profiler.enable()

    def check(result: Any, index: int) -> None:
        if tools_called() != steps or script.turn != steps + 1 or ANSWER not in repr(result):
            raise RuntimeError(
                f"run {index}: expected {steps} tool calls, {steps + 1} model turns and the answer; got "
                f"{tools_called()} tool calls, {script.turn} turns, result {repr(result)[:300]}"
            )

    if inspect.iscoroutinefunction(run):

        async def loop() -> None:
            for i in range(warmup + runs):
                script.reset()
                started = clock()
                result = await run()
                elapsed = clock() - started
                check(result, i)
                if i >= warmup:
                    samples.append(elapsed)

        asyncio.run(loop())
    else:
        for i in range(warmup + runs):
            script.reset()
            started = clock()
            result = run()
            elapsed = clock() - started
            check(result, i)
            if i >= warmup:
                samples.append(elapsed)
    return {
        "name": name,
        "version": _version(dist),
        "python": platform.python_version(),
        "interpreter": sys.executable,
        "per_step_us": [ns / steps / 1000 for ns in samples],
    }


def _worker(args: argparse.Namespace) -> int:
    profiler = cProfile.Profile() if args.profile else None
    try:
        result = _measure(args.worker, args.runs, args.warmup, args.steps, args.clock == "cpu", profiler)
    except Exception as exc:  # reported as a row, the other frameworks still run
        result = {"name": args.worker, "error": f"{type(exc).__name__}: {exc}"}
    finally:
        if profiler:
            profiler.disable()
    if profiler:
        print(f"== cProfile of {args.worker}: top functions by own time ==", file=sys.stderr)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(args.profile)
    print(json.dumps(result))
    return 0


# -- driver: spawns one worker per framework ----------------------------------------------------------
def _spawn(python: str, name: str, args: argparse.Namespace, runs: int) -> dict[str, Any]:
    command = [python, str(Path(__file__).resolve()), "--worker", name]
    command += ["--runs", str(runs), "--warmup", str(args.warmup), "--steps", str(args.steps), "--clock", args.clock]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false"}
    if args.profile:
        command += ["--profile", str(args.profile)]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout, env=env, check=False)
        if args.profile:
            sys.stderr.write(proc.stderr)
    except subprocess.TimeoutExpired:
        return {"name": name, "error": f"no result within {args.timeout:g}s"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"name": name, "error": f"worker exited {proc.returncode}: {tail}"}
    return json.loads(lines[-1])


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[8] if len(values) > 1 else values[0]


def _summarise(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for row in results:
        if "per_step_us" in row:
            row["median_us"] = statistics.median(row["per_step_us"])
            row["p90_us"] = _p90(row["per_step_us"])
    timed = {r["name"]: r for r in results if "median_us" in r}
    peers = [timed[n] for n in PEERS if n in timed]
    fastest = min(peers, key=lambda r: r["median_us"]) if peers else None
    plain = timed.get("plain")
    for row in timed.values():
        row["x_fastest_peer"] = row["median_us"] / fastest["median_us"] if fastest else None
        row["x_plain"] = row["median_us"] / plain["median_us"] if plain else None
    return sorted(results, key=lambda r: r.get("median_us", float("inf")))


def _table(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    def ratio(value: float | None) -> str:
        if value is None:
            return "-"
        return f"{value:,.1f}x" if value >= 1 else f"1/{1 / value:,.1f}"

    header = ("framework", "version", "median µs/step", "p90 µs/step", "vs fastest peer", "vs plain loop")
    rows, errors = [], []
    for r in results:
        if "error" in r:
            rows.append((r["name"], "-", "failed", "failed", "-", "-"))
            errors.append(f"{r['name']} failed: {r['error']}")
            continue
        median, p90 = f"{r['median_us']:.1f}", f"{r['p90_us']:.1f}"
        rows.append((r["name"], r["version"], median, p90, ratio(r["x_fastest_peer"]), ratio(r["x_plain"])))
    widths = [max(len(str(row[i])) for row in (header, *rows)) for i in range(len(header))]
    right = {2, 3, 4, 5}

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    out = [
        f"{args.steps} tool steps + 1 answer per run, {args.runs} timed runs in {args.rounds} interleaved round(s) "
        f"after {args.warmup} warm-up runs each, {args.clock} clock, "
        f"zero-latency fake model, no-op tool; {os.cpu_count()} CPUs, load average {load}"
        + ("; UNDER cProfile, times inflated" if args.profile else ""),
        line(header),
        line(tuple("-" * w for w in widths)),
        *(line(row) for row in rows),
        *errors,
    ]
    timed = {r["name"]: r for r in results if "median_us" in r}
    peers = [timed[n] for n in PEERS if n in timed]
    if peers:
        fastest = min(peers, key=lambda r: r["median_us"])
        limit = fastest["median_us"] / GOAL
        out.append(f"goal: under 1/{GOAL:g} of the fastest peer ({fastest['name']}) = {limit:.1f} µs/step")
        for name in OURS:
            if name in timed:
                verdict = "met" if timed[name]["median_us"] < limit else "NOT met"
                out.append(f"  {name}: {timed[name]['median_us']:.1f} µs/step -> {verdict}")
    pairs = [(on, off) for on, off in TRACED.items() if on in timed and off in timed]
    if pairs:
        out.append("tracing (OpenTelemetry, in-memory exporter): off -> on, µs per tool step")
        for on, off in pairs:
            before, after = timed[off]["median_us"], timed[on]["median_us"]
            out.append(f"  {off}: {before:.1f} -> {after:.1f} (+{after - before:.1f} µs, {after / before:.2f}x)")
    return "\n".join(out)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="30 timed runs and 5 warm-up runs per framework")
    parser.add_argument("--runs", type=int, help="timed runs per framework (default 200)")
    parser.add_argument("--warmup", type=int, help="untimed runs first (default 20)")
    parser.add_argument(
        "--rounds", type=int, help="split the runs over this many interleaved passes (default 4, --quick 1)"
    )
    parser.add_argument("--steps", type=int, default=20, help="tool calls per run before the answer")
    parser.add_argument(
        "--python",
        help="interpreter with the peer frameworks installed "
        f"(default {DEFAULT_PEER_PYTHON} if it exists, else this interpreter)",
    )
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall: elapsed time (default); cpu: CPU time of the framework's process, all threads "
        "(steadier on a busy machine, but blind to time spent waiting)",
    )
    parser.add_argument("--only", help="comma-separated frameworks: " + ", ".join((*OURS, *TRACED, *FLOORS, *PEERS)))
    parser.add_argument("--json", type=Path, help="also write every sample to this file")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds allowed per framework")
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="run each framework under cProfile and print its N most expensive functions (slows every run)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.runs = args.runs or (30 if args.quick else 200)
    args.warmup = args.warmup if args.warmup is not None else (5 if args.quick else 20)
    args.rounds = args.rounds or (1 if args.quick else 4)
    if args.steps < 1 or args.runs < 1 or args.warmup < 0:
        parser.error("--steps and --runs must be at least 1, --warmup at least 0")
    if not 1 <= args.rounds <= args.runs:
        parser.error("--rounds must be between 1 and --runs")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    if args.worker:
        return _worker(args)
    peer_python = args.python or (str(DEFAULT_PEER_PYTHON) if DEFAULT_PEER_PYTHON.exists() else sys.executable)
    names = [*OURS, *TRACED, *FLOORS, *PEERS]
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            print(f"unknown framework(s): {', '.join(unknown)}; choose from {', '.join(names)}", file=sys.stderr)
            return 2
        names = [n for n in names if n in wanted]
    results = []
    # Rounds interleave the frameworks, so a change in the machine's load during the
    # benchmark spreads over all of them instead of landing on whichever ran then.
    pooled: dict[str, dict[str, Any]] = {}
    for round_no in range(1, args.rounds + 1):
        runs = args.runs // args.rounds + (1 if round_no <= args.runs % args.rounds else 0)
        for name in names:
            if "error" in pooled.get(name, {}):
                continue
            python = peer_python if name in PEERS else sys.executable
            print(f"round {round_no}/{args.rounds}: {name} ({python}) ...", file=sys.stderr, flush=True)
            result = _spawn(python, name, args, runs)
            if name in pooled and "per_step_us" in result:
                pooled[name]["per_step_us"] += result["per_step_us"]
            else:
                pooled[name] = result
    results = _summarise(list(pooled.values()))
    print(_table(results, args))
    if args.json:
        args.json.write_text(json.dumps({"steps": args.steps, "runs": args.runs, "results": results}, indent=1))
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
