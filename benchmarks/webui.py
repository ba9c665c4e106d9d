"""The web UI in headless Chromium: time to usable, event-to-screen delay while a long answer
streams, long tasks, and the size of the scripts and styles the page loads.

A real ``reasonloop serve`` (the browser tests' scripted model, ``tests/webui/scripted.py``)
streams an answer of ``--tokens`` tokens (default 2,000) at ``--rate`` tokens per second (default
100), one token per event. In the page, each answer event's arrival (``performance.now()`` when the
SSE message is parsed) is compared with the animation frame that puts its text on screen; the
``longtask`` observer counts main-thread tasks over 50 ms while it streams.

The floor beside it is a bare page on the same server that reads the same event stream with the
same kind of reader and appends the deltas' text to a ``<pre>`` in the next frame, as a text
node after the ones before (no Markdown, no sanitising, no trace): what any page showing the
stream costs at least.

Usage::

    python benchmarks/webui.py            # 2,000 tokens at 100/s, 5 page loads
    python benchmarks/webui.py --quick    # 500 tokens, 3 page loads

Limits: usable within 1,000 ms; p95 event-to-screen delay within 50 ms (three frames); no long
task over 50 ms; figures only, the exit status is 0 unless a run failed.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402
from tests.webui.harness import Server, launch_browser  # noqa: E402

from reasonloop.server.web.ui import webui_dir  # noqa: E402

FLOOR_HTML = '<!doctype html><meta charset="utf-8"><pre id="out"></pre><script src="/__floor.js"></script>'
FLOOR_JS = """
window.delays = []; window.done = false; window.longTasks = [];
new PerformanceObserver((l) => { for (const e of l.getEntries()) window.longTasks.push(e.duration); })
  .observe({ type: "longtask", buffered: true });
