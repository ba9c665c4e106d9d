"""Write-ahead journal of run events: an event is on disk, in one ``write``, before any reader sees it.

Committing every event to the run store before handing it to readers would put a database
transaction (and a thread hand-off) between a model's token and the client. The journal
makes the event durable in the same step instead: its line is copied into a memory map of a
file only this process writes, after which the event is published at once, and the run
store is fed behind it in large, infrequent batches. The map is shared with the kernel's
page cache, so a process killed with ``kill -9`` loses nothing it has copied there, and no
system call is made per event; what survives a power cut is what survives it in the SQLite
store with ``synchronous=NORMAL``. A segment is mapped once, as long as it may grow, and
written only where disk space is reserved (``posix_fallocate``): a full disk fails the write
with an error instead of the process with a ``SIGBUS``. Space is reserved a chunk ahead by a
thread of its own, so the event loop's thread neither maps memory nor waits on the file
system as a segment grows (a reservation can wait milliseconds behind the file system's own
journal when the disk is busy); it waits only if it catches up with a reservation in flight.

Each process writes its own segment files, ``<instance>.<n>.jsonl`` in the journal
directory, holding an exclusive ``flock`` on the one it writes for as long as it lives. A
segment nobody holds belongs to a process that has died, and
:mod:`reasonloop.runs.recording.journal_recovery` copies its events into the store; runs of a dead
process are marked ``interrupted`` only once none of its segments is left, so that mark always
comes after every event it journaled. A process rotates to a new segment past ``max_bytes`` and
deletes a full segment once the store holds all of its events.

A line is ``<run id> TAB <event JSON> LF``; the JSON never contains a raw newline or NUL. A
segment is longer than its lines (space reserved ahead); a crashed process leaves NUL bytes
after its last line, which recovery ignores. A closed segment is cut to its lines.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import mmap
import os
import re
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from reasonloop._threads import yield_cpu_to_event_loop
from reasonloop.errors import RunStoreUnavailable

__all__ = ["SUFFIX", "Journal", "Segment", "file_prefix"]

log = logging.getLogger(__name__)

SUFFIX = ".jsonl"
_CHUNK = 1 << 20
"""Disk space reserved at a time, a chunk ahead of the last line."""


@dataclass(eq=False)
class Segment:
    """One journal file of this process, and how many of its events the store is still to confirm."""

    path: str
    fd: int
    map: mmap.mmap
    size: int = 0
    """Bytes of lines written (the file and its map are longer: space reserved ahead)."""
    reserved: int = 0
    """Bytes of the file with disk space reserved (its length): lines are written only below this."""
    reserving: tuple[Future[None], int] | None = None
    """A reservation in flight on the journal's thread, and where it ends."""
    released: int = 0
    """Bytes of the map already given back to the kernel (pages this process will not touch again)."""
    pending: int = 0
    """Events written here whose store write has not been reported."""
    failed: bool = False
    """The store failed one of its events: the file is kept for recovery."""
    retired: bool = False
    """A newer segment took over; this one is deleted once nothing is pending."""


