"""WebSocket load: many concurrent streaming runs on reasonloop's server beside a bare uvicorn stack.

Each of N clients opens ``/v1/ws``, asks once and reads its run to the end while sending a
ping every 250 ms. Every run goes through the runner ``reasonloop serve`` uses (the Agent API,
strategy ``toolcall``, which streams the model's reply when it has no tools to offer) over a
scripted model at a realistic pace: ``--ttft`` seconds (0.5) before the first token, then
``--rate`` tokens per second (30) for ``--tokens`` tokens (60).

* **relay latency**: client receive time minus the event's ``ts``, which the runner sets when the
  model's token arrives — so it is everything reasonloop adds (stamping, the journal write,
  fan-out, serialisation, the socket) plus the client's own reading.
* **stream time**: the first token's ``ts`` to the answer's arrival, against the model's own
  ``tokens / rate``. A server that reads the model only after each event is stored stretches
  this (the model waits on it) and then shows a low relay latency for fewer tokens a second;
  this column makes that visible.
* **ping RTT**: ping sent → pong received, while all runs stream; also for the pings sent once
  every client has connected and its first token is due (``RAMP_S + ttft`` after the start), when
  the server does nothing but stream (the rest fall among connection handshakes and run starts).
* **server CPU / RSS per run**: CPU seconds the server process used during the load, and its RSS
  growth over idle, divided by N; in brackets, the CPU of the event loop's thread alone (the rest
  is other threads', such as the SQLite writer's, which yield the core to the loop).
* **peak core**: the largest share of its core the server ran in any half second of the load
  (all its threads; the server has the core to itself when pinned). Near 100% a ping waits for
  the loop's whole pass over the streams, which lengthens steeply as the load nears the core's
  capacity, and any pause (a collection, another thread) takes long to catch up on: the ping
  tails of two stacks part ways well before either fails to keep pace.
* **GC pauses**: the garbage collector's pauses in the server during the load, summed per round
  (and the longest): every stream and every ping waits through each of them.
* **round by round**: each round runs bare then ours back to back, so a change in the machine's
  load hits both; the ratio of their p99s within each round, as the median of the rounds and
  its range. One disturbed round (a stall that lands on 1% of one stack's pings) moves the
  pooled p99 of that stack a long way; it moves the median of the paired ratios by one rank.
* **rounds the limit kept pace in**: the ratios again, over only the rounds (both stacks' samples
  of the same round) in which bare's stream p99 stayed within 2.5% of the model's own stream
  time. Near a core's capacity a disturbed round saturates both stacks, its tails (tens of ms)
  then set the pooled p99 of both, and their ratio says little about either; these rounds show
  what each stack adds when the limit is not itself overloaded.

The bare stack is the limit: a plain ASGI WebSocket app on the same uvicorn + websockets that
sleeps the same TTFT and sends the same frames at the same pace, with no run manager, store,
auth or validation. Same frames: the ``run`` reply, a ``run_started`` event, one
``answer_delta`` per token (each after ``1 / rate`` s) and the ``answer`` right after the last
one, every event with the fields ours has, so the client parses the same bytes from both. A
client that has not seen its answer after a generous deadline gives up and counts an error
(a lost frame shows up instead of hanging the benchmark). The clients are
:mod:`ws_light_client` ones, which read and timestamp frames in the transport's callback:
1,000 clients of the ``websockets`` library kept the load generator's core 80 to 99% busy, and
their own queueing then showed up in every latency (``--client websockets`` to compare; with
``--deflate``, always). Both servers run in subprocesses; with two or more cores the server is
pinned to core 0 and the load generator to core 1 (``--no-pin`` to disable). Other work on the
machine shows up in the figures: compare ratios from one invocation, not absolute numbers
across invocations.

Usage::

    python benchmarks/ws_load.py                       # 100, 500 and 1000 clients
    python benchmarks/ws_load.py --quick               # 100 clients only
    python benchmarks/ws_load.py --clients 500 --store sqlite
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PING_EVERY_S = 0.25
BUSY_WINDOW_S = 0.5
"""The window of the server's peak core occupancy (the load's busiest stretch is about a second
long: every client streaming at once)."""
RAMP_S = 1.0
"""Clients connect at random times over this window (a realistic arrival, and the same for both stacks)."""


# -- servers -------------------------------------------------------------------------------------
def record_gc_pauses(data_dir: str) -> None:
    """Time each garbage collection of this server process, a line per pause appended to
    ``gc.jsonl`` in ``data_dir`` (the parent keeps those of the load). Appended as they happen:
    uvicorn ends the process by re-raising the signal it was stopped with, so nothing runs at
    exit."""
    fd = os.open(os.path.join(data_dir, "gc.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    started = [0.0]

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            os.write(fd, f"[{time.time()}, {time.perf_counter() - started[0]}]\n".encode())

    gc.callbacks.append(on_gc)


ASK = {"type": "ask", "question": "stream please", "reasoning": "toolcall"}
"""Every client's question. ``toolcall`` with no tools to offer streams the model's reply as the
answer (the bare stack ignores the strategy)."""


def serve_ours(port: int, args: argparse.Namespace) -> None:
    import uvicorn

    from reasonloop.agents import AgentRunner
    from reasonloop.config import KBSettings, RunsSettings, ServerSettings, Settings
    from reasonloop.llm.scripted import ScriptedProvider
    from reasonloop.server import create_app
    from reasonloop.server.transport.process import tune_for_serving, uvicorn_options

    text = "tok " * args.tokens
    tmp = args.data_dir  # made and removed by the parent, round by round
    settings = Settings(
        kb=KBSettings(path=tmp),
        runs=RunsSettings(
            store=args.store,
            sqlite_path=str(Path(tmp) / "runs.sqlite"),
            redis_url=args.redis_url,
            max_concurrent=max(args.clients_list) + 10,
            max_queued=10_000,
        ),
        server=ServerSettings(port=port, ws_ping_interval_s=60, ws_ping_timeout_s=60, ws_compression=args.deflate),
    )
    # One model for every run, as `reasonloop serve` keeps one client per configured model.
    model = ScriptedProvider(
        replies=[text], chunk_size=4, delay_s=1.0 / args.rate, first_delay_s=args.ttft, repeat_last=True
    )
    runner = AgentRunner(settings, llm=model)  # the runner `reasonloop serve` uses
    app = create_app(settings, runner=runner)
    tune_for_serving()  # as `reasonloop serve` does, with its uvicorn options
    record_gc_pauses(args.data_dir)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", backlog=4096, **uvicorn_options(settings.server))


def serve_bare(port: int, args: argparse.Namespace) -> None:
    import uvicorn

    from reasonloop.server.transport.process import tune_for_serving

    def event(run_id: str, seq: int, kind: str, **fields: Any) -> dict[str, Any]:
        head = {"run_id": run_id, "seq": seq, "ts": time.time(), "depth": 0, "parent_call_id": None, "type": kind}
        return {**head, **fields}

    async def stream(send: Any, lock: asyncio.Lock, run_id: str, question: str) -> None:
        prefix = '{"type":"event","run_id":' + json.dumps(run_id) + ',"event":'
        reply = {"type": "run", "run_id": run_id, "conversation_id": "conv_" + run_id}
        started = event(run_id, 1, "run_started", reasoning="direct", question=question)
        async with lock:
            await send({"type": "websocket.send", "text": json.dumps(reply)})
            await send({"type": "websocket.send", "text": prefix + json.dumps(started) + "}"})
        await asyncio.sleep(args.ttft)
        for seq in range(2, args.tokens + 3):
            if seq <= args.tokens + 1:
                await asyncio.sleep(1.0 / args.rate)
                frame = event(run_id, seq, "answer_delta", text="tok ")
            else:  # the answer follows the last token at once, as the model's end does in ours
                usage = {"llm_calls": 1, "prompt_tokens": 3, "completion_tokens": args.tokens, "tool_calls": 0}
                frame = event(
                    run_id, seq, "answer", text="tok " * args.tokens, citations=[], usage=usage, stop_reason="final"
                )
            async with lock:
                await send({"type": "websocket.send", "text": prefix + json.dumps(frame) + "}"})

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})
            return
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        lock = asyncio.Lock()
        tasks: set[asyncio.Task[None]] = set()
        n = 0
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                for task in tasks:
                    task.cancel()
                return
            frame = json.loads(message.get("text") or "{}")
            if frame.get("type") == "ping":
                async with lock:
                    await send({"type": "websocket.send", "text": json.dumps({"type": "pong", "id": frame.get("id")})})
            elif frame.get("type") == "ask":
                n += 1
                task = asyncio.create_task(stream(send, lock, f"run_{id(tasks)}_{n}", frame.get("question", "")))
                tasks.add(task)
                task.add_done_callback(tasks.discard)

    tune_for_serving()  # the same process settings as ours: the comparison is of the stacks
    record_gc_pauses(args.data_dir)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", backlog=4096, ws_per_message_deflate=args.deflate)


# -- load generator ------------------------------------------------------------------------------
async def one_client(url: str, out: dict[str, Any], deadline_s: float, light: bool = True) -> None:
    try:
        await asyncio.wait_for((_one_light_client if light else _one_client)(url, out), deadline_s)
    except TimeoutError:
        out["errors"] += 1
        out.setdefault("messages", []).append(f"no answer within {deadline_s:g}s")


class _Tally:
    """What one client reads: its pongs, its run's events and their timings, into ``out``."""

    def __init__(self, out: dict[str, Any]) -> None:
        self.out = out
        self.pings: dict[int, float] = {}
        """ping id -> when it was sent"""
        self.first_ts: float | None = None
        self.sent = 0

    def ping(self) -> str:
        self.sent += 1
        self.pings[self.sent] = time.perf_counter()
        return json.dumps({"type": "ping", "id": self.sent})

    def read(self, raw: str, now_wall: float, now: float) -> bool:
        """Take one text frame read at ``now_wall`` (``time.time``) and ``now`` (``perf_counter``);
        True once the run has ended (its answer or an error)."""
        out = self.out
        frame = json.loads(raw)
        kind = frame["type"]
        if kind == "pong":
            sent = self.pings.pop(frame.get("id"), None)
            if sent is not None:
                out["ping"].append(now - sent)
                if sent >= out["streaming_from"]:
                    out["ping_streaming"].append(now - sent)
        elif kind == "event":
            event = frame["event"]
            if event["type"] == "answer_delta":
                out["relay"].append(now_wall - event["ts"])
                self.first_ts = event["ts"] if self.first_ts is None else self.first_ts
            elif event["type"] == "answer":
                out["done"] += 1
                if self.first_ts is not None:
                    out["stream"].append(now_wall - self.first_ts)
                return True
            elif event["type"] == "error":
                return self.error(f"{event['code']}: {event['message']}")
        elif kind == "error":
            return self.error(f"{frame['code']}: {frame['message']}")
        return False

    def error(self, message: str) -> bool:
        self.out["errors"] += 1
        self.out.setdefault("messages", []).append(message)
        return True


