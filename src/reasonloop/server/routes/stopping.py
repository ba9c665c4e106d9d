"""Event streams that end with their run when the server stops.

A server that stops interrupts the runs it executes; done only once every connection has closed
(as the ASGI lifespan does), an open event stream would be cut first and its client would see no
end. :func:`run_stream` answers with a stream that, as soon as the server begins to stop,
interrupts this process's runs (:meth:`~reasonloop.runs.manager.RunManager.interrupt`) and goes on
to its run's ``interrupted`` end. A run another process executes does not end here: its stream is
closed after :data:`SHUTDOWN_GRACE_S`, and the client resumes it elsewhere.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import anyio
from sse_starlette.sse import EventSourceResponse

from reasonloop.runs.manager import RunManager

__all__ = ["SHUTDOWN_GRACE_S", "run_stream"]

SHUTDOWN_GRACE_S = 2.0
"""How long an event stream goes on once the server begins to stop: its run, interrupted, ends in
far less; a run another process executes does not end here, and its stream is then closed (within
``reasonloop serve``'s 5 s for open connections to close)."""


def run_stream(
    frames: AsyncIterator[Any], runs: RunManager, *, ping: float = 15, headers: Mapping[str, str] | None = None
) -> EventSourceResponse:
    """An SSE response of ``frames`` (dicts of SSE fields, or text already framed) that ends with
    its run when the server stops."""
    stopping = anyio.Event()  # set by the response when the server begins to stop
    return EventSourceResponse(
        _until_stopped(frames, stopping, runs.interrupt),
        ping=ping,
        headers=headers,
        shutdown_event=stopping,
        shutdown_grace_period=SHUTDOWN_GRACE_S,
    )


async def _until_stopped(
    frames: AsyncIterator[Any], stopping: anyio.Event, interrupt: Callable[[], Awaitable[None]]
) -> AsyncIterator[Any]:
    watcher = asyncio.create_task(_interrupt_when(stopping, interrupt))
    try:
        async for frame in frames:
            yield frame.encode() if isinstance(frame, str) else frame
    finally:
        watcher.cancel()
        close = getattr(frames, "aclose", None)
        if close is not None:
            await close()


async def _interrupt_when(stopping: anyio.Event, interrupt: Callable[[], Awaitable[None]]) -> None:
    await stopping.wait()
    await interrupt()
