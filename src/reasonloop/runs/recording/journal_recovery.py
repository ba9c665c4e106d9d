"""Recovering the run journals of processes that died: their events copied into the run store,
their segments deleted (see :mod:`reasonloop.runs.recording.journal` for how segments are written).

A segment nobody holds an ``flock`` on belongs to a dead process. The process that claims it
(by taking the lock) imports its lines, skipping those the store already has and lines a
crash cut short, and deletes it; one whose import fails stays for the next attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import time
from collections.abc import Sequence

from reasonloop.events import event_adapter
from reasonloop.runs.recording.journal import SUFFIX
from reasonloop.runs.stores.event_rows import EventRows
from reasonloop.runs.stores.protocol import RunStore, append_events

__all__ = ["recover_journals", "unrecovered"]

log = logging.getLogger(__name__)

_IMPORT_BATCH = 1000
_STALE_NEW_S = 60.0


async def recover_journals(directory: str, store: RunStore) -> int:
    """Copy the events of segments no live process holds into ``store``, then delete them.

    Events the store already has are skipped. A segment whose import fails (store unavailable)
    stays for the next attempt.

    Returns:
        How many events were added to the store.

    Raises:
        RunStoreUnavailable: the store failed while importing.
    """
    added = 0
    for path in _segments(directory):
        fd = _claim(path)
        if fd is None:
            continue
        try:  # closing the file releases the lock: a segment that failed to import is taken again later
            data = await asyncio.to_thread(_read, fd)
            added += await _import(data, store, path)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        finally:
            os.close(fd)
    return added


def unrecovered(directory: str) -> set[str]:
    """File prefixes (:func:`file_prefix`) of instances with segments on disk: live ones, and
    dead ones whose events are not all in the store yet (being imported, or the import failed).
    Their runs must not be marked interrupted before those events are in."""
    return {name[: name.rindex(".", 0, -len(SUFFIX)) + 1] for name in _segment_names(directory)}


def _segment_names(directory: str) -> list[str]:
    try:
        return sorted(name for name in os.listdir(directory) if name.endswith(SUFFIX))
    except FileNotFoundError:
        return []


def _segments(directory: str) -> list[str]:
    """Paths of the segments in ``directory``, deleting ``.new`` files a crash left behind."""
    with contextlib.suppress(FileNotFoundError):
        for name in os.listdir(directory):
            if name.endswith(SUFFIX + ".new"):  # a segment being created; one left by a crash is empty
                path = os.path.join(directory, name)
                with contextlib.suppress(OSError):
                    if time.time() - os.stat(path).st_mtime > _STALE_NEW_S:
                        os.unlink(path)
    return [os.path.join(directory, name) for name in _segment_names(directory)]


def _claim(path: str) -> int | None:
    """The segment opened and locked, or None when a live process (or a recovering one) holds it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:  # another process recovered it first
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _read(fd: int) -> bytes:
    """The segment's lines, without the NUL bytes reserved after them by a process that died.
    (A run of NULs amid lines, such as a page lost in a power cut, damages the lines it
    touches, which the import skips; the lines after it are kept.)"""
    with open(fd, "rb", closefd=False) as file:
        return file.read().rstrip(b"\0")


async def _import(data: bytes, store: RunStore, path: str) -> int:
    items = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw:
            continue
        run_id, tab, payload = raw.decode("utf-8", errors="replace").partition("\t")
        try:
            if not tab:
                raise ValueError("no run id")
            items.append((run_id, event_adapter.validate_json(payload).seq, payload))
        except ValueError as exc:  # a line cut short by the crash, or damage: the rest is still good
            log.warning("skipping line %d of run journal %s: %s", number, path, str(exc).splitlines()[0])
    added = 0
    for start in range(0, len(items), _IMPORT_BATCH):
        chunk = EventRows.of(items[start : start + _IMPORT_BATCH])
        results: Sequence[Exception | None] = await append_events(store, chunk)
        added += sum(result is None for result in results)
    if added:
        log.warning("recovered %d run event(s) from %s", added, path)
    return added
