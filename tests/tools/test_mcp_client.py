"""MCP client against real MCP server processes (stdio and streamable HTTP)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reasonloop.config import MCPServerSettings, load_settings
from reasonloop.errors import ConfigError
from reasonloop.tools.base import ToolContext
from reasonloop.tools.mcp_client import MCPManager
from reasonloop.tools.mcp_connection import _closed
from tests.waiting import await_until

SERVER = Path(__file__).parent / "mcp_servers" / "catalog_server.py"
CTX = ToolContext()


def stdio(name="catalog", **kw):
    return MCPServerSettings(name=name, command=sys.executable, args=[str(SERVER), "stdio"], **kw)


@pytest.fixture
def errlog(tmp_path):
    with (tmp_path / "servers.log").open("w") as log:
        yield log


@pytest.fixture
async def manager_factory(errlog):
    managers = []

    async def make(*servers):
        manager = MCPManager(list(servers), errlog=errlog)
        managers.append(manager)
        await manager.start()
        return manager

    yield make
    for manager in managers:
        await manager.aclose()


def by_name(tools):
    return {t.name: t for t in tools}


async def call(manager, tool, **args):
    return await by_name(await manager.tools())[tool].invoke(args, CTX)


@pytest.mark.integration
async def test_stdio_tools_join_with_their_nested_schemas(manager_factory):
    manager = await manager_factory(stdio())
    assert manager.errors == {}
    tools = by_name(await manager.tools())
    assert set(tools) == {"find_books", "explode", "hang", "whoami"}
    params = tools["find_books"].spec().parameters
    query = params["properties"]["query"]
    assert params["required"] == ["query"]
    assert query["properties"]["genre"]["enum"] == ["fiction", "science", "history"]
    assert query["properties"]["title_words"]["type"] == "array"
    assert "$defs" not in str(params) and "$ref" not in str(params)

    out = await call(
        manager, "find_books", query={"title_words": ["sea"], "genre": "science", "years": {"low": 1, "high": 2}}
    )
    assert out.ok, out.error
    assert out.text == "3 science books about sea 1-2"


@pytest.mark.integration
async def test_arguments_are_checked_against_the_server_schema_before_sending(manager_factory):
    manager = await manager_factory(stdio())
    out = await call(manager, "find_books", query={"title_words": [], "genre": "poetry"})
    assert out.error["code"] == "tool.invalid_arguments"
    assert "query.genre" in out.error["error"] and "query.title_words" in out.error["error"]


@pytest.mark.integration
async def test_concurrent_calls_share_one_session(manager_factory):
    manager = await manager_factory(stdio())
    outs = await asyncio.gather(
        *(call(manager, "find_books", query={"title_words": [str(i)], "genre": "fiction"}) for i in range(8))
    )
    assert [o.text for o in outs] == [f"3 fiction books about {i}" for i in range(8)]
    assert manager.connections["catalog"].connects == 1


@pytest.mark.integration
async def test_a_tool_that_errors_is_an_observation(manager_factory):
    manager = await manager_factory(stdio())
    out = await call(manager, "explode", reason="on purpose")
    assert out.error["code"] == "tool.error"
    assert "exploded: on purpose" in out.text


@pytest.mark.integration
async def test_a_hanging_tool_times_out_and_the_session_survives(manager_factory):
    manager = await manager_factory(stdio(timeout_s=0.5))
    pid = (await call(manager, "whoami")).text
    out = await call(manager, "hang", seconds=30)
    assert out.error["code"] == "tool.timeout"
    assert (await call(manager, "whoami")).text == pid
    assert manager.connections["catalog"].connects == 1


@pytest.mark.integration
async def test_server_killed_mid_call_is_reported_then_reestablished(manager_factory, tmp_path):
    manager = await manager_factory(stdio())
    connection = manager.connections["catalog"]
    pid = int((await call(manager, "whoami")).text)
    mark = tmp_path / "hanging"
    pending = [asyncio.create_task(call(manager, "hang", seconds=30, mark=str(mark))) for _ in range(2)]
    await await_until(lambda: mark.exists() and mark.read_text().count("hanging") == 2, 10)
    os.kill(pid, signal.SIGKILL)
    outs = await asyncio.wait_for(asyncio.gather(*pending), 10)
    assert [o.error["code"] for o in outs] == ["tool.unavailable", "tool.unavailable"]
    again = await call(manager, "whoami")
    assert again.ok and int(again.text) != pid
    assert (await call(manager, "whoami")).text == again.text
    assert connection.connects == 2


def dead(pid: int) -> bool:
    """The process is gone, or a zombie its parent has not reaped yet."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rpartition(")")[2].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@pytest.mark.integration
