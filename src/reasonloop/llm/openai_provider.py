"""Any OpenAI-compatible chat endpoint through the official ``openai`` SDK.

OpenAI itself, Azure OpenAI, vLLM, llama.cpp server, Ollama's ``/v1``, LM Studio, DeepSeek,
DashScope's compatible mode: anything that speaks ``POST /chat/completions`` with
``stream: true``. Tool calls (parallel ones included) stream as ``ToolCallDelta`` pieces;
usage comes from the final chunk (``stream_options.include_usage``).

Settings: ``base_url`` (empty = api.openai.com), ``api_key_env`` (default ``OPENAI_API_KEY``
for api.openai.com; a custom ``base_url`` without it is called without a key), and in
``extra``: ``api_version`` / ``azure_deployment`` (Azure OpenAI, ``base_url`` being the Azure
endpoint), ``stream_usage = false`` for servers that reject ``stream_options``,
``extra_body`` (merged into each request), ``max_tokens_param`` (``max_completion_tokens`` on
api.openai.com, ``max_tokens`` elsewhere), ``context_window``, ``scoring`` (below), ``native_tools =
false`` for a model that takes no tool calls (tool-calling strategies then use the ReAct text format).

Scoring continuations (:meth:`OpenAIProvider.score`) needs a server that returns
log-probabilities; ``extra.scoring`` says how to ask for them:

- ``"chat"`` (the default): one chat request with the prompt as the user message,
  ``logprobs`` and the top 20 ``top_logprobs`` of a one-token reply. A continuation scores the
  log-probability of the listed token it starts with (the longest one), so the score is exact
  for a one-token continuation and, for a longer one, that of its first token only (an upper
  bound of the whole). A continuation whose first token is not listed gets an upper bound of
  its log-probability: the smaller of the last listed token's and the log of the probability
  the list leaves over. Two different continuations starting with the same listed token cannot
  be told apart: the call raises :class:`~reasonloop.errors.LLMNotSupported`. OpenAI, vLLM and
  llama.cpp's servers answer this.
- ``"completions"``: the legacy ``/completions`` endpoint, one request per continuation with
  ``echo`` and ``logprobs``: the server scores the prompt's own tokens, so the continuation's
  tokens are summed exactly, after a plain completion prompt. vLLM and llama-cpp-python's
  server answer this; OpenAI's chat models do not.
- ``"off"``: the model cannot score continuations.

A server that answers without log-probabilities (or refuses them, or has no ``/completions``
for ``"completions"``) makes :meth:`~OpenAIProvider.score` raise
:class:`~reasonloop.errors.LLMNotSupported`; the provider remembers it, so
:attr:`Capabilities.scores_continuations` turns false and later calls raise at once instead of
asking again.

Example::

    llm = OpenAIProvider(LLMSettings(model="qwen2.5", base_url="http://127.0.0.1:8000/v1"))
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from reasonloop.config import LLMSettings
from reasonloop.errors import (
    ConfigError,
    LLMBadRequest,
    LLMBadResponse,
    LLMError,
    LLMNotSupported,
    LLMServerError,
    LLMTimeout,
)
from reasonloop.llm.base import (
    LLM,
    CallRecord,
    Capabilities,
    ChatRequest,
    Done,
    LLMChunk,
    Message,
    TextDelta,
    ToolCallDelta,
    estimate_prompt_tokens,
)
from reasonloop.llm.http_errors import (
    KEYLESS,
    api_key,
    connection_error,
    describe,
    error_for_status,
    incomplete_stream,
    transport_error,
)
from reasonloop.llm.openai_logprobs import echoed_logprobs, first_token_scores, top_logprobs

if TYPE_CHECKING:
    import openai

__all__ = ["SCORING_MODES", "OpenAIProvider"]

SCORING_MODES = ("chat", "completions", "off")
"""The values of ``[llm.extra] scoring`` (see the module docstring)."""
TOP_LOGPROBS = 20
"""How many first tokens a ``"chat"`` score asks for (the most OpenAI's API gives)."""

_T = TypeVar("_T")


class OpenAIProvider(LLM):
    """OpenAI-compatible chat completions, streamed.

    Args:
        settings: ``[llm]`` settings (see module docstring for the keys it reads).

    Raises:
        LLMNotConfigured: the API key variable is unset.
    """

    id: ClassVar[str] = "openai"
    description: ClassVar[str] = "OpenAI and any OpenAI-compatible endpoint (vLLM, llama.cpp, LM Studio, Azure, ...)"
    default_model: ClassVar[str] = "gpt-4o-mini"

    def __init__(self, settings: LLMSettings | None = None) -> None:
        super().__init__(settings)
        import openai  # the SDK loads with the first provider made, not with this module

        key = api_key(self.settings, self.id, "OPENAI_API_KEY") or KEYLESS
        extra = self.settings.extra
        common: dict[str, Any] = {
            "api_key": key,
            "timeout": openai.Timeout(self.read_timeout_s, connect=self.settings.connect_timeout_s),
            "max_retries": 0,  # the base class retries, with our backoff and error codes
        }
        if extra.get("api_version") or extra.get("azure_deployment"):
            self._client: openai.AsyncOpenAI = openai.AsyncAzureOpenAI(
                azure_endpoint=self.settings.base_url,
                azure_deployment=extra.get("azure_deployment"),
                api_version=extra.get("api_version"),
                **common,
            )
        else:
            self._client = openai.AsyncOpenAI(base_url=self.settings.base_url or None, **common)
        self.scoring = str(extra.get("scoring", "chat"))
        if self.scoring not in SCORING_MODES:
            raise ConfigError(
                f"llm.extra.scoring: expected one of {', '.join(SCORING_MODES)} (got {self.scoring!r})",
                keys=["llm.extra.scoring"],
            )
        self.scoring_refused: str | None = None
        """Why the server cannot score continuations, once a call has found out."""

    @property
    def _max_tokens_param(self) -> str:
        # OpenAI's own API deprecated max_tokens (reasoning models reject it); compatible
        # servers mostly know only max_tokens.
        default = "max_tokens" if self.settings.base_url else "max_completion_tokens"
        return str(self.settings.extra.get("max_tokens_param", default))

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            context_window=int(self.settings.extra.get("context_window", 128_000)),
            native_tools=bool(self.settings.extra.get("native_tools", True)),
            parallel_tools=bool(self.settings.extra.get("native_tools", True)),
            scores_continuations=self.scoring != "off" and self.scoring_refused is None,
        )

    async def aclose(self) -> None:
        await self._client.close()

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [_message(m) for m in request.messages],
            "stream": True,
        }
        if self.settings.extra.get("stream_usage", True):
            params["stream_options"] = {"include_usage": True}
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in request.tools
            ]
        if request.stop:
            params["stop"] = request.stop
        if request.max_tokens is not None:
            params[self._max_tokens_param] = request.max_tokens
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if self.settings.extra.get("extra_body"):
            params["extra_body"] = dict(self.settings.extra["extra_body"])
        return params

    async def _stream(self, request: ChatRequest) -> AsyncIterator[LLMChunk]:
        started = parsing = False
        finish: str | None = None
        usage: Any = None
        try:
            stream = await self._client.chat.completions.create(**self._params(request))
            started = parsing = True
            async with stream:
                async for chunk in stream:
                    if getattr(chunk, "usage", None):
                        usage = chunk.usage
                    for choice in chunk.choices or ():
                        for piece in _pieces(choice.delta):
                            yield piece
                        if choice.finish_reason:
                            finish = choice.finish_reason
        except Exception as exc:
            error = _map_error(exc, self.id, streaming=started, parsing=parsing)
            if error is None:
                raise
            raise error from exc
        if finish is None:
            raise incomplete_stream(self.id, "a finish_reason")
        yield Done(
            finish_reason=finish,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        )

    # -- scoring continuations -------------------------------------------------------------------
    async def score(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        """The log-probability of each continuation after ``prompt``, as ``[llm.extra] scoring``
        asks the server for it (see the module docstring for what each way measures). The
        requests are retried like a stream's and their usage is recorded as one call.

        Raises:
            LLMNotSupported: scoring is off, the server gives no log-probabilities (remembered), or
                (``"chat"``) two continuations start with the same token.
            LLMError: the request failed.
        """
        candidates = list(continuations)
        if self.scoring == "off":
            raise LLMNotSupported(f"{self.name}: scoring continuations is off ([llm.extra] scoring)", provider=self.id)
        if self.scoring_refused is not None:
            raise LLMNotSupported(self.scoring_refused, provider=self.id)
        if not any(candidates):
            return [0.0] * len(candidates)
        usage = _Usage()
        if self.scoring == "chat":
            top = await self._scoring_request(lambda: self._first_token_logprobs(prompt, usage))
            scores = first_token_scores(top, candidates, self.name)
        else:
            scores = [
                await self._scoring_request(lambda c=c: self._echoed_logprob(prompt, c, usage)) if c else 0.0
                for c in candidates
            ]
        self.calls.append(usage.record(prompt))
        return scores

    async def _first_token_logprobs(self, prompt: str, usage: _Usage) -> dict[str, float]:
        """The top log-probabilities of the first token of a reply to ``prompt``, by token text."""
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [_message(Message.completion(prompt))],
            "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
            self._max_tokens_param: 1,
        }
        if self.settings.extra.get("extra_body"):
            params["extra_body"] = dict(self.settings.extra["extra_body"])
        response = await self._client.chat.completions.create(**params)
        usage.add(response)
        top = top_logprobs(response)
        if top is None:
            raise self._refuse("the server returned no log-probabilities for the chat request")
        return top

    async def _echoed_logprob(self, prompt: str, continuation: str, usage: _Usage) -> float:
        """The log-probability of ``continuation`` after ``prompt`` from the server's echo of both."""
        extra_body = self.settings.extra.get("extra_body")
        response = await self._client.completions.create(
            model=self.model,
            prompt=prompt + continuation,
            echo=True,
            logprobs=1,
            max_tokens=1,
            extra_body=dict(extra_body) if extra_body else None,
        )
        usage.add(response)
        choices = getattr(response, "choices", None) or []
        logprobs = getattr(choices[0], "logprobs", None) if choices else None
        values = echoed_logprobs(logprobs, len(prompt), len(prompt) + len(continuation))
        if values is None:
            raise self._refuse("the server did not echo the prompt's log-probabilities on /completions")
        if None in values:
            raise LLMBadRequest(f"{self.name}: cannot score a continuation of an empty prompt", provider=self.id)
        return float(sum(v for v in values if v is not None))

    async def _scoring_request(self, call: Callable[[], Awaitable[_T]]) -> _T:
        """Run one scoring request, retried as the base class retries a stream that has not started.
        A request the server refuses because of ``logprobs`` (or ``echo``) is remembered as
        :class:`LLMNotSupported`."""
        attempt = 1
        while True:
            try:
                return await call()
            except LLMError:
                raise
            except Exception as exc:
                error = _map_error(exc, self.id, streaming=False, parsing=False)
                if error is None:
                    raise
                if self._refuses_scoring(error):
                    raise self._refuse(f"the server refused the request: {error.message}") from exc
                await self._retry(error, attempt, None, yielded=False)
            attempt += 1

    def _refuses_scoring(self, error: LLMError) -> bool:
        """Whether ``error`` is the server refusing what scoring asks for: log-probabilities or an
        echo, or (``"completions"``) the legacy endpoint itself."""
        if self.scoring == "completions" and error.status_code in (404, 405):
            return True
        if error.status_code not in (400, 404, 422):
            return False
        lowered = error.message.lower()
        return "logprob" in lowered or "echo" in lowered

    def _refuse(self, why: str) -> LLMNotSupported:
        """Remember that this server cannot score continuations, and the error saying why."""
        self.scoring_refused = (
            f"{self.name} cannot score continuations: {why} "
            f'([llm.extra] scoring = "{self.scoring}"; see docs/models.md)'
        )
        return LLMNotSupported(self.scoring_refused, provider=self.id)


