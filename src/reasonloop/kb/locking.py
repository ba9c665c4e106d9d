"""One writer per index directory across processes (an advisory ``flock`` on a lock file).

Readers never take the lock. A process that dies releases it automatically, which is how the
next opener knows an unfinished ingest is not still running and can repair the index.
"""

from __future__ import annotations

import os
from pathlib import Path

from reasonloop.errors import KBError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no cross-process exclusion
    fcntl = None  # type: ignore[assignment]

__all__ = ["WriterLock"]


class WriterLock:
    """Exclusive, non-blocking, re-entrant within one holder."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None
        self._depth = 0

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
        self._fd = fd
        self._depth = 1
        return True

    def acquire(self) -> None:
        """Take the lock or fail at once.

        Raises:
            KBError: another process is writing to this index.
        """
        if not self.try_acquire():
            raise KBError(
                f"another process is writing to the knowledge base at {self.path.parent}; "
                "wait for its ingest to finish and try again",
                path=str(self.path.parent),
            )

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