async def _one_client(url: str, out: dict[str, Any]) -> None:
    """A client on the ``websockets`` library's asyncio client (``--client websockets``)."""
    from websockets.asyncio.client import connect

    await asyncio.sleep(random.uniform(0, RAMP_S))
    tally = _Tally(out)
    try:
        async with connect(url, max_size=None, ping_interval=None, open_timeout=60) as ws:
            await ws.send(json.dumps(ASK))

            async def pinger() -> None:
                while True:
                    await asyncio.sleep(PING_EVERY_S)
                    await ws.send(tally.ping())

            ping_task = asyncio.create_task(pinger())
            try:
                async for raw in ws:
                    if tally.read(str(raw), time.time(), time.perf_counter()):
                        break
            finally:
                ping_task.cancel()
    except Exception as exc:
        tally.error(f"{type(exc).__name__}: {exc}")


async def _one_light_client(url: str, out: dict[str, Any]) -> None:
    """A client on :mod:`ws_light_client` (the default): frames are read and timed in the
    transport's callback, and pings sent from a timer."""
    from ws_light_client import connect_light

    await asyncio.sleep(random.uniform(0, RAMP_S))
    loop = asyncio.get_running_loop()
    tally = _Tally(out)
    ended = loop.create_future()

    def on_text(raw: str, now_wall: float, now: float) -> None:
        if not ended.done() and tally.read(raw, now_wall, now):
            ended.set_result(None)

    def ping() -> None:
        nonlocal timer
        client.send_text(tally.ping())
        timer = loop.call_later(PING_EVERY_S, ping)

    try:
        client = await connect_light(url, on_text)
    except Exception as exc:
        tally.error(f"{type(exc).__name__}: {exc}")
        return
    client.send_text(json.dumps(ASK))
    timer = loop.call_later(PING_EVERY_S, ping)
    try:
        await asyncio.wait({ended, client.closed}, return_when=asyncio.FIRST_COMPLETED)
        if not ended.done():
            problem = client.closed.exception() if not client.closed.cancelled() else None
            tally.error(f"connection closed before the answer: {problem or 'by the server'}")
    finally:
        timer.cancel()
        client.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(client.closed), 10)


