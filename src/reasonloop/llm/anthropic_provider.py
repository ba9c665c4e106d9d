"""Anthropic's Messages API through the official ``anthropic`` SDK, streamed.

System messages travel apart (the ``system`` parameter); tool calls are ``tool_use`` blocks
and their results ``tool_result`` blocks inside a user turn. The stream's events map as:
``message_start`` (input tokens), ``content_block_start`` (a tool call's id and name),
``content_block_delta`` (``text_delta`` -> :class:`TextDelta`, ``input_json_delta`` ->
:class:`ToolCallDelta`), ``message_delta`` (stop reason, output tokens), ``message_stop``.

Settings: ``api_key_env`` (default ``ANTHROPIC_API_KEY``), ``base_url`` (a proxy or gateway),
``max_tokens`` (Anthropic requires one; default 4096), ``extra.context_window``. ``temperature``
is not sent: the Messages API of the current SDK has no such parameter.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

from reasonloop.config import LLMSettings
from reasonloop.errors import LLMBadResponse, LLMError, LLMRateLimited, LLMServerError, LLMTimeout
from reasonloop.llm.base import LLM, Capabilities, ChatRequest, Done, LLMChunk, Message, TextDelta, ToolCallDelta
from reasonloop.llm.http_errors import (
    KEYLESS,
    api_key,
    connection_error,
    describe,
    error_for_status,
    incomplete_stream,
    parse_retry_after,
    transport_error,
)

__all__ = ["AnthropicProvider"]

DEFAULT_MAX_TOKENS = 4096
"""Anthropic rejects a request without ``max_tokens``; this is used when none is configured."""

_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


class AnthropicProvider(LLM):
    """Claude models over the Messages API.

    Raises:
        LLMNotConfigured: the API key variable is unset.
    """

    id: ClassVar[str] = "anthropic"
    description: ClassVar[str] = "Anthropic Claude models (Messages API, streaming, native tool use)"
    default_model: ClassVar[str] = "claude-haiku-4-5"

    def __init__(self, settings: LLMSettings | None = None) -> None:
        super().__init__(settings)
        import anthropic  # the SDK loads with the first provider made, not with this module

        self._client = anthropic.AsyncAnthropic(
            api_key=api_key(self.settings, self.id, "ANTHROPIC_API_KEY") or KEYLESS,
            base_url=self.settings.base_url or None,
            timeout=anthropic.Timeout(self.read_timeout_s, connect=self.settings.connect_timeout_s),
            max_retries=0,  # the base class retries
        )

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(context_window=int(self.settings.extra.get("context_window", 200_000)))

    async def aclose(self) -> None:
        await self._client.close()

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        system = "\n\n".join(m.content for m in request.messages if m.role == "system" and m.content)
        params: dict[str, Any] = {
            "model": self.model,
            "messages": _messages(request.messages),
            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
            "stream": True,
        }
        if system:
            params["system"] = system
        if request.tools:
            params["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools
            ]
        if request.stop:
            params["stop_sequences"] = request.stop
        return params

    async def _stream(self, request: ChatRequest) -> AsyncIterator[LLMChunk]:
        started = parsing = False
        stopped = False
        finish = "stop"
        prompt_tokens = completion_tokens = 0
        try:
            stream = await self._client.messages.create(**self._params(request))
            started = parsing = True
            async with stream:
                async for event in stream:
                    kind = event.type
                    if kind == "message_start":
                        usage = event.message.usage
                        prompt_tokens = int(usage.input_tokens or 0)
                        completion_tokens = int(usage.output_tokens or 0)
                    elif kind == "content_block_start":
                        block = event.content_block
                        if block.type == "tool_use":
                            yield ToolCallDelta(index=event.index, id=block.id, name=block.name)
                    elif kind == "content_block_delta":
                        delta = event.delta
                        if delta.type == "text_delta":
                            yield TextDelta(delta.text)
                        elif delta.type == "input_json_delta":
                            yield ToolCallDelta(index=event.index, arguments=delta.partial_json)
                    elif kind == "message_delta":
                        finish = _FINISH.get(event.delta.stop_reason or "", event.delta.stop_reason or finish)
                        if event.usage is not None:
                            completion_tokens = int(event.usage.output_tokens or completion_tokens)
                            prompt_tokens = int(getattr(event.usage, "input_tokens", None) or prompt_tokens)
                    elif kind == "message_stop":
                        stopped = True
        except Exception as exc:
            error = _map_error(exc, self.id, streaming=started, parsing=parsing)
            if error is None:
                raise
            raise error from exc
        if not stopped:
            raise incomplete_stream(self.id, "message_stop")
        yield Done(finish_reason=finish, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Our chat as Anthropic turns: consecutive same-role messages merge into one turn."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        blocks: list[dict[str, Any]] = []
        if message.role == "tool":
            role = "user"
            blocks.append(
                {"type": "tool_result", "tool_use_id": message.tool_call_id or "", "content": message.content}
            )
        else:
            role = message.role
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            for call in message.tool_calls:
                blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


# Error types Anthropic sends inside an SSE ``error`` event (the HTTP status there is 200).
_STREAM_ERROR_TYPES: dict[str, type[LLMError]] = {
    "overloaded_error": LLMServerError,
    "api_error": LLMServerError,
    "rate_limit_error": LLMRateLimited,
}


def _map_error(exc: Exception, provider: str, *, streaming: bool, parsing: bool) -> LLMError | None:
    """The anthropic SDK's exceptions (and what escapes it mid-stream) as our errors."""
    import anthropic

    if isinstance(exc, LLMError):
        return exc
    if isinstance(exc, anthropic.APIStatusError):
        message = exc.api_message or exc.message or str(exc)
        headers = exc.response.headers
        if exc.status_code < 400:  # an error event inside a 200 stream
            cls = _STREAM_ERROR_TYPES.get(exc.type or "", LLMBadResponse)
            text = f"{provider}: the stream reported {exc.type or 'an error'}: {message}"
            if cls is LLMRateLimited:
                return LLMRateLimited(text, retry_after=parse_retry_after(headers), provider=provider)
            return cls(text, provider=provider)
        return error_for_status(exc.status_code, message, provider=provider, headers=headers)
    if isinstance(exc, anthropic.APITimeoutError):
        return LLMTimeout(f"{provider}: the server did not answer in time", provider=provider)
    if isinstance(exc, anthropic.APIConnectionError):
        return connection_error(exc.__cause__ or exc, provider=provider, streaming=streaming)
    if parsing and isinstance(
        exc, ValueError | TypeError | AttributeError | KeyError
    ):  # JSONDecodeError is a ValueError
        return LLMBadResponse(f"{provider}: malformed stream event ({describe(exc)})", provider=provider)
    return transport_error(exc, provider=provider, streaming=streaming)
