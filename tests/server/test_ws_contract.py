"""The WebSocket frames as declared (server/ws/frames.py), as documented (docs/server.md) and as sent."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from reasonloop.runs.models import RunAsk
from reasonloop.server import create_app
from reasonloop.server.ws.frames import CLIENT_FRAMES, SERVER_FRAMES
from tests.runs.helpers import GatedRunner
from tests.server.helpers import make_settings, serve

DOC = Path(__file__).resolve().parents[2] / "docs" / "server.md"


def protocol_rows() -> dict[str, str]:
    """`type` -> its table row, in the WebSocket protocol section of docs/server.md."""
    text = DOC.read_text(encoding="utf-8").split("## WebSocket protocol", 1)[1].split("\n## ", 1)[0]
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `(\w+)` \|.*$", text, re.MULTILINE)}
    rows.pop("type")  # the tables' headers
    return rows


def test_every_frame_type_and_field_is_documented():
    rows = protocol_rows()
    for kind, fields in {**CLIENT_FRAMES, **SERVER_FRAMES}.items():
        assert kind in rows, f"frame type {kind!r} is not in docs/server.md"
        for field in fields:
            assert f"`{field}`" in rows[kind], f"field {field!r} of {kind!r} is not in docs/server.md"
    assert set(rows) == set(CLIENT_FRAMES) | set(SERVER_FRAMES)  # and nothing documented that is not sent


def test_ask_takes_the_fields_of_a_run_request():
    assert set(CLIENT_FRAMES["ask"]) - {"id"} == set(RunAsk.model_fields)


@pytest.mark.integration
async def test_what_the_server_sends_is_what_is_declared(tmp_path):
    settings = make_settings(tmp_path, ws_ping_interval_s=0.2)
    runner = GatedRunner(steps=2)
    frames: list[dict] = []

    async def recv(ws) -> dict:
        frame = json.loads(await asyncio.wait_for(ws.recv(), 10))
        frames.append(frame)
        return frame

    async def until(ws, kind: str) -> dict:
        while (frame := await recv(ws))["type"] != kind:
            pass
        return frame

    app = create_app(settings, runner=runner)
    async with serve(app, settings) as url, connect(url.replace("http://", "ws://") + "/v1/ws") as ws:
        await ws.send(json.dumps({"type": "ping", "id": 1}))
        await until(ws, "pong")
        await ws.send(json.dumps({"type": "ask", "question": "q", "id": 2}))
        run_id = (await until(ws, "run"))["run_id"]
        await runner.entered_event(run_id).wait()
        await ws.send(json.dumps({"type": "stop", "run_id": run_id, "id": 3}))
        await until(ws, "stopped")
        await ws.send(json.dumps({"type": "resume", "run_id": run_id, "after_seq": 0}))
        await until(ws, "event")
        await ws.send(json.dumps({"type": "stop", "run_id": run_id, "id": 4}))  # finished: an error
        await until(ws, "error")
        await ws.send(json.dumps({"type": "ask", "question": " ", "id": 5}))
        await until(ws, "error")
        await until(ws, "heartbeat")
    for frame in frames:
        assert frame["type"] in SERVER_FRAMES, frame
        assert set(frame) - {"type"} <= set(SERVER_FRAMES[frame["type"]]), frame
    # every declared type was seen (``approved`` answers an approval: tests/server/test_approvals_ws.py)
    assert {f["type"] for f in frames} == set(SERVER_FRAMES) - {"approved"}
