"""Watching which timers the running event loop arms (for "no timer unless something waits")."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def armed_timers() -> Iterator[list[Callable[..., Any]]]:
    """The callbacks of every ``loop.call_at`` made inside the block, in order."""
    loop = asyncio.get_running_loop()
    armed: list[Callable[..., Any]] = []
    real_call_at = loop.call_at

    def spy(when: float, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        armed.append(callback)
        return real_call_at(when, callback, *args, **kwargs)

    loop.call_at = spy  # type: ignore[method-assign]
    try:
        yield armed
    finally:
        del loop.call_at
