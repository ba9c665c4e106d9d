"""Deadlines on the time a stream spends waiting on its provider: timeouts on silence.

A streaming response can take minutes on a slow machine and still be healthy, as long as
chunks keep arriving; what a timeout must catch is a provider that went silent. So each wait
on the provider is bounded on its own, never the whole response:

* ``first_s``: the wait for the first chunk (connecting and reading the prompt included);
* ``gap_s``: every later wait, the gap between two chunks;
* ``until``: an instant on the event loop's clock (a run's deadline), the overall bound.
  Passed while the caller has the turn, it is reported at the next wait.

``asyncio.timeout`` would bound wall time instead, including the time the caller spends
between chunks, and would cancel whatever the task is doing when it fires, even the caller's
own work. :class:`WaitDeadline` only ever cancels a wait on the provider: the caller marks
each wait with :meth:`~WaitDeadline.start_wait` / :meth:`~WaitDeadline.end_wait`.

It is cheap on fast streams: one timer per deadline, not per chunk. The timer is set for the
earliest moment the current wait could run out, and never further ahead than one gap, so that
whatever wait comes next it is not late; when it fires early (later chunks arrived meanwhile,
or the first token is allowed longer than a gap) it re-arms itself for what is left, and when
it fires while the caller has the turn it does nothing until the next wait.
"""

from __future__ import annotations

import asyncio
import contextvars

__all__ = ["DeadlineReached", "WaitDeadline"]


_TIMER_CONTEXT = contextvars.Context()
"""The context every deadline's timer runs in. Its callback reads no context variable, and a
timer given none copies the caller's: one more object for each open stream to keep."""


class DeadlineReached(TimeoutError):
    """The caller's deadline (``until``) passed while it waited on the provider; not retried."""


class WaitDeadline:
    """Bound every wait on the provider; see the module docstring.

    Usage (``until`` optional, an instant on the loop's clock)::

        deadline = WaitDeadline(120.0, 60.0, until=loop.time() + 300)
        try:
            deadline.start_wait()
            try:
                chunk = await anext(chunks)
            except asyncio.CancelledError:
                if deadline.expired_here():  # passed_until tells which limit it was
                    raise (DeadlineReached if deadline.passed_until else TimeoutError)() from None
                raise
            deadline.end_wait()
        finally:
            deadline.close()

    Args:
        started: Chunks have already arrived, so even the first wait is a gap between chunks.
    """

    __slots__ = (
        "_gap",
        "_handle",
        "_limit",
        "_loop",
        "_since",
        "_task",
        "_until",
        "expired",
        "first_wait",
        "passed_until",
    )

    def __init__(self, first_s: float, gap_s: float, until: float | None = None, *, started: bool = False) -> None:
        self._loop = asyncio.get_running_loop()
        self._gap = gap_s
        self._limit = gap_s if started else first_s
        self._until = until
        self._since: float | None = None
        self._task: asyncio.Task[object] | None = None
        self._handle: asyncio.TimerHandle | None = None
        self.expired = False
        self.first_wait = not started
        """True until a chunk has arrived: an expiry then was the wait for the first chunk."""
        self.passed_until = False
        """Set with :attr:`expired` when it was ``until`` that passed (not a silence limit)."""

    @property
    def limit_s(self) -> float:
        """The silence allowed in the current (or next) wait."""
        return self._limit

    def start_wait(self) -> None:
        """The current task starts waiting on the provider.

        When ``until`` has already passed, the wait is cancelled as soon as it starts (the
        awaitable unwinds normally, then :meth:`expired_here` tells).
        """
        now = self._loop.time()
        self._since = now
        self._task = asyncio.current_task(self._loop)  # the loop given: one lookup fewer per chunk
        if self._handle is None:
            when = now + min(self._limit, self._gap)
            when = when if self._until is None else min(when, self._until)
            self._handle = self._loop.call_at(when, self._fire, context=_TIMER_CONTEXT)

    def end_wait(self) -> None:
        """The wait is over (a chunk arrived or the stream ended)."""
        if self._since is not None:
            self._since = None
            if self.first_wait and not self.expired:
                self._limit, self.first_wait = self._gap, False

    def expired_here(self) -> bool:
        """After a CancelledError: True when this deadline caused it and nobody else cancelled.

        Undoes our own cancel request, so the caller can raise TimeoutError instead.
        """
        self.end_wait()
        return self.expired and self._task is not None and self._task.uncancel() == 0

    def close(self) -> None:
        """Disarm (idempotent)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _fire(self) -> None:
        self._handle = None
        if self._since is None or self._task is None:
            return  # the caller has the turn: the next wait re-arms
        now = self._loop.time()
        left = self._since + self._limit - now
        until_left = left if self._until is None else self._until - now
        if left > 0 and until_left > 0:  # armed for an earlier wait: this one runs out later
            when = now + min(left, until_left, self._gap)
            self._handle = self._loop.call_at(when, self._fire, context=_TIMER_CONTEXT)
            return
        self.expired = True
        self.passed_until = self._until is not None and until_left <= 0
        self._task.cancel()
