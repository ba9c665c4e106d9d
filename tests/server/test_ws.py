"""WebSocket /v1/ws over a real uvicorn server, with the official-protocol `websockets` client."""

from __future__ import annotations

import asyncio
import base64
import json
import os

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.server import create_app
from tests.llm_runner import LLMRunner
from tests.runs.helpers import GatedRunner
from tests.server.helpers import make_settings, serve

pytestmark = pytest.mark.integration


async def recv(ws) -> dict:
    return json.loads(await asyncio.wait_for(ws.recv(), 10))


async def recv_until(ws, predicate) -> list[dict]:
    frames = []
    while True:
        frame = await recv(ws)
        frames.append(frame)
        if predicate(frame):
            return frames


def is_end(frame: dict) -> bool:
    """The frame of the event that ends the run: the event says so (``final``)."""
    return frame["type"] == "event" and frame["event"]["final"]


@pytest.fixture
async def gated(tmp_path):
    settings = make_settings(tmp_path, ws_max_frame_bytes=1024)
    runner = GatedRunner(steps=5)
    async with serve(create_app(settings, runner=runner), settings) as url:
        yield runner, url.replace("http://", "ws://") + "/v1/ws"


async def test_ping_is_answered_while_a_run_streams(gated):
    runner, url = gated
    async with connect(url) as ws:
        await ws.send(json.dumps({"type": "ask", "question": "q", "id": 1}))
        started = await recv(ws)
        assert started["type"] == "run" and started["id"] == 1
        run_id = started["run_id"]
        await runner.entered_event(run_id).wait()
        await ws.send(json.dumps({"type": "ping", "id": "p1"}))
        frames = await recv_until(ws, lambda f: f["type"] == "pong")
        assert frames[-1] == {"type": "pong", "id": "p1"}
        assert not any(is_end(f) for f in frames)  # the run is still going: it waits on its gate
        runner.finish(run_id)
        rest = await recv_until(ws, is_end)
        assert rest[-1]["event"]["type"] == "answer"
        events = [f["event"] for f in frames + rest if f["type"] == "event"]
        assert [e["final"] for e in events] == [False] * (len(events) - 1) + [True]


async def test_stop_mid_run(gated):
    runner, url = gated
    async with connect(url) as ws:
        await ws.send(json.dumps({"type": "ask", "question": "q"}))
        run_id = (await recv(ws))["run_id"]
        await recv_until(ws, lambda f: f["type"] == "event" and f["event"]["type"] == "answer_delta")
        await runner.entered_event(run_id).wait()
        await ws.send(json.dumps({"type": "stop", "run_id": run_id, "id": 9}))
        frames = await recv_until(ws, lambda f: f["type"] == "stopped")
        assert frames[-1] == {"type": "stopped", "run_id": run_id, "status": "stopped", "id": 9}
        end = [f for f in frames if is_end(f)] or await recv_until(ws, is_end)
        assert end[-1]["event"]["stop_reason"] == "stopped" and end[-1]["event"]["text"] == "part0 "
        await ws.send(json.dumps({"type": "stop", "run_id": run_id}))
        again = await recv(ws)
        assert again["type"] == "error" and again["code"] == "run.finished" and again["status"] == "stopped"


async def test_resume_after_disconnect(gated):
    runner, url = gated
    async with connect(url) as ws:
        await ws.send(json.dumps({"type": "ask", "question": "q"}))
        run_id = (await recv(ws))["run_id"]
        await runner.entered_event(run_id).wait()
        runner.gate(run_id).set()
        seen = []
        while len(seen) < 3:
            seen.append((await recv(ws))["event"])
    runner.finish(run_id)  # the run goes on without its socket
    async with connect(url) as ws:
        await ws.send(json.dumps({"type": "resume", "run_id": run_id, "after_seq": seen[-1]["seq"]}))
        rest = [f["event"] for f in await recv_until(ws, is_end)]
    events = seen + rest
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["type"] == "answer" and events[-1]["stop_reason"] == "final"
    assert [e["final"] for e in events] == [False] * (len(events) - 1) + [True]
    async with connect(url) as ws:
        await ws.send(json.dumps({"type": "resume", "run_id": run_id, "after_seq": 0}))
        replay = [f["event"] for f in await recv_until(ws, is_end)]
        assert replay == events
        await ws.send(json.dumps({"type": "resume", "run_id": "run_nope", "after_seq": 0}))
        missing = await recv(ws)
        assert missing["type"] == "error" and missing["code"] == "run.not_found"


