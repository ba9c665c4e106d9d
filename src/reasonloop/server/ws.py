"""WebSocket ``/v1/ws``: JSON frames both ways; the receive loop never waits on a run.

Client frames (``id`` is optional and echoed on the reply):

* ``{"type": "ping"}`` → ``{"type": "pong"}``
* ``{"type": "ask", "question": ..., "reasoning"?, "agent"?, "settings"?, "conversation_id"?}``
  → ``{"type": "run", "run_id", "conversation_id"}`` then one ``{"type": "event", "run_id",
  "event": {...}}`` frame per event until the run's answer or error.
* ``{"type": "stop", "run_id": ...}`` → ``{"type": "stopped", "run_id", "status"}``
* ``{"type": "resume", "run_id": ..., "after_seq": N}`` → the events after seq N, then live ones.

Problems are ``{"type": "error", "code", "message"}`` frames and the socket stays open, except
for a frame over ``[server] ws_max_frame_bytes``, which is refused by closing with 1009.
Runs execute as tasks of the run manager: ping and stop are answered while a run streams,
and a disconnect never stops a run (reconnect and ``resume``). A heartbeat frame goes out
every ``ws_ping_interval_s``; uvicorn's protocol pings close sockets that stop answering.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, WebSocket
from pydantic import BaseModel, Field, ValidationError
from starlette.websockets import WebSocketDisconnect, WebSocketState

from reasonloop.errors import AuthError, ReasonLoopError
from reasonloop.events import Event
from reasonloop.runs.models import RunRequest
from reasonloop.runs.store import is_terminal_event
from reasonloop.server.auth import WS_SUBPROTOCOL, Principal, ws_token
from reasonloop.server.deps import ServerState

__all__ = ["router"]

log = logging.getLogger(__name__)
router = APIRouter()

CLOSE_TOO_BIG = 1009
CLOSE_POLICY = 1008


class AskFrame(BaseModel):
    question: str = Field(min_length=1)
    reasoning: str | None = None
    agent: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    conversation_id: str | None = None


class _Session:
    """One socket: a receive loop, a send lock, and one follower task per run it streams."""

    def __init__(self, ws: WebSocket, state: ServerState, who: Principal) -> None:
        self.ws = ws
        self.state = state
        self.who = who
        self.lock = asyncio.Lock()
        self.tasks: set[asyncio.Task[None]] = set()
        self.followers: dict[str, asyncio.Task[None]] = {}
        self.max_frame = state.settings.server.ws_max_frame_bytes

    async def send_text(self, text: str) -> None:
        async with self.lock:
            await self.ws.send_text(text)

    async def send(self, frame: dict[str, Any]) -> None:
        await self.send_text(json.dumps(frame, ensure_ascii=False))

    async def error(self, code: str, message: str, ref: Any = None, **extra: Any) -> None:
        frame = {"type": "error", "code": code, "message": message, **extra}
        if ref is not None:
            frame["id"] = ref
        await self.send(frame)

    def spawn(self, coro: Any) -> asyncio.Task[None]:
        task = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def serve(self) -> None:
        heartbeat = self.spawn(self._heartbeat())
        try:
            while True:
                message = await self.ws.receive()
                if message["type"] == "websocket.disconnect":
                    return
                raw = message.get("text")
                if raw is None:
                    data = message.get("bytes") or b""
                    if len(data) > self.max_frame:
                        return await self._refuse(len(data))
                    raw = data.decode("utf-8", errors="replace")
                if len(raw) > self.max_frame and len(raw.encode()) > self.max_frame:
                    return await self._refuse(len(raw.encode()))
                await self._dispatch(raw)
        except WebSocketDisconnect:
            return
        finally:
            heartbeat.cancel()
            for task in list(self.tasks):
                task.cancel()

    async def _refuse(self, size: int) -> None:
        with contextlib.suppress(Exception):
            await self.error("ws.frame_too_large", f"frame of {size} bytes is over the limit of {self.max_frame}")
            await self.ws.close(code=CLOSE_TOO_BIG, reason="frame too large")

    async def _dispatch(self, raw: str) -> None:
        try:
            frame = json.loads(raw)
        except json.JSONDecodeError as exc:
            return await self.error("ws.malformed", f"frame is not JSON: {exc.msg}")
        if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
            return await self.error("ws.malformed", 'frame must be a JSON object with a string "type"')
        kind, ref = frame["type"], frame.get("id")
        if kind == "ping":
            pong: dict[str, Any] = {"type": "pong"}
            if ref is not None:
                pong["id"] = ref
            return await self.send(pong)
        if kind == "ask":
            self.spawn(self._ask(frame, ref))
        elif kind == "stop":
            self.spawn(self._stop(frame, ref))
        elif kind == "resume":
            self.spawn(self._resume(frame, ref))
        else:
            await self.error("ws.unknown_type", f"unknown frame type {kind!r} (ping, ask, stop, resume)", ref)

    async def _ask(self, frame: dict[str, Any], ref: Any) -> None:
        try:
            ask = AskFrame.model_validate({k: v for k, v in frame.items() if k not in ("type", "id")})
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            return await self.error("request.invalid", f"{field}: {first['msg']}", ref, field=field)
        try:
            self.state.auth.check_rate(self.who)
            record = await self.state.runs.start(RunRequest(**ask.model_dump(), tenant=self.who.tenant))
            events = await self.state.runs.subscribe_json(record.run_id, 0, self.who.tenant)
        except ReasonLoopError as exc:
            return await self.error(exc.code, exc.message, ref, **_extra(exc))
        reply: dict[str, Any] = {"type": "run", "run_id": record.run_id, "conversation_id": record.conversation_id}
        if ref is not None:
            reply["id"] = ref
        await self.send(reply)
        await self._follow(record.run_id, events)

    async def _resume(self, frame: dict[str, Any], ref: Any) -> None:
        run_id, after = frame.get("run_id"), frame.get("after_seq", 0)
        if not isinstance(run_id, str) or not isinstance(after, int) or after < 0:
            field = "run_id" if not isinstance(run_id, str) else "after_seq"
            return await self.error(
                "request.invalid", f"resume needs run_id and after_seq >= 0 ({field})", ref, field=field
            )
        try:
            events = await self.state.runs.subscribe_json(run_id, after, self.who.tenant)
        except ReasonLoopError as exc:
            return await self.error(exc.code, exc.message, ref, run_id=run_id)
        await self._follow(run_id, events)

    async def _follow(self, run_id: str, events: AsyncIterator[tuple[Event, str]]) -> None:
        previous = self.followers.get(run_id)
        current = asyncio.current_task()
        if previous is not None and previous is not current:
            previous.cancel()
        if current is not None:
            self.followers[run_id] = current  # type: ignore[assignment]
        prefix = '{"type":"event","run_id":' + json.dumps(run_id) + ',"event":'
        try:
            async for event, payload in events:
                await self.send_text(prefix + payload + "}")
                if is_terminal_event(event):
                    break
        except ReasonLoopError as exc:
            await self.error(exc.code, exc.message, run_id=run_id)
        except (WebSocketDisconnect, RuntimeError):
            return
        finally:
            if self.followers.get(run_id) is current:
                del self.followers[run_id]

    async def _stop(self, frame: dict[str, Any], ref: Any) -> None:
        run_id = frame.get("run_id")
        if not isinstance(run_id, str):
            return await self.error("request.invalid", "stop needs a run_id", ref, field="run_id")
        try:
            record = await self.state.runs.stop(run_id, self.who.tenant)
        except ReasonLoopError as exc:
            return await self.error(exc.code, exc.message, ref, run_id=run_id, **_extra(exc))
        reply: dict[str, Any] = {"type": "stopped", "run_id": run_id, "status": record.status}
        if ref is not None:
            reply["id"] = ref
        await self.send(reply)

    async def _heartbeat(self) -> None:
        interval = self.state.settings.server.ws_ping_interval_s
        while True:
            await asyncio.sleep(interval)
            if self.ws.client_state != WebSocketState.CONNECTED:
                return
            try:
                await self.send({"type": "heartbeat"})
            except Exception:
                with contextlib.suppress(Exception):
                    await self.ws.close()
                return


def _extra(exc: ReasonLoopError) -> dict[str, Any]:
    return {k: v for k, v in exc.details.items() if k in ("status", "retry_after", "field")}


@router.websocket("/v1/ws")
async def websocket_endpoint(ws: WebSocket) -> None:
    state: ServerState = ws.app.state.reasonloop
    offered = list(ws.scope.get("subprotocols") or [])
    token = ws_token(ws.query_params.get("api_key"), offered, ws.headers.get("authorization"))
    try:
        who = state.auth.authenticate(token)
    except AuthError as exc:
        await ws.close(code=CLOSE_POLICY, reason=exc.message)
        return
    subprotocol = WS_SUBPROTOCOL if WS_SUBPROTOCOL in offered else next(iter(offered), None)
    await ws.accept(subprotocol=subprotocol)
    await _Session(ws, state, who).serve()
