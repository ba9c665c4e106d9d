"""Ollama's native ``/api/chat`` through the official ``ollama`` client, streamed as NDJSON.

Tool calls arrive whole (arguments already an object), each becoming one
:class:`ToolCallDelta`; tool results are ``tool`` messages carrying ``tool_name``. Usage is
``prompt_eval_count`` / ``eval_count`` of the final (``done``) line; ``max_tokens``, ``stop``
and ``temperature`` go in ``options`` (``num_predict``, ``stop``, ``temperature``).

Settings: ``base_url`` (default ``ollama_url``, ``http://127.0.0.1:11434``); ``api_key_env``
only for a server behind authentication (sent as a bearer token); ``extra.options`` (more
Ollama options, e.g. ``num_ctx``), ``extra.keep_alive``, ``extra.context_window``, ``extra.native_tools``
(false for a model that takes no tool calls: tool-calling strategies then use the ReAct text format).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import httpx
from pydantic import ValidationError

from reasonloop.config import LLMSettings
from reasonloop.errors import LLMBadResponse, LLMError, LLMServerError
from reasonloop.llm.base import (
    LLM,
    Capabilities,
    ChatRequest,
    Done,
    LLMChunk,
    Message,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
)
from reasonloop.llm.http_errors import (
    api_key,
    connection_error,
    describe,
    error_for_status,
    incomplete_stream,
    transport_error,
)

__all__ = ["OllamaProvider"]

# What the ollama client's tool model keeps of a property schema; anything else is dropped
# by the client, so it is spelled out in the description instead.
_PROPERTY_KEYS = {"type", "items", "description", "enum"}


class OllamaProvider(LLM):
    """Models served by Ollama (native API, not the OpenAI-compatible ``/v1``).

    Raises:
        LLMNotConfigured: ``api_key_env`` names a variable that is unset.
    """

    id: ClassVar[str] = "ollama"
    description: ClassVar[str] = "Models served by Ollama (native /api/chat, streaming, tool calls)"
    default_model: ClassVar[str] = "llama3.2"

    def __init__(self, settings: LLMSettings | None = None) -> None:
        super().__init__(settings)
        import ollama  # the SDK loads with the first provider made, not with this module

        key = api_key(self.settings, self.id, None)
        self._client = ollama.AsyncClient(
            host=self.settings.base_url or self.settings.ollama_url,
            timeout=httpx.Timeout(self.read_timeout_s, connect=self.settings.connect_timeout_s),
            headers={"Authorization": f"Bearer {key}"} if key else None,
            event_hooks={"response": [self._raise_for_status]},
        )

    @property
    def capabilities(self) -> Capabilities:
        extra = self.settings.extra
        return Capabilities(
            context_window=int(extra.get("context_window", 8192)),
            native_tools=bool(extra.get("native_tools", True)),
            parallel_tools=bool(extra.get("native_tools", True)),
        )

    async def aclose(self) -> None:
        await self._client.close()

    async def _raise_for_status(self, response: httpx.Response) -> None:
        # The client turns an error status into ResponseError without the headers; mapping
        # here keeps Retry-After.
        if response.status_code >= 400:
            await response.aread()
            message = response.text
            with contextlib.suppress(ValueError, AttributeError):
                message = str(json.loads(message).get("error", message))
            if response.status_code == 404 and "not found" in message:
                message += f" (pull it with `ollama pull {self.model}`)"
            raise error_for_status(response.status_code, message, provider=self.id, headers=response.headers)

    def _options(self, request: ChatRequest) -> dict[str, Any]:
        options: dict[str, Any] = dict(self.settings.extra.get("options") or {})
        if request.max_tokens is not None:
            options["num_predict"] = request.max_tokens
        if request.stop:
            options["stop"] = request.stop
        if request.temperature is not None:
            options["temperature"] = request.temperature
        return options

    async def _stream(self, request: ChatRequest) -> AsyncIterator[LLMChunk]:
        started = parsing = False
        done = False
        finish = "stop"
        calls = 0
        prompt_tokens = completion_tokens = 0
        try:
            stream = await self._client.chat(
                model=self.model,
                messages=[_message(m) for m in request.messages],
                tools=[_tool(t) for t in request.tools] if request.tools else None,
                stream=True,
                options=self._options(request) or None,
                keep_alive=self.settings.extra.get("keep_alive"),
            )
            parsing = True
            async with contextlib.aclosing(stream):
                async for part in stream:
                    started = True  # the client sends the request on the first read
                    message = part.message
                    if message.content:
                        yield TextDelta(message.content)
                    for call in message.tool_calls or ():
                        yield ToolCallDelta(
                            index=calls,
                            id=f"call_{calls}",
                            name=call.function.name,
                            arguments=json.dumps(dict(call.function.arguments or {}), ensure_ascii=False),
                        )
                        calls += 1
                    if part.done:
                        done = True
                        finish = part.done_reason or finish
                        prompt_tokens = part.prompt_eval_count or 0
                        completion_tokens = part.eval_count or 0
        except Exception as exc:
            error = _map_error(exc, self.id, streaming=started, parsing=parsing)
            if error is None:
                raise
            raise error from exc
        if not done:
            raise incomplete_stream(self.id, 'a "done": true line')
        if calls and finish == "stop":
            finish = "tool_calls"
        yield Done(finish_reason=finish, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def _message(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "tool" and message.name:
        out["tool_name"] = message.name
    if message.tool_calls:
        out["tool_calls"] = [{"function": {"name": c.name, "arguments": c.arguments}} for c in message.tool_calls]
    return out


def _tool(spec: ToolSpec) -> dict[str, Any]:
    """An Ollama function tool; nested detail the client would drop moves into descriptions."""
    params = dict(spec.parameters)
    props = {}
    for name, schema in (params.get("properties") or {}).items():
        prop = {k: v for k, v in schema.items() if k in _PROPERTY_KEYS}
        dropped = {k: v for k, v in schema.items() if k not in _PROPERTY_KEYS}
        if dropped:
            note = f"JSON schema: {json.dumps(dropped, ensure_ascii=False)}"
            prop["description"] = f"{prop['description']} ({note})" if prop.get("description") else note
        props[name] = prop
    params["properties"] = props
    return {"type": "function", "function": {"name": spec.name, "description": spec.description, "parameters": params}}


def _map_error(exc: Exception, provider: str, *, streaming: bool, parsing: bool) -> LLMError | None:
    """The ollama client's exceptions (and what escapes it mid-stream) as our errors."""
    import ollama

    if isinstance(exc, LLMError):
        return exc
    if isinstance(exc, ollama.ResponseError):
        if exc.status_code >= 400:
            return error_for_status(exc.status_code, str(exc.error), provider=provider)
        return LLMServerError(f"{provider}: the server reported an error mid-stream: {exc.error}", provider=provider)
    if isinstance(exc, ConnectionError):  # the client's own "Failed to connect to Ollama"
        return connection_error(exc, provider=provider, streaming=streaming)
    mapped = transport_error(exc, provider=provider, streaming=streaming)
    if mapped is not None:
        return mapped
    if parsing and isinstance(exc, ValidationError | ValueError | TypeError | AttributeError | KeyError):
        return LLMBadResponse(f"{provider}: malformed stream line ({describe(exc)})", provider=provider)
    return None
