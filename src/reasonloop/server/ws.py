"""WebSocket ``/v1/ws``: JSON frames both ways; the receive loop never waits on a run.

Client frames (``id`` is optional and echoed on the reply):

* ``{"type": "ping"}`` → ``{"type": "pong"}``
* ``{"type": "ask", "question": ..., "reasoning"?, "agent"?, "settings"?, "conversation_id"?,
  "sampling"?: {"max_tokens"?, "temperature"?}}``
  → ``{"type": "run", "run_id", "conversation_id"}`` then one ``{"type": "event", "run_id",
  "event": {...}}`` frame per event until the run's answer or error.
* ``{"type": "stop", "run_id": ...}`` → ``{"type": "stopped", "run_id", "status"}``
* ``{"type": "resume", "run_id": ..., "after_seq": N}`` → the events after seq N, then live ones.

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
from pydantic import BaseModel, Field, ValidationError
from starlette.websockets import WebSocketDisconnect, WebSocketState

from reasonloop.errors import AuthError, ReasonLoopError
from reasonloop.llm.sampling import Sampling
from reasonloop.runs.models import MAX_SEQ, RunRequest
from reasonloop.runs.reading import Following, RunFeed
from reasonloop.server.auth import WS_SUBPROTOCOL, Principal, ws_token
from reasonloop.server.cross_site import check_host, check_origin
from reasonloop.server.deps import ServerState
from reasonloop.server.ws_outbox import AsgiSend, DirectText, Outbox

__all__ = ["DIRECT_TEXT", "HEARTBEAT", "SOCKET_PATH", "AsgiSocket", "pong_frame", "router", "serve_unwrapped"]

log = logging.getLogger(__name__)
router = APIRouter()

SOCKET_PATH = "/v1/ws"
DIRECT_TEXT = "reasonloop.websocket.direct_text"
"""ASGI scope extension: ``write(text) -> bool``, a text frame written by the server's protocol
at once, or False when it must go through ASGI (see :mod:`reasonloop.server.ws_protocol`)."""
HEARTBEAT = "reasonloop.websocket.heartbeat"
"""ASGI scope extension, offered (as None) by a server protocol that can write the session's
heartbeat frame with each of its own keepalive pings; the session sets it to the frame's text
and keeps no timer of its own."""
CLOSE_TOO_BIG = 1009
CLOSE_POLICY = 1008


class AskFrame(BaseModel):
    question: str = Field(min_length=1)
    reasoning: str | None = None
    agent: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    conversation_id: str | None = None
    sampling: Sampling | None = None


_encode = json.JSONEncoder().encode
"""One encoder for the session's own frames. ASCII only: an ``id`` echoed from a client may hold
a lone surrogate (``"\\ud800"`` is valid JSON), which has no UTF-8 form; escaped, it goes back
as it came."""
_PONG = '{"type":"pong"}'
_HEARTBEAT_FRAME = _encode({"type": "heartbeat"})
_PONG_WITH_ID = '{"type":"pong","id":'


def pong_frame(ref: Any = None) -> str:
    """The reply to a ping (echoing its ``id``), put together without an encoder pass: it is
    the most frequent frame."""
    return _PONG if ref is None else _PONG_WITH_ID + _encode(ref) + "}"


class _Reader:
    """A run written to one socket: the sink of its feed (called with each event as it is
    published). An object rather than closures: a pair of closures naming each other is a
    reference cycle, which would keep the whole connection (protocol, buffers, session) alive
    after it closes until a garbage collection finds it."""

    __slots__ = ("following", "prefix", "run_id", "session")

    def __init__(self, session: _Session, run_id: str, prefix: str) -> None:
        self.session = session
        self.run_id = run_id
        self.prefix = prefix
        self.following: Following | None = None

    def __call__(self, payload: str, terminal: bool) -> None:
        session = self.session
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

    def __init__(
        self,
        ws: WebSocket | AsgiSocket,
        state: ServerState,
        who: Principal | None,
        send: AsgiSend | None = None,
        direct: DirectText | None = None,
    ) -> None:
        self.ws = ws
        self.state = state
        self.who = who
        """Who the socket authenticated as (set by :meth:`serve` once it has)."""
        self.outbox = Outbox(ws, send, direct)
        self.tasks: set[asyncio.Task[None]] = set()
        self.followers: dict[str, _Reader] = {}
        """run id -> what streams it on this socket (``cancel()`` stops it)."""
        self.max_frame = state.settings.server.ws_max_frame_bytes
        self._heartbeat: asyncio.TimerHandle | None = None

    def send(self, frame: dict[str, Any]) -> None:
        self.outbox.put(_encode(frame))

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
            self.error("server.internal", "the server failed to handle this frame; see its log", ref)

    async def serve(self) -> None:
        """Authenticate and accept the socket, then read its frames until it closes."""
        if not await self._admit():
            return
        extensions = self.ws.scope.get("extensions") or {}
        if HEARTBEAT in extensions:  # the protocol beats with its keepalive pings: no timer here
            extensions[HEARTBEAT] = _HEARTBEAT_FRAME
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
        """Authenticate the socket and accept it; False once it is closed instead."""
        scope = self.ws.scope
        try:
            if not self.state.auth.enabled:  # no key to check: refuse other sites' pages
                check_host(scope, self.state.allowed_hosts)
                check_origin(scope, self.state.settings.server.cors_origins)
            self.who = self.state.auth.authenticate(ws_token(scope))
        except AuthError as exc:
            await self.ws.close(code=CLOSE_POLICY, reason=exc.message)
            return False
        offered = scope.get("subprotocols") or ()
        await self.ws.accept(subprotocol=WS_SUBPROTOCOL if WS_SUBPROTOCOL in offered else next(iter(offered), None))
        return self.ws.client_state == WebSocketState.CONNECTED  # not when the client left first

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
        if kind == "ping":  # usually answered by the protocol already (reasonloop.server.ws_protocol)
            return self.outbox.put(pong_frame(ref))
        if kind == "ask":
            self.spawn(self._ask(frame, ref), ref)
        elif kind == "stop":
            self.spawn(self._stop(frame, ref), ref)
        elif kind == "resume":
            self.spawn(self._resume(frame, ref), ref)
        else:
            self.error("ws.unknown_type", f"unknown frame type {kind!r} (ping, ask, stop, resume)", ref)

    async def _ask(self, frame: dict[str, Any], ref: Any) -> None:
        try:
            ask = AskFrame.model_validate({k: v for k, v in frame.items() if k not in ("type", "id")})
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            return self.error("request.invalid", f"{field}: {first['msg']}", ref, field=field)
        runs = self.state.runs
        try:
            await self.state.auth.check_rate(self.who)
            record = await runs.start(RunRequest(**ask.model_dump(), tenant=self.who.tenant))
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
            feed = await runs.read(run_id, after, self.who.tenant)
        except ReasonLoopError as exc:
            return self.error(exc.code, exc.message, ref, run_id=run_id)
        self._follow(run_id, feed)

    def _follow(self, run_id: str, feed: RunFeed) -> None:
        """Stream the run's events on this socket (replacing an earlier reader of it). A run read
        from the store is read no faster than the client takes its frames."""
        previous = self.followers.pop(run_id, None)
        if previous is not None:
            previous.cancel()
        reader = _Reader(self, run_id, '{"type":"event","run_id":' + json.dumps(run_id) + ',"event":')
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
            record = await self.state.runs.stop(run_id, self.who.tenant)
        except ReasonLoopError as exc:
            return self.error(exc.code, exc.message, ref, run_id=run_id, **_extra(exc))
        reply: dict[str, Any] = {"type": "stopped", "run_id": run_id, "status": record.status}
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
        self.outbox.put(_HEARTBEAT_FRAME)
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
    await _serve_socket(ws)


def _serve_socket(ws: WebSocket | AsgiSocket, send: AsgiSend | None = None) -> Coroutine[Any, Any, None]:
    """Serve one socket (the session authenticates and accepts it first); frames go out through
    ``send`` when given (the server's ASGI send, once accepted: only text frames pass there),
    else ``ws.send``. Returns the session's coroutine rather than awaiting it: one frame fewer
    kept for each open socket."""
    state: ServerState = ws.scope["app"].state.reasonloop
    # The protocol's own writer only where frames skip the middleware anyway (served unwrapped).
    direct = (ws.scope.get("extensions") or {}).get(DIRECT_TEXT) if send is not None else None
    return _Session(ws, state, None, send, direct).serve()


class AsgiSocket:
    """A WebSocket served straight on the server's ASGI ``receive`` and ``send``, with what a
    session uses of Starlette's ``WebSocket``: ``receive`` is the server's own (no coroutine of
    its own per message), and no state checks run per frame."""

    __slots__ = ("client_state", "receive", "scope", "send")

    def __init__(self, scope: Any, receive: Any, send: AsgiSend) -> None:
        self.scope = scope
        self.receive = receive
        self.send = send
        self.client_state = WebSocketState.CONNECTING

    async def accept(self, subprotocol: str | None = None) -> None:
        message = await self.receive()  # websocket.connect
        if message["type"] == "websocket.disconnect":
            self.client_state = WebSocketState.DISCONNECTED
            return
        await self.send({"type": "websocket.accept", "subprotocol": subprotocol, "headers": []})
        self.client_state = WebSocketState.CONNECTED

    async def close(self, code: int = 1000, reason: str | None = None) -> None:
        await self.send({"type": "websocket.close", "code": code, "reason": reason or ""})


def serve_unwrapped(scope: Any, receive: Any, send: Any) -> Coroutine[Any, Any, None]:
    """Serve a ``/v1/ws`` socket straight from the server, outside the application's
    middleware stack (see :class:`~reasonloop.server.app.ReasonloopAPI`).

    A socket lives as long as its client, and every layer it passes through (the HTTP
    middleware, the routers, the exception wrappers) keeps a coroutine frame alive for all
    that time and wraps every frame it sends; thousands of open sockets then keep tens of
    thousands of frames for each full garbage collection to walk. Frames are written by the
    server's protocol directly when it offers that (:data:`DIRECT_TEXT`), else with the
    server's ASGI ``send`` itself, not through Starlette's state checks (two more coroutines
    per frame); messages are read with the server's ``receive`` itself (:class:`AsgiSocket`).
    """
    return _serve_socket(AsgiSocket(scope, receive, send), send)
