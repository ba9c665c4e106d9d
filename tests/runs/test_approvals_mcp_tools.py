"""A real MCP server's tools under an approval policy: its entry's ``approval``, and answers checked
against the schema the server lists."""

from __future__ import annotations

import sys

import pytest

from reasonloop.agents import AgentRunner
from reasonloop.config import AgentSettings, ApprovalSettings, KBSettings, MCPServerSettings, RunsSettings, Settings
from reasonloop.errors import ApprovalInvalid
from reasonloop.events import Answer, ToolResult
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.registry import Registry
from reasonloop.runs.manager import RunManager
from reasonloop.runs.models import RunRequest
from reasonloop.runs.stores.sqlite.store import SQLiteRunStore
from reasonloop.tools.approval import Decision
from tests.runs.approval_helpers import next_request, until_end
from tests.tools.test_mcp_client import SERVER

pytestmark = pytest.mark.integration  # served on sockets, or started in processes

ASKED = {"query": {"title_words": ["whales"], "genre": "science"}, "limit": 2}


def script(messages, tools) -> dict | str:
    if not any(m.role == "tool" for m in messages):
        return {"tool_calls": [{"id": "c1", "name": "find_books", "arguments": ASKED}]}
    return "Found them."


async def test_an_mcp_servers_tools_wait_and_a_modification_must_fit_the_servers_schema(tmp_path):
    runs = RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite"))
    catalog = MCPServerSettings(name="catalog", command=sys.executable, args=[str(SERVER), "stdio"], approval="always")
    settings = Settings(runs=runs, kb=KBSettings(path=str(tmp_path / "kb")))
    settings.tools.mcp_servers = [catalog]
    settings.agents = {"librarian": AgentSettings(reasoning="toolcall", tools=["mcp:catalog"], kb=False)}
    runner = AgentRunner(settings, registry=Registry(use_entry_points=False), llm=ScriptedProvider(replies=script))
    store = SQLiteRunStore(runs)
    await store.open()
    manager = RunManager(store, runner, runs, approvals=ApprovalSettings())
    try:
        await manager.open()
        run_id = (await manager.start(RunRequest(question="books on whales", agent="librarian"))).run_id
        asked = await next_request(manager, run_id, timeout_s=60)
        assert asked.tool == "find_books" and asked.arguments == ASKED
        assert asked.reason == "MCP server catalog asks for its tools"
        poetry = {"query": {"title_words": ["whales"], "genre": "poetry"}}
        with pytest.raises(ApprovalInvalid) as refused:
            await manager.answer_approval(run_id, asked.approval_id, Decision(decision="modify", arguments=poetry))
        assert "query.genre: 'poetry' is not one of" in refused.value.message
        history = {"query": {"title_words": ["whales"], "genre": "history"}, "limit": 1}
        await manager.answer_approval(run_id, asked.approval_id, Decision(decision="modify", arguments=history))
        events = await until_end(manager, run_id, timeout_s=60)
    finally:
        await manager.close()
        await runner.aclose()
        await store.close()
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert result.output == "1 history books about whales" and result.error is None
    assert isinstance(events[-1], Answer) and events[-1].text == "Found them."