async def test_malformed_frames_get_error_frames_and_the_socket_stays_open(gated):
    _, url = gated
    async with connect(url) as ws:
        for bad, code in [
            ("not json", "ws.malformed"),
            ("[1, 2]", "ws.malformed"),
            ('{"no": "type"}', "ws.malformed"),
            ('{"type": "teleport"}', "ws.unknown_type"),
            ('{"type": "ask"}', "request.invalid"),
            ('{"type": "stop"}', "request.invalid"),
            ('{"type": "resume", "run_id": "x", "after_seq": -1}', "request.invalid"),
        ]:
            await ws.send(bad)
            frame = await recv(ws)
            assert frame["type"] == "error" and frame["code"] == code, bad
        for blank in ("", "  \n "):
            await ws.send(json.dumps({"type": "ask", "question": blank}))
            refused = await recv(ws)
            assert refused["field"] == "question" and "the question is empty" in refused["message"], blank
        await ws.send(json.dumps({"type": "ping"}))
        assert await recv(ws) == {"type": "pong"}
        for ref in (7, 'é"}', {"n": [1, None], "s": "\u2603"}):  # any JSON id comes back intact
            await ws.send(json.dumps({"type": "ping", "id": ref}))
            assert await recv(ws) == {"type": "pong", "id": ref}


async def test_frames_json_cannot_hold_and_unexpected_failures_get_error_frames(tmp_path, monkeypatch):
    settings = make_settings(tmp_path)  # frames up to 64 KiB: room for the inputs below
    app = create_app(settings, runner=GatedRunner(steps=1))
    async with serve(app, settings) as url, connect(url.replace("http://", "ws://") + "/v1/ws") as ws:
        for bad in (
            "[" * 5000,  # nested deeper than the parser goes
            '{"type": "ping", "id": ' + "1" * 5000 + "}",  # more digits than an int may have
        ):
            await ws.send(bad)
            frame = await recv(ws)
            assert frame["type"] == "error" and frame["code"] == "ws.malformed", bad[:30]
        for after in (2**70, True, "3"):
            await ws.send(json.dumps({"type": "resume", "run_id": "run_x", "after_seq": after, "id": 1}))
            frame = await recv(ws)
            assert frame["code"] == "request.invalid" and frame["field"] == "after_seq" and frame["id"] == 1, after

        async def broken_stop(*args, **kwargs):
            raise RuntimeError("disk on fire")

        monkeypatch.setattr(app.state.reasonloop.runs, "stop", broken_stop)
        await ws.send(json.dumps({"type": "stop", "run_id": "run_x", "id": 2}))
        frame = await recv(ws)
        assert frame["type"] == "error" and frame["code"] == "server.internal" and frame["id"] == 2
        assert "disk on fire" not in frame["message"]  # details stay in the server's log
        await ws.send(json.dumps({"type": "ping"}))
        assert await recv(ws) == {"type": "pong"}


async def test_oversized_frames_are_refused(gated):
    _, url = gated
    async with connect(url) as ws:
        await ws.send(json.dumps({"type": "ask", "question": "x" * 5000}))
        frame = await recv(ws)
        assert frame["code"] == "ws.frame_too_large"
        with pytest.raises(ConnectionClosed) as info:
            await asyncio.wait_for(ws.recv(), 10)
        assert info.value.rcvd.code == 1009


