"""The simplest runner: the question (after the conversation so far) goes straight to an LLM.

No retrieval and no tools: the model's text streams as :class:`~reasonloop.events.AnswerDelta`
events and ends in an :class:`~reasonloop.events.Answer`. It serves as a runner when no
reasoning strategy is wanted, and, over the scripted provider, makes runs with a realistic
token pace for tests and benchmarks::

    runner = LLMRunner(lambda: ScriptedProvider(replies=["Hello there."], delay_s=0.03, repeat_last=True))
    manager = RunManager(store, runner)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from reasonloop.events import Answer, AnswerDelta, Event, RunStarted, Usage
from reasonloop.llm.base import LLM, Done, LLMChunk, Message, TextDelta
from reasonloop.llm.sampling import with_sampling
from reasonloop.runs.models import RunRequest

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
        llm = with_sampling(self._llm if isinstance(self._llm, LLM) else self._llm(), request.sampling)
        started = RunStarted(reasoning=request.agent or request.reasoning or "direct", question=request.question)
        # The model's stream itself, its chunks turned into events as they come (no generator of
        # this runner's own between the model and the run: see ``LLM.stream``'s ``convert``).
        return _FirstThen(started, llm.stream(self._messages(request), convert=_AnswerEvents()))

    def _messages(self, request: RunRequest) -> list[Message]:
        """The prompt (a temporary: the model's request holds its own copy for the stream)."""
        head = [Message.system(self.system)] if self.system else []
        return [*head, *request.history, Message.user(request.question)]


class _AnswerEvents:
    """A reply's chunks as a run's events: text as :class:`AnswerDelta`, the end as :class:`Answer`."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[str] = []

    def __call__(self, chunk: LLMChunk) -> Event | None:
        if isinstance(chunk, TextDelta):
            if not chunk.text:
                return None
            self.parts.append(chunk.text)
            return AnswerDelta(text=chunk.text)
        if isinstance(chunk, Done):
            usage = Usage(llm_calls=1, prompt_tokens=chunk.prompt_tokens, completion_tokens=chunk.completion_tokens)
            stop_reason = "length" if chunk.finish_reason == "length" else "final"
            return Answer(text="".join(self.parts), usage=usage, stop_reason=stop_reason)
        return None  # a tool call's fragment: this runner offers the model no tools


class _FirstThen:
    """``first``, then everything ``rest`` yields. The rest's own awaitables are handed out as they
    are (an object, not an async generator: nothing is added per item)."""

    __slots__ = ("first", "rest")

    def __init__(self, first: Event, rest: AsyncIterator[Event]) -> None:
        self.first: Event | None = first
        self.rest = rest

    def __aiter__(self) -> _FirstThen:
        return self

    def __anext__(self) -> Awaitable[Event]:
        first = self.first
        if first is None:
            return self.rest.__anext__()
        self.first = None
        return _ready(first)

    async def aclose(self) -> None:
        self.first = None
        close: Any = getattr(self.rest, "aclose", None)
        if close is not None:
            await close()


async def _ready(event: Event) -> Event:
    return event
