"""Waiting for something to become true, instead of sleeping a fixed time and hoping it did.

A test that sleeps 0.3 s "so that the listener has subscribed" passes on an idle machine and
fails on a loaded one; a test that polls the thing it waits for passes on both, and on an idle
machine it goes on as soon as the thing is true. Both helpers return the predicate's first true
value, so a poll can hand back what it found::

    record = wait_until(lambda: store.get(run_id), timeout=10)
    view = await await_until(lambda: finished_view(http, run_id))  # the predicate may be async

The timeout is only a bound for a test that would otherwise hang: it is generous (the machines
that run the tests are shared), and passing it fails the test with the predicate's last value.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["DEFAULT_TIMEOUT_S", "await_until", "wait_until"]

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 60.0
"""Bound on a wait that should end at once: long enough for a machine busy with other work."""

POLL_S = 0.01
"""Pause between two checks: short, so that a test goes on as soon as it can."""


def wait_until(
    predicate: Callable[[], T], timeout: float = DEFAULT_TIMEOUT_S, *, interval: float = POLL_S, what: str = ""
) -> T:
    """Call ``predicate`` until it returns something true, and return that; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(_timed_out(predicate, timeout, value, what))
        time.sleep(interval)


async def await_until(
    predicate: Callable[[], T | Awaitable[T]],
    timeout: float = DEFAULT_TIMEOUT_S,  # noqa: ASYNC109  # the bound of a poll, and its failure message
    *,
    interval: float = POLL_S,
    what: str = "",
) -> T:
    """:func:`wait_until` on the event loop: the loop runs between checks; ``predicate`` may be async."""
    deadline = time.monotonic() + timeout
    while True:
        value: Any = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(_timed_out(predicate, timeout, value, what))
        await asyncio.sleep(interval)


def _timed_out(predicate: Callable[..., Any], timeout: float, last: Any, what: str) -> str:
    name = what or getattr(predicate, "__qualname__", repr(predicate))
    return f"not true within {timeout:g} s: {name} (last value: {last!r})"