@pytest.mark.parametrize(
    "by_protocol", [True, False, None], ids=["with-the-protocols-pings", "session-timer", "protocol-not-pinging"]
)
async def test_heartbeat_frames_keep_coming_while_the_socket_is_idle(tmp_path, monkeypatch, by_protocol):
    from reasonloop.server.transport import ws_protocol
    from reasonloop.server.ws.session import _Session

    timers: list[object] = []
    real_arm = _Session._arm_heartbeat

    def arm(self: _Session) -> None:
        timers.append(self)
        real_arm(self)

    monkeypatch.setattr(_Session, "_arm_heartbeat", arm)
    if by_protocol is False:  # a server protocol that offers no heartbeat: the session keeps its own timer
        monkeypatch.setattr(ws_protocol, "HEARTBEAT", "not.offered")
    # None: the protocol's own pings are off (uvicorn configured apart), so it must not offer them
    pings = {"ws_ping_interval": None} if by_protocol is None else {}
    settings = make_settings(tmp_path, ws_ping_interval_s=0.1, ws_ping_timeout_s=5)
    async with (
        serve(create_app(settings, runner=GatedRunner()), settings, **pings) as url,
        connect(url.replace("http://", "ws://") + "/v1/ws") as ws,
    ):
        frames = [json.loads(await asyncio.wait_for(ws.recv(), 5)) for _ in range(3)]
        assert frames == [{"type": "heartbeat"}] * 3
        await ws.send('{"type":"ping","id":1}')  # the socket still answers between heartbeats
        while (frame := json.loads(await asyncio.wait_for(ws.recv(), 5)))["type"] == "heartbeat":
            pass
        assert frame == {"type": "pong", "id": 1}
    # with the protocol's pings, not one timer per socket (thousands of sockets, thousands of timers)
    assert (timers == []) if by_protocol else (len(timers) >= 3)


async def test_heartbeat_closes_a_socket_that_stopped_answering(tmp_path):
    settings = make_settings(tmp_path, ws_ping_interval_s=0.2, ws_ping_timeout_s=0.2)
    async with serve(create_app(settings, runner=GatedRunner()), settings) as url:
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            (
                f"GET /v1/ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        assert b" 101 " in head.split(b"\r\n")[0]
        # Never answer the server's pings: it must give up on the socket and close it.
        while await asyncio.wait_for(reader.read(1024), 10):
            pass
        writer.close()


async def test_a_socket_under_a_root_path_is_served_by_the_routed_endpoint(tmp_path, monkeypatch):
    from reasonloop.server.ws import session as ws_module

    served: list[str] = []
    real = ws_module.serve_socket

    def spy(socket, send=None):
        served.append(type(socket).__name__)
        return real(socket, send)

    monkeypatch.setattr(ws_module, "serve_socket", spy)
    settings = make_settings(tmp_path, ws_ping_interval_s=0.1, ws_ping_timeout_s=5)
    runner = LLMRunner(ScriptedProvider(replies=["routed and streamed"], chunk_size=5, delay_s=0.01))
    async with (
        serve(create_app(settings, runner=runner), settings, root_path="/api") as url,
        connect(url.replace("http://", "ws://") + "/v1/ws") as ws,
    ):
        await ws.send('{"type":"ping","id":7}')
        await ws.send('{"type":"ask","question":"q"}')
        frames = []
        while not frames or frames[-1].get("event", {}).get("type") != "answer":
            frame = json.loads(await asyncio.wait_for(ws.recv(), 5))
            if frame["type"] != "heartbeat":
                frames.append(frame)
    assert served == ["WebSocket"]  # Starlette's, through the router: not the unwrapped path
    assert frames[0] == {"type": "pong", "id": 7} and frames[1]["type"] == "run"
    assert frames[-1]["event"]["text"] == "routed and streamed"


async def test_an_asks_sampling_reaches_its_model_and_a_wrong_one_is_refused(tmp_path):
    settings = make_settings(tmp_path)
    llm = ScriptedProvider(replies=["fine"], repeat_last=True)
    app = create_app(settings, runner=LLMRunner(llm))
    async with serve(app, settings) as url, connect(url.replace("http://", "ws://") + "/v1/ws") as ws:
        ask = {"type": "ask", "question": "q", "sampling": {"max_tokens": 16, "temperature": 0.5}}
        await ws.send(json.dumps(ask))
        assert (await recv_until(ws, is_end))[-1]["event"]["text"] == "fine"
        assert llm.sampling_seen[-1] == (16, 0.5)
        await ws.send(json.dumps({"type": "ask", "question": "q", "sampling": {"max_tokens": 0}, "id": 2}))
        refused = await recv(ws)
        assert refused["type"] == "error" and refused["code"] == "request.invalid"
        assert refused["field"] == "sampling.max_tokens" and refused["id"] == 2
        assert len(llm.sampling_seen) == 1  # no run was started for it
        await ws.send(json.dumps({"type": "ping"}))
        assert (await recv(ws))["type"] == "pong"  # the socket is still open
