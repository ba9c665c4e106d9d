"""Process-wide settings for a process whose job is serving (``reasonloop serve`` and its workers),
and the options uvicorn serves it with.

Why: a collection's pause, and a descriptor table grown while clients connect, land on every
open stream at once (benchmarks/README.md, "Design notes: serving process settings").
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import gc
import logging
import os
import re
import resource
from typing import Any

from reasonloop.config import ServerSettings

__all__ = [
    "SERVING_DESCRIPTORS",
    "SERVING_GC_THRESHOLDS",
    "RedactKeys",
    "reserve_descriptors",
    "tune_for_serving",
    "uvicorn_options",
]

SERVING_GC_THRESHOLDS = (50_000, 20, 20)
"""Young-generation allocations between collections, then how many of each generation's
collections before the next older one. Reference counting frees nearly everything a run
allocates; these only space out the searches for cycles."""


SERVING_DESCRIPTORS = 65_536
"""File descriptors (sockets) a serving process makes room for at start, or its limit if lower."""


def tune_for_serving() -> None:
    """Freeze what start-up built out of the collector's sight and collect cycles less often;
    make room for many sockets (:func:`reserve_descriptors`).

    Call once, after imports and before serving: ``gc.freeze`` moves every object alive now
    to a generation full collections skip (they live as long as the process anyway).
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVING_GC_THRESHOLDS)
    reserve_descriptors(SERVING_DESCRIPTORS)


def reserve_descriptors(count: int) -> int:
    """Raise the soft limit on open files towards the hard one, and grow the descriptor table to
    hold ``count`` descriptors (or the limit, if lower) now; returns the descriptors made room for.

    The kernel grows a process's descriptor table as descriptors are opened, doubling it each
    time it is full, and in a threaded process each growth makes the opening thread (the event
    loop, accepting connections) sleep. Grown once at start, it does not grow again below ``count``.

    The soft limit is often 1024 on desktops, which a server with a thousand WebSocket clients
    would reach; the hard limit is what an administrator allows.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = count if hard == resource.RLIM_INFINITY else min(count, hard)
    if soft != resource.RLIM_INFINITY and soft < target:  # raised only, never lowered
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
    room = count if soft == resource.RLIM_INFINITY else min(count, soft)
    if room <= 0:
        return 0
    try:
        probe = os.open(os.devnull, os.O_RDONLY)
    except OSError:
        return 0
    try:
        # The lowest free descriptor at or above the last one: the table grows to hold it, and
        # nothing open is touched (unlike dup2, which would close a descriptor there).
        high = fcntl.fcntl(probe, fcntl.F_DUPFD, room - 1)
        os.close(high)
    except OSError:
        return 0
    finally:
        os.close(probe)
    return room


def uvicorn_options(server: ServerSettings) -> dict[str, Any]:
    """uvicorn's options for ``[server]`` (everything but the app, host, port and workers).

    The WebSocket protocol is uvicorn's sans-I/O one, answering pings and writing text frames
    itself, and the HTTP protocol is uvicorn's httptools one, freed as soon as it hands a
    connection over to it (:mod:`reasonloop.server.transport.ws_protocol`). A frame may be four times the largest one the
    application takes, so that one over the limit reaches it and gets a clear refusal.
    """
    return {
        "http": "reasonloop.server.transport.ws_protocol:ReasonloopHttpProtocol",
        "ws": "reasonloop.server.transport.ws_protocol:ReasonloopWebSocketProtocol",
        "ws_max_size": server.ws_max_frame_bytes * 4 + 1024,
        "ws_ping_interval": server.ws_ping_interval_s,
        "ws_ping_timeout": server.ws_ping_timeout_s,
        "ws_per_message_deflate": server.ws_compression,
        "log_config": _log_config(),
    }


_KEY_IN_QUERY = re.compile(r"(api_key=)[^&\s\"']+")


class RedactKeys(logging.Filter):
    """Masks ``api_key=...`` in log lines: uvicorn logs each WebSocket's path with its query
    string, where a client may carry its key (``/v1/ws?api_key=KEY``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and "api_key=" in record.msg:
            record.msg = _KEY_IN_QUERY.sub(r"\1***", record.msg)
        if isinstance(record.args, tuple) and any(isinstance(a, str) and "api_key=" in a for a in record.args):
            record.args = tuple(_KEY_IN_QUERY.sub(r"\1***", a) if isinstance(a, str) else a for a in record.args)
        return True


def _log_config() -> dict[str, Any]:
    """uvicorn's own logging configuration, with :class:`RedactKeys` on each of its handlers."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["redact_keys"] = {"()": RedactKeys}
    for handler in config["handlers"].values():
        handler.setdefault("filters", []).append("redact_keys")
    return config
