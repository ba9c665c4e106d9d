"""``POST /v1/chat/completions``: any OpenAI client can ask reasonloop.

The ``model`` is an agent id, a thinking mode (``fast``, ``balanced``, ``deep``, ``research``,
``auto``: :data:`reasonloop.plugin_table.MODES`) or a reasoning strategy id, looked up in that order
(``reasonloop`` or ``default`` picks the server's default); ``GET /v1/models`` lists them, and an unknown one is a 404 as with OpenAI. The last user message is the question; the messages before it are the
history. The answer streams as ``content`` deltas; the reasoning lane (progress, thoughts,
tool calls) streams as ``reasoning_content`` deltas, which OpenAI clients ignore or show as
reasoning. The run id is returned in the ``X-Run-Id`` header, so the full trace can be read
from ``/v1/runs/{id}``. The answer's evidence rides in one extension field, ``citations`` (a list of
:class:`~reasonloop.events.Citation` objects), at the top level of the completion and of the streamed
chunk that carries the ``finish_reason``; clients that do not know it ignore it, and the official
``openai`` SDK exposes it as ``completion.model_extra["citations"]``. ``max_tokens`` (or ``max_completion_tokens``) and ``temperature`` apply to
every model call of the run; ``n`` must be 1; other options (``top_p``, ``tools``...) are accepted
and ignored: the strategy decides which tools the run uses. A completion whose
client leaves before the end, streamed or not, stops its run (``[server] chat_stop_on_disconnect``):
a client that stops reading or gives up waiting wants no more.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Collection
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from reasonloop.errors import ModelNotFound, ReasonLoopError, RequestInvalid
from reasonloop.events import (
    Answer,
    AnswerDelta,
    ErrorEvent,
    Event,
    Plan,
    Progress,
    Route,
    Searched,
    Thought,
    ToolCall,
    ToolResult,
)
from reasonloop.llm.base import Message
from reasonloop.llm.sampling import Sampling
from reasonloop.plugin_table import MODES
from reasonloop.runs.manager import RunManager
from reasonloop.runs.models import RunRequest
from reasonloop.server.deps import principal, server_state
from reasonloop.server.gate import Caller
from reasonloop.server.routes.stopping import run_stream
from reasonloop.telemetry import trace_headers
from reasonloop.unicode_text import CheckedText

__all__ = ["router"]

log = logging.getLogger(__name__)
router = APIRouter(prefix="/v1", tags=["openai"])

DEFAULT_MODELS = ("reasonloop", "default")


class ChatMessage(CheckedText):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(str(p.get("text", "")) for p in self.content if p.get("type") in ("text", None))
        return self.content or ""


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    include_usage: bool = False


class ChatCompletionRequest(CheckedText):
    model_config = ConfigDict(extra="allow")

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    """Tokens each model call of the run may generate (the answer's included)."""
    max_completion_tokens: int | None = Field(default=None, ge=1)
    """The newer name of ``max_tokens``; wins when both are given."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    n: int = Field(default=1, ge=1, le=1)
    """Choices per completion: one run answers once, so only 1 (more is refused, not ignored)."""

    def sampling(self) -> Sampling | None:
        max_tokens = self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens
        if max_tokens is None and self.temperature is None:
            return None
        return Sampling(max_tokens=max_tokens, temperature=self.temperature)


_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
"""OpenAI roles kept in the history, as ours (``developer`` is the newer name of ``system``)."""


def _run_request(
    body: ChatCompletionRequest, tenant: str, agents: Collection[str], trace_context: dict[str, str] | None = None
) -> RunRequest:
    messages = [m for m in body.messages if m.role in _ROLES]
    if not messages or messages[-1].role != "user" or not messages[-1].text().strip():
        raise RequestInvalid("the last message must be a non-empty user message", field="messages")
    history = [Message(role=_ROLES[m.role], content=m.text()) for m in messages[:-1]]  # type: ignore[arg-type]
    model = None if body.model in DEFAULT_MODELS else body.model
    agent = model if model in agents else None
    mode = model if agent is None and any(row.id == model for row in MODES) else None
    return RunRequest(
        question=messages[-1].text(),
        reasoning=None if agent or mode else model,
        mode=mode,
        agent=agent,
        history=history,
        sampling=body.sampling(),
        tenant=tenant,
        trace_context=trace_context,
    )


def _lane(event: Event) -> str | None:
    """The event's lines in ``reasoning_content``, read from its fields (a plan's text is not parsed)."""
    if isinstance(event, Progress):
        return event.message + "\n"
    if isinstance(event, Thought):
        return None if event.plan_text else event.text + "\n"  # a plan's text: its Plan event says it
    if isinstance(event, Plan):
        return "Plan:\n" + "".join(step.line() + "\n" for step in event.steps)
    if isinstance(event, ToolCall):
        return f"→ {event.tool}({json.dumps(event.input, ensure_ascii=False)})\n"
    if isinstance(event, ToolResult):
        return f"← {event.tool}: {'error' if event.error else 'ok'}\n"
    if isinstance(event, Searched):
        return f"→ search({json.dumps(event.query, ensure_ascii=False)}): {event.hits} found\n"
    if isinstance(event, Route):
        return f"Route: {event.route}{f' ({event.strategy})' if event.strategy else ''}: {event.reason}\n"
    return None


def _usage(answer: Answer | None) -> dict[str, int]:
    u = answer.usage if answer else None
    p, c = (u.prompt_tokens, u.completion_tokens) if u else (0, 0)
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


class ModelView(BaseModel):
    """A model as OpenAI lists them: here, a reasoning strategy or an agent."""

    id: str
    object: str = "model"
    created: int = 0
    owned_by: str = "reasonloop"


class ModelList(BaseModel):
    object: str = "list"
    data: list[ModelView]


def _model_ids(request: Request) -> list[str]:
    """What ``model`` may name: the server's default, every mode whose strategy is installed, every
    strategy that loaded, every agent."""
    state = server_state(request)
    strategies = [e.id for e in state.registry.entries("reasoning") if e.error is None]
    modes = [row.id for row in MODES if row.strategy in strategies]
    return list(dict.fromkeys([*DEFAULT_MODELS, *modes, *strategies, *sorted(state.agents)]))


@router.get("/models", response_model=ModelList)
async def list_models(request: Request, who: Annotated[Caller, Depends(principal)]) -> ModelList:
    """The models a chat completion may name (OpenAI's ``models.list()``)."""
    return ModelList(data=[ModelView(id=model) for model in _model_ids(request)])


@router.get("/models/{model}", response_model=ModelView)
async def get_model(model: str, request: Request, who: Annotated[Caller, Depends(principal)]) -> ModelView:
    """One model (OpenAI's ``models.retrieve()``); 404 when there is no such strategy or agent."""
    if model not in _model_ids(request):
        raise ModelNotFound(f"no model {model!r}", model=model)
    return ModelView(id=model)


@router.post("/chat/completions")
async def chat_completions(
    body: ChatCompletionRequest, request: Request, who: Annotated[Caller, Depends(principal)]
) -> Any:
    state = server_state(request)
    try:
        asked = _run_request(body, who.tenant, state.agents, trace_headers(request.headers))
        record = await state.start(asked, field="messages")
    except RequestInvalid as exc:
        if exc.details.get("field") not in ("reasoning", "agent", "mode"):
            raise
        # As OpenAI answers a model it does not have: 404, which its SDKs raise as NotFoundError.
        raise ModelNotFound(f"no model {body.model!r}: {exc.message}", model=body.model) from exc
    events = (await state.runs.read(record.run_id, 0, who.tenant)).events()
    completion_id = f"chatcmpl-{record.run_id}"
    created = int(time.time())
    headers = {"X-Run-Id": record.run_id}
    abandoned = None  # what to do when the client leaves before the end
    if state.settings.server.chat_stop_on_disconnect:
        abandoned = functools.partial(_stop_later, state.runs, record.run_id, who.tenant)
    if body.stream:
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        return run_stream(  # ends with the run's interrupted answer when the server stops
            _stream(events, completion_id, created, body.model, include_usage, abandoned),
            state.runs,
            ping=0,
            headers=headers | {"Cache-Control": "no-cache"},
        )
    parts: list[str] = []
    answer: Answer | None = None
    watcher = None
    if abandoned is not None:
        watcher = asyncio.create_task(_on_disconnect(request, abandoned), name=f"watch-{record.run_id}")
    try:
        async for event in events:
            if isinstance(event, AnswerDelta) and event.depth == 0:
                parts.append(event.text)
            elif isinstance(event, Answer) and event.depth == 0:
                answer = event
            elif isinstance(event, ErrorEvent) and event.depth == 0:
                return JSONResponse(
                    {"error": {"message": event.message, "code": event.code, "type": event.code}},
                    status_code=502 if event.code.startswith("llm.") else 500,
                    headers=headers,
                )
    finally:
        if watcher is not None:
            watcher.cancel()
    text = answer.text if answer is not None else "".join(parts)
    return JSONResponse(
        {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": body.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": _finish(answer),
                }
            ],
            "usage": _usage(answer),
            "citations": _citations(answer),
        },
        headers=headers,
    )


