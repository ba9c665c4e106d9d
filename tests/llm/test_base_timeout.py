"""The per-attempt timeout counts time spent waiting on the provider, never the caller's."""

from __future__ import annotations

import asyncio

import pytest

from reasonloop.config import LLMSettings
from reasonloop.errors import LLMTimeout
from reasonloop.llm.base import Message, TextDelta
from reasonloop.llm.scripted import ScriptedProvider


def _llm(timeout_s: float, delay_s: float = 0.0) -> ScriptedProvider:
    settings = LLMSettings(provider="scripted", timeout_s=timeout_s, max_retries=0)
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


async def test_provider_waits_add_up_across_chunks() -> None:
    # Each wait is under the timeout; their sum is not.
    with pytest.raises(LLMTimeout):
        await _llm(timeout_s=0.2, delay_s=0.06).complete([Message.user("x")])