async def test_server_that_died_while_idle_is_restarted_by_the_next_call(manager_factory):
    manager = await manager_factory(stdio())
    pid = int((await call(manager, "whoami")).text)
    os.kill(pid, signal.SIGKILL)
    await await_until(lambda: dead(pid), what="the server process dead")
    # idle: the session has read the end of its stream before the next call (a call racing the death
    # is answered tool.unavailable, and the call after it restarts the server: the test above)
    connection = manager.connections["catalog"]
    await await_until(lambda: _closed(connection._client), what="the session closed")
    out = await call(manager, "whoami")
    assert out.ok, out.error
    assert int(out.text) != pid


@pytest.mark.integration
async def test_a_server_that_fails_to_start_is_reported_and_others_work(manager_factory):
    manager = await manager_factory(
        MCPServerSettings(name="missing", command="/nonexistent/mcp-server", connect_timeout_s=5),
        MCPServerSettings(
            name="quits", command=sys.executable, args=["-c", "import sys; sys.exit(3)"], connect_timeout_s=5
        ),
        stdio(),
    )
    assert set(manager.errors) == {"missing", "quits"}
    assert (await call(manager, "whoami")).ok


@pytest.mark.integration
async def test_allowlist_and_name_clashes(manager_factory):
    manager = await manager_factory(stdio("one", allow=["whoami", "hang"]), stdio("two", allow=["whoami"]))
    names = set(by_name(await manager.tools()))
    assert names == {"whoami", "hang", "two_whoami"}
    first = await call(manager, "whoami")
    second = await call(manager, "two_whoami")
    assert first.text != second.text  # two processes


async def test_discovery_is_cached_until_refreshed(manager_factory):
    manager = await manager_factory(stdio())
    first = await manager.tools()
    again = await manager.tools()
    assert len(again) == len(first) and all(a is b for a, b in zip(again, first, strict=True))
    refreshed = await manager.tools(refresh=True)
    assert not set(map(id, refreshed)) & set(map(id, first))
    assert {t.name for t in refreshed} == {t.name for t in first}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_http(port: int, log) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, str(SERVER), "http", str(port)], stdout=log, stderr=log)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError("MCP HTTP server exited") from None
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("MCP HTTP server did not listen")


@pytest.fixture
def http_server(tmp_path):
    port = _free_port()
    log = open(tmp_path / "http.log", "w")  # noqa: SIM115
    procs = [_start_http(port, log)]

    def restart():
        procs.append(_start_http(port, log))

    yield port, procs, restart
    for proc in procs:
        proc.kill()
        proc.wait()
    log.close()


@pytest.mark.integration
async def test_streamable_http_server(manager_factory, http_server, tmp_path):
    port, procs, restart = http_server
    settings = MCPServerSettings(name="web", url=f"http://127.0.0.1:{port}/mcp", timeout_s=1)
    manager = await manager_factory(settings)
    assert manager.errors == {}
    out = await call(manager, "find_books", query={"title_words": ["x"], "genre": "history"}, limit=1)
    assert out.ok and out.text == "1 history books about x"
    assert (await call(manager, "explode", reason="http")).error["code"] == "tool.error"
    assert (await call(manager, "hang", seconds=30)).error["code"] == "tool.timeout"

    mark = tmp_path / "hanging"
    pending = asyncio.create_task(call(manager, "hang", seconds=0.9, mark=str(mark)))
    await await_until(mark.exists, 10)
    procs[0].kill()
    procs[0].wait()
    down = await asyncio.wait_for(pending, 15)
    assert down.error["code"] == "tool.unavailable"
    restart()
    back = await call(manager, "whoami")
    assert back.ok, back.error
    assert int(back.text) == procs[1].pid


@pytest.mark.parametrize("entry", [{"name": "x"}, {"name": "x", "command": "srv", "url": "http://127.0.0.1/mcp"}])
def test_a_server_needs_exactly_one_transport(entry):
    with pytest.raises(ConfigError, match="exactly one of 'command'"):
        load_settings(tools={"mcp_servers": [entry]})
