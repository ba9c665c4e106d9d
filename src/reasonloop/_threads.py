"""Helper threads that give the event loop's core way: a lowered priority, and a yield between pieces of work.

Why: a helper thread at normal priority holds the loop's core for a whole scheduler slice and every
socket waits that long (benchmarks/README.md, "Design notes: helper threads give way").
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

__all__ = ["give_way", "yield_cpu_to_event_loop"]


def yield_cpu_to_event_loop(priority: str = "idle") -> None:
    """Lower the calling thread's CPU priority (Linux, per thread): ``idle`` (``SCHED_IDLE``) or
    ``low`` (nice 19); where ``idle`` is refused, ``low``.

    For threads that do an event loop's background work (the SQLite store's writer, the run
    journal's disk reservations). ``idle`` gives way at once to any thread that wakes, but
    leaves almost no time to the thread when other busy processes share the cores; ``low``
    keeps a small share for it.
    """
    if not sys.platform.startswith("linux"):
        return
    tid = threading.get_native_id()
    if priority == "idle":
        try:
            os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
            return
        except (OSError, AttributeError):
            pass
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, tid, 19)


def give_way() -> None:
    """Let a thread waiting for this one's core (the event loop's) have it now, between two
    pieces of a helper thread's work; returns at once when no other thread wants the core."""
    _sched_yield()


_sched_yield = getattr(os, "sched_yield", lambda: None)
