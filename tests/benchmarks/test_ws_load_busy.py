"""How ws_load.py measures a server's peak occupancy of its core: the sliding window over samples,
and the CPU counter read from a real process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from tests.benchmarks.loading import load_benchmark

ws_load = load_benchmark("ws_load")


def test_the_peak_is_the_busiest_window_not_the_average():
    # 2 s of samples every 0.1 s: idle, then 0.5 s fully busy, then idle again
    samples, cpu = [], 0.0
    for i in range(21):
        wall = i / 10
        samples.append((wall, cpu))
        cpu += 0.1 if 0.8 <= wall < 1.3 else 0.0
    assert ws_load.peak_busy(samples, 0.5) == pytest.approx(1.0)
    assert ws_load.peak_busy(samples, 1.0) == pytest.approx(0.5)


def test_a_window_longer_than_the_samples_gives_no_peak():
    assert ws_load.peak_busy([(0.0, 0.0), (0.2, 0.2)], 0.5) == 0.0
    assert ws_load.peak_busy([], 0.5) == 0.0


def test_uneven_sampling_is_weighed_by_wall_time():
    # one long gap (a slow sample) inside the window: its CPU counts over its own length
    samples = [(0.0, 0.0), (0.1, 0.05), (0.6, 0.3), (0.7, 0.35)]
    assert ws_load.peak_busy(samples, 0.5) == pytest.approx(0.5)


def _child(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code])


def _ticks(path: str) -> float:
    """User plus system CPU seconds from a ``/proc`` stat file (in clock ticks there)."""
    with open(path) as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize(("code", "busy"), [("while True: pass", True), ("import time; time.sleep(60)", False)])
def test_core_time_counts_what_a_process_ran(code, busy):
    proc = _child(code)
    ps = SimpleNamespace(pid=proc.pid)
    try:
        time.sleep(0.3)  # past the interpreter's start-up
        start_wall, start_cpu = time.perf_counter(), ws_load.core_time(ps)
        time.sleep(0.5)
        share = (ws_load.core_time(ps) - start_cpu) / (time.perf_counter() - start_wall)
    finally:
        proc.kill()
        proc.wait(10)
    if busy:
        assert share > 0.3  # one core of two, shared with this test at most
    else:
        assert share < 0.05


def test_core_time_sums_every_thread():
    code = (
        "import threading\nspin = lambda: [None for _ in iter(int, 1)]\nthreading.Thread(target=spin).start()\nspin()"
    )
    proc = _child(code)
    ps = SimpleNamespace(pid=proc.pid)
    try:
        time.sleep(0.5)
        ran, own = ws_load.core_time(ps), _ticks(f"/proc/{proc.pid}/stat")
        main_thread = _ticks(f"/proc/{proc.pid}/task/{proc.pid}/stat")
    finally:
        proc.kill()
        proc.wait(10)
    assert ran == pytest.approx(own, abs=0.05)
    assert ran > main_thread + 0.05  # the second thread's share is in it