def _citations(answer: Answer | None) -> list[dict[str, Any]]:
    """The answer's citations as JSON data (the ``citations`` extension field)."""
    return [c.model_dump(mode="json") for c in answer.citations] if answer is not None else []


def _finish(answer: Answer | None) -> str:
    if answer is None or answer.stop_reason in ("final", "stopped", "interrupted"):
        return "stop"
    cut_short = answer.stop_reason.startswith("max_") or answer.stop_reason in ("length", "timeout")
    return "length" if cut_short else "stop"


async def _on_disconnect(request: Request, then: Callable[[], None]) -> None:
    """Call ``then`` once the client of a request whose body was read goes away (the server's
    next message for it is then ``http.disconnect``)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            then()
            return


def _stop_later(runs: RunManager, run_id: str, tenant: str) -> None:
    """Stop the run in a task of its own: the stream that asks is being cancelled."""

    async def stop() -> None:
        try:
            await runs.stop(run_id, tenant)
        except ReasonLoopError as exc:  # it ended meanwhile (409), or the store is gone
            log.debug("run %s not stopped after its client left: %s", run_id, exc.message)

    task = asyncio.get_running_loop().create_task(stop(), name=f"stop-abandoned-{run_id}")
    _stopping.add(task)
    task.add_done_callback(_stopping.discard)


_stopping: set[asyncio.Task[None]] = set()
"""Stops in flight (a task nobody references may be collected before it runs)."""


async def _stream(
    events: AsyncIterator[Event],
    completion_id: str,
    created: int,
    model: str,
    include_usage: bool,
    abandoned: Callable[[], None] | None = None,
) -> AsyncIterator[str]:
    """The run's events as chat completion chunks; ``abandoned`` is called when the response is
    closed (its client left) before the run's end."""

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        data = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"

    streamed = ended = False
    try:
        yield chunk({"role": "assistant", "content": ""})
        try:
            async for event in events:
                if event.depth == 0 and isinstance(event, AnswerDelta):
                    streamed = True
                    yield chunk({"content": event.text})
                elif event.depth == 0 and isinstance(event, Answer):
                    ended = True
                    if not streamed and event.text:
                        yield chunk({"content": event.text})
                    yield chunk({}, _finish(event), citations=_citations(event))
                    if include_usage:
                        data = {
                            "id": completion_id,
                            "object": "chat.completion.chunk",
                            "created": created,
                            "model": model,
                            "choices": [],
                            "usage": _usage(event),
                        }
                        yield f"data: {json.dumps(data)}\n\n"
                elif event.depth == 0 and isinstance(event, ErrorEvent):
                    ended = True
                    yield f"data: {json.dumps({'error': {'message': event.message, 'code': event.code}})}\n\n"
                elif (lane := _lane(event)) is not None:
                    yield chunk({"reasoning_content": lane})
        except ReasonLoopError as exc:
            ended = True
            yield f"data: {json.dumps({'error': {'message': exc.message, 'code': exc.code}})}\n\n"
        ended = True
        yield "data: [DONE]\n\n"
    finally:
        if not ended and abandoned is not None:
            abandoned()