class Journal:
    """This process's journal: append events, learn when the store holds them, recover dead ones.

    Args:
        directory: Where segment files live (shared by every process using the same store).
        instance: This process's instance id (names its segment files).
        max_bytes: Size past which a new segment is started.
    """

    def __init__(self, directory: str, instance: str, *, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.directory = directory
        self.instance = instance
        self.max_bytes = max_bytes
        self.current: Segment | None = None
        self.retired: list[Segment] = []
        self._serial = 0
        self._rotate_at = 0
        """Size of the current segment before which a failed rotation is not tried again."""
        self._reserver: ThreadPoolExecutor | None = None
        """Reserves disk space ahead of the current segment's last line."""

    def open(self) -> None:
        """Create the directory and this process's first segment.

        Raises:
            RunStoreUnavailable: the directory or file cannot be created.
        """
        try:
            Path(self.directory).mkdir(parents=True, exist_ok=True)
            self.current = self._new_segment()
        except OSError as exc:
            raise RunStoreUnavailable(f"cannot open the run journal in {self.directory}: {exc}") from exc

    def _new_segment(self) -> Segment:
        """Created under a temporary name and locked before it gets its real one, so a
        recovering process never takes a segment for dead in the instant before its lock."""
        self._serial += 1
        name = file_prefix(self.instance) + str(self._serial)
        final = os.path.join(self.directory, name + SUFFIX)
        temporary = final + ".new"
        fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _reserve(fd, 0, _CHUNK)
            span = -(-max(self.max_bytes, _CHUNK) // _CHUNK) * _CHUNK
            segment = Segment(path=final, fd=fd, map=_map_ahead(fd, span, _CHUNK), reserved=_CHUNK)
            os.rename(temporary, final)
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        return segment

    def write(self, run_id: str, payload: str) -> Segment:
        """Append one event; returns its segment (pass it to :meth:`settle` once the store answers).

        Raises:
            OSError: no disk space could be reserved for the line: the event is not journaled.
        """
        segment = self.current
        if segment is None:
            raise OSError("the run journal is closed")
        line = f"{run_id}\t{payload}\n".encode()
        start = segment.size
        end = start + len(line)
        if end > segment.reserved:
            _make_room(segment, end)
        segment.map[start:end] = line
        segment.size = end
        segment.pending += 1
        if segment.reserving is None and segment.reserved - end < _CHUNK:
            self._reserve_ahead(segment)
        if end - segment.released >= 2 * _CHUNK:
            _release_pages(segment)
        if end >= self.max_bytes and end >= self._rotate_at:
            self._rotate()
        return segment

    def _reserve_ahead(self, segment: Segment) -> None:
        """Start reserving the chunk after ``segment``'s reserved space on the journal's thread."""
        end = min(segment.reserved + _CHUNK, len(segment.map))
        if end <= segment.reserved:
            return  # the map is full: a line past it maps more (see _make_room)
        if self._reserver is None:
            self._reserver = ThreadPoolExecutor(1, "run-journal-reserve", initializer=yield_cpu_to_event_loop)
        segment.reserving = (self._reserver.submit(_reserve, segment.fd, segment.reserved, end), end)

    def _rotate(self) -> None:
        old = self.current
        try:
            self.current = self._new_segment()
        except OSError as exc:  # keep writing to the old one rather than fail runs; retry a chunk later
            if old is not None:
                self._rotate_at = old.size + _CHUNK
            log.warning("cannot start a new run journal segment: %s", exc)
            return
        self._rotate_at = 0
        if old is not None:
            old.retired = True
            self.retired.append(old)
            self._release(old)

    def settle(self, segment: Segment, recorded: bool, count: int = 1) -> None:
        """The store answered for ``count`` events of ``segment`` (``recorded`` or failed)."""
        segment.pending -= count
        if not recorded:
            segment.failed = True
        if segment.retired:
            self._release(segment)

    def _release(self, segment: Segment) -> None:
        """Delete a retired segment whose events the store holds; one with a failed event stays
        on disk, unlocked once closed, for recovery to import."""
        if segment.pending > 0:
            return
        _settle_reservation(segment)  # its descriptor is about to close
        if not segment.failed:
            with contextlib.suppress(OSError):
                os.unlink(segment.path)
        elif not segment.map.closed:  # kept for recovery: cut to its lines
            with contextlib.suppress(OSError, ValueError):
                segment.map.flush()
                segment.map.close()
                os.ftruncate(segment.fd, segment.size)
        with contextlib.suppress(OSError, ValueError):
            segment.map.close()
        with contextlib.suppress(OSError):
            os.close(segment.fd)
        if segment in self.retired:
            self.retired.remove(segment)

    def close(self) -> None:
        """Delete the segments the store holds entirely; close the others (recovery imports them)."""
        segments = [*self.retired, *([self.current] if self.current is not None else [])]
        self.current = None
        for segment in segments:
            segment.retired = True
            if segment.pending > 0:
                segment.failed = True  # never confirmed: keep it for the next recovery
                segment.pending = 0
            self._release(segment)
        if self._reserver is not None:
            self._reserver.shutdown(wait=False)
            self._reserver = None

    @property
    def path(self) -> str:
        return self.current.path if self.current is not None else self.directory


def _map_ahead(fd: int, span: int, size: int) -> mmap.mmap:
    """Map ``span`` bytes of a file ``size`` bytes long. Python maps no more than a file holds,
    so the file is lengthened for the call and cut back after it; the pages past its end are
    there once it grows again (until then, touching them would raise ``SIGBUS``)."""
    if span <= size:
        return mmap.mmap(fd, size)
    os.ftruncate(fd, span)
    try:
        return mmap.mmap(fd, span)
    finally:
        os.ftruncate(fd, size)


def _make_room(segment: Segment, needed: int) -> None:
    """Reserved space for the first ``needed`` bytes of ``segment``: from the reservation in
    flight (waited for), else reserved here, mapped again when a line runs past the map
    (after a rotation that failed, or a line longer than what is left).

    Raises:
        OSError: no space left. Nothing was written; the file may have grown (by NUL bytes,
            which recovery ignores).
    """
    _settle_reservation(segment)
    if needed <= segment.reserved:
        return
    size = -(-needed // _CHUNK) * _CHUNK
    _reserve(segment.fd, segment.reserved, size)
    segment.reserved = size
    if size > len(segment.map):
        grown = mmap.mmap(segment.fd, size)
        segment.map.close()
        segment.map = grown


def _settle_reservation(segment: Segment) -> None:
    """Wait for ``segment``'s reservation in flight, if any, and count its space if it got it
    (one that failed is tried again, on this thread, when the space is needed)."""
    if segment.reserving is None:
        return
    future, end = segment.reserving
    segment.reserving = None
    if future.exception() is None:
        segment.reserved = max(segment.reserved, end)


def _reserve(fd: int, start: int, end: int) -> None:
    """Disk blocks for bytes ``start`` to ``end`` of the file, allocated now: a full disk is an
    error here, never a ``SIGBUS`` when the map is written. Where ``posix_fallocate`` is missing
    (macOS), by writing zeros.

    Raises:
        OSError: no space left.
    """
    if hasattr(os, "posix_fallocate"):
        os.posix_fallocate(fd, start, end - start)
        return
    zeros = bytes(min(end - start, 1 << 16))
    while start < end:
        start += os.pwrite(fd, zeros[: end - start], start)


def _release_pages(segment: Segment) -> None:
    """Unmap the whole chunks behind the last line from this process (the page cache keeps
    them and writes them out): the resident size stays at a chunk or two, not the segment's."""
    upto = (segment.size // _CHUNK - 1) * _CHUNK
    if upto > segment.released:
        with contextlib.suppress(OSError, ValueError, AttributeError):  # no madvise: stays resident
            segment.map.madvise(mmap.MADV_DONTNEED, segment.released, upto - segment.released)
        segment.released = upto


def file_prefix(instance: str) -> str:
    """How an instance id starts the names of its segment files."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", instance) + "."
