"""The LLM contract: chat messages in, a stream of chunks out.

Every provider subclasses :class:`LLM` and implements one hook, :meth:`LLM._stream`, which
turns its SDK's stream into :data:`LLMChunk` values. The base class does what is shared:
the per-call timeout, retries with exponential backoff (honouring Retry-After) as long as
nothing has been yielded yet, usage estimation when a provider reports none, and a
per-instance usage log.

Example::

    llm = registry.get("llm", "openai")(LLMSettings(model="gpt-4o-mini", api_key_env="OPENAI_API_KEY"))
    async for chunk in llm.stream([Message.user("hi")]):
        if isinstance(chunk, TextDelta):
            print(chunk.text, end="")
"""

from __future__ import annotations

import asyncio
import json
import random
import weakref
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple, TypeVar, overload

from reasonloop.config import LLMSettings
from reasonloop.eager import resume
from reasonloop.errors import LLMBadResponse, LLMError, LLMRateLimited, LLMTimeout
from reasonloop.llm.deadline import DeadlineReached, WaitDeadline
from reasonloop.llm.messages import Done, LLMChunk, Message, TextDelta, ToolCallDelta, ToolCallPart, ToolSpec
from reasonloop.tokens import count_tokens

__all__ = [
    "LLM",
    "Capabilities",
    "Completion",
    "Done",
    "LLMChunk",
    "Message",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallPart",
    "ToolSpec",
    "collect",
]


@dataclass
class Capabilities:
    """What a provider/model can do; strategies pick their prompting by these."""

    native_tools: bool = True
    parallel_tools: bool = True
    streaming: bool = True
    stop_sequences: bool = True
    context_window: int = 8192


@dataclass
class Completion:
    """A whole response, assembled from a stream by :func:`collect`."""

    text: str = ""
    tool_calls: list[ToolCallPart] = field(default_factory=list)
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0


async def collect(stream: AsyncIterator[LLMChunk]) -> Completion:
    """Drain a chunk stream into a :class:`Completion` (tool-call fragments joined and parsed).

    Raises:
        LLMBadResponse: a tool call's arguments are not a JSON object.
    """
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    done = Done()
    async for chunk in stream:
        if isinstance(chunk, TextDelta):
            text.append(chunk.text)
        elif isinstance(chunk, ToolCallDelta):
            slot = calls.setdefault(chunk.index, {"id": None, "name": None, "args": []})
            slot["id"] = slot["id"] or chunk.id
            slot["name"] = slot["name"] or chunk.name
            slot["args"].append(chunk.arguments)
        else:
            done = chunk
    parts = []
    for index in sorted(calls):
        slot = calls[index]
        parts.append(
            ToolCallPart(
                id=slot["id"] or f"call_{index}",
                name=slot["name"] or "",
                arguments=parse_arguments("".join(slot["args"]), slot["name"]),
            )
        )
    return Completion("".join(text), parts, done.finish_reason, done.prompt_tokens, done.completion_tokens)


def parse_arguments(raw: str, tool: str | None = None) -> dict[str, Any]:
    """Tool-call arguments as a dict; empty text means no arguments."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise LLMBadResponse(f"tool call {tool!r} has arguments that are not JSON: {raw[:200]!r}") from exc
    if not isinstance(value, dict):
        raise LLMBadResponse(f"tool call {tool!r} arguments are not a JSON object: {raw[:200]!r}")
    return value


_token_cache: dict[int, tuple[weakref.ref[Any], int]] = {}


def _cached_tokens(items: Sequence[Any], count: Callable[[Any], int]) -> int:
    # Messages and tool specs are built once and re-sent with every later call of a run:
    # estimate each object once. Entries hold weak references, dropped with their object, so
    # the cache keeps no conversation alive and an id is never mistaken for a newer object's.
    cache, total = _token_cache, 0
    for item in items:
        key = id(item)
        entry = cache.get(key)
        if entry is None or entry[0]() is not item:
            entry = cache[key] = (weakref.ref(item, lambda _, key=key: cache.pop(key, None)), count(item))
        total += entry[1]
    return total


def _message_tokens(m: Message) -> int:
    return count_tokens(m.content) + 4 + sum(count_tokens(json.dumps(c.arguments)) + 4 for c in m.tool_calls)


def _spec_tokens(spec: ToolSpec) -> int:
    return count_tokens(spec.name) + count_tokens(spec.description) + count_tokens(json.dumps(spec.parameters)) + 8


# -- provider base ------------------------------------------------------------------------------
@dataclass(slots=True)
class ChatRequest:
    """One call, as the base class hands it to a provider's :meth:`LLM._stream`."""

    messages: list[Message]
    tools: list[ToolSpec] | None
    stop: list[str] | None
    max_tokens: int | None
    temperature: float | None


