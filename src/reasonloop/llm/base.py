"""The LLM contract: chat messages in, a stream of chunks out.

Every provider subclasses :class:`LLM` and implements one hook, :meth:`LLM._stream`, which
turns its SDK's stream into :data:`LLMChunk` values. The base class does what is shared:
timeouts on the model's silence, retries with exponential backoff (honouring Retry-After) as long as
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
import weakref
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from reasonloop._aio import first_step, resume
from reasonloop.config import LLMSettings
from reasonloop.errors import LLMBadResponse, LLMError, LLMNotSupported, LLMTimeout
from reasonloop.llm.deadline import DeadlineReached, WaitDeadline
from reasonloop.llm.http_errors import backoff_delay
from reasonloop.llm.messages import (
    ChatRequest,
    Done,
    LLMChunk,
    Message,
    TextDelta,
    ToolCallDelta,
    ToolCallPart,
    ToolSpec,
)
from reasonloop.llm.wire_names import wire_request
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
    "estimate_prompt_tokens",
]


@dataclass
class Capabilities:
    """What a provider/model can do; strategies pick their prompting by these."""

    native_tools: bool = True
    parallel_tools: bool = True
    streaming: bool = True
    stop_sequences: bool = True
    context_window: int = 8192
    base_model: bool = False
    """A pretrained model that continues text instead of following instructions: strategies give it
    completion prompts (:meth:`Message.completion`) and never expect it to follow an agent format."""
    scores_continuations: bool = False
    """:meth:`LLM.score` gives the log-probability of candidate continuations of a prompt (how a
    base model decides yes/no or picks an option without writing free text)."""


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


def estimate_prompt_tokens(messages: Sequence[Message], tools: Sequence[ToolSpec] | None = None) -> int:
    """Offline estimate of what a call sends: message text, earlier tool calls' arguments and the
    tool schemas (providers bill those as prompt tokens too)."""
    tokens = _cached_tokens(messages, _message_tokens)
    if tools:
        tokens += _cached_tokens(tools, _spec_tokens)
    return tokens


# -- provider base ------------------------------------------------------------------------------
CALL_HISTORY = 1000
"""How many :class:`CallRecord` an :class:`LLM` keeps."""


class CallRecord(NamedTuple):
    """Usage of one call, kept in :attr:`LLM.calls`."""

    prompt_tokens: int
    completion_tokens: int
    estimated: bool
    attempts: int


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
    default_first_token_timeout_s: ClassVar[float] = 120.0
    """Silence allowed before the first token when ``[llm] first_token_timeout_s`` is unset."""
    default_idle_timeout_s: ClassVar[float] = 60.0
    """Silence allowed between two tokens when ``[llm] idle_timeout_s`` is unset."""
    chosen_by: str = ""
    """Set when ``[llm] provider = "auto"`` picked a model served on this machine: which, and how to
    choose another (shown on stderr by the CLI and kept in the run's metadata)."""

    def __init__(self, settings: LLMSettings | None = None) -> None:
        self.settings = settings or LLMSettings(provider=self.id)
        self.model = self.settings.model or self.default_model
        self.calls: deque[CallRecord] = deque(maxlen=CALL_HISTORY)
        """Usage of the most recent calls (bounded: a server shares one provider for good)."""
        self.first_token_timeout_s = self.settings.first_token_timeout_s or self.default_first_token_timeout_s
        self.idle_timeout_s = self.settings.idle_timeout_s or self.default_idle_timeout_s

    @property
    def read_timeout_s(self) -> float:
        """The longest silence allowed at all: the read timeout to give an HTTP client, as a
        backstop behind the precise limits this class enforces itself."""
        return max(self.first_token_timeout_s, self.idle_timeout_s)

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

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        stop: Sequence[str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        until: float | None = None,
    ) -> AsyncIterator[LLMChunk]:
        """Stream one response: text and tool-call deltas, then a :class:`Done` with usage.

        Retries retryable failures (rate limits, 5xx, connection errors, timeouts) with
        exponential backoff while nothing has been yielded; once output has streamed, a
        failure is raised (a retry would repeat text the caller already has). Timeouts are
        on silence: the provider may take :attr:`first_token_timeout_s` to its first chunk
        and :attr:`idle_timeout_s` between two chunks, however long the whole response
        takes; time the caller spends between chunks does not count and is never interrupted.

        Args:
            until: The caller's own deadline, on the event loop's clock (``loop.time()``,
                which is ``time.monotonic()``): a wait on the provider that reaches it
                ends the stream with :class:`~reasonloop.llm.deadline.DeadlineReached`.

        Tools whose names a vendor would refuse are sent under wire names and their calls come
        back under their own (:mod:`reasonloop.llm.wire_names`).

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
        request, own_names = wire_request(request)
        return self._attempt(request, until, 1, own_names)

    async def _attempt(
        self, request: ChatRequest, until: float | None, attempt: int, own_names: dict[str, str] | None = None
    ) -> AsyncIterator[LLMChunk]:
        """Attempt number ``attempt`` at the provider: its chunks counted, its :class:`Done` given
        usage; after a retryable failure before any output, the next attempt (see :meth:`_retry`).

        Only waiting on the provider counts against the silence limits. The timer is armed at the
        first real wait (chunks already there cost none, see :mod:`reasonloop._aio`); once the
        stream has waited, later chunks are awaited under it directly.
        """
        yielded = False
        try:
            parts: list[str] = []
            deadline: WaitDeadline | None = None
            # Closed in `finally`: a provider's stream (and its HTTP response) is closed as soon as
            # this one is, not whenever the garbage collector gets to it.
            chunks = self._stream(request)
            try:
                while True:
                    try:
                        if deadline is not None:
                            deadline.start_wait()
                            chunk = await anext(chunks)
                            deadline.end_wait()
                        else:
                            ready, value = first_step(anext(chunks))
                            if ready:
                                chunk = value
                            else:
                                deadline = WaitDeadline(
                                    self.first_token_timeout_s, self.idle_timeout_s, until, started=yielded
                                )
                                deadline.start_wait()
                                chunk = await resume(*value)
                                deadline.end_wait()
                                value = None  # not kept for the rest of the stream
                    except StopAsyncIteration:
                        if deadline is not None:
                            deadline.end_wait()
                        return
                    except asyncio.CancelledError:
                        if deadline is not None and deadline.expired_here():
                            raise (DeadlineReached if deadline.passed_until else TimeoutError)() from None
                        raise
                    if isinstance(chunk, Done):
                        chunk = self._finish(chunk, request, parts, attempt)
                    elif isinstance(chunk, TextDelta):
                        parts.append(chunk.text)
                    else:
                        parts.append(chunk.arguments)
                        if own_names is not None and chunk.name is not None:
                            chunk.name = own_names.get(chunk.name, chunk.name)
                    yielded = True
                    yield chunk
            except TimeoutError as exc:
                if isinstance(exc, DeadlineReached):
                    raise
                raise self._timed_out(deadline) from exc
            finally:
                if deadline is not None:
                    deadline.close()
                # An async generator that ran to its end has nothing left to close (ag_frame is
                # gone); other iterators may have aclose or not.
                if getattr(chunks, "ag_frame", True) is not None:
                    close = getattr(chunks, "aclose", None)
                    if close is not None:
                        await close()
        except LLMError as exc:
            error = exc
        await self._retry(error, attempt, until, yielded)
        async with aclosing(self._attempt(request, until, attempt + 1, own_names)) as retried:
            async for chunk in retried:  # closed with this stream, at once, not by the collector
                yield chunk

    async def _retry(self, error: LLMError, attempt: int, until: float | None, yielded: bool) -> None:
        """Wait out the backoff before the next attempt, or raise ``error`` when there is none:
        output has streamed, the failure is not retryable, or the retries are used up.

        Raises:
            LLMError: ``error``.
            DeadlineReached: the caller's deadline passes before the next attempt.
        """
        if yielded or not error.retryable or attempt > self.settings.max_retries:
            if attempt > 1:
                error.details["attempts"] = attempt
            raise error
        delay = self._backoff(attempt, error)
        if until is not None and asyncio.get_running_loop().time() + delay >= until:
            raise DeadlineReached from error
        await asyncio.sleep(delay)

    def _timed_out(self, deadline: WaitDeadline | None) -> LLMTimeout:
        if deadline is None or deadline.first_wait:
            limit, what = self.first_token_timeout_s, "no first token within"
        else:
            limit, what = self.idle_timeout_s, "stopped streaming: no token for"
        return LLMTimeout(f"{self.name}: {what} {limit:g}s", provider=self.id, silent_s=limit)

    def _backoff(self, attempt: int, error: LLMError) -> float:
        return backoff_delay(attempt, error, base_s=self.backoff_base_s, max_s=self.backoff_max_s)

    def _finish(self, done: Done, request: ChatRequest, parts: list[str], attempts: int) -> Done:
        if not done.prompt_tokens and not done.completion_tokens:
            done.prompt_tokens = estimate_prompt_tokens(request.messages, request.tools)
            done.completion_tokens = count_tokens("".join(parts))
            done.usage_estimated = True
        self.calls.append(CallRecord(done.prompt_tokens, done.completion_tokens, done.usage_estimated, attempts))
        return done

    async def score(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        """The log-probability (natural log, summed over its tokens) of each continuation written
        right after the completion prompt ``prompt``. Only providers whose
        :attr:`Capabilities.scores_continuations` is true implement it.

        Raises:
            LLMNotSupported: this provider (or its server) cannot score continuations.
        """
        raise LLMNotSupported(f"{self.name} cannot score continuations", provider=self.id)

    async def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        """The whole response at once (see :meth:`stream` for arguments)."""
        return await collect(self.stream(messages, **kwargs))
