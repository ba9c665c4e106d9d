"""One writer at a time per index directory, across processes (an advisory ``flock`` on a lock file).

Readers never take the lock. Writers hold it only around their write transactions (a *turn*,
see :mod:`reasonloop.kb.storage.turns`) and wait for each other: a writer that finds it taken
polls until it is free, saying once what it waits for. The operating system releases the lock
of a process that dies, however it dies, so a killed writer never leaves the index locked; the
dirty flag in sqlite then tells the next holder to repair what that writer left half done.

The holder writes its process id into the lock file, so that a waiting process can say whom it
waits for.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no cross-process exclusion
    fcntl = None  # type: ignore[assignment]

__all__ = ["WriterLock"]

WaitFn = Callable[[str], None]

POLL_S = (0.01, 0.2)
"""A waiting writer polls the lock this often: starting fast, backing off to the slower figure."""


class WriterLock:
    """Exclusive, re-entrant within one holder; :meth:`acquire` waits, :meth:`try_acquire` does not."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None
        self._depth = 0

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def try_acquire(self) -> bool:
        """Take the lock if nobody else holds it."""
        if self._fd is not None:
            self._depth += 1
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                return False
        try:  # who holds it, for the messages of those who wait
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        except OSError:
            pass
        self._fd = fd
        self._depth = 1
        return True

    def holder(self) -> str:
        """A description of the process holding the lock (as far as the lock file tells)."""
        try:
            pid = self.path.read_text(encoding="ascii", errors="replace").strip()
        except OSError:
            pid = ""
        return f"process {pid}" if pid.isdigit() else "another process"

    def waiting_message(self) -> str:
        return f"waiting for {self.holder()} to finish writing to the knowledge base at {self.path.parent}"

    def acquire(self, on_wait: WaitFn | None = None, *, timeout: float | None = None) -> bool:
        """Take the lock, waiting for the holder as long as it takes (or ``timeout`` seconds).

        Args:
            on_wait: Called once with a message saying whom this waits for, when it has to wait.

        Returns:
            Whether the lock was taken (always, without a timeout).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = POLL_S[0]
        told = False
        while not self.try_acquire():
            if deadline is not None and time.monotonic() >= deadline:
                return False
            if not told and on_wait is not None:
                on_wait(self.waiting_message())
                told = True
            time.sleep(pause)
            pause = min(pause * 2, POLL_S[1])
        return True

    async def acquire_async(self, on_wait: WaitFn | None = None) -> None:
        """:meth:`acquire` for the event loop: waits without blocking it, and can be cancelled."""
        pause = POLL_S[0]
        told = False
        while not self.try_acquire():
            if not told and on_wait is not None:
                on_wait(self.waiting_message())
                told = True
            await asyncio.sleep(pause)
            pause = min(pause * 2, POLL_S[1])

    def release(self) -> None:
        if self._fd is None:
            return
        self._depth -= 1
        if self._depth > 0:
            return
        if fcntl is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None