CALL_HISTORY = 1000
"""How many :class:`CallRecord` an :class:`LLM` keeps."""


class CallRecord(NamedTuple):
    """Usage of one call, kept in :attr:`LLM.calls`."""

    prompt_tokens: int
    completion_tokens: int
    estimated: bool
    attempts: int


T = TypeVar("T")


class LLM(ABC):
    """Base class of every provider.

    Args:
        settings: Model, endpoint, key variable, timeouts and retries (``[llm]`` config).
    """

    id: ClassVar[str] = ""
    description: ClassVar[str] = ""
    default_model: ClassVar[str] = ""
    backoff_base_s: ClassVar[float] = 0.5
    backoff_max_s: ClassVar[float] = 20.0

    def __init__(self, settings: LLMSettings | None = None) -> None:
        self.settings = settings or LLMSettings(provider=self.id)
        self.model = self.settings.model or self.default_model
        self.calls: deque[CallRecord] = deque(maxlen=CALL_HISTORY)
        """Usage of the most recent calls (bounded: a server shares one provider for good)."""

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities()

    @property
    def name(self) -> str:
        """``provider:model`` as shown to people."""
        return f"{self.id}:{self.model}" if self.model else self.id

    @abstractmethod
    def _stream(self, request: ChatRequest) -> AsyncIterator[LLMChunk]:
        """Yield chunks for one attempt; raise :class:`LLMError` subclasses for failures."""

    async def aclose(self) -> None:
        """Release clients and connections (idempotent)."""

    @overload
    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = ...,
        stop: Sequence[str] | None = ...,
        max_tokens: int | None = ...,
        temperature: float | None = ...,
        until: float | None = ...,
        convert: None = ...,
    ) -> AsyncIterator[LLMChunk]: ...

    @overload
    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = ...,
        stop: Sequence[str] | None = ...,
        max_tokens: int | None = ...,
        temperature: float | None = ...,
        until: float | None = ...,
        convert: Callable[[LLMChunk], T | None],
    ) -> AsyncIterator[T]: ...

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        stop: Sequence[str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        until: float | None = None,
        convert: Callable[[LLMChunk], Any] | None = None,
    ) -> AsyncIterator[Any]:
        """Stream one response.

        Retries retryable failures (rate limits, 5xx, connection errors, timeouts) with
        exponential backoff while nothing has been yielded; once output has streamed, a
        failure is raised (a retry would repeat text the caller already has). Each attempt
        may wait at most ``timeout_s`` in total for the provider; time the caller spends
        between chunks does not count and is never interrupted.

        Args:
            until: The caller's own deadline, on the event loop's clock (``loop.time()``,
                which is ``time.monotonic()``): a wait on the provider that reaches it
                ends the stream with :class:`~reasonloop.llm.deadline.DeadlineReached`.
            convert: Turns each chunk into what the stream yields instead (``None``: nothing
                for that chunk). It is always given a :class:`Done` last, with usage
                (estimated when the provider reported none, or sent no Done at all). For a
                consumer that only translates chunks (a run's events from a model's text):
                translated here, a chunk passes through one async generator fewer, a
                measurable share of a busy server's CPU per streamed token
                (``benchmarks/ws_load.py``). A chunk given to ``convert`` counts as yielded:
                no retry follows it.

        Raises:
            LLMError: a subclass with a stable code for every failure.
            DeadlineReached: ``until`` passed while waiting on the provider.
        """
        request = ChatRequest(
            messages=list(messages),
            tools=list(tools) if tools else None,
            stop=list(stop) if stop else None,
            max_tokens=max_tokens if max_tokens is not None else self.settings.max_tokens,
            temperature=temperature if temperature is not None else self.settings.temperature,
        )
        attempt = 0
        while True:
            attempt += 1
            yielded = done = False
            completion_parts: list[str] = []
            # Only waiting on the provider counts against the timeout: time the caller spends
            # between chunks is neither counted nor ever interrupted.
            # Armed at the first real wait: chunks that are already there cost no timer; once
            # the stream has waited, chunks are awaited directly (fewer layers per chunk).
            deadline: WaitDeadline | None = None
            try:
                # Closed in `finally`: a provider's stream (and its HTTP response) is closed as soon
                # as this one is, not whenever the garbage collector gets to it.
                chunks = self._stream(request)
                try:
                    while True:
                        try:
                            if deadline is not None:  # streaming: every later chunk is awaited plainly
                                deadline.start_wait()
                                chunk = await anext(chunks)
                                deadline.end_wait()
                            else:  # no wait so far: take the chunk at once if it is there (no timer)
                                step = anext(chunks)
                                try:
                                    send = step.send
                                except AttributeError:  # a class-based iterator's own awaitable
                                    step = step.__await__()
                                    send = step.send
                                try:  # eager.first_step, inlined
                                    waiting = send(None)
                                except StopIteration as ready:
                                    chunk = ready.value
                                else:
                                    deadline = WaitDeadline(self.settings.timeout_s, until)
                                    deadline.start_wait()
                                    chunk = await resume(step, waiting)
                                    deadline.end_wait()
                                    step = send = waiting = None  # not kept for the rest of the stream
                        except StopAsyncIteration:
                            if deadline is not None:
                                deadline.end_wait()
                            break
                        except asyncio.CancelledError:
                            if deadline is not None and deadline.expired_here():
                                raise (DeadlineReached if deadline.passed_until else TimeoutError)() from None
                            raise
                        if isinstance(chunk, Done):
                            chunk = self._finish(chunk, request, completion_parts, attempt)
                            done = True
                        elif isinstance(chunk, TextDelta):
                            completion_parts.append(chunk.text)
                        else:
                            completion_parts.append(chunk.arguments)
                        yielded = True
                        if convert is None:
                            yield chunk
                        else:
                            out = convert(chunk)
                            if out is not None:
                                yield out
                    if convert is not None and not done:  # the provider sent no Done: its end is one
                        out = convert(self._finish(Done(), request, completion_parts, attempt))
                        if out is not None:
                            yield out
                finally:
                    # An async generator that ran to its end has nothing left to close (ag_frame is
                    # gone); other iterators may have aclose or not.
                    if getattr(chunks, "ag_frame", True) is not None:
                        close = getattr(chunks, "aclose", None)
                        if close is not None:
                            await close()
                return
            except DeadlineReached:
                raise
            except TimeoutError as exc:
                error: LLMError = LLMTimeout(
                    f"{self.name}: no complete response within {self.settings.timeout_s:g}s",
                    provider=self.id,
                )
                error.__cause__ = exc
            except LLMError as exc:
                error = exc
            finally:
                if deadline is not None:
                    deadline.close()
            if yielded or not error.retryable or attempt > self.settings.max_retries:
                if attempt > 1:
                    error.details["attempts"] = attempt
                raise error
            delay = self._backoff(attempt, error)
            if until is not None and asyncio.get_running_loop().time() + delay >= until:
                raise DeadlineReached from error  # the caller's deadline passes before the next attempt
            await asyncio.sleep(delay)

    def _backoff(self, attempt: int, error: LLMError) -> float:
        delay = min(self.backoff_max_s, self.backoff_base_s * 2 ** (attempt - 1))
        delay *= 0.5 + random.random() / 2  # jitter so many clients do not retry in step
        if isinstance(error, LLMRateLimited) and error.retry_after is not None:
            delay = max(delay, min(error.retry_after, 60.0))
        return delay

    def _finish(self, done: Done, request: ChatRequest, parts: list[str], attempts: int) -> Done:
        if not done.prompt_tokens and not done.completion_tokens:
            # Estimate what the provider was sent: message text, earlier tool calls' arguments
            # and the tool schemas (providers bill those as prompt tokens too).
            done.prompt_tokens = _cached_tokens(request.messages, _message_tokens)
            if request.tools:
                done.prompt_tokens += _cached_tokens(request.tools, _spec_tokens)
            done.completion_tokens = count_tokens("".join(parts))
            done.usage_estimated = True
        self.calls.append(CallRecord(done.prompt_tokens, done.completion_tokens, done.usage_estimated, attempts))
        return done

    async def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        """The whole response at once (see :meth:`stream` for arguments)."""
        return await collect(self.stream(messages, **kwargs))
