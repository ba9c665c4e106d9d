"""No timer is armed unless something waits, and armed timers keep no copy of the context.

These tests pin how the code is built, not what it does (tests/perf/README.md)."""

from __future__ import annotations

import asyncio
import contextvars
import gc

import pytest

from reasonloop.errors import LLMTimeout
from reasonloop.llm.base import Message
from reasonloop.llm.deadline import WaitDeadline
from reasonloop.tools.base import tool
from tests.llm.test_base_timeout import _llm, _until
from tests.llm.test_deadline import waited
from tests.timers import armed_timers
from tests.tools.test_base import add, ctx_for


async def test_ready_chunks_arm_no_timer() -> None:
    with armed_timers() as armed:
        text = (await _llm(timeout_s=0.1).complete([Message.user("x")], until=_until(0.5))).text
    assert text == "one two three four five six" and armed == []
    with pytest.raises(LLMTimeout):  # and a stream that does wait is still bounded
        await _llm(timeout_s=0.05, delay_s=5.0).complete([Message.user("x")])


async def test_a_tool_that_answers_without_waiting_arms_no_timer():
    @tool(timeout_s=5)
    async def waits() -> str:
        """Wait a moment."""
        await asyncio.sleep(0)
        return "done"

    with armed_timers() as armed:
        assert (await add.invoke({"a": 1, "b": 2}, ctx_for())).text == "3"
        assert armed == []
        assert (await waits.invoke({}, ctx_for())).text == "done"
        assert len(armed) == 1  # the tool waited: its timeout was armed then


async def test_armed_deadlines_share_one_context_and_still_fire() -> None:
    """Each open stream has an armed deadline: its timer must not keep a copy of the caller's
    context (one more object per stream for the collector), and must still fire."""
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker")
    marker.set("caller")

    def contexts() -> int:
        return sum(1 for o in gc.get_objects() if type(o) is contextvars.Context)

    gc.collect()
    before = contexts()
    deadlines = [WaitDeadline(0.05, 0.05) for _ in range(50)]
    for deadline in deadlines:
        deadline.start_wait()
    assert contexts() - before < 5
    for deadline in deadlines:
        deadline.close()
    deadline = WaitDeadline(0.05, 0.05)
    with pytest.raises(TimeoutError):
        await waited(deadline, 1.0)
    assert deadline.expired and marker.get() == "caller"
