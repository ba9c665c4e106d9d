"""Eager first steps: run an awaitable up to its first real suspension, and resume it later.

Why: most awaits on a run's hot path never wait, and arming a timeout for them costs more than
the work (benchmarks/README.md, "Design notes: eager first steps").

Example::

    done, value = first_step(tool.run(params, ctx))
    if not done:
        async with asyncio.timeout(30):
            value = await resume(*value)
"""

from __future__ import annotations

import types
from collections.abc import Awaitable, Generator
from typing import Any

__all__ = ["first_step", "resume"]


def first_step(awaitable: Awaitable[Any]) -> tuple[bool, Any]:
    """``(True, result)`` when ``awaitable`` finishes without suspending, else ``(False, pending)``.

    Exceptions the first step raises propagate. Pass ``pending`` to :func:`resume`, in the
    same task, before doing anything else that could wait.
    """
    # A coroutine (or an async generator's __anext__) steps itself; anything else through __await__.
    iterator: Any = awaitable
    try:
        send = iterator.send
    except AttributeError:
        iterator = awaitable.__await__()
        send = iterator.send
    try:
        yielded = send(None)
    except StopIteration as stop:
        return True, stop.value
    return False, (iterator, yielded)


@types.coroutine
def resume(iterator: Any, yielded: Any) -> Generator[Any, None, Any]:
    """Await the rest of an awaitable that :func:`first_step` left suspended.

    Hands what it yielded (a future, or ``None`` for a bare yield) to the running task,
    exactly as awaiting it directly would have; a cancellation or other exception thrown
    in meanwhile goes to the awaitable, which may handle it.
    """
    while True:
        try:
            yield yielded
        except GeneratorExit:
            iterator.close()
            raise
        except BaseException as exc:
            try:
                yielded = iterator.throw(exc)
            except StopIteration as stop:
                return stop.value
            continue
        break
    return (yield from iterator)
