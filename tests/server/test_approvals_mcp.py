"""Approvals over MCP with the official ``mcp`` SDK client: by elicitation, and by the answer_approval tool."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import pytest
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

from reasonloop.config import APIKeySettings, ApprovalSettings
from reasonloop.server import create_app
from reasonloop.server.auth import hash_key
from tests.runs.approval_helpers import ANSWER, AskingModel, approving_runner
from tests.runs.resume_helpers import Tally
from tests.server.helpers import make_settings, serve

pytestmark = pytest.mark.integration  # served on sockets, or started in processes

KEYS = {"alice": "alice-key-0123456789", "bob": "bob-key-0123456789"}


@asynccontextmanager
async def server(tmp_path) -> AsyncIterator[tuple[str, Tally, AskingModel]]:
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
        yield url, tally, model


@asynccontextmanager
async def client(url: str, who: str, **options) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEYS[who]}"}, timeout=30) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), **options) as connected,
    ):
        yield connected


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_ask_asks_a_client_that_can_elicit_and_takes_its_answer(tmp_path, mode):
    """``auto`` speaks the 2026 protocol (the question comes with an input-required result and the
    answer with the client's retry); ``legacy`` the 2025 one (the server sends the elicitation)."""
    asked: list[types.ElicitRequestParams] = []

    async def elicit(_ctx, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        if len(asked) == 1:  # arguments that do not fit the tool's schema: asked again, saying why
            return types.ElicitResult(action="accept", content={"decision": "modify", "arguments": '{"n": "x"}'})
        return types.ElicitResult(
            action="accept", content={"decision": "modify", "arguments": '{"n": 4}', "reason": "four"}
        )

    async with server(tmp_path) as (url, tally, _), client(url, "alice", elicitation_callback=elicit, mode=mode) as mcp:
        result = await mcp.call_tool("ask", {"question": "count", "agent": "counter"})
    assert not result.is_error, result.content
    assert len(asked) == 2
    assert "count" in asked[0].message and '{"n": 0}' in asked[0].message
    assert asked[0].requested_schema["properties"]["decision"]["enum"] == ["confirm", "modify", "reject"]
    assert "not of type 'integer'" in asked[1].message
    assert tally.logged() == ["4"]
    assert result.structured_content["answer"] == ANSWER
    trace = result.structured_content["trace"]
    assert any(line.endswith("modify (via mcp)") for line in trace)


async def test_a_client_without_elicitation_answers_with_the_tool_and_only_for_its_tenant(tmp_path):
    lines: list[str] = []
    asked = asyncio.Event()

    async def progress(_value: float, _total: float | None, message: str | None) -> None:
        lines.append(message or "")
        if lines[-1].startswith("approval "):
            asked.set()

    async with server(tmp_path) as (url, tally, model), client(url, "alice") as alice, client(url, "bob") as bob:
        call = asyncio.create_task(
            alice.call_tool("ask", {"question": "count", "agent": "counter"}, progress_callback=progress)
        )
        await asyncio.wait_for(asked.wait(), 20)
        line = next(line for line in lines if line.startswith("approval "))
        approval_id, run_id = line.split()[1], line.split()[4]
        answer = {"run_id": run_id, "approval_id": approval_id, "decision": "reject", "reason": "not today"}
        theirs = await bob.call_tool("answer_approval", answer)
        assert theirs.is_error and theirs.content[0].text.startswith("[run.not_found]")
        answered = await alice.call_tool("answer_approval", answer)
        assert not answered.is_error, answered.content
        result = await call
    assert not result.is_error and tally.runs == 0
    [view] = answered.structured_content["approvals"]
    assert view["approval_id"] == approval_id and view["arguments_asked"] == {"n": 0}
    assert "rejected by its approver: not today" in json.loads(model.observations()[0])["error"]
