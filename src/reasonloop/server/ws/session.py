"""WebSocket ``/v1/ws``: JSON frames both ways; the receive loop never waits on a run.

The frames and their fields are listed in :mod:`reasonloop.server.ws.frames` and described in
docs/server.md. Client frames (``id`` is optional and echoed on the reply):

* ``{"type": "ping"}`` → ``{"type": "pong"}``
* ``{"type": "ask", "question": ..., "reasoning"?, "agent"?, "settings"?, "conversation_id"?,
  "sampling"?: {"max_tokens"?, "temperature"?}, "model"?}``
  → ``{"type": "run", "run_id", "conversation_id"}`` then one ``{"type": "event", "run_id",
  "event": {...}}`` frame per event until the run's answer or error.
* ``{"type": "stop", "run_id": ...}`` → ``{"type": "stopped", "run_id", "status"}``
* ``{"type": "resume", "run_id": ..., "after_seq": N}`` → the events after seq N, then live ones.
* ``{"type": "approve", "run_id", "approval_id", "decision", "arguments"?, "reason"?}`` →
  ``{"type": "approved", "run_id", "approval_id", "decision"}`` (an answer to a tool call waiting
  for approval, as ``POST /v1/runs/{id}/approvals/{approval_id}``).

Problems are ``{"type": "error", "code", "message"}`` frames and the socket stays open, except
for a frame over ``[server] ws_max_frame_bytes``, which is refused by closing with 1009.
Runs execute as tasks of the run manager: ping and stop are answered while a run streams,
and a disconnect never stops a run (reconnect and ``resume``). Frames are written as soon as
they exist (a run's events straight from the run store's commit), queueing only while the
client is slow to read. A heartbeat frame goes out
every ``ws_ping_interval_s`` (written with the protocol's own keepalive ping when the server's
protocol offers that, :data:`HEARTBEAT`); uvicorn's protocol pings close sockets that stop answering.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Coroutine
from typing import Any

from fastapi import APIRouter, WebSocket
from pydantic import ValidationError
from starlette.websockets import WebSocketDisconnect, WebSocketState

from reasonloop.errors import ReasonLoopError
from reasonloop.runs.approvals import ApprovalAnswer
from reasonloop.runs.models import MAX_SEQ, RunAsk, RunRequest
from reasonloop.runs.reading import Following, RunFeed
from reasonloop.server.auth import WS_SUBPROTOCOL
from reasonloop.server.deps import ServerState
from reasonloop.server.errors import INTERNAL, error_response, invalid_arguments
from reasonloop.server.gate import REFUSALS, Caller, decider
from reasonloop.server.withheld import withhold_json
from reasonloop.server.ws.frames import (
    CLIENT_FRAMES,
    DIRECT_TEXT,
    HEARTBEAT,
    HEARTBEAT_FRAME,
    SOCKET_PATH,
    AsgiSend,
    FrameOutbox,
    encode_frame,
    pong_frame,
)
from reasonloop.telemetry import trace_headers

__all__ = ["router", "serve_socket"]

log = logging.getLogger(__name__)
router = APIRouter()

CLOSE_TOO_BIG = 1009
CLOSE_POLICY = 1008
DENIAL = "websocket.http.response"
"""The ASGI extension that lets a refused handshake be answered with an HTTP response."""


class _Reader:
    """A run written to one socket: the sink of its feed (called with each event as it is
    published). An object rather than closures: a pair of closures naming each other is a
    reference cycle, which would keep the whole connection (protocol, buffers, session) alive
    after it closes until a garbage collection finds it."""

    __slots__ = ("following", "prefix", "readable", "run_id", "session")

    def __init__(self, session: _Session, run_id: str, prefix: str, readable: set[str] | None = None) -> None:
        self.session = session
        self.run_id = run_id
        self.prefix = prefix
        self.following: Following | None = None
        self.readable = readable
        """The documents whose citations may be shown (``None``: all): a run read again leaves out
        the others' (:mod:`reasonloop.server.withheld`)."""

    def __call__(self, payload: str, terminal: bool) -> None:
        session = self.session
        if self.readable is not None:
            payload = withhold_json(payload, self.readable)
        session.outbox.put(self.prefix + payload + "}")
        if terminal:  # done: let the run go
            self._let_go()

    def failed(self, exc: ReasonLoopError) -> None:
        """Reading the run from the store failed midway."""
        self._let_go()
        self.session.error(exc.code, exc.message, run_id=self.run_id)

    def cancel(self) -> None:
        """Stop following (the run goes on)."""
        following, self.following = self.following, None
        if following is not None:
            following.cancel()

    def _let_go(self) -> None:
        self.following = None  # the feed holds this reader: no cycle is left behind
        if self.session.followers.get(self.run_id) is self:
            del self.session.followers[self.run_id]


