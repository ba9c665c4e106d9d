"""Instance identity: which server process executes a run, and whether that process still lives.

Every server process has an id (:func:`new_instance_id`) recorded with the runs it executes.
When it dies, another instance finds its runs in flight and ends them
(:mod:`reasonloop.runs.recovery`); a store answers "is that instance alive?" by its heartbeat,
or, for a process on the same host, by :func:`instance_alive`.
"""

from __future__ import annotations

import os
import socket
import uuid

__all__ = ["instance_alive", "new_instance_id"]


def new_instance_id() -> str:
    """``host:pid:started:random``: unique per server process, and checkable on the same host.

    ``started`` is when the process started (in the kernel's clock ticks since boot; empty where
    that cannot be read): a pid is reused, and a restarted container's server is often PID 1
    again under the same host name, which the pid alone would take for its dead predecessor.
    """
    return f"{socket.gethostname()}:{os.getpid()}:{_started(os.getpid())}:{uuid.uuid4().hex[:8]}"


def _started(pid: int) -> str:
    """When process ``pid`` started, from ``/proc`` (Linux); empty when that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return ""
    fields = stat.rpartition(")")[2].split()  # after the command name, which may hold anything
    return fields[19] if len(fields) > 19 else ""  # field 22: starttime


def instance_alive(instance: str) -> bool | None:
    """``True``/``False`` for a process on this host, ``None`` when only a heartbeat can tell."""
    parts = instance.split(":")
    host, pid_text = parts[0], parts[1] if len(parts) > 1 else ""
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if len(parts) == 4 and parts[2]:  # the pid is in use: by the same process, if it started then
        now = _started(int(pid_text))
        return not now or now == parts[2]
    return True
