"""WaitDeadline: only time spent waiting counts, and only its own cancel becomes a timeout."""

from __future__ import annotations

import asyncio

import pytest

from reasonloop.llm.deadline import WaitDeadline


async def waited(deadline: WaitDeadline, seconds: float) -> None:
    """Wait ``seconds`` as if on a provider; a deadline expiry becomes TimeoutError."""
    deadline.start_wait()
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        if deadline.expired_here():
            raise TimeoutError from None
        raise
    deadline.end_wait()


async def test_one_long_wait_expires() -> None:
    deadline = WaitDeadline(0.05)
    with pytest.raises(TimeoutError):
        await waited(deadline, 5)
    deadline.close()
    assert deadline.expired


async def test_waits_add_up() -> None:
    deadline = WaitDeadline(0.1)
    await waited(deadline, 0.04)
    await waited(deadline, 0.04)
    with pytest.raises(TimeoutError):
        await waited(deadline, 0.04)
    deadline.close()


async def test_time_between_waits_is_neither_counted_nor_interrupted() -> None:
    deadline = WaitDeadline(0.08)
    for _ in range(3):
        await waited(deadline, 0.01)
        await asyncio.sleep(0.1)  # the caller's own work, longer than the whole budget
    deadline.close()
    assert not deadline.expired


async def test_someone_elses_cancel_stays_a_cancel() -> None:
    deadline = WaitDeadline(10)
    task = asyncio.ensure_future(waited(deadline, 5))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadline.close()
    assert not deadline.expired


async def test_closed_deadline_never_fires() -> None:
    deadline = WaitDeadline(0.02)
    deadline.start_wait()
    deadline.close()
    await asyncio.sleep(0.05)  # would have been cancelled here if the timer were still armed
    assert not deadline.expired
