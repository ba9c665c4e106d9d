"""Running an awaitable's first step at once: results, suspension, cancellation and close."""

from __future__ import annotations

import asyncio

import pytest

from reasonloop._aio import first_step, resume


async def test_an_awaitable_that_never_waits_finishes_in_its_first_step() -> None:
    async def compute() -> int:
        return 42

    assert first_step(compute()) == (True, 42)


async def test_an_exception_in_the_first_step_propagates() -> None:
    async def fail() -> None:
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        first_step(fail())


async def test_a_waiting_awaitable_is_resumed_to_its_result() -> None:
    async def later() -> str:
        await asyncio.sleep(0.01)
        return "done"

    done, pending = first_step(later())
    assert not done
    assert await resume(*pending) == "done"


async def test_a_future_is_stepped_through_its_await_iterator() -> None:
    future = asyncio.get_running_loop().create_future()
    done, pending = first_step(future)
    assert not done
    asyncio.get_running_loop().call_soon(future.set_result, "value")
    assert await resume(*pending) == "value"


async def test_cancellation_reaches_the_awaitable_which_may_handle_it() -> None:
    cleaned = asyncio.Event()

    async def careful() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cleaned.set()
            return "cleaned up"
        return "never"

    async def driver() -> str:
        done, pending = first_step(careful())
        assert not done
        return await resume(*pending)

    task = asyncio.create_task(driver())
    await asyncio.sleep(0)
    task.cancel()
    assert await task == "cleaned up" and cleaned.is_set()


async def test_cancellation_not_handled_cancels_the_caller() -> None:
    started = asyncio.Event()

    async def forever() -> None:
        started.set()
        await asyncio.Event().wait()

    async def driver() -> None:
        done, pending = first_step(forever())
        assert not done
        await resume(*pending)

    task = asyncio.create_task(driver())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_closing_the_resumer_closes_the_awaitable() -> None:
    closed = []

    async def watched() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            closed.append(True)

    done, pending = first_step(watched())
    assert not done
    resumer = resume(*pending)
    resumer.send(None)  # hand the pending future over, as a task would
    resumer.close()
    assert closed == [True]
