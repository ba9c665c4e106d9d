"""Process-wide settings for a process whose job is serving (``reasonloop serve`` and its workers).

Streaming runs allocate a few objects per token. With the collector's default thresholds a
young collection runs many times a second under load and a full one every few seconds, and
a full collection walks every object the process ever kept: modules, schemas, settings. Its
pause lands on every open stream at once and sets the tail of the latency (the WebSocket ping
p99 under 500 streams fell from 30 ms to 12 ms with these settings, ``benchmarks/ws_load.py``).
"""

from __future__ import annotations

import gc

__all__ = ["SERVING_GC_THRESHOLDS", "tune_for_serving"]

SERVING_GC_THRESHOLDS = (50_000, 20, 20)
"""Young-generation allocations between collections, then how many of each generation's
collections before the next older one. Reference counting frees nearly everything a run
allocates; these only space out the searches for cycles."""


def tune_for_serving() -> None:
    """Freeze what start-up built out of the collector's sight and collect cycles less often.

    Call once, after imports and before serving: ``gc.freeze`` moves every object alive now
    to a generation full collections skip (they live as long as the process anyway).
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVING_GC_THRESHOLDS)
