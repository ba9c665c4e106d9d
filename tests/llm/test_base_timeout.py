"""Timeouts on the provider's silence: time spent waiting on it counts, never the caller's, and a
response that keeps streaming is never cut."""

from __future__ import annotations

import asyncio

import pytest

from reasonloop.config import LLMSettings
from reasonloop.errors import LLMTimeout, LLMUnreachable
from reasonloop.llm.base import Message, TextDelta
from reasonloop.llm.deadline import DeadlineReached
from reasonloop.llm.scripted import ScriptedProvider


def _llm(timeout_s: float, delay_s: float = 0.0) -> ScriptedProvider:
    settings = LLMSettings(
        provider="scripted", first_token_timeout_s=timeout_s, idle_timeout_s=timeout_s, max_retries=0
    )
    return ScriptedProvider(settings, replies=["one two three four five six"], chunk_size=4, delay_s=delay_s)


async def test_a_slow_caller_is_not_cancelled_by_the_timeout() -> None:
    llm = _llm(timeout_s=0.2)
    text = []
    async for chunk in llm.stream([Message.user("x")]):
        if isinstance(chunk, TextDelta):
            text.append(chunk.text)
            await asyncio.sleep(0.05)  # the caller's own work; together well past the timeout
    assert "".join(text) == "one two three four five six"


async def test_a_stalled_provider_still_times_out() -> None:
    with pytest.raises(LLMTimeout):
        await _llm(timeout_s=0.1, delay_s=5.0).complete([Message.user("x")])


async def test_a_response_that_keeps_streaming_is_not_cut() -> None:
    # Each wait is under the limit; their sum is well past it.
    llm = _llm(timeout_s=0.1, delay_s=0.04)
    assert (await llm.complete([Message.user("x")])).text == "one two three four five six"


async def test_the_first_token_may_take_longer_than_a_gap() -> None:
    settings = LLMSettings(provider="scripted", first_token_timeout_s=5.0, idle_timeout_s=0.05, max_retries=0)

    class SlowStart(ScriptedProvider):
        async def _stream(self, request):  # type: ignore[no-untyped-def]
            await asyncio.sleep(0.2)  # reading the prompt
            async for chunk in super()._stream(request):
                yield chunk

    assert (await SlowStart(settings, replies=["fine"]).complete([Message.user("x")])).text == "fine"


async def test_a_stall_after_the_first_token_says_so() -> None:
    settings = LLMSettings(provider="scripted", first_token_timeout_s=5.0, idle_timeout_s=0.05, max_retries=3)

    class Stalls(ScriptedProvider):
        async def _stream(self, request):  # type: ignore[no-untyped-def]
            self.prompts.append(list(request.messages))
            yield TextDelta("partial")
            await asyncio.sleep(5)
            yield TextDelta("never")

    llm = Stalls(settings, replies=["unused"])
    with pytest.raises(LLMTimeout) as caught:
        await llm.complete([Message.user("x")])
    assert "no token for 0.05s" in caught.value.message
    assert len(llm.prompts) == 1  # output had streamed: not retried


async def test_silence_before_the_first_token_says_so() -> None:
    with pytest.raises(LLMTimeout) as caught:
        await _llm(timeout_s=0.05, delay_s=5.0).complete([Message.user("x")])
    assert "no first token within 0.05s" in caught.value.message


def _until(seconds: float) -> float:
    return asyncio.get_running_loop().time() + seconds


async def test_the_callers_deadline_ends_a_wait_without_retrying() -> None:
    settings = LLMSettings(provider="scripted", first_token_timeout_s=30.0, idle_timeout_s=30.0, max_retries=3)
    llm = ScriptedProvider(settings, replies=["never in time"], delay_s=5.0)
    with pytest.raises(DeadlineReached):
        await llm.complete([Message.user("x")], until=_until(0.1))
    assert len(llm.prompts) == 1 and not llm.calls  # one attempt, not completed, not retried


async def test_a_deadline_passed_while_the_caller_works_is_reported_at_the_next_wait() -> None:
    llm = _llm(timeout_s=30.0, delay_s=0.01)
    text = []
    with pytest.raises(DeadlineReached):
        async for chunk in llm.stream([Message.user("x")], until=_until(0.1)):
            text.append(chunk.text)
            await asyncio.sleep(0.2)  # never cancelled: the deadline passes while the caller has the turn
    assert text == ["one "]


async def test_the_wait_budget_still_applies_before_the_callers_deadline() -> None:
    with pytest.raises(LLMTimeout):
        await _llm(timeout_s=0.1, delay_s=5.0).complete([Message.user("x")], until=_until(30.0))


async def test_a_retry_that_would_pass_the_callers_deadline_is_not_made() -> None:
    settings = LLMSettings(provider="scripted", first_token_timeout_s=30.0, idle_timeout_s=30.0, max_retries=3)

    class Down(ScriptedProvider):
        async def _stream(self, request):  # type: ignore[no-untyped-def]
            self.prompts.append(list(request.messages))
            raise LLMUnreachable("connection refused")
            yield  # an async generator

    llm = Down(settings, replies=["never"])
    llm.backoff_base_s = 10.0  # the first backoff alone is past the deadline
    with pytest.raises(DeadlineReached) as caught:
        await llm.complete([Message.user("x")], until=_until(1.0))
    assert len(llm.prompts) == 1 and isinstance(caught.value.__cause__, LLMUnreachable)