async def run_clients(url: str, n: int, deadline_s: float, ttft: float, light: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"relay": [], "ping": [], "ping_streaming": [], "stream": [], "done": 0, "errors": 0}
    out["streaming_from"] = time.perf_counter() + RAMP_S + ttft
    await asyncio.gather(*(one_client(url, out, deadline_s, light) for _ in range(n)))
    return out


def client_main(args: argparse.Namespace) -> None:
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    deadline_s = 60 + 5 * (RAMP_S + args.ttft + args.tokens / args.rate)
    # The load generator's own collector would pause all its clients at once (a young collection
    # every few hundred ms, 5 to 10 ms each at 1,000 clients), and every ping and frame read during
    # a pause would count it as the server's latency. One round's garbage fits in memory.
    gc.collect()
    gc.freeze()
    gc.disable()
    result = asyncio.run(run_clients(args.url, args.n, deadline_s, args.ttft, light=light_client(args)))
    result["messages"] = result.get("messages", [])[:5]
    Path(args.out).write_text(json.dumps(result))


# -- orchestration -------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port: int, proc: subprocess.Popen[bytes]) -> None:
    import httpx

    for _ in range(600):
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise SystemExit("server did not start")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def measure(stack: str, n: int, args: argparse.Namespace, pin: bool) -> dict[str, Any]:
    """One load run against a fresh server process; raw samples and resource use."""
    try:
        import psutil
    except ImportError:
        raise SystemExit("ws_load.py reads the servers' CPU and RSS with psutil: pip install -e '.[bench]'") from None

    port = free_port()
    data: dict[str, Any] = {}
    base = [sys.executable, __file__, *_passthrough(args)]
    # Removed after the round: tens of MB of events each, whose write-back would disturb later rounds.
    data_dir = tempfile.mkdtemp(prefix="ws_load_")
    server = subprocess.Popen([*base, "--role", stack, "--port", str(port), "--data-dir", data_dir], cwd=ROOT)
    try:
        if pin:
            os.sched_setaffinity(server.pid, {0})
        wait_ready(port, server)
        ps = psutil.Process(server.pid)
        time.sleep(0.5)
        rss_idle = ps.memory_info().rss
        cpu_before = sum(ps.cpu_times()[:2])
        loop_before = loop_thread_cpu(ps)
        out_file = Path(tempfile.mkstemp(prefix="ws_load_", suffix=".json")[1])
        client = subprocess.Popen(
            [*base, "--role", "client", "--url", f"ws://127.0.0.1:{port}/v1/ws", "--n", str(n), "--out", str(out_file)],
            cwd=ROOT,
        )
        if pin:
            os.sched_setaffinity(client.pid, {1})
        rss_peak = rss_idle
        load_started = time.time()
        busy = [(time.perf_counter(), core_time(ps))]
        while client.poll() is None:
            rss_peak = max(rss_peak, ps.memory_info().rss)
            time.sleep(0.05)
            busy.append((time.perf_counter(), core_time(ps)))
        data["busy_peak"] = peak_busy(busy, BUSY_WINDOW_S)
        data.update(json.loads(out_file.read_text()))
        data["cpu_s"] = sum(ps.cpu_times()[:2]) - cpu_before
        data["loop_cpu_s"] = loop_thread_cpu(ps) - loop_before
        data["rss_growth"] = max(0, rss_peak - rss_idle)
        load_ended = time.time()
        out_file.unlink()
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        gc_file = Path(data_dir, "gc.jsonl")
        pauses = [json.loads(line) for line in gc_file.read_text().splitlines()] if gc_file.exists() else None
        shutil.rmtree(data_dir, ignore_errors=True)
    if pauses is not None:  # None: the server never got to record them
        during = [pause for at, pause in pauses if load_started <= at <= load_ended]
        data["gc_ms"] = sum(during) * 1000
        data["gc_max_ms"] = max(during, default=0.0) * 1000
    return data


