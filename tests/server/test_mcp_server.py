"""The official ``mcp`` SDK client against ``reasonloop mcp`` (stdio) and ``/mcp`` of ``reasonloop serve``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from reasonloop.config import load_settings
from reasonloop.runs.models import RunRecord
from reasonloop.runs.stores import open_store
from reasonloop.server.auth import hash_key
from tests.environment import is_outside_setting
from tests.runs.helpers import free_port
from tests.server.helpers import process_ready
from tests.waiting import await_until

pytestmark = pytest.mark.integration

REASONLOOP = str(Path(sys.executable).with_name("reasonloop"))
CATALOG = Path(__file__).parents[1] / "tools" / "mcp_servers" / "catalog_server.py"
DOC = "# Tantivy\n\nTantivy is a full-text search engine library written in Rust, inspired by Apache Lucene.\n"
ANSWER = "Tantivy is a search engine library written in Rust [1]."
KEYS = {"acme": "key-of-acme", "other": "key-of-other"}


def workspace(tmp_path: Path, *, keys: bool = False) -> Path:
    """A directory with one document, a config whose model answers at once, and an agent ``slow``
    whose single step hangs in an MCP tool for 30 s."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "tantivy.md").write_text(DOC, encoding="utf-8")
    (tmp_path / "secret.md").write_text("# Secret\n\nOutside the allowed roots.", encoding="utf-8")
    (tmp_path / "docs" / "leak.md").symlink_to(tmp_path / "secret.md")  # a link out of the root: never read
    route = json.dumps({"route": "single", "reason": "one fact about one library"})
    (tmp_path / "replies.json").write_text(json.dumps([ANSWER, route, ANSWER]), encoding="utf-8")
    hang = {"tool_calls": [{"id": "h1", "name": "hang", "arguments": {"seconds": 30}}]}
    (tmp_path / "slow.json").write_text(json.dumps([hang, "woke"]), encoding="utf-8")
    config = f"""
        [llm]
        provider = "scripted"
        model = {json.dumps(str(tmp_path / "replies.json"))}
        [kb]
        path = {json.dumps(str(tmp_path / "kb"))}
        [mcp]
        ingest_roots = [{json.dumps(str(tmp_path / "docs"))}]
        ingest_over_http = true
        [[tools.mcp_servers]]
        name = "catalog"
        command = {json.dumps(sys.executable)}
        args = [{json.dumps(str(CATALOG))}, "stdio"]
        [agents.slow]
        reasoning = "toolcall"
        llm = {json.dumps("scripted:" + str(tmp_path / "slow.json"))}
        tools = ["mcp:catalog"]
        kb = false
    """
    if keys:
        for tenant, key in KEYS.items():
            config += f'\n[[server.api_keys]]\nsha256 = "{hash_key(key)}"\ntenant = "{tenant}"\n'
    path = tmp_path / "reasonloop.toml"
    path.write_text("\n".join(line.strip() for line in config.splitlines()), encoding="utf-8")
    return path


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not is_outside_setting(k)}


def text_of(result) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def ask_and_cancel(client: Client) -> str:
    """Start ``ask`` on the slow agent, cancel the request once its tool call shows; the run id."""
    messages: list[str] = []

    async def progress(_value: float, _total: float | None, message: str | None) -> None:
        messages.append(message or "")

    call = asyncio.create_task(
        client.call_tool("ask", {"question": "wait for it", "agent": "slow"}, progress_callback=progress)
    )
    await await_until(lambda: any(m.startswith("hang(") for m in messages), what="the hanging tool's progress")
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    return messages[0].split()[1]


