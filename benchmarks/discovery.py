"""What looking for served models costs at start-up when nothing is served: every port closed.

``[llm] provider = "auto"`` with discovery on asks Ollama's port and three OpenAI-compatible ports
on loopback before falling back to the embedded model. This script measures that against the
same resolution with ``discover = false``, every port closed (free loopback ports, checked to
refuse), beside each other:

- **process**: a fresh interpreter resolving ``auto`` once (``resolve_auto``), timed from spawn
  to exit, so the modules discovery imports (httpx, asyncio) count; then the same with httpx
  imported first, as in any process that goes on to build a provider (every provider SDK and the
  server import it), so the row shows the looking itself; with ``--before SRC`` (another
  checkout's ``src``), that checkout's ``auto`` too (before discovery: one synchronous request to
  Ollama's port). Rounds interleave the rows, after one warm-up round, so a change in the
  machine's load is shared;
- **in-process, first look**: ``resolve_auto`` in a warm process with the cache emptied before
  each call: the four connections refused, an event loop and an HTTP client made and closed;
- **in-process, cached**: the same call within ``CACHE_TTL_S`` of the last (a server resolving per
  request).

Usage::

    python benchmarks/discovery.py            # 15 process rounds, 200 in-process calls
    python benchmarks/discovery.py --quick    # 5 rounds, 50 calls
    python benchmarks/discovery.py --before /path/to/main/src
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

PROBE = """
import sys, json
if sys.argv[1].endswith("+httpx"):
    import httpx
from reasonloop.config import LLMSettings
from reasonloop.llm.resolve import resolve_auto
ports = json.loads(sys.argv[2])
settings = LLMSettings(discover=sys.argv[1].startswith("on"), discover_ollama_ports=ports[:1],
                       discover_openai_ports=ports[1:], ollama_url=f"http://127.0.0.1:{ports[0]}")
resolved, note = resolve_auto(settings)
assert note == "" and resolved.provider == "local", (resolved.provider, note)
"""

BEFORE = """
import sys, json
from reasonloop.config import LLMSettings
from reasonloop.llm.resolve import auto_provider
ports = json.loads(sys.argv[2])
assert auto_provider(LLMSettings(ollama_url=f"http://127.0.0.1:{ports[0]}")).provider == "local"
"""


def closed_ports(n: int) -> list[int]:
    """``n`` loopback ports nobody listens on (picked by the OS, released at once)."""
    ports = []
    for _ in range(n):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            ports.append(sock.getsockname()[1])
    return ports


def process_seconds(mode: str, ports: list[int], before: str | None) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REASONLOOP_")}
    script = PROBE
    if mode == "before":
        script, env["PYTHONPATH"] = BEFORE, str(before)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", script, mode, json.dumps(ports)], env=env, check=True)
    return time.perf_counter() - started


def in_process(ports: list[int], calls: int) -> dict[str, list[float]]:
    from reasonloop.config import LLMSettings
    from reasonloop.llm import discovery
    from reasonloop.llm.resolve import resolve_auto

    def settings(on: bool) -> LLMSettings:
        return LLMSettings(
            discover=on,
            discover_ollama_ports=ports[:1],
            discover_openai_ports=ports[1:],
            ollama_url=f"http://127.0.0.1:{ports[0]}",
        )

    off, on = settings(False), settings(True)
    found = discovery.discover_sync(on, fresh=True)  # warm-up: imports, and the ports really refuse
    refused = [p.error for p in found.probes]
    assert refused == ["connection refused"] * len(ports), refused
    times: dict[str, list[float]] = {"off": [], "first look": [], "cached": []}
    for _ in range(calls):
        started = time.perf_counter()
        resolve_auto(off)
        times["off"].append(time.perf_counter() - started)
        discovery._cache.clear()
        started = time.perf_counter()
        resolve_auto(on)
        times["first look"].append(time.perf_counter() - started)
        started = time.perf_counter()
        resolve_auto(on)
        times["cached"].append(time.perf_counter() - started)
    return times


def row(name: str, values: list[float], floor: float) -> str:
    med = statistics.median(values)
    ratio = f"{med / floor:.2f}x" if floor else "-"
    return f"| {name} | {med * 1000:.2f} | {min(values) * 1000:.2f} | {max(values) * 1000:.2f} | {ratio} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 process rounds and 50 in-process calls")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--calls", type=int, default=None)
    parser.add_argument("--before", default=None, help="another checkout's src/, measured as it resolves auto")
    args = parser.parse_args()
    rounds = args.rounds or (5 if args.quick else 15)
    calls = args.calls or (50 if args.quick else 200)
    ports = closed_ports(4)
    print(f"every port closed: {ports} (Ollama's, then three OpenAI-compatible)")

    modes = ["off", "on", "off+httpx", "on+httpx", *(["before"] if args.before else [])]
    process: dict[str, list[float]] = {mode: [] for mode in modes}
    for mode in modes:  # warm-up: the file cache, the bytecode
        process_seconds(mode, ports, args.before)
    for _ in range(rounds):
        for mode in modes:
            process[mode].append(process_seconds(mode, ports, args.before))
    inproc = in_process(ports, calls)

    print(f"\n{rounds} process rounds, {calls} in-process calls; milliseconds\n")
    print("| resolving `auto` | median | min | max | vs discovery off |")
    print("|---|---|---|---|---|")
    print(row("process, discovery off", process["off"], statistics.median(process["off"])))
    print(row("process, discovery on", process["on"], statistics.median(process["off"])))
    print(
        row(
            "process, httpx imported first, discovery off",
            process["off+httpx"],
            statistics.median(process["off+httpx"]),
        )
    )
    print(
        row("process, httpx imported first, discovery on", process["on+httpx"], statistics.median(process["off+httpx"]))
    )
    if args.before:
        print(
            row("process, before (one request to Ollama's port)", process["before"], statistics.median(process["off"]))
        )
    floor = statistics.median(inproc["off"])
    print(row("in-process, discovery off", inproc["off"], floor))
    print(row("in-process, discovery on, first look", inproc["first look"], floor))
    print(row("in-process, discovery on, cached", inproc["cached"], floor))
    extra = statistics.median(process["on"]) - statistics.median(process["off"])
    looking = statistics.median(process["on+httpx"]) - statistics.median(process["off+httpx"])
    print(
        f"\ndiscovery adds {extra * 1000:.0f} ms to a process that resolves the model once, "
        f"{looking * 1000:.0f} ms when httpx is loaded anyway; "
        f"{statistics.median(inproc['first look']) * 1000:.1f} ms in a warm process"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
