"""Server CPU per streamed token, without sockets: reasonloop's run path beside a bare loop.

``ws_load.py`` measures the whole server over real sockets, where a run's CPU is mixed with
the kernel's and the client's, and tails move from run to run. This benchmark isolates what
the server's own Python costs per token, in one process pinned to one core:

* **ours**: the run manager executing ``--runs`` runs at once, each streaming ``--tokens``
  tokens from the scripted model (one every ``--delay`` seconds), with the SQLite run store
  and its journal, each event published to a WebSocket session's outbox, framed as the
  server's protocol frames it, and dropped instead of written to a socket; each run's socket
  is admitted by the server's gate first (an API key checked, a request taken from its rate
  budget) and its ``ask`` charged, as the session does;
* **bare**: the same number of tasks sleeping the same pace and sending the same frames
  (every field ours has, serialised with ``json.dumps``) through the same framing;
* **ours-nj**: ours with ``[runs] resume_interrupted`` off: no request or model reply kept in
  the store for a resume (ours keeps them, as served runs do by default).

CPU is ``time.process_time`` of the whole process (the store's writer thread included) from
the first run's start to the last run's end, divided by the frames sent. ``--delay`` small
enough to saturate the core makes wall time per token equal CPU time per token. Each stack
runs in its own subprocess, ``--repeat`` times, interleaved; the table shows medians.

Usage::

    python benchmarks/relay_cpu.py                     # 1000 runs x 60 tokens, 3 rounds
    python benchmarks/relay_cpu.py --runs 200 --repeat 1
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
import time
from typing import Any

STACKS = ("bare", "ours", "ours-nj")


REASONING = "toolcall"
"""The strategy of every run: with no tools to offer, it streams the model's reply as the answer."""


# -- worker: one stack in a subprocess ------------------------------------------------------------
class _NoSocket:
    """The outbox's ASGI fallback, never taken here: the direct writer takes every frame."""

    async def send(self, message: dict[str, Any]) -> None:
        raise AssertionError("a frame went to the ASGI path")


async def _ours(args: argparse.Namespace) -> tuple[float, float, int]:
    from reasonloop.agents import AgentRunner
    from reasonloop.config import APIKeySettings, KBSettings, RunsSettings, ServerSettings, Settings
    from reasonloop.llm.scripted import ScriptedProvider
    from reasonloop.runs.manager import RunManager
    from reasonloop.runs.models import RunRequest
    from reasonloop.runs.stores.sqlite.store import SQLiteRunStore
    from reasonloop.server.auth import hash_key
    from reasonloop.server.gate import Gate
    from reasonloop.server.transport.outbox import Outbox
    from reasonloop.server.transport.ws_protocol import text_frame

    sent = 0

    def write(text: str) -> bool:  # the protocol's direct writer, minus the socket
        nonlocal sent
        text_frame(text.encode())
        sent += 1
        return True

    with tempfile.TemporaryDirectory() as tmp:
        settings = RunsSettings(
            sqlite_path=f"{tmp}/runs.sqlite",
            max_concurrent=args.runs + 10,
            max_queued=args.runs,
            resume_interrupted=args.worker == "ours",
        )
        store = SQLiteRunStore(settings)
        await store.open()
        model = ScriptedProvider(replies=["tok " * args.tokens], chunk_size=4, delay_s=args.delay, repeat_last=True)
        # The runner `reasonloop serve` uses, over one model for every run (as it keeps one client).
        runner = AgentRunner(Settings(kb=KBSettings(path=tmp), runs=settings), llm=model)
        manager = RunManager(store, runner, settings)
        await manager.open()

        # Every run's socket through the gate, with a key and a rate limit that never refuses.
        key = APIKeySettings(sha256=hash_key("bench-key"), tenant="bench", rate_per_minute=1e9, burst=10**9)
        gate = Gate(ServerSettings(api_keys=[key]))
        handshake = {
            "type": "websocket",
            "path": "/v1/ws",
            "query_string": b"",
            "headers": [(b"host", b"127.0.0.1:8000"), (b"authorization", b"Bearer bench-key")],
            "subprotocols": ["reasonloop.v1"],
        }

        async def one() -> None:
            caller = await gate.admit(handshake)
            await gate.charge(caller)  # its ask
            record = await manager.start(RunRequest(question="q", reasoning=REASONING, tenant=caller.tenant))
            feed = await manager.read(record.run_id, 0, caller.tenant)
            outbox = Outbox(_NoSocket(), None, write)  # type: ignore[arg-type]
            prefix = '{"type":"event","run_id":' + json.dumps(record.run_id) + ',"event":'
            ended = asyncio.get_running_loop().create_future()

            def sink(payload: str, terminal: bool) -> None:
                outbox.put(prefix + payload + "}")
                if terminal and not ended.done():
                    ended.set_result(None)

            feed.attach(sink)
            await ended

        try:
            wall, cpu = time.perf_counter(), time.process_time()
            await asyncio.gather(*(one() for _ in range(args.runs)))
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        finally:
            await manager.close()
            await store.close()
    return cpu, wall, sent


