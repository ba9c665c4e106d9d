"""Text with a lone surrogate (``"\\ud800"``, half of a UTF-16 pair, valid JSON that JavaScript
clients send when a string is cut mid-emoji) is refused as invalid or not found, never a 5xx,
and nothing half-made is left behind."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from websockets.asyncio.client import connect

from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.server import create_app
from reasonloop.unicode_text import lone_surrogate
from tests.llm_runner import LLMRunner
from tests.server.helpers import make_settings, serve

JSON = {"content-type": "application/json"}


def test_lone_surrogates_are_found_where_they_are():
    assert lone_surrogate("fine é 😀") is None
    assert lone_surrogate("cut \ud83d") == ""
    assert lone_surrogate({"a": ["ok", {"b": "\udc00"}]}) == "a.1.b"
    assert lone_surrogate(["x", 3, None]) is None


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/runs", '{"question": "cut \\ud83d"}', "question"),
        ("/v1/runs", '{"question": "q", "conversation_id": "\\ud800"}', "conversation_id"),
        ("/v1/runs", '{"question": "q", "reasoning": "\\udfff"}', "reasoning"),
        ("/v1/runs", '{"question": "q", "settings": {"top_k": "\\ud800"}}', "settings"),
        ("/v1/chat/completions", '{"model": "qa", "messages": [{"role": "user", "content": "x \\ud800"}]}', None),
        ("/v1/chat/completions", '{"model": "\\ud800", "messages": [{"role": "user", "content": "x"}]}', "model"),
        ("/v1/feedback", '{"run_id": "run_x", "rating": 1, "comment": "\\ud800"}', "comment"),
    ],
)
@pytest.mark.integration
async def test_a_body_with_a_lone_surrogate_is_refused_naming_the_field(tmp_path, path, body, field):
    settings = make_settings(tmp_path)
    app = create_app(settings, runner=LLMRunner(lambda: ScriptedProvider(replies=["ok"])))
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        response = await client.post(path, content=body, headers=JSON)
        assert response.status_code == 422, response.text
        error = response.json()["error"]
        assert error["code"] == "request.invalid"
        if field is not None:
            assert error["field"] == field
        assert (await client.get("/v1/runs")).json() == []  # nothing was started
        assert (await client.get("/v1/conversations")).json() == []


@pytest.mark.integration
async def test_socket_frames_with_a_lone_surrogate_get_an_error_frame_and_the_socket_stays(tmp_path):
    settings = make_settings(tmp_path)
    app = create_app(settings, runner=LLMRunner(lambda: ScriptedProvider(replies=["fine"])))
    async with serve(app, settings) as url, connect(url.replace("http", "ws") + "/v1/ws") as ws:
        replies = []
        for frame in (
            '{"type": "stop", "run_id": "\\ud800", "id": 1}',
            '{"type": "resume", "run_id": "run_\\udc00", "after_seq": 0, "id": 2}',
            '{"type": "ask", "question": "q", "conversation_id": "\\ud800", "id": 3}',
        ):
            await ws.send(frame)
            replies.append(json.loads(await asyncio.wait_for(ws.recv(), 5)))
        assert [(r["type"], r["code"]) for r in replies] == [
            ("error", "run.not_found"),
            ("error", "run.not_found"),
            ("error", "request.invalid"),
        ]
        assert replies[0]["id"] == 1 and replies[0]["run_id"] == "\ud800"  # echoed as it came
        await ws.send('{"type": "ping"}')
        assert json.loads(await asyncio.wait_for(ws.recv(), 5)) == {"type": "pong"}
