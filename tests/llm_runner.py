"""The simplest runner, for tests: the question (after the conversation so far) goes straight to an LLM.

No retrieval and no tools: the model's text streams as :class:`~reasonloop.events.AnswerDelta`
events and ends in an :class:`~reasonloop.events.Answer`. Over the scripted provider it makes
runs with a realistic token pace::

    runner = LLMRunner(lambda: ScriptedProvider(replies=["Hello there."], delay_s=0.03, repeat_last=True))
    manager = RunManager(store, runner)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from reasonloop.events import Answer, AnswerDelta, Event, RunStarted, Usage
from reasonloop.llm.base import LLM, Done, LLMChunk, Message, TextDelta
from reasonloop.llm.sampling import with_sampling
from reasonloop.runs.models import RunRequest
from reasonloop.tokens import count_tokens

__all__ = ["LLMRunner"]


class LLMRunner:
    """Streams one LLM reply per run.

    Args:
        llm: The model, or a factory called once per run (a fresh scripted provider per run).
        system: Optional system prompt put before the history.
    """

    def __init__(self, llm: LLM | Callable[[], LLM], *, system: str = "") -> None:
        self._llm = llm
        self.system = system

    def __call__(self, request: RunRequest) -> AsyncIterator[Event]:
        return _Reply(self, request)


class _Reply:
    """One run's events: RunStarted, the model's text as deltas, then the Answer."""

    __slots__ = ("chunks", "done", "parts", "request", "runner")

    def __init__(self, runner: LLMRunner, request: RunRequest) -> None:
        self.runner = runner
        self.request = request
        self.chunks: AsyncIterator[LLMChunk] | None = None
        self.parts: list[str] = []
        self.done = False

    def __aiter__(self) -> _Reply:
        return self

    async def __anext__(self) -> Event:
        request = self.request
        if self.chunks is None:
            if self.done:
                raise StopAsyncIteration
            runner = self.runner
            llm = with_sampling(runner._llm if isinstance(runner._llm, LLM) else runner._llm(), request.sampling)
            head = [Message.system(runner.system)] if runner.system else []
            self.chunks = llm.stream([*head, *request.history, Message.user(request.question)])
            return RunStarted(reasoning=request.agent or request.reasoning or "direct", question=request.question)
        if self.done:
            raise StopAsyncIteration
        async for chunk in self.chunks:
            if isinstance(chunk, TextDelta) and chunk.text:
                self.parts.append(chunk.text)
                return AnswerDelta(text=chunk.text)
            if isinstance(chunk, Done):
                return self._answer(chunk)
        return self._answer(None)  # the provider sent no end: its usage estimated here

    def _answer(self, done: Done | None) -> Answer:
        self.done = True
        text = "".join(self.parts)
        if done is None:
            usage = Usage(llm_calls=1, completion_tokens=count_tokens(text))
        else:
            usage = Usage(llm_calls=1, prompt_tokens=done.prompt_tokens, completion_tokens=done.completion_tokens)
        stop_reason = "length" if done is not None and done.finish_reason == "length" else "final"
        return Answer(text=text, usage=usage, stop_reason=stop_reason)

    async def aclose(self) -> None:
        self.done = True
        chunks, self.chunks = self.chunks, None
        close = getattr(chunks, "aclose", None)
        if close is not None:
            await close()
