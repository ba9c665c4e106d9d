"""Reading one version of a file that may change while it is read.

A file in an ingested folder may be written while the ingest reads it: a log that grows, an
editor saving over it, a sync client replacing it. Its bytes are hashed, parsed and stored
together, so what is stored always matches its hash; what must not happen is bytes from two
versions read as one (the start of the old file and the end of the new), stored as if they were
a version of the file. :func:`read_version` reads a file and checks, before and after, that it is
the same file (device and inode: not replaced), of the same size and modification time, and that
every byte of that size was read; otherwise it reads again, and after :data:`READ_TRIES` reads
that each saw a change it gives up with a reason. A change that keeps the size and lands within
the file system's timestamp granularity cannot be seen; the next ingest hashes the file again
and reads it anew if its bytes differ.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import BinaryIO

from reasonloop.errors import KBLoadError

__all__ = ["READ_TRIES", "read_version"]

READ_TRIES = 3
"""Reads of a file that keeps changing before it fails (a short pause between them)."""

_PAUSE_S = 0.2
"""Time left to a writer between two reads that each saw the file change."""


def _identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _read_open(f: BinaryIO) -> bytes:
    """Every byte of an open file."""
    return f.read()


def read_version(path: Path, source: str | None = None) -> tuple[bytes, float]:
    """The bytes of one version of the file at ``path``, and that version's modification time.

    Args:
        source: The name the file is reported under (default: ``path``).

    Raises:
        KBLoadError: the file cannot be read, or it changed during each of :data:`READ_TRIES` reads.
    """
    name = source or str(path)
    for attempt in range(READ_TRIES):
        if attempt:
            time.sleep(_PAUSE_S)
        try:
            with open(path, "rb") as f:
                before = os.fstat(f.fileno())
                data = _read_open(f)
                after = os.fstat(f.fileno())
            now = os.stat(path)
        except OSError as exc:
            raise KBLoadError(f"cannot read: {exc.strerror or exc}", source=name) from exc
        if _identity(before) == _identity(after) == _identity(now) and len(data) == after.st_size:
            return data, after.st_mtime
    raise KBLoadError(
        f"changed while it was read, {READ_TRIES} times in a row: left out (ingest it again once it is written)",
        source=name,
    )