window.go = async (question) => {
  const r = await fetch("/v1/runs", { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ question, reasoning: "qa" }) });
  const run = await r.json();
  const res = await fetch(`/v1/runs/${run.run_id}/events`);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const out = document.getElementById("out");
  let buf = "", pending = [], text = "", frame = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value.replace(/\\r\\n/g, "\\n");
    let i;
    while ((i = buf.indexOf("\\n\\n")) >= 0) {
      const block = buf.slice(0, i); buf = buf.slice(i + 2);
      const data = block.split("\\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\\n");
      if (!data) continue;
      const ev = JSON.parse(data); const at = performance.now();
      if (ev.type === "answer_delta") { text += ev.text; pending.push(at); }
      if (!frame) frame = requestAnimationFrame(() => {
        frame = 0; out.append(text); text = ""; const now = performance.now();
        for (const a of pending) window.delays.push(now - a); pending = [];
      });
    }
  }
  window.done = true;
};
"""
LONGTASKS_JS = """() => { window.longTasks = [];
  new PerformanceObserver((l) => { for (const e of l.getEntries()) window.longTasks.push(e.duration); })
    .observe({ type: "longtask" }); window.reasonloopPerf.enabled = true; }"""


def answer_text(tokens: int) -> str:
    """``tokens`` six-character tokens (one event each), a paragraph after every 40th."""
    return "".join(f"t{i:04d}" + ("\n\n" if i % 40 == 39 else " ") for i in range(tokens))


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def asset_sizes() -> list[tuple[str, int, int]]:
    folder = webui_dir()
    rows = []
    for path in sorted(folder.rglob("*")):
        if path.suffix in {".js", ".css"}:
            data = path.read_bytes()
            rows.append((str(path.relative_to(folder)), len(data), len(gzip.compress(data, 9))))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="500 tokens, 3 page loads")
    parser.add_argument("--tokens", type=int, default=None)
    parser.add_argument("--rate", type=float, default=100.0, help="tokens per second")
    parser.add_argument("--loads", type=int, default=None, help="page loads timed")
    parser.add_argument("--verbose", action="store_true", help="print each load's requests (start, end ms)")
    args = parser.parse_args()
    tokens = args.tokens or (500 if args.quick else 2000)
    loads = args.loads or (3 if args.quick else 5)
    scenario = {"replies": [answer_text(tokens)], "chunk_size": 6, "rate": args.rate}
    root = Path(tempfile.mkdtemp(prefix="webui-bench-"))
    server = Server(root, {"q-bench": scenario, "q-floor": scenario})
    server.start()
    server.ingest({"note.txt": "The bench note says nothing much at all."})
    print(f"web UI benchmark: {tokens} tokens at {args.rate:g}/s, {loads} page loads, server {server.url}")
    try:
        with sync_playwright() as p:
            browser = launch_browser(p)
            usable, loaded = [], []
            for _ in range(loads):
                context = browser.new_context()
                page = context.new_page()
                start = time.perf_counter()
                page.goto(server.url)
                page.wait_for_function("() => performance.getEntriesByName('reasonloop:usable').length > 0")
                wall = (time.perf_counter() - start) * 1000
                mark = page.evaluate("() => performance.getEntriesByName('reasonloop:usable')[0].startTime")
                usable.append(mark)
                loaded.append(wall)
                if args.verbose:
                    for name, t0, t1 in page.evaluate(
                        "() => performance.getEntriesByType('resource').map(e => [e.name, e.startTime, e.responseEnd])"
                    ):
                        print(f"    {name.split('/', 3)[-1]:40} {t0:7.0f} {t1:7.0f}")
                context.close()

            context = browser.new_context()
            page = context.new_page()
            page.goto(server.url)
            page.wait_for_function("() => performance.getEntriesByName('reasonloop:usable').length > 0")
            page.evaluate(LONGTASKS_JS)
            page.select_option("#strategy", "reasoning:qa")
            page.fill("#question", "q-bench: stream please")
            started = time.perf_counter()
            page.click("#send")
            page.wait_for_function(
                "() => { const u = document.querySelector('#turns .turn:last-child .usage'); return u && u.textContent; }",
                timeout=(tokens / args.rate + 60) * 1000,
            )
            elapsed = time.perf_counter() - started
            ours = page.evaluate("() => window.reasonloopPerf.delays")
            our_long = page.evaluate("() => window.longTasks")
            shown = page.evaluate("() => document.querySelector('#turns .turn:last-child .answer').textContent")
            context.close()

            context = browser.new_context()
            page = context.new_page()
            page.route(f"{server.url}/__floor.html", lambda r: r.fulfill(body=FLOOR_HTML, content_type="text/html"))
            page.route(f"{server.url}/__floor.js", lambda r: r.fulfill(body=FLOOR_JS, content_type="text/javascript"))
            page.goto(f"{server.url}/__floor.html")
            page.evaluate("() => { window.go('q-floor: stream please'); }")
            page.wait_for_function("() => window.done", timeout=(tokens / args.rate + 60) * 1000)
            floor = page.evaluate("() => window.delays")
            floor_long = page.evaluate("() => window.longTasks")
            context.close()
            browser.close()
    finally:
        server.stop()

    expected = answer_text(tokens)
    ok = " ".join(shown.split()) == " ".join(expected.split())
    print(
        f"\nthe answer on screen is the whole answer: {ok}; streamed in {elapsed:.1f} s ({tokens / elapsed:.0f} tok/s)"
    )
    print(f"\n{'figure':44} {'web UI':>10} {'floor':>10} {'ratio':>7} {'limit':>10}")
    print(
        f"{'time to usable, median of loads (ms)':44} {statistics.median(usable):10.0f} {'':>10} {'':>7} {'1000':>10}"
    )
    print(f"{'  page load to usable, wall (ms)':44} {statistics.median(loaded):10.0f}")
    p50o, p95o, p50f, p95f = pct(ours, 0.5), pct(ours, 0.95), pct(floor, 0.5), pct(floor, 0.95)
    print(f"{'event-to-screen p50 (ms)':44} {p50o:10.1f} {p50f:10.1f} {p50o / p50f:7.2f}")
    print(f"{'event-to-screen p95 (ms)':44} {p95o:10.1f} {p95f:10.1f} {p95o / p95f:7.2f} {'50':>10}")
    print(f"{'event-to-screen max (ms)':44} {max(ours):10.1f} {max(floor):10.1f}")
    print(f"{'answer events measured':44} {len(ours):10d} {len(floor):10d}")
    worst = max(our_long, default=0.0)
    print(f"{'long tasks > 50 ms while streaming':44} {len(our_long):10d} {len(floor_long):10d} {'':>7} {'0':>10}")
    print(f"{'  longest of them (ms)':44} {worst:10.0f} {max(floor_long, default=0.0):10.0f}")
    print("\nwhat the page loads (bytes):")
    total = total_gz = 0
    for name, raw, gz in asset_sizes():
        total += raw
        total_gz += gz
        print(f"  {name:40} {raw:8d} raw {gz:8d} gzip")
    print(f"  {'total JS + CSS':40} {total:8d} raw {total_gz:8d} gzip")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