async def check_tools_and_documents(client: Client, docs: Path) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"search", "ask", "answer_approval", "ingest", "list_documents", "kb_stats"}  # delete is off
    search = tools["search"].input_schema
    assert search["required"] == ["query"]
    assert search["properties"]["top_k"]["maximum"] == 50
    assert search["properties"]["mode"]["enum"] == ["hybrid", "dense", "lexical"]
    assert "description" in search["properties"]["query"] and tools["search"].description
    assert tools["ask"].output_schema["properties"]["citations"]

    empty = await client.call_tool("search", {"query": "tantivy"})
    assert empty.is_error and "[kb.empty]" in text_of(empty)
    outside = await client.call_tool("ingest", {"paths_or_urls": [str(docs.parent / "replies.json")]})
    assert outside.is_error and "[tool.blocked]" in text_of(outside)

    ingested = await client.call_tool("ingest", {"paths_or_urls": [str(docs)]})
    assert not ingested.is_error and ingested.structured_content["added"] == [str(docs / "tantivy.md")]
    found = await client.call_tool("search", {"query": "full-text search in Rust", "top_k": 3})
    (hit,) = found.structured_content["hits"]
    assert hit["citation_id"] == 1 and hit["source"] == str(docs / "tantivy.md") and "Lucene" in hit["text"]
    assert set(hit) >= {"page", "score", "chunk_id", "document_id"}

    messages: list[str] = []

    async def progress(_value: float, _total: float | None, message: str | None) -> None:
        messages.append(message or "")

    asked = await client.call_tool("ask", {"question": "What is tantivy?"}, progress_callback=progress)
    assert not asked.is_error, text_of(asked)
    result = asked.structured_content
    assert result["answer"] == ANSWER and result["stop_reason"] == "final"
    assert result["citations"][0]["source"] == str(docs / "tantivy.md")
    assert messages[0] == f"run {result['run_id']} started" and len(messages) > 1
    assert result["trace"] == messages[1:]
    assert 'search("What is tantivy?"): 1 found' in result["trace"]  # the run's own search, from its event

    assert "mode" in tools["ask"].input_schema["properties"]  # ask takes a thinking mode
    routed = await client.call_tool(
        "ask", {"question": "What is tantivy?", "mode": "auto", "budget": {"max_tokens": 5000}}
    )
    assert not routed.is_error, text_of(routed)
    assert routed.structured_content["answer"] == ANSWER
    assert "route: single (qa): one fact about one library" in routed.structured_content["trace"]
    unknown = await client.call_tool("ask", {"question": "What is tantivy?", "mode": "telepathy"})
    assert unknown.is_error and "unknown mode 'telepathy': the modes are fast, balanced" in text_of(unknown)
    both = await client.call_tool("ask", {"question": "What is tantivy?", "mode": "fast", "reasoning": "qa"})
    assert both.is_error and "give a strategy or a mode, not both" in text_of(both)

    listed = (await client.call_tool("list_documents", {})).structured_content["documents"]
    assert [d["source"] for d in listed] == [str(docs / "tantivy.md")]
    resource = await client.read_resource(listed[0]["uri"])
    assert resource.contents[0].text == DOC.strip() or resource.contents[0].text == DOC
    with pytest.raises(MCPError, match=r"kb\.document_not_found"):
        await client.read_resource("reasonloop://documents/nope")

    bad = await client.call_tool("search", {"query": "x", "top_k": 500})  # against the schema
    assert bad.is_error and "top_k" in text_of(bad)
    stats = await client.call_tool("kb_stats", {})
    assert stats.structured_content["documents"] == 1


async def test_stdio_server_through_the_sdk_client(tmp_path):
    config = workspace(tmp_path)
    params = StdioServerParameters(
        command=REASONLOOP, args=["-c", str(config), "mcp"], cwd=str(tmp_path), env=clean_env()
    )
    async with Client(params) as client:
        await check_tools_and_documents(client, tmp_path / "docs")
        run_id = await ask_and_cancel(client)
        after = await client.call_tool("kb_stats", {})  # the session goes on
        assert not after.is_error
    store = open_store(load_settings(config))
    await store.open()
    try:

        async def finished() -> RunRecord | None:
            record = await store.get_run(run_id)
            return record if record is not None and record.finished else None

        record = await await_until(finished, what="the run's end stored")
        assert record.status == "stopped"
    finally:
        await store.close()


@asynccontextmanager
async def served(config: Path, cwd: Path) -> AsyncIterator[str]:
    port = free_port()
    log = (cwd / "serve.log").open("w")
    proc = subprocess.Popen(  # noqa: ASYNC220  (started once; the test then waits on the network)
        [REASONLOOP, "-c", str(config), "serve", "--port", str(port)],
        cwd=cwd,
        env=clean_env(),
        stdout=log,
        stderr=log,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        await process_ready(url, proc, cwd / "serve.log")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@asynccontextmanager
async def http_client(url: str, key: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        yield client


async def test_http_endpoint_through_the_sdk_client_behind_api_keys(tmp_path):
    config = workspace(tmp_path, keys=True)
    async with served(config, tmp_path) as url:
        async with httpx.AsyncClient(base_url=url) as http:
            refused = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert refused.status_code == 401 and refused.json()["error"]["code"] == "auth.invalid_key"
        with pytest.raises(Exception) as no_key:
            async with http_client(url, None) as client:
                await client.list_tools()
        assert isinstance(no_key.value, BaseExceptionGroup) and no_key.group_contains(MCPError)

        async with http_client(url, KEYS["acme"]) as client:
            await check_tools_and_documents(client, tmp_path / "docs")
            run_id = await ask_and_cancel(client)
            uri = (await client.call_tool("list_documents", {})).structured_content["documents"][0]["uri"]

        headers = {"Authorization": f"Bearer {KEYS['acme']}"}
        async with httpx.AsyncClient(base_url=url, headers=headers) as http:

            async def ended() -> dict | None:
                run = (await http.get(f"/v1/runs/{run_id}")).json()["run"]
                return run if run["status"] not in ("queued", "running") else None

            run = await await_until(ended, what="the run ended")
        assert run["status"] == "stopped"

        async with http_client(url, KEYS["other"]) as client:  # another tenant sees nothing of acme's
            assert (await client.call_tool("list_documents", {})).structured_content["documents"] == []
            with pytest.raises(MCPError, match=r"kb\.document_not_found"):
                await client.read_resource(uri)
            empty = await client.call_tool("search", {"query": "tantivy"})
            assert empty.is_error and "[kb.empty]" in text_of(empty)
