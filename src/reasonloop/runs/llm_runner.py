"""The simplest runner: the question (after the conversation so far) goes straight to an LLM.

No retrieval and no tools: the model's text streams as :class:`~reasonloop.events.AnswerDelta`
events and ends in an :class:`~reasonloop.events.Answer`. It serves as a runner when no
reasoning strategy is wanted, and, over the scripted provider, makes runs with a realistic
token pace for tests and benchmarks::

    runner = LLMRunner(lambda: ScriptedProvider(replies=["Hello there."], delay_s=0.03, repeat_last=True))
    manager = RunManager(store, runner)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from reasonloop.events import Answer, AnswerDelta, Event, RunStarted, Usage
from reasonloop.llm.base import LLM, Done, Message, TextDelta
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
        return self._run(request)

    async def _run(self, request: RunRequest) -> AsyncIterator[Event]:
        llm = self._llm if isinstance(self._llm, LLM) else self._llm()
        yield RunStarted(reasoning=request.agent or request.reasoning or "direct", question=request.question)
        parts: list[str] = []
        done: Done | None = None
        async for chunk in llm.stream(self._messages(request)):
            if isinstance(chunk, TextDelta) and chunk.text:
                parts.append(chunk.text)
                yield AnswerDelta(text=chunk.text)
            elif isinstance(chunk, Done):
                done = chunk
        usage = Usage(llm_calls=1)
        if done is not None:
            usage.prompt_tokens, usage.completion_tokens = done.prompt_tokens, done.completion_tokens
        yield Answer(text="".join(parts), usage=usage)

    def _messages(self, request: RunRequest) -> list[Message]:
        """The prompt (a temporary: the model's request holds its own copy for the stream)."""
        head = [Message.system(self.system)] if self.system else []
        return [*head, *request.history, Message.user(request.question)]