class _Session:
    """One socket: a receive loop, an outbox, and one reader per run it streams (a sink
    attached to a run this process executes, or a task reading a run through the store)."""

    def __init__(self, ws: WebSocket, state: ServerState, who: Caller | None, outbox: FrameOutbox) -> None:
        self.ws = ws
        self.state = state
        self.who = who
        """Who the socket was admitted as (set by :meth:`serve` once the gate has)."""
        self.outbox = outbox
        self.tasks: set[asyncio.Task[None]] = set()
        self.followers: dict[str, _Reader] = {}
        """run id -> what streams it on this socket (``cancel()`` stops it)."""
        self.max_frame = state.settings.server.ws_max_frame_bytes
        self._heartbeat: asyncio.TimerHandle | None = None

    def send(self, frame: dict[str, Any]) -> None:
        self.outbox.put(encode_frame(frame))

    def error(self, code: str, message: str, ref: Any = None, **extra: Any) -> None:
        frame = {"type": "error", "code": code, "message": message, **extra}
        if ref is not None:
            frame["id"] = ref
        self.send(frame)

    def spawn(self, coro: Coroutine[Any, Any, None], ref: Any = None) -> asyncio.Task[None]:
        """Handle a frame in a task of its own; a failure nobody foresaw gets an error frame (and
        the server's log), not a task that dies in silence."""
        task = asyncio.create_task(self._answering(coro, ref))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def _answering(self, coro: Coroutine[Any, Any, None], ref: Any) -> None:
        try:
            await coro
        except Exception:
            log.exception("WebSocket frame handler failed")
            self.error(INTERNAL, "the server failed to handle this frame; see its log", ref)

    async def serve(self) -> None:
        """Admit and accept the socket, then read its frames until it closes."""
        if not await self._admit():
            return
        extensions = self.ws.scope.get("extensions") or {}
        if HEARTBEAT in extensions:  # the protocol beats with its keepalive pings: no timer here
            extensions[HEARTBEAT] = HEARTBEAT_FRAME
        else:
            self._arm_heartbeat()
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
                self._dispatch(raw)
        except WebSocketDisconnect:
            return
        finally:
            if self._heartbeat is not None:
                self._heartbeat.cancel()
                self._heartbeat = None
            for follower in list(self.followers.values()):
                follower.cancel()
            self.followers.clear()
            for task in list(self.tasks):
                task.cancel()
            self.outbox.close()

    async def _admit(self) -> bool:
        """Ask the gate, then accept the socket; False once it is refused instead."""
        scope = self.ws.scope
        try:
            self.who = await self.state.gate.admit(scope)
        except REFUSALS as exc:
            await self._deny(exc)
            return False
        offered = scope.get("subprotocols") or ()
        await self.ws.accept(subprotocol=WS_SUBPROTOCOL if WS_SUBPROTOCOL in offered else next(iter(offered), None))
        return self.ws.client_state == WebSocketState.CONNECTED  # not when the client left first

    async def _deny(self, exc: ReasonLoopError) -> None:
        """Refuse the handshake: with the error as an HTTP response (as the same refusal over HTTP)
        when the server can send one, else by closing the socket before it is accepted (1008)."""
        if DENIAL in (self.ws.scope.get("extensions") or {}):
            await error_response(exc)(self.ws.scope, self.ws.receive, self.ws.send)
        else:
            await self.ws.close(code=CLOSE_POLICY, reason=exc.message)

    async def _refuse(self, size: int) -> None:
        with contextlib.suppress(Exception):
            self.error("ws.frame_too_large", f"frame of {size} bytes is over the limit of {self.max_frame}")
            await self.outbox.flush()
            await self.ws.close(code=CLOSE_TOO_BIG, reason="frame too large")

    def _dispatch(self, raw: str) -> None:
        try:
            frame = json.loads(raw)
        except json.JSONDecodeError as exc:
            return self.error("ws.malformed", f"frame is not JSON: {exc.msg}")
        except (ValueError, RecursionError) as exc:  # valid JSON that Python's parser refuses
            reason = (
                "it is nested too deeply" if isinstance(exc, RecursionError) else "a number in it has too many digits"
            )
            return self.error("ws.malformed", f"frame cannot be read: {reason}")
        if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
            return self.error("ws.malformed", 'frame must be a JSON object with a string "type"')
        kind, ref = frame["type"], frame.get("id")
        if kind == "ping":  # usually answered by the protocol already (reasonloop.server.transport.ws_protocol)
            return self.outbox.put(pong_frame(ref))
        if kind == "ask":
            self.spawn(self._ask(frame, ref), ref)
        elif kind == "stop":
            self.spawn(self._stop(frame, ref), ref)
        elif kind == "resume":
            self.spawn(self._resume(frame, ref), ref)
        elif kind == "approve":
            self.spawn(self._approve(frame, ref), ref)
        else:
            self.error("ws.unknown_type", f"unknown frame type {kind!r} ({', '.join(CLIENT_FRAMES)})", ref)

    async def _ask(self, frame: dict[str, Any], ref: Any) -> None:
        try:
            ask = RunAsk.model_validate({k: v for k, v in frame.items() if k not in ("type", "id")})
        except ValidationError as exc:
            invalid = invalid_arguments(exc)
            return self.error(invalid.code, invalid.message, ref, **_extra(invalid))
        runs = self.state.runs
        try:
            await self.state.gate.charge(self.who)
            traced = trace_headers(_trace_headers(self.ws.scope))  # the upgrade request's trace context
            record = await self.state.start(
                RunRequest(**ask.model_dump(), **self.who.run_fields(), trace_context=traced)
            )
            feed = await runs.read(record.run_id, 0, self.who.tenant)
        except ReasonLoopError as exc:
            return self.error(exc.code, exc.message, ref, **_extra(exc))
        reply: dict[str, Any] = {"type": "run", "run_id": record.run_id, "conversation_id": record.conversation_id}
        if ref is not None:
            reply["id"] = ref
        self.send(reply)
        self._follow(record.run_id, feed)

    async def _resume(self, frame: dict[str, Any], ref: Any) -> None:
        run_id, after = frame.get("run_id"), frame.get("after_seq", 0)
        if not isinstance(run_id, str):
            return self.error("request.invalid", "resume needs a run_id", ref, field="run_id")
        if type(after) is not int or not 0 <= after < MAX_SEQ:  # not a bool, and within a store's integers
            message = f"resume needs after_seq, a whole number from 0 to {MAX_SEQ - 1}"
            return self.error("request.invalid", message, ref, field="after_seq")
        runs = self.state.runs
        try:
            await self.state.check_run(run_id, self.who)
            feed = await runs.read(run_id, after, self.who.tenant)
            readable = await self.state.readable_documents(self.who)
        except ReasonLoopError as exc:
            return self.error(exc.code, exc.message, ref, run_id=run_id)
        self._follow(run_id, feed, readable)

    def _follow(self, run_id: str, feed: RunFeed, readable: set[str] | None = None) -> None:
        """Stream the run's events on this socket (replacing an earlier reader of it). A run read
        from the store is read no faster than the client takes its frames."""
        previous = self.followers.pop(run_id, None)
        if previous is not None:
            previous.cancel()
        reader = _Reader(self, run_id, '{"type":"event","run_id":' + json.dumps(run_id) + ',"event":', readable)
        self.followers[run_id] = reader  # before attaching: a replay that ends the run removes it
        following = feed.attach(reader, pace=self.outbox.flush, failed=reader.failed)
        if not following.active:
            reader._let_go()
        elif self.followers.get(run_id) is reader:
            reader.following = following

    async def _stop(self, frame: dict[str, Any], ref: Any) -> None:
        run_id = frame.get("run_id")
        if not isinstance(run_id, str):
            return self.error("request.invalid", "stop needs a run_id", ref, field="run_id")
        try:
            await self.state.check_run(run_id, self.who)
            record = await self.state.runs.stop(run_id, self.who.tenant)
        except ReasonLoopError as exc:
            return self.error(exc.code, exc.message, ref, run_id=run_id, **_extra(exc))
        reply: dict[str, Any] = {"type": "stopped", "run_id": run_id, "status": record.status}
        if ref is not None:
            reply["id"] = ref
        self.send(reply)

    async def _approve(self, frame: dict[str, Any], ref: Any) -> None:
        run_id, approval_id = frame.get("run_id"), frame.get("approval_id")
        if not isinstance(run_id, str):
            return self.error("request.invalid", "approve needs a run_id", ref, field="run_id")
        if not isinstance(approval_id, str):
            return self.error("request.invalid", "approve needs an approval_id", ref, field="approval_id")
        try:
            answer = ApprovalAnswer.model_validate(
                {k: v for k, v in frame.items() if k not in ("type", "id", "run_id", "approval_id")}
            )
        except ValidationError as exc:
            invalid = invalid_arguments(exc)
            return self.error(invalid.code, invalid.message, ref, run_id=run_id, **_extra(invalid))
        try:
            who = self.who
            assert who is not None  # admitted before any frame is read
            await self.state.runs.answer_approval(
                run_id, approval_id, answer.decision_by(decider(who, "ws")), who.tenant
            )
        except ReasonLoopError as exc:
            return self.error(exc.code, exc.message, ref, run_id=run_id, **_extra(exc))
        reply: dict[str, Any] = {
            "type": "approved",
            "run_id": run_id,
            "approval_id": approval_id,
            "decision": answer.decision,
        }
        if ref is not None:
            reply["id"] = ref
        self.send(reply)

    def _arm_heartbeat(self) -> None:
        """A heartbeat frame in ``ws_ping_interval_s``: a timer, not a task per socket (thousands
        of sockets would each keep a task, its coroutines and a future alive for nothing)."""
        interval = self.state.settings.server.ws_ping_interval_s
        self._heartbeat = asyncio.get_running_loop().call_later(interval, self._beat)

    def _beat(self) -> None:
        self._heartbeat = None
        if self.ws.client_state != WebSocketState.CONNECTED:
            return
        self.outbox.put(HEARTBEAT_FRAME)
        if self.outbox.closed:  # the socket failed a write: close it (the receive loop then ends)
            self.spawn(self._close())
            return
        self._arm_heartbeat()

    async def _close(self) -> None:
        with contextlib.suppress(Exception):
            await self.ws.close()


