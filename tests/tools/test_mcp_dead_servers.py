"""A configured MCP server that never answers costs its connect timeout once, and only where it is used."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
from pathlib import Path

import pytest

from reasonloop.agents import Agent, AgentResources
from reasonloop.config import MCPServerSettings, load_settings
from reasonloop.events import Progress
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.tools.mcp_client import MCPManager
from reasonloop.tools.mcp_connection import MCPConnection

SERVERS = Path(__file__).parent / "mcp_servers"
CATALOG = SERVERS / "catalog_server.py"
SILENT = SERVERS / "silent_server.py"


def silent(starts: Path, name: str = "dead", *extra: str, **kw) -> dict:
    return {
        "name": name,
        "command": sys.executable,
        "args": [str(SILENT), str(starts), *extra],
        "connect_timeout_s": 1,
        **kw,
    }


def started(starts: Path) -> list[int]:
    return [int(line) for line in starts.read_text().splitlines()] if starts.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def settings_for(tmp_path: Path, servers: list[dict]) -> object:
    catalog = {"name": "catalog", "command": sys.executable, "args": [str(CATALOG), "stdio"]}
    return load_settings(
        kb={"path": str(tmp_path / "kb")},
        tools={"mcp_servers": [catalog, *servers]},
        agents={
            "catalog_only": {"reasoning": "toolcall", "tools": ["mcp:catalog"], "kb": False},
            "both": {"reasoning": "toolcall", "tools": ["mcp:catalog", "mcp:dead"], "kb": False},
        },
    )


async def ask(name: str, settings, resources) -> tuple[Agent, list[str]]:
    agent = Agent.from_config(
        name, settings, llm=ScriptedProvider(replies=["ok"], repeat_last=True), resources=resources
    )
    events = [e async for e in agent.stream("hello")]
    return agent, [e.message for e in events if isinstance(e, Progress)]


async def again(agent: Agent) -> list[str]:
    return [e.message for e in [e async for e in agent.stream("hello")] if isinstance(e, Progress)]


@pytest.mark.integration
async def test_a_handshake_that_never_comes_is_abandoned_at_once_and_torn_down_behind(tmp_path):
    starts = tmp_path / "starts"
    connection = MCPConnection(MCPServerSettings(**silent(starts)))
    with pytest.raises(Exception, match="no handshake in time") as failure:
        await connection.connect()
    assert getattr(failure.value, "code", "") == "tool.unavailable"
    # The caller got its answer while the SDK's teardown of the stuck session still runs.
    assert connection.tearing_down == 1
    (pid,) = started(starts)
    await connection.aclose()
    assert connection.tearing_down == 0
    assert not alive(pid)


async def test_a_failed_handshake_leaves_no_unretrieved_exception(tmp_path):
    loop = asyncio.get_running_loop()
    reported: list[dict] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        manager = MCPManager([MCPServerSettings(**silent(tmp_path / "starts"))])
        await manager.start()
        await manager.aclose()
        await asyncio.sleep(0)
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    assert set(manager.errors) == {"dead"}
    assert [c.get("message") for c in reported] == []


@pytest.mark.integration
async def test_an_agent_waits_only_on_the_servers_it_names(tmp_path):
    starts = tmp_path / "starts"
    settings = settings_for(tmp_path, [silent(starts)])
    resources = AgentResources()
    try:
        agent, notes = await ask("catalog_only", settings, resources)
        assert "find_books" in agent.tools and notes == []
        assert started(starts) == []  # the dead server was never started for it
        _, notes = await ask("both", settings, resources)
        assert any("'dead'" in n and "no handshake in time" in n for n in notes)
        assert len(started(starts)) == 1
    finally:
        await resources.aclose()


@pytest.mark.integration
async def test_later_runs_do_not_pay_again_and_a_server_that_comes_back_is_retried_behind(tmp_path):
    starts, hold = tmp_path / "starts", tmp_path / "hold"
    settings = settings_for(
        tmp_path,
        [silent(starts, "dead", "--fail-first", "--hold", str(hold), retry_interval_s=2, connect_timeout_s=20)],
    )
    resources = AgentResources()
    try:
        agent, notes = await ask("both", settings, resources)
        assert any("'dead'" in n for n in notes) and len(started(starts)) == 1
        for _ in range(3):  # within the retry interval: no new attempt, the failure is told at once
            assert any("'dead'" in n for n in await again(agent))
        assert len(started(starts)) == 1
        manager = resources.mcp_manager(settings)
        await asyncio.sleep(2.1)
        # This run does not wait for the retry it starts: it still goes without the server's tools.
        assert any("'dead'" in n for n in await again(agent))
        hold.touch()  # the server comes back only now: the run above cannot have waited for it
        for _ in range(400):  # up to its 20 s connect timeout
            if manager.status("dead") == "ok":
                break
            await asyncio.sleep(0.05)
        assert manager.status("dead") == "ok" and len(started(starts)) == 2
        assert await again(agent) == []
        assert "dead_whoami" in agent.tools  # the second server's clashing names are prefixed
    finally:
        await resources.aclose()


def listing_config(tmp_path: Path) -> Path:
    toml = tmp_path / "reasonloop.toml"
    toml.write_text(
        "[[tools.mcp_servers]]\n"
        f'name = "catalog"\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(CATALOG))}, "stdio"]\n'
        f'allow = ["find_books", "whoami"]\n'
        "[[tools.mcp_servers]]\n"
        f'name = "gone"\ncommand = {json.dumps(sys.executable)}\nargs = ["-c", "import sys; sys.exit(3)"]\n',
        encoding="utf-8",
    )
    return toml


def check_listing(rows: list[dict], schema_key: str) -> None:
    find_books = rows["find_books"]
    assert find_books["server"] == "catalog" and find_books["status"] == "ok"
    assert find_books["description"] == "Find books whose title contains all the given words."
    assert find_books[schema_key]["required"] == ["query"]
    assert rows["whoami"]["server"] == "catalog"
    assert "hang" not in rows  # not allowed
    gone = rows["mcp:gone"]
    assert gone["server"] == "gone" and gone["status"] == "unavailable"
    assert gone["error"]["code"] == "tool.unavailable"


@pytest.mark.integration
def test_reasonloop_plugins_lists_each_servers_tools(capsys, tmp_path, monkeypatch):
    from tests.cli_run import run_cli

    monkeypatch.chdir(tmp_path)
    listing_config(tmp_path)
    code, out, _ = run_cli(capsys, "plugins", "--json", "--kind", "tool")
    assert code == 0
    rows = {r["id"]: r for r in json.loads(out) if r.get("server")}
    check_listing(rows, "schema")
    assert rows["find_books"]["source"] == "mcp:catalog"


@pytest.mark.integration
async def test_get_v1_tools_lists_each_servers_tools(tmp_path):
    import httpx

    from reasonloop.server import create_app
    from tests.server.helpers import make_settings, serve

    base = make_settings(tmp_path)
    settings = base.model_copy(update={"tools": load_settings(listing_config(tmp_path)).tools})
    async with serve(create_app(settings), settings) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        tools = (await client.get("/v1/tools")).json()
    rows = {t["id"]: t for t in tools if t.get("server")}
    check_listing(rows, "settings_schema")
    assert next(t for t in tools if t["id"] == "docsearch")["server"] is None