def core_time(ps: Any) -> float:
    """CPU seconds the server's threads have run, all of them: with the server pinned, the share
    of its core it has held. From the scheduler's nanosecond counts where Linux has them (a
    thread's CPU times tick at 10 ms, too coarse for a half-second window)."""
    total = 0
    try:
        for task in os.scandir(f"/proc/{ps.pid}/task"):
            with open(f"{task.path}/schedstat") as stat:
                total += int(stat.read().split()[0])
    except OSError:  # no /proc (or the process is gone): the coarse counts
        return sum(ps.cpu_times()[:2])
    return total / 1e9


def peak_busy(samples: list[tuple[float, float]], window_s: float) -> float:
    """The largest share of the wall time the server ran in any ``window_s`` between samples
    ``(wall, cpu)``: how close to its core's capacity the load took it."""
    peak, start = 0.0, 0
    for end in range(1, len(samples)):
        while samples[end][0] - samples[start + 1][0] >= window_s:
            start += 1
        wall = samples[end][0] - samples[start][0]
        if wall >= window_s:
            peak = max(peak, (samples[end][1] - samples[start][1]) / wall)
    return peak


def loop_thread_cpu(ps: Any) -> float:
    """CPU seconds of the server's main thread, the one running the event loop (its id is the
    process id): every socket, ping and event waits on it, where other threads (the SQLite
    writer's) only take the core while it has nothing to do."""
    return next((t.user_time + t.system_time for t in ps.threads() if t.id == ps.pid), 0.0)


