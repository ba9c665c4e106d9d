"""WaitDeadline: each wait on the provider is bounded on its own (the first by its own limit), the
caller's time is never counted, and only its own cancel becomes a timeout."""

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
    deadline = WaitDeadline(0.05, 0.05)
    with pytest.raises(TimeoutError):
        await waited(deadline, 5)
    deadline.close()
    assert deadline.expired and deadline.first_wait


async def test_many_short_waits_never_add_up_to_a_timeout() -> None:
    # A response that keeps streaming is healthy however long it takes in all.
    deadline = WaitDeadline(0.1, 0.1)
    for _ in range(8):
        await waited(deadline, 0.03)
    deadline.close()
    assert not deadline.expired


async def test_the_first_wait_has_its_own_limit() -> None:
    deadline = WaitDeadline(0.3, 0.05)
    await waited(deadline, 0.15)  # longer than a gap may be, within the first token's limit
    with pytest.raises(TimeoutError):
        await waited(deadline, 0.15)  # a gap that long is a stall
    deadline.close()
    assert deadline.expired and not deadline.first_wait


async def test_a_gap_is_bounded_by_its_own_limit_not_by_the_first_tokens() -> None:
    deadline = WaitDeadline(3600, 0.05)
    await waited(deadline, 0.01)
    async with asyncio.timeout(30):  # a guard against hanging; it is not what expires
        with pytest.raises(TimeoutError):
            await waited(deadline, 60)
    deadline.close()
    assert deadline.expired and not deadline.first_wait


async def test_a_deadline_started_mid_stream_allows_only_a_gap() -> None:
    deadline = WaitDeadline(10, 0.05, started=True)
    with pytest.raises(TimeoutError):
        await waited(deadline, 5)
    deadline.close()
    assert not deadline.first_wait


async def test_until_bounds_a_stream_that_keeps_streaming() -> None:
    loop = asyncio.get_running_loop()
    deadline = WaitDeadline(10, 10, until=loop.time() + 0.15)
    with pytest.raises(TimeoutError):
        for _ in range(20):
            await waited(deadline, 0.03)
    deadline.close()
    assert deadline.passed_until


async def test_time_between_waits_is_neither_counted_nor_interrupted() -> None:
    deadline = WaitDeadline(0.08, 0.08)
    for _ in range(3):
        await waited(deadline, 0.01)
        await asyncio.sleep(0.1)  # the caller's own work, longer than the whole budget
    deadline.close()
    assert not deadline.expired


async def test_someone_elses_cancel_stays_a_cancel() -> None:
    deadline = WaitDeadline(10, 10)
    task = asyncio.ensure_future(waited(deadline, 5))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadline.close()
    assert not deadline.expired


async def test_closed_deadline_never_fires() -> None:
    deadline = WaitDeadline(0.02, 0.02)
    deadline.start_wait()
    deadline.close()
    await asyncio.sleep(0.05)  # would have been cancelled here if the timer were still armed
    assert not deadline.expired
