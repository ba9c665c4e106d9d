"""The LLM base class: retries, backoff, timeouts, usage, and assembling a stream."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import pytest

from reasonloop.config import LLMSettings
from reasonloop.errors import (
    LLMAuthError,
    LLMBadResponse,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
    LLMUnreachable,
)
from reasonloop.llm import base
from reasonloop.llm.base import (
    LLM,
    ChatRequest,
    Done,
    LLMChunk,
    Message,
    TextDelta,
    ToolCallDelta,
    ToolCallPart,
    ToolSpec,
    collect,
)
from reasonloop.tokens import count_tokens


class FakeLLM(LLM):
    """Plays one scripted attempt per call: a list of chunks, where an exception is raised in place."""

    id = "fake"
    backoff_base_s = 0.001
    backoff_max_s = 0.01

    def __init__(self, attempts, **settings):
        super().__init__(LLMSettings(provider="fake", model="m1", **settings))
        self.attempts = list(attempts)
        self.requests: list[ChatRequest] = []
        self.delays: list[float] = []

    async def _stream(self, request: ChatRequest) -> AsyncIterator[LLMChunk]:
        self.requests.append(request)
        for item in self.attempts.pop(0):
            if isinstance(item, BaseException):
                raise item
            if item == "hang":
                await asyncio.Event().wait()
            yield item

    def _backoff(self, attempt, error):
        delay = super()._backoff(attempt, error)
        self.delays.append(delay)
        return delay


OK = [TextDelta("Hel"), TextDelta("lo"), Done(prompt_tokens=7, completion_tokens=2)]
USER = [Message.user("hi")]


async def drain(llm, **kwargs):
    return [chunk async for chunk in llm.stream(USER, **kwargs)]


async def test_success_passes_chunks_and_reported_usage_through():
    llm = FakeLLM([OK])
    chunks = await drain(llm)
    assert [c.text for c in chunks[:2]] == ["Hel", "lo"]
    done = chunks[-1]
    assert (done.prompt_tokens, done.completion_tokens, done.usage_estimated) == (7, 2, False)
    assert [(c.prompt_tokens, c.completion_tokens, c.estimated, c.attempts) for c in llm.calls] == [(7, 2, False, 1)]
    assert llm.name == "fake:m1"


async def test_usage_is_estimated_when_provider_reports_none():
    llm = FakeLLM([[TextDelta("hello world"), ToolCallDelta(0, "c", "f", '{"a": 1}'), Done()]])
    messages = [Message.system("be brief"), Message.user("say hello")]
    done = [c async for c in llm.stream(messages)][-1]
    assert done.usage_estimated
    assert done.prompt_tokens == count_tokens("be brief") + count_tokens("say hello") + 8
    assert done.completion_tokens == count_tokens('hello world{"a": 1}')
    assert llm.calls[0].estimated


async def test_rate_limit_is_retried_honouring_retry_after():
    llm = FakeLLM([[LLMRateLimited("slow down", retry_after=0.05)], OK], max_retries=2)
    chunks = await drain(llm)
    assert isinstance(chunks[-1], Done)
    assert len(llm.requests) == 2
    assert llm.delays == [pytest.approx(0.05)]  # Retry-After outweighs the 1 ms exponential backoff
    assert llm.calls[0].attempts == 2


@pytest.mark.parametrize(
    "error", [LLMServerError("502", status_code=502), LLMUnreachable("refused"), LLMRateLimited("429")]
)
async def test_retryable_errors_are_retried_with_growing_backoff(error):
    llm = FakeLLM([[error], [error], OK], max_retries=3)
    await drain(llm)
    assert len(llm.requests) == 3
    assert len(llm.delays) == 2
    assert all(0 < d <= FakeLLM.backoff_max_s for d in llm.delays)


def test_backoff_doubles_caps_and_honours_retry_after():
    class Slow(FakeLLM):
        backoff_base_s = 1.0
        backoff_max_s = 4.0

    llm = Slow([])
    plain = LLMServerError("500")
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (6, 4.0)]:
        delay = llm._backoff(attempt, plain)
        assert ceiling / 2 <= delay <= ceiling
    assert llm._backoff(1, LLMRateLimited("429", retry_after=30)) == 30
    assert llm._backoff(1, LLMRateLimited("429", retry_after=3600)) == 60.0  # a silly Retry-After is capped
    assert llm._backoff(3, LLMRateLimited("429", retry_after=0.0)) >= 2.0  # never below the backoff


async def test_gives_up_after_max_retries_and_says_how_often_it_tried():
    llm = FakeLLM([[LLMServerError("500", status_code=500)]] * 3, max_retries=2)
    with pytest.raises(LLMServerError) as info:
        await drain(llm)
    assert len(llm.requests) == 3
    assert info.value.details["attempts"] == 3
    assert info.value.code == "llm.server_error"


async def test_non_retryable_error_is_raised_at_once():
    llm = FakeLLM([[LLMAuthError("bad key", status_code=401)], OK], max_retries=3)
    with pytest.raises(LLMAuthError):
        await drain(llm)
    assert len(llm.requests) == 1
    assert llm.delays == []


async def test_no_retry_once_output_was_yielded():
    llm = FakeLLM([[TextDelta("partial"), LLMUnreachable("connection dropped")], OK], max_retries=3)
    seen = []
    with pytest.raises(LLMUnreachable):
        async for chunk in llm.stream(USER):
            seen.append(chunk)
    assert [c.text for c in seen] == ["partial"]
    assert len(llm.requests) == 1
    assert not llm.calls


async def test_timeout_is_llm_timeout():
    llm = FakeLLM([["hang"]], first_token_timeout_s=0.05, idle_timeout_s=0.05, max_retries=0)
    with pytest.raises(LLMTimeout) as info:
        await drain(llm)
    assert info.value.code == "llm.timeout"
    assert "0.05s" in info.value.message
    assert isinstance(info.value.__cause__, TimeoutError)


async def test_timeout_is_retried_like_other_transient_failures():
    llm = FakeLLM([["hang"], OK], first_token_timeout_s=0.05, idle_timeout_s=0.05, max_retries=1)
    chunks = await drain(llm)
    assert isinstance(chunks[-1], Done)
    assert len(llm.requests) == 2


async def test_timeout_after_output_is_not_retried():
    llm = FakeLLM([[TextDelta("par"), "hang"], OK], first_token_timeout_s=0.05, idle_timeout_s=0.05, max_retries=3)
    with pytest.raises(LLMTimeout):
        await drain(llm)
    assert len(llm.requests) == 1


async def test_request_takes_defaults_from_settings_and_per_call_overrides():
    llm = FakeLLM([OK, OK], max_tokens=100, temperature=0.3)
    tools = [ToolSpec(name="search")]
    await drain(llm, tools=tools, stop=["\nObservation:"])
    await drain(llm, max_tokens=5, temperature=0.0)
    first, second = llm.requests
    assert (first.max_tokens, first.temperature, first.stop, first.tools) == (100, 0.3, ["\nObservation:"], tools)
    assert (second.max_tokens, second.temperature, second.stop, second.tools) == (5, 0.0, None, None)


async def test_cancelling_the_consumer_stops_the_stream():
    llm = FakeLLM([[TextDelta("a"), "hang"]])
    got_first = asyncio.Event()

    async def consume():
        async for _ in llm.stream(USER):
            got_first.set()

    task = asyncio.create_task(consume())
    await got_first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# -- collect ------------------------------------------------------------------------------------
async def chunks_of(*chunks):
    for chunk in chunks:
        yield chunk


async def test_collect_joins_text_and_tool_call_fragments():
    completion = await collect(
        chunks_of(
            TextDelta("Let me "),
            ToolCallDelta(0, id="call_a", name="search", arguments='{"que'),
            ToolCallDelta(1, id="call_b", name="stats"),
            TextDelta("look."),
            ToolCallDelta(0, arguments='ry": "cats"}'),
            ToolCallDelta(1, arguments=""),
            Done(finish_reason="tool_calls", prompt_tokens=3, completion_tokens=4),
        )
    )
    assert completion.text == "Let me look."
    assert [(c.id, c.name, c.arguments) for c in completion.tool_calls] == [
        ("call_a", "search", {"query": "cats"}),
        ("call_b", "stats", {}),
    ]
    assert (completion.finish_reason, completion.prompt_tokens, completion.completion_tokens) == ("tool_calls", 3, 4)


async def test_collect_gives_ids_to_calls_without_one():
    completion = await collect(chunks_of(ToolCallDelta(2, name="f", arguments="{}"), Done()))
    assert completion.tool_calls[0].id == "call_2"


@pytest.mark.parametrize("raw", ['{"query": "ca', "[1, 2]", '"text"'])
async def test_collect_rejects_bad_tool_json(raw):
    with pytest.raises(LLMBadResponse) as info:
        await collect(chunks_of(ToolCallDelta(0, id="c", name="search", arguments=raw), Done()))
    assert info.value.code == "llm.bad_response"
    assert "'search'" in info.value.message


async def test_complete_returns_the_whole_response():
    completion = await FakeLLM([OK]).complete(USER)
    assert (completion.text, completion.prompt_tokens) == ("Hello", 7)


def test_message_helpers():
    call = Message.assistant("", [])
    assert (call.role, call.tool_calls) == ("assistant", ())
    tool_msg = Message.tool("call_1", "result", name="search")
    assert (tool_msg.role, tool_msg.tool_call_id, tool_msg.name) == ("tool", "call_1", "search")
    assert Message.system("s").role == "system"


def test_messages_are_immutable():
    part = ToolCallPart(id="c1", name="search", arguments={"q": "x"})
    message = Message.assistant("", [part])
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.content = "changed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        part.name = "other"  # type: ignore[misc]
    assert isinstance(message.tool_calls, tuple)


def test_message_from_dict_checks_what_comes_from_outside():
    message = Message.from_dict(
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "search", "arguments": {"q": 1}}]}
    )
    assert message.tool_calls == (ToolCallPart(id="c1", name="search", arguments={"q": 1}),)
    assert Message.from_dict({"role": "user", "content": None}).content == ""
    with pytest.raises(ValueError, match="role"):
        Message.from_dict({"role": "wizard", "content": "hi"})
    with pytest.raises(ValueError, match="content must be text"):
        Message.from_dict({"role": "user", "content": ["a", "list"]})
    with pytest.raises(ValueError, match="malformed tool call"):
        Message.from_dict({"role": "assistant", "tool_calls": [{"id": "c1", "nme": "typo"}]})
    with pytest.raises(ValueError, match="malformed tool call"):
        Message.from_dict({"role": "assistant", "tool_calls": [{"id": "c1", "name": "s", "arguments": "{}"}]})


async def test_closing_the_stream_closes_the_provider_stream_at_once():
    closed = []

    class Holding(FakeLLM):
        async def _stream(self, request):
            try:
                yield TextDelta("a")
                yield TextDelta("b")
                yield Done()
            finally:
                closed.append(True)  # where a provider closes its HTTP response

    stream = Holding([]).stream(USER)
    assert (await anext(stream)).text == "a"
    await stream.aclose()
    assert closed == [True]


async def test_closing_a_retried_stream_closes_the_attempt_that_streams_at_once():
    closed: list[int] = []

    class Flaky(FakeLLM):
        async def _stream(self, request):
            attempt = len(self.requests) + 1
            self.requests.append(request)
            try:
                if attempt == 1:
                    raise LLMUnreachable("connection refused")
                yield TextDelta("a")
                yield TextDelta("b")
                yield Done()
            finally:
                closed.append(attempt)

    stream = Flaky([], max_retries=2).stream(USER)
    assert (await anext(stream)).text == "a"  # from the second attempt
    await stream.aclose()
    assert closed == [1, 2]  # the second attempt's provider stream too, not later by the collector


async def test_estimated_usage_counts_tool_schemas_and_call_arguments():
    from reasonloop.llm.base import ToolCallPart, ToolSpec
    from reasonloop.llm.scripted import ScriptedProvider

    spec = ToolSpec(
        name="docsearch",
        description="Search the knowledge base for passages about a topic.",
        parameters={"type": "object", "properties": {"query": {"type": "string"}}},
    )
    history = [
        Message.user("q"),
        Message.assistant(
            tool_calls=[ToolCallPart(id="c1", name="docsearch", arguments={"query": "a long query about budgets"})]
        ),
    ]
    plain, with_tools = ScriptedProvider(replies=["ok", "ok"]), ScriptedProvider(replies=["ok"])
    await plain.complete([Message.user("q")])
    await with_tools.complete(history, tools=[spec])
    assert with_tools.calls[0].prompt_tokens > plain.calls[0].prompt_tokens + 20


async def test_the_call_history_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "CALL_HISTORY", 3)
    llm = FakeLLM([OK] * 5)
    for _ in range(5):
        await llm.complete(USER)
    assert len(llm.calls) == 3  # a long-lived provider keeps the most recent calls only


class FutureChunks:
    """A provider stream written as a class whose __anext__ returns a future, not a coroutine."""

    def __init__(self, chunks: list, stall: bool = False) -> None:
        self.chunks, self.stall = list(chunks), stall

    def __aiter__(self):  # type: ignore[no-untyped-def]
        return self

    def __anext__(self) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        if not self.chunks:
            future.set_exception(StopAsyncIteration())
        elif not self.stall:
            asyncio.get_running_loop().call_soon(future.set_result, self.chunks.pop(0))
        return future


class ClassStreamLLM(LLM):
    id = "class-stream"

    def __init__(self, stream: FutureChunks, **settings: object) -> None:
        super().__init__(LLMSettings(provider="class-stream", max_retries=0, **settings))
        self.stream_obj = stream

    def _stream(self, request: ChatRequest) -> AsyncIterator[LLMChunk]:
        return self.stream_obj  # type: ignore[return-value]


async def test_a_provider_stream_need_not_be_an_async_generator():
    llm = ClassStreamLLM(FutureChunks(OK))
    assert (await llm.complete(USER)).text == "Hello"
    with pytest.raises(LLMTimeout):  # and its waits are bounded like any other
        await ClassStreamLLM(FutureChunks(OK, stall=True), first_token_timeout_s=0.05, idle_timeout_s=0.05).complete(
            USER
        )
