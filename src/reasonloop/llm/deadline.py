"""Deadlines on the time a stream spends waiting on its provider.

``asyncio.timeout`` bounds wall time, which for a stream would include the time the caller
spends between chunks, and it cancels whatever the task is doing when it fires, even when
that is the caller's own work between two chunks. :class:`WaitDeadline` only ever cancels a
wait on the provider: the caller marks each wait with :meth:`~WaitDeadline.start_wait` /
:meth:`~WaitDeadline.end_wait`. Two limits apply:

* ``budget_s``: the summed waits of one attempt (the provider's timeout);
* ``until``: an instant on the event loop's clock (a run's deadline). Passed while the
  caller has the turn, it is reported at the next wait.

It is cheap on fast streams: one timer per deadline, not per chunk. The timer is set for
the earliest moment a limit could run out; when it fires early (the caller's own time
pushed the wait budget later) it re-arms itself for what is left, and when it fires while
the caller has the turn it does nothing until the next wait.
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
    """Budget ``budget_s`` seconds of waiting; see the module docstring.

    Usage (``until`` optional, an instant on the loop's clock)::

        deadline = WaitDeadline(30.0, until=loop.time() + 120)
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
    """

    __slots__ = ("_budget", "_handle", "_loop", "_since", "_task", "_until", "_waited", "expired", "passed_until")

    def __init__(self, budget_s: float, until: float | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._budget = budget_s
        self._until = until
        self._waited = 0.0
        self._since: float | None = None
        self._task: asyncio.Task[object] | None = None
        self._handle: asyncio.TimerHandle | None = None
        self.expired = False
        self.passed_until = False
        """Set with :attr:`expired` when it was ``until`` that passed (not the wait budget)."""

    def start_wait(self) -> None:
        """The current task starts waiting on the provider.

        When ``until`` has already passed, the wait is cancelled as soon as it starts (the
        awaitable unwinds normally, then :meth:`expired_here` tells).
        """
        now = self._loop.time()
        self._since = now
        self._task = asyncio.current_task(self._loop)  # the loop given: one lookup fewer per chunk
        if self._handle is None:
            when = now + self._budget - self._waited
            when = when if self._until is None else min(when, self._until)
            self._handle = self._loop.call_at(when, self._fire, context=_TIMER_CONTEXT)

    def end_wait(self) -> None:
        """The wait is over (a chunk arrived or the stream ended)."""
        if self._since is not None:
            self._waited += self._loop.time() - self._since
            self._since = None

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
        left = self._budget - self._waited - (now - self._since)
        until_left = left if self._until is None else self._until - now
        if left > 0 and until_left > 0:  # armed before some of the caller's time: the real deadline is later
            self._handle = self._loop.call_at(now + min(left, until_left), self._fire, context=_TIMER_CONTEXT)
            return
        self.expired = True
        self.passed_until = self._until is not None and until_left <= 0
        self._task.cancel()
