"""Lowering a helper thread's CPU priority below the event loop's, so its work fills the loop's idle time."""

from __future__ import annotations

import contextlib
import os
import sys
import threading

__all__ = ["give_way", "yield_cpu_to_event_loop"]


def yield_cpu_to_event_loop(priority: str = "idle") -> None:
    """Lower the calling thread's CPU priority (Linux, per thread): ``idle`` or ``low``.

    For threads that do an event loop's background work (the SQLite store's writer, the run
    journal's disk reservations). On a core it shares with the event loop, such a thread at
    normal priority takes the core for a whole time slice (milliseconds) whenever both want
    it, and every socket served by the loop waits that long. A low priority (nice 19) is not enough on its own: once such
    a thread runs, the loop's thread, woken (say, from a write to disk that let the thread
    take the GIL), may wait for the next scheduler tick, 4 ms on a 250 Hz kernel, before it
    runs again. ``idle`` (``SCHED_IDLE``) gives way at once to any other thread that wakes, so
    the thread runs while the loop waits on its sockets or on the GIL.

    The price of ``idle``: other busy processes on the same cores (other workers of the same
    server) leave the thread almost no time, and while it waits it may hold the GIL (the event
    loop waits too) or the database's write lock (the other workers' writers wait). ``low``
    keeps a small share for it. Where ``idle`` is refused, ``low``.
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
    pieces of a helper thread's work; returns at once when no other thread wants the core.

    A low priority decides who runs when a thread *wakes*. It does not keep the scheduler from
    handing the core to the helper at a timer tick while the loop's thread is still busy (the
    loop has used up its slice and the helper is owed a little time), or from picking the
    helper when both become runnable at once (the interpreter lock passing between them). The
    helper then keeps the core until the next tick, up to 4 ms on a 250 Hz kernel, while the
    loop waits with every socket it serves. Measured with ``perf sched`` at 1,000 streams
    (``benchmarks/ws_load.py``), turns of the SQLite writer and checkpointer kept the loop's
    thread waiting to run for up to 4 ms, a few times a round. A yield after each piece of
    work ends such a turn there.
    """
    _sched_yield()


_sched_yield = getattr(os, "sched_yield", lambda: None)
