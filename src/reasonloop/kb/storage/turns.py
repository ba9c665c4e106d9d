"""Writer turns: processes take turns writing to an index directory, and each sees what the others
committed.

Any number of processes may open the directory. Readers take no lock: before each search they
compare sqlite's ``data_version`` with the one they last saw (no I/O), and when another process
committed they bring their derived indexes in line with sqlite (:meth:`WriterTurns.catch_up`).
Writers take turns under ``writer.lock``: a turn begins by catching up in the same way and sets
the ``dirty`` flag, commits groups of documents, then settles the derived indexes (a BM25 commit,
the vector file) and lets go of the lock. A writer that finds the lock taken waits, saying so
through the ingest progress (or the log). A dirty flag that is set while the lock is free was
left by a writer that was killed: the next process to take the lock repairs the derived indexes
from sqlite.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from reasonloop.kb.storage.locking import WriterLock
from reasonloop.kb.storage.store import MetadataStore

__all__ = ["REPAIR_EVERY_S", "DerivedIndexes", "WriterTurns"]

logger = logging.getLogger(__name__)

REPAIR_EVERY_S = 1.0
"""How often a reader that saw the dirty flag checks whether the writer that set it is gone."""


class DerivedIndexes(Protocol):
    """What an index keeps beside the catalog's rows and derives from them (BM25 and vectors, or a
    Milvus collection): what a writer turn brings in line with them."""

    def sync(self) -> list[int]:
        """Bring this process's view in line with sqlite (and tell :meth:`WriterTurns.viewed`).

        Returns:
            Keys of chunks whose vector is in no cache (only a repair can deal with them).
        """
        ...

    def repair(self, *, flush: bool = True) -> None:
        """Sync, then repair what a killed writer left; only called holding the writer lock."""
        ...

    def settle(self, *, flush_vectors: bool = False) -> None:
        """Make what was applied durable and searchable by every process."""
        ...


def _log_wait(message: str) -> None:
    logger.warning("%s", message)


class WriterTurns:
    """The writer turns of one index directory in this process.

    Args:
        store: The directory's catalog (its ``dirty`` flag and ``data_version``).
        lock_file: The writer lock (``writer.lock``).
        derived: The indexes kept in line with the catalog.
    """

    def __init__(self, store: MetadataStore, lock_file: Path, derived: DerivedIndexes) -> None:
        self.store = store
        self.derived = derived
        self.writer = WriterLock(lock_file)
        self.mutate = threading.RLock()
        """Held around sqlite commits with their derived-index updates, against repairs and catch-ups."""
        self.began: float | None = None
        """When this process's current writer turn began (None: it holds no turn)."""
        self.seen_version: int | None = None
        self.suspect_dirty = False
        """The dirty flag was set when last looked at, by a writer of another process."""
        self.last_repair_try = 0.0

    def viewed(self) -> None:
        """Note that this process's view matches sqlite as it is now (what a catch-up compares with)."""
        self.seen_version = self.store.data_version()

    def open(self) -> None:
        """Bring this process's view up to date as it opens the directory, repairing it when it can."""
        # Repairs need the writer lock. Without it another process is writing: its sqlite
        # commits run ahead of its BM25 commits, so this one only brings its view up to date,
        # and every write operation catches up again once it holds the lock.
        if self.writer.try_acquire():
            try:
                self.repair()
            finally:
                self.writer.release()
        else:
            self.catch_up(force=True)

    def repair(self, *, flush: bool = True) -> None:
        """Bring the derived indexes in line with sqlite (cheap when nothing is off).

        Only call it holding the writer lock.
        """
        with self.mutate:
            self.derived.repair(flush=flush)
            self.suspect_dirty = False

    def catch_up(self, *, force: bool = False) -> bool:
        """See what other processes committed (cheap when they committed nothing: one pragma).

        When another process committed since the last look, the derived indexes sync with
        sqlite. A dirty flag left by a writer that is gone (its lock is free) is repaired here.
        Never waits: while this process's own writer holds the index, the search uses the view
        as it is.

        Returns:
            Whether the view was brought up to date.
        """
        now = time.monotonic()
        changed = self.store.data_version() != self.seen_version
        repair = self.suspect_dirty and now - self.last_repair_try >= REPAIR_EVERY_S
        if not force and not repair and not changed:
            return False
        if not self.mutate.acquire(blocking=force):
            return False
        try:
            synced = False
            if changed or force:
                self.derived.sync()
                synced = True
                self.suspect_dirty = not self.writer.held and self.store.dirty
            if self.suspect_dirty and not self.writer.held:
                self.last_repair_try = now
                if self.writer.try_acquire():  # the writer that set the flag is gone
                    try:
                        self.repair()
                        synced = True
                    finally:
                        self.writer.release()
            return synced
        finally:
            self.mutate.release()

    async def begin(self, on_wait: Callable[[str], None] | None = None) -> None:
        """Hold a writer turn before committing (waiting for another process's turn to end).

        ``on_wait`` is called once with a message when this has to wait (default: the log).
        """
        if self.began is not None:
            return
        await self.writer.acquire_async(on_wait or _log_wait)
        try:
            await asyncio.to_thread(self._begin)
        except BaseException:
            self.writer.release()
            raise

    def hold(self) -> None:
        """Hold a writer turn now (under :attr:`mutate`): for a commit whose caller did not
        await :meth:`begin`, this waits here."""
        if self.began is None:
            self.writer.acquire(_log_wait)
            try:
                self._begin()
            except BaseException:
                self.writer.release()
                raise

    def _begin(self) -> None:
        """Under the writer lock: catch up with (or repair after) other writers, mark dirty."""
        with self.mutate:
            if self.store.dirty or self.store.data_version() != self.seen_version:
                self.repair(flush=False)
            self.store.dirty = True
            self.began = time.monotonic()

    def end(self, *, flush_vectors: bool = False) -> None:
        """Settle the derived indexes and let go of the writer lock (under :attr:`mutate`)."""
        if self.began is None:
            return
        try:
            self.derived.settle(flush_vectors=flush_vectors)
            self.store.dirty = False  # left set if the above failed: the next holder repairs
        finally:
            self.began = None
            self.writer.release()