class _Usage:
    """Token usage summed over the requests of one :meth:`OpenAIProvider.score` call."""

    def __init__(self) -> None:
        self.prompt_tokens = self.completion_tokens = self.requests = 0
        self.reported = True

    def add(self, response: Any) -> None:
        self.requests += 1
        usage = getattr(response, "usage", None)
        if usage is None or not getattr(usage, "prompt_tokens", 0):
            self.reported = False
            return
        self.prompt_tokens += int(usage.prompt_tokens or 0)
        self.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)

    def record(self, prompt: str) -> CallRecord:
        if self.reported:
            return CallRecord(self.prompt_tokens, self.completion_tokens, False, 1)
        estimate = estimate_prompt_tokens([Message.completion(prompt)]) * max(1, self.requests)
        return CallRecord(estimate, self.requests, True, 1)


def _pieces(delta: Any) -> list[LLMChunk]:
    """The text and tool-call fragments of one streamed ``delta``."""
    if delta is None:
        return []
    out: list[LLMChunk] = []
    if delta.content:
        out.append(TextDelta(delta.content))
    for position, call in enumerate(delta.tool_calls or ()):
        function = call.function
        out.append(
            ToolCallDelta(
                index=int(call.index) if call.index is not None else position,
                id=call.id or None,
                name=(function.name if function else None) or None,
                arguments=(function.arguments if function else None) or "",
            )
        )
    return out


def _message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)},
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def _map_error(exc: Exception, provider: str, *, streaming: bool, parsing: bool) -> LLMError | None:
    """The openai SDK's exceptions (and what escapes it mid-stream) as our errors."""
    import openai

    if isinstance(exc, LLMError):
        return exc
    if isinstance(exc, openai.APIStatusError):
        message = getattr(exc, "message", "") or str(exc)
        return error_for_status(exc.status_code, message, provider=provider, headers=exc.response.headers)
    if isinstance(exc, openai.APITimeoutError):
        return LLMTimeout(f"{provider}: the server did not answer in time", provider=provider)
    if isinstance(exc, openai.APIConnectionError):
        return connection_error(exc.__cause__ or exc, provider=provider, streaming=streaming)
    if isinstance(exc, openai.APIError):  # an error object sent inside the stream
        return LLMServerError(f"{provider}: the server reported an error mid-stream: {exc.message}", provider=provider)
    if parsing and isinstance(
        exc, ValueError | TypeError | AttributeError | KeyError
    ):  # JSONDecodeError is a ValueError
        return LLMBadResponse(f"{provider}: malformed stream chunk ({describe(exc)})", provider=provider)
    return transport_error(exc, provider=provider, streaming=streaming)
