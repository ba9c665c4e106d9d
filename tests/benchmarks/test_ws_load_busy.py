"""How ws_load.py measures a server's peak occupancy of its core: the sliding window over samples,
and the CPU counter read from a real process."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
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


@contextlib.contextmanager
def _child(code: str) -> Iterator[SimpleNamespace]:
    """A Python process running ``code``, given once it has started (its start-up not counted),
    as the ``pid`` that ``core_time`` reads; killed on the way out."""
    proc = subprocess.Popen([sys.executable, "-c", "print('ready', flush=True)\n" + code], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    with proc.stdout:
        try:
            assert proc.stdout.readline() == b"ready\n"
            yield SimpleNamespace(pid=proc.pid)
        finally:
            proc.kill()
            proc.wait(10)


def _ticks(path: str) -> float:
    """User plus system CPU seconds from a ``/proc`` stat file (in clock ticks there)."""
    with open(path) as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.integration
@pytest.mark.parametrize(("code", "busy"), [("while True: pass", True), ("import time; time.sleep(60)", False)])
def test_core_time_counts_what_a_process_ran(code, busy):
    with _child(code) as ps:
        start_wall, start_cpu = time.perf_counter(), ws_load.core_time(ps)
        time.sleep(0.5)
        share = (ws_load.core_time(ps) - start_cpu) / (time.perf_counter() - start_wall)
    if busy:
        assert share > 0.3  # one core of two, shared with this test at most
    else:
        assert share < 0.05


@pytest.mark.integration
def test_core_time_sums_every_thread():
    code = "import threading\ndef spin():\n    while True: pass\nthreading.Thread(target=spin).start()\nspin()"
    with _child(code) as ps:
        time.sleep(0.5)
        ran, own = ws_load.core_time(ps), _ticks(f"/proc/{ps.pid}/stat")
        main_thread = _ticks(f"/proc/{ps.pid}/task/{ps.pid}/stat")
    assert ran == pytest.approx(own, abs=0.05)
    assert ran > main_thread + 0.05  # the second thread's share is in it
