"""LLMRunner: a model's reply as a run's events, straight from the model's stream."""

from __future__ import annotations

from collections.abc import AsyncIterator

from reasonloop.events import Answer, AnswerDelta, Event, RunStarted
from reasonloop.llm.base import ChatRequest, LLMChunk, TextDelta, ToolCallDelta
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.runs.models import RunRequest
from reasonloop.tokens import count_tokens
from tests.llm_runner import LLMRunner


class Holding(ScriptedProvider):
    """Streams text (with an empty delta and a tool call's fragment among it, and no Done), and
    says whether its stream was closed."""

    def __init__(self) -> None:
        super().__init__(replies=["unused"])
        self.closed = False

    async def _stream(self, request: ChatRequest) -> AsyncIterator[LLMChunk]:
        self.prompts.append(list(request.messages))
        try:
            yield TextDelta("Hello")
            yield TextDelta("")
            yield ToolCallDelta(0, "c", "f", "{}")
            yield TextDelta(" world")
        finally:
            self.closed = True


async def test_events_are_run_started_deltas_and_the_answer_with_usage():
    runner = LLMRunner(ScriptedProvider(replies=["abc def"], chunk_size=3), system="be brief")
    events: list[Event] = [e async for e in runner(RunRequest(question="q?", reasoning="direct"))]
    assert isinstance(events[0], RunStarted) and events[0].reasoning == "direct" and events[0].question == "q?"
    assert [e.text for e in events if isinstance(e, AnswerDelta)] == ["abc", " de", "f"]
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.text == "abc def" and len(events) == 5
    assert answer.usage.llm_calls == 1 and answer.usage.completion_tokens == count_tokens("abc def")


async def test_a_model_that_sends_no_done_still_ends_in_an_answer():
    model = Holding()
    events = [e async for e in LLMRunner(model)(RunRequest(question="hi"))]
    assert [type(e) for e in events] == [RunStarted, AnswerDelta, AnswerDelta, Answer]
    assert events[-1].text == "Hello world" and events[-1].usage.completion_tokens > 0
    assert [m.content for m in model.prompts[0]] == ["hi"]


async def test_closing_the_runs_stream_closes_the_models():
    model = Holding()
    stream = LLMRunner(model)(RunRequest(question="hi"))
    assert isinstance(await anext(stream), RunStarted)
    assert (await anext(stream)).text == "Hello"
    await stream.aclose()  # type: ignore[attr-defined]
    assert model.closed

    untouched = Holding()
    stream = LLMRunner(untouched)(RunRequest(question="hi"))
    await stream.aclose()  # type: ignore[attr-defined]  # before anything was read: nothing started
    assert not untouched.closed and not untouched.prompts
