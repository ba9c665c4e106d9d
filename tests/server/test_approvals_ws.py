"""The WebSocket ``approve`` frame over a real server, with the `websockets` client."""

from __future__ import annotations

import json

import pytest
from websockets.asyncio.client import connect

from reasonloop.config import APIKeySettings, ApprovalSettings
from reasonloop.server import create_app
from reasonloop.server.auth import hash_key
from reasonloop.server.ws.frames import SERVER_FRAMES
from tests.runs.approval_helpers import AskingModel, approving_runner
from tests.runs.resume_helpers import Tally
from tests.server.helpers import make_settings, serve
from tests.server.test_ws import is_end, recv, recv_until

pytestmark = pytest.mark.integration  # served on sockets, or started in processes

KEYS = {"alice": "alice-key-0123456789", "bob": "bob-key-0123456789"}


async def test_an_approve_frame_answers_a_waiting_call_of_the_sockets_tenant_only(tmp_path):
    approvals = ApprovalSettings(tools={"count": "always"})
    settings = make_settings(
        tmp_path,
        api_keys=[
            APIKeySettings(sha256=hash_key(KEYS["alice"]), tenant="acme", name="alice"),
            APIKeySettings(sha256=hash_key(KEYS["bob"]), tenant="globex", name="bob"),
        ],
    )
    settings.approvals = approvals
    tally, model = Tally(tmp_path / "tool.log"), AskingModel(calls=1)
    app = create_app(settings, runner=approving_runner(tmp_path, settings.runs, tally, model, approvals))
    async with serve(app, settings) as url:
        base = url.replace("http://", "ws://") + "/v1/ws?api_key="
        async with connect(base + KEYS["alice"]) as alice, connect(base + KEYS["bob"]) as bob:
            await alice.send(json.dumps({"type": "ask", "question": "count", "agent": "counter"}))
            run_id = (await recv(alice))["run_id"]
            frames = await recv_until(
                alice, lambda f: f["type"] == "event" and f["event"]["type"] == "approval_requested"
            )
            asked = frames[-1]["event"]
            assert (asked["tool"], asked["arguments"]) == ("count", {"n": 0})
            answer = {"type": "approve", "run_id": run_id, "approval_id": asked["approval_id"]}

            await bob.send(json.dumps({**answer, "decision": "confirm", "id": "b"}))
            refused = await recv(bob)
            assert refused["type"] == "error" and refused["code"] == "run.not_found" and refused["id"] == "b"

            await alice.send(json.dumps({**answer, "decision": "modify", "arguments": {"n": -1.5}, "id": 1}))
            bad = await recv(alice)
            assert bad["type"] == "error" and bad["code"] == "approval.invalid" and bad["id"] == 1
            await alice.send(json.dumps({**answer, "decision": "perhaps", "id": 2}))
            assert (await recv(alice))["field"] == "decision"
            await alice.send(json.dumps({"type": "approve", "run_id": run_id, "decision": "confirm", "id": 3}))
            assert (await recv(alice))["field"] == "approval_id"
            assert tally.runs == 0

            await alice.send(json.dumps({**answer, "decision": "modify", "arguments": {"n": 3}, "id": 4}))
            rest = await recv_until(alice, is_end)
    for frame in [*frames, refused, bad, *rest]:  # what the server sent is what it declares
        assert set(frame) - {"type"} <= set(SERVER_FRAMES[frame["type"]]), frame
    replies = [f for f in rest if f["type"] == "approved"]
    assert replies == [
        {"type": "approved", "run_id": run_id, "approval_id": asked["approval_id"], "decision": "modify", "id": 4}
    ]
    [decided] = [f["event"] for f in rest if f["type"] == "event" and f["event"]["type"] == "approval_decided"]
    assert decided["by"] == {"key": "alice", "tenant": "acme", "principal": None, "via": "ws"}
    assert decided["arguments_run"] == {"n": 3} and tally.logged() == ["3"]
