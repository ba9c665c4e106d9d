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
api.openai.com, ``max_tokens`` elsewhere), ``context_window``.

Example::

    llm = OpenAIProvider(LLMSettings(model="qwen2.5", base_url="http://127.0.0.1:8000/v1"))
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import openai

from reasonloop.config import LLMSettings
from reasonloop.errors import LLMBadResponse, LLMError, LLMServerError, LLMTimeout
from reasonloop.llm.base import LLM, Capabilities, ChatRequest, Done, LLMChunk, Message, TextDelta, ToolCallDelta
from reasonloop.llm.http_errors import (
    KEYLESS,
    api_key,
    connection_error,
    describe,
    error_for_status,
    incomplete_stream,
    transport_error,
)

__all__ = ["OpenAIProvider"]


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

    @property
    def _max_tokens_param(self) -> str:
        # OpenAI's own API deprecated max_tokens (reasoning models reject it); compatible
        # servers mostly know only max_tokens.
        default = "max_tokens" if self.settings.base_url else "max_completion_tokens"
        return str(self.settings.extra.get("max_tokens_param", default))

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(context_window=int(self.settings.extra.get("context_window", 128_000)))

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
