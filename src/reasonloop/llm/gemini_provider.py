"""Google Gemini through the official ``google-genai`` SDK (``streamGenerateContent``).

Our chat maps to Gemini ``contents``: assistant turns have role ``model``, tool calls are
``function_call`` parts, tool results ``function_response`` parts of a user turn (named after
the tool, which Gemini requires), system messages the ``system_instruction``. Tool
parameter schemas are reshaped by :func:`~reasonloop.llm.gemini_schema.gemini_schema`.
Usage comes from ``usage_metadata``.

Settings: ``api_key_env`` (default ``GEMINI_API_KEY``), ``base_url`` (a proxy or test server),
``extra.api_version`` (default the SDK's, ``v1beta``), ``extra.context_window``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ValidationError

from reasonloop.config import LLMSettings
from reasonloop.errors import LLMBadResponse, LLMError
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
from reasonloop.llm.gemini_schema import gemini_schema
from reasonloop.llm.http_errors import KEYLESS, api_key, describe, error_for_status, incomplete_stream, transport_error

if TYPE_CHECKING:
    from google.genai import types

__all__ = ["GeminiProvider"]

_FINISH = {"STOP": "stop", "MAX_TOKENS": "length"}


class GeminiProvider(LLM):
    """Gemini models, streamed, with native function calling.

    Raises:
        LLMNotConfigured: the API key variable is unset.
    """

    id: ClassVar[str] = "gemini"
    description: ClassVar[str] = "Google Gemini models (google-genai SDK, streaming, function calling)"
    default_model: ClassVar[str] = "gemini-2.5-flash"

    def __init__(self, settings: LLMSettings | None = None) -> None:
        super().__init__(settings)
        from google import genai  # the SDK loads with the first provider made, not with this module
        from google.genai import types

        options = types.HttpOptions(
            base_url=self.settings.base_url or None,
            api_version=self.settings.extra.get("api_version"),
            # No SDK timeout: it would also be sent as X-Server-Timeout, a limit on the whole
            # response; the base class bounds the silence instead.
            timeout=None,
            retry_options=types.HttpRetryOptions(attempts=1),  # the base class retries
        )
        self._client = genai.Client(
            api_key=api_key(self.settings, self.id, "GEMINI_API_KEY") or KEYLESS, http_options=options
        )

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(context_window=int(self.settings.extra.get("context_window", 1_000_000)))

    async def aclose(self) -> None:
        await self._client.aio.aclose()

    def _config(self, request: ChatRequest) -> types.GenerateContentConfig:
        from google.genai import types

        system = "\n\n".join(m.content for m in request.messages if m.role == "system" and m.content)
        config = types.GenerateContentConfig(
            system_instruction=system or None,
            stop_sequences=request.stop or None,
            max_output_tokens=request.max_tokens,
            temperature=request.temperature,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        if request.tools:
            config.tools = [
                types.Tool(
                    function_declarations=[
                        types.FunctionDeclaration(name=t.name, description=t.description, parameters=_parameters(t))
                        for t in request.tools
                    ]
                )
            ]
        return config

    async def _stream(self, request: ChatRequest) -> AsyncIterator[LLMChunk]:
        started = parsing = False
        finish: str | None = None
        calls = 0
        prompt_tokens = completion_tokens = 0
        try:
            stream = await self._client.aio.models.generate_content_stream(
                model=self.model, contents=_contents(request.messages), config=self._config(request)
            )
            parsing = True
            async with contextlib.aclosing(_in_own_task(stream)) as chunks:
                async for chunk in chunks:
                    started = True  # the SDK sends the request on the first read
                    usage = chunk.usage_metadata
                    if usage is not None:
                        prompt_tokens = usage.prompt_token_count or prompt_tokens
                        completion_tokens = usage.candidates_token_count or completion_tokens
                    for candidate in (chunk.candidates or [])[:1]:
                        for part in (candidate.content.parts if candidate.content else None) or ():
                            if part.function_call is not None:
                                call = part.function_call
                                yield ToolCallDelta(
                                    index=calls,
                                    id=call.id or f"call_{calls}",
                                    name=call.name,
                                    arguments=json.dumps(call.args or {}, ensure_ascii=False),
                                )
                                calls += 1
                            elif part.text and not part.thought:
                                yield TextDelta(part.text)
                        if candidate.finish_reason is not None:
                            reason = getattr(candidate.finish_reason, "value", str(candidate.finish_reason))
                            finish = _FINISH.get(reason, reason.lower())
        except Exception as exc:
            error = _map_error(exc, self.id, streaming=started, parsing=parsing)
            if error is None:
                raise
            raise error from exc
        if finish is None:
            raise incomplete_stream(self.id, "a finishReason")
        if calls and finish == "stop":
            finish = "tool_calls"
        yield Done(finish_reason=finish, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


_END = object()


async def _in_own_task(stream: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """Iterate ``stream`` in a child task, so that closing this iterator closes the HTTP response.

    The SDK's stream is a chain of nested async generators; closing the outermost one leaves
    the inner ones (and the response they read) open until the garbage collector runs.
    Cancelling the task that reads them unwinds the whole chain at once.
    """
    queue: asyncio.Queue[tuple[Any, BaseException | None]] = asyncio.Queue(maxsize=1)

    async def pump() -> None:
        try:
            async for item in stream:
                await queue.put((item, None))
        except Exception as exc:
            await queue.put((None, exc))
        else:
            await queue.put((_END, None))

    task = asyncio.create_task(pump())
    try:
        while True:
            item, error = await queue.get()
            if error is not None:
                raise error
            if item is _END:
                return
            yield item
    finally:
        task.cancel()
        await asyncio.wait({task})


def _contents(messages: list[Message]) -> list[types.Content]:
    """Our chat as Gemini contents: consecutive same-role turns merge (parallel tool results)."""
    from google.genai import types

    names: dict[str, str] = {}
    contents: list[types.Content] = []
    for message in messages:
        parts: list[types.Part] = []
        if message.role == "system":
            continue
        if message.role == "tool":
            role = "user"
            name = message.name or names.get(message.tool_call_id or "", "tool")
            parts.append(
                types.Part(function_response=types.FunctionResponse(name=name, response={"result": message.content}))
            )
        else:
            role = "model" if message.role == "assistant" else "user"
            if message.content:
                parts.append(types.Part(text=message.content))
            for call in message.tool_calls:
                names[call.id] = call.name
                parts.append(types.Part(function_call=types.FunctionCall(name=call.name, args=call.arguments)))
        if not parts:
            continue
        if contents and contents[-1].role == role and contents[-1].parts is not None:
            contents[-1].parts.extend(parts)
        else:
            contents.append(types.Content(role=role, parts=parts))
    return contents


def _map_error(exc: Exception, provider: str, *, streaming: bool, parsing: bool) -> LLMError | None:
    """google-genai's exceptions (and what escapes it mid-stream) as our errors."""
    from google.genai import errors as genai_errors

    if isinstance(exc, LLMError):
        return exc
    if isinstance(exc, genai_errors.UnknownApiResponseError):
        return LLMBadResponse(f"{provider}: malformed stream chunk ({describe(str(exc))})", provider=provider)
    if isinstance(exc, genai_errors.APIError):
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        status = exc.code if isinstance(exc.code, int) else getattr(response, "status_code", 500)
        return error_for_status(status, exc.message or str(exc), provider=provider, headers=headers)
    if parsing and isinstance(exc, ValidationError | ValueError | TypeError | AttributeError | KeyError):
        return LLMBadResponse(f"{provider}: malformed stream chunk ({describe(exc)})", provider=provider)
    return transport_error(exc, provider=provider, streaming=streaming)


def _parameters(tool: ToolSpec) -> types.Schema | None:
    """The tool's parameters in Gemini's Schema; None (left out) for a tool that takes none."""
    from google.genai import types

    schema = gemini_schema(tool.parameters)
    return types.Schema.model_validate(schema) if schema.get("properties") else None