def summarise(stack: str, n: int, rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Percentiles over the samples of every round; resource use averaged over rounds."""
    relay = [x for r in rounds for x in r["relay"]]
    ping = [x for r in rounds for x in r["ping"]]
    ping_streaming = [x for r in rounds for x in r["ping_streaming"]]
    stream = [x for r in rounds for x in r["stream"]]
    return {
        "stack": stack,
        "clients": n,
        "rounds": len(rounds),
        "done": sum(r["done"] for r in rounds),
        "runs": n * len(rounds),
        "errors": sum(r["errors"] for r in rounds),
        "messages": [m for r in rounds for m in r["messages"]][:3],
        "relay_p50_ms": pct(relay, 0.50) * 1000,
        "relay_p99_ms": pct(relay, 0.99) * 1000,
        "ping_p50_ms": pct(ping, 0.50) * 1000,
        "ping_p99_ms": pct(ping, 0.99) * 1000,
        "ping_streaming_p99_ms": pct(ping_streaming, 0.99) * 1000,
        "stream_p50_s": pct(stream, 0.50),
        "stream_p99_s": pct(stream, 0.99),
        "tokens": len(relay),
        "cpu_ms_per_run": statistics.mean(r["cpu_s"] for r in rounds) * 1000 / n,
        "loop_cpu_ms_per_run": statistics.mean(r["loop_cpu_s"] for r in rounds) * 1000 / n,
        "rss_kib_per_run": statistics.mean(r["rss_growth"] for r in rounds) / 1024 / n,
        "gc_ms_per_round": statistics.mean(r["gc_ms"] for r in rounds) if all("gc_ms" in r for r in rounds) else None,
        "gc_max_ms": max((r.get("gc_max_ms", 0.0) for r in rounds), default=0.0),
        "busy_peak": statistics.mean(r["busy_peak"] for r in rounds),
    }


def _cpu_cell(row: dict[str, Any]) -> str:
    return f"{row['cpu_ms_per_run']:.1f} ({row['loop_cpu_ms_per_run']:.1f})"


def _gc_cell(row: dict[str, Any]) -> str:
    if row["gc_ms_per_round"] is None:
        return "n/a"
    return f"{row['gc_ms_per_round']:.0f} ({row['gc_max_ms']:.0f})"


def _passthrough(args: argparse.Namespace) -> list[str]:
    return [
        "--tokens", str(args.tokens), "--rate", str(args.rate), "--ttft", str(args.ttft),
        "--store", args.store, "--redis-url", args.redis_url, *(["--deflate"] if args.deflate else []), "--clients", ",".join(map(str, args.clients_list)),
        "--client", args.client,
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", default="100,500,1000", help="Comma-separated client counts.")
    parser.add_argument("--quick", action="store_true", help="100 clients only.")
    parser.add_argument("--tokens", type=int, default=60)
    parser.add_argument("--rate", type=float, default=30.0, help="Tokens per second per run.")
    parser.add_argument("--ttft", type=float, default=0.5, help="Seconds before the first token.")
    parser.add_argument("--store", default="sqlite", choices=["sqlite", "redis"], help="Our run store.")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--repeat", type=int, default=5, help="Interleaved rounds per client count (samples pooled).")
    parser.add_argument(
        "--deflate", action="store_true", help="Offer permessage-deflate on both servers (off, as `serve` defaults)."
    )
    parser.add_argument(
        "--client",
        default="light",
        choices=["light", "websockets"],
        help="Load generator: ws_light_client (lean, the default) or the websockets library's client.",
    )
    parser.add_argument("--no-pin", action="store_true", help="Do not pin server and client to separate cores.")
    parser.add_argument("--json", action="store_true", help="Print the raw figures as JSON too.")
    parser.add_argument("--role", default="", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--url", default="", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--out", default="", help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.clients_list = [100] if args.quick else [int(c) for c in args.clients.split(",")]
    if args.role == "ours":
        return serve_ours(args.port, args)
    if args.role == "bare":
        return serve_bare(args.port, args)
    if args.role == "client":
        return client_main(args)

    pin = not args.no_pin and len(os.sched_getaffinity(0)) >= 2
    rows = []
    per_round: dict[int, dict[str, list[dict[str, Any]]]] = {}
    """Per client count: each stack's rounds, in order (round i of bare ran just before round i of ours)."""
    paced: dict[int, list[dict[str, Any]]] = {}
    """Per client count: the summaries of the rounds bare kept pace in (see the module docstring)."""
    for n in args.clients_list:
        samples: dict[str, list[dict[str, Any]]] = {"bare": [], "ours": []}
        for round_no in range(args.repeat):  # interleaved, so a change in machine load hits both stacks
            for stack in ("bare", "ours"):
                data = measure(stack, n, args, pin)
                samples[stack].append(data)
                row = summarise(stack, n, [data])
                print(
                    f"round {round_no + 1}: {stack:>4} {n:>5} clients: relay p50 {row['relay_p50_ms']:.2f} ms "
                    f"p99 {row['relay_p99_ms']:.2f} ms, ping p99 {row['ping_p99_ms']:.2f} ms "
                    f"({row['ping_streaming_p99_ms']:.2f} ms streaming), "
                    f"stream p99 {row['stream_p99_s']:.2f} s, GC {_gc_cell(row)} ms, "
                    f"core {row['busy_peak']:.0%} at peak, "
                    f"{row['done']}/{n} answered, {row['errors']} errors {'; '.join(row['messages'])}",
                    file=sys.stderr,
                    flush=True,
                )
        per_round[n] = samples
        rows += [summarise(stack, n, samples[stack]) for stack in ("bare", "ours")]
        kept_pace = [i for i, data in enumerate(samples["bare"]) if kept_up(data, args)]
        if kept_pace:
            paced[n] = [summarise(stack, n, [samples[stack][i] for i in kept_pace]) for stack in ("bare", "ours")]
    print(f"\nWebSocket load: {args.tokens} tokens at {args.rate:g}/s after {args.ttft:g}s TTFT per run; "
          f"store={args.store}; deflate={args.deflate}; client={'light' if light_client(args) else 'websockets'}; pinned={pin}; {args.repeat} rounds; python {sys.version.split()[0]}\n"
          f"(the model's own stream time, first token to answer, is {args.tokens / args.rate:.2f}s)\n")  # fmt: skip
    head = f"{'clients':>7} {'stack':>5} {'relay p50':>10} {'relay p99':>10} {'ping p50':>9} {'ping p99':>9} {'streaming':>9} "
    head += f"{'stream p50':>10} {'stream p99':>10} {'CPU ms/run (loop)':>17} {'RSS KiB/run':>11} {'GC ms/round (max)':>18} "
    head += f"{'peak core':>9} {'answered':>9}"
    print(head)
    for row in rows:
        print(
            f"{row['clients']:>7} {row['stack']:>5} {row['relay_p50_ms']:>8.2f}ms {row['relay_p99_ms']:>8.2f}ms "
            f"{row['ping_p50_ms']:>7.2f}ms {row['ping_p99_ms']:>7.2f}ms {row['ping_streaming_p99_ms']:>7.2f}ms "
            f"{row['stream_p50_s']:>9.2f}s {row['stream_p99_s']:>9.2f}s {_cpu_cell(row):>17} "
            f"{row['rss_kib_per_run']:>11.1f} {_gc_cell(row):>18} {row['busy_peak']:>9.0%} {row['done']:>5}/{row['runs']}"
        )
    print(
        f"\n{'clients':>7} {'relay p50 ratio':>16} {'relay p99 ratio':>16} {'ping p99 ratio':>15} {'streaming':>10}  (ours / bare)"
    )
    for n in args.clients_list:
        bare = next(r for r in rows if r["clients"] == n and r["stack"] == "bare")
        ours = next(r for r in rows if r["clients"] == n and r["stack"] == "ours")
        print(
            f"{n:>7} {ours['relay_p50_ms'] / bare['relay_p50_ms']:>15.2f}x {ours['relay_p99_ms'] / bare['relay_p99_ms']:>15.2f}x "
            f"{ours['ping_p99_ms'] / bare['ping_p99_ms']:>14.2f}x "
            f"{ours['ping_streaming_p99_ms'] / bare['ping_streaming_p99_ms']:>9.2f}x"
        )
    print(
        f"\nRound by round: ours' p99 over bare's in the same round, median [lowest, highest] of {args.repeat} rounds"
        f"\n{'clients':>7} {'relay p99 ratio':>24} {'ping p99 ratio':>24}"
    )
    for n in args.clients_list:
        relay, ping = (_paired_ratio_cell(per_round[n], key) for key in ("relay", "ping"))
        print(f"{n:>7} {relay:>24} {ping:>24}")
    print(
        f"\nRounds in which bare's stream p99 stayed within 2.5% of the model's {args.tokens / args.rate:.2f}s"
        f"\n{'clients':>7} {'rounds':>7} {'relay p99 bare/ours':>22} {'ratio':>6} {'ping p99 bare/ours':>20} {'ratio':>6}"
    )
    for n in args.clients_list:
        if n not in paced:
            print(f"{n:>7} {0:>4}/{args.repeat:<2} (none)")
            continue
        bare, ours = paced[n]
        relay = f"{bare['relay_p99_ms']:.2f} / {ours['relay_p99_ms']:.2f} ms"
        ping = f"{bare['ping_p99_ms']:.2f} / {ours['ping_p99_ms']:.2f} ms"
        print(
            f"{n:>7} {bare['rounds']:>4}/{args.repeat:<2} {relay:>22} {ours['relay_p99_ms'] / bare['relay_p99_ms']:>5.2f}x "
            f"{ping:>20} {ours['ping_p99_ms'] / bare['ping_p99_ms']:>5.2f}x"
        )
    if args.json:
        print(
            json.dumps(
                {"all_rounds": rows, "rounds_bare_kept_pace": [r for pair in paced.values() for r in pair]}, indent=2
            )
        )


def _paired_ratio_cell(samples: dict[str, list[dict[str, Any]]], key: str) -> str:
    """``median [lowest, highest]`` of ours' p99 of ``key`` over bare's, round by round."""
    ratios = sorted(
        pct(ours[key], 0.99) / pct(bare[key], 0.99)
        for bare, ours in zip(samples["bare"], samples["ours"], strict=True)
        if bare[key] and ours[key]
    )
    if not ratios:
        return "n/a"
    return f"{statistics.median(ratios):.2f}x [{ratios[0]:.2f}, {ratios[-1]:.2f}]"


def light_client(args: argparse.Namespace) -> bool:
    """Whether the clients are :mod:`ws_light_client` ones (not with permessage-deflate, which it lacks)."""
    return args.client == "light" and not args.deflate


def kept_up(data: dict[str, Any], args: argparse.Namespace) -> bool:
    """Whether the streams of a round kept pace with their model (stream p99 within 2.5% of it)."""
    return pct(data["stream"], 0.99) <= 1.025 * args.tokens / args.rate


if __name__ == "__main__":
    main()