def _extra(exc: ReasonLoopError) -> dict[str, Any]:
    return {k: v for k, v in exc.details.items() if k in ("status", "retry_after", "field")}


@router.websocket(SOCKET_PATH)
async def websocket_endpoint(ws: WebSocket) -> None:
    await serve_socket(ws)


def serve_socket(ws: WebSocket, send: AsgiSend | None = None) -> Coroutine[Any, Any, None]:
    """Serve one socket (the session authenticates and accepts it first).

    Args:
        ws: Starlette's WebSocket, or anything with the same surface (the transport's own).
        send: The server's ASGI ``send``, for a socket served outside the middleware stack:
            frames then go straight through it once accepted (or through the protocol's own
            writer, where the scope offers :data:`~reasonloop.server.ws.frames.DIRECT_TEXT`),
            else through ``ws.send``.

    Returns:
        The session's coroutine, rather than awaiting it: one frame fewer kept for each open socket.
    """
    state: ServerState = ws.scope["app"].state.reasonloop
    direct = (ws.scope.get("extensions") or {}).get(DIRECT_TEXT) if send is not None else None
    return _Session(ws, state, None, state.new_outbox(ws, send, direct)).serve()


def _trace_headers(scope: dict[str, Any]) -> dict[str, str]:
    """The upgrade request's W3C trace headers, read from the raw scope (no header object per socket)."""
    return {
        name.decode("latin-1"): value.decode("latin-1")
        for name, value in scope.get("headers") or ()
        if name in (b"traceparent", b"tracestate")
    }