async def _bare(args: argparse.Namespace) -> tuple[float, float, int]:
    from reasonloop.server.transport.ws_protocol import text_frame

    sent = 0

    async def send(text: str) -> None:
        nonlocal sent
        text_frame(text.encode())
        sent += 1

    async def one(n: int) -> None:
        run_id = f"run_{n:027d}"
        prefix = '{"type":"event","run_id":' + json.dumps(run_id) + ',"event":'
        lock = asyncio.Lock()
        head = {"run_id": run_id, "depth": 0, "parent_call_id": None, "final": False}
        frames = [("run_started", {"reasoning": "direct", "question": "q", "event_schema": 2})]
        frames += [("answer_delta", {"text": "tok "})] * args.tokens
        end = {"text": "tok " * args.tokens, "citations": [], "stop_reason": "final", "final": True}
        frames.append(("answer", end))
        for seq, (kind, fields) in enumerate(frames, 1):
            if kind == "answer_delta":
                await asyncio.sleep(args.delay)
            event = {**head, "seq": seq, "ts": time.time(), "type": kind, **fields}
            async with lock:
                await send(prefix + json.dumps(event) + "}")

    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(n) for n in range(args.runs)))
    return time.process_time() - cpu, time.perf_counter() - wall, sent


def _worker(args: argparse.Namespace) -> int:
    import uvloop

    from reasonloop.server.transport.process import tune_for_serving

    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, threads included
    tune_for_serving()
    cpu, wall, sent = uvloop.run(_bare(args) if args.worker == "bare" else _ours(args))
    print(json.dumps({"stack": args.worker, "cpu_s": cpu, "wall_s": wall, "frames": sent}))
    return 0


# -- parent ---------------------------------------------------------------------------------------
def _spawn(stack: str, args: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, __file__, "--worker", stack]
    command += ["--runs", str(args.runs), "--tokens", str(args.tokens), "--delay", str(args.delay)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{stack} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--tokens", type=int, default=60)
    parser.add_argument("--delay", type=float, default=0.01, help="seconds between a run's tokens")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--worker", choices=STACKS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(args)
    results: dict[str, list[dict[str, Any]]] = {stack: [] for stack in STACKS}
    for _ in range(args.repeat):
        for stack in STACKS:
            results[stack].append(_spawn(stack, args))
    print(f"{args.runs} runs x {args.tokens} tokens, a token every {args.delay:g}s, one core; medians of {args.repeat}")
    print(f"{'stack':<8} {'frames':>8} {'CPU us/frame':>13} {'wall us/frame':>14}")
    per_frame: dict[str, float] = {}
    for stack in STACKS:
        rows = results[stack]
        frames = rows[0]["frames"]
        if any(row["frames"] != frames for row in rows):
            raise SystemExit(f"{stack} sent a different number of frames in different rounds")
        cpu = statistics.median(row["cpu_s"] for row in rows) / frames * 1e6
        wall = statistics.median(row["wall_s"] for row in rows) / frames * 1e6
        per_frame[stack] = cpu
        print(f"{stack:<8} {frames:>8} {cpu:>13.1f} {wall:>14.1f}")
    if results["ours"][0]["frames"] != results["bare"][0]["frames"]:
        raise SystemExit("the stacks sent different numbers of frames")
    print(f"ours / bare CPU per frame: {per_frame['ours'] / per_frame['bare']:.2f}x")
    print(
        f"ours / ours-nj CPU per frame (what keeping steps for a resume costs): {per_frame['ours'] / per_frame['ours-nj']:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
