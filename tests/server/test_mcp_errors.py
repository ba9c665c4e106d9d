"""Every MCP tool's failures, read through the official ``mcp`` SDK client: an ``isError`` result whose
text starts with our stable code, the session going on, and no traceback in the server's log."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.server.test_mcp_server import REASONLOOP, clean_env, http_client, served, text_of

pytestmark = pytest.mark.integration

CODE = re.compile(r"^\[[a-z_]+(\.[a-z_]+)*\] \S")
"""An error text as we promise it: ``[code] message``."""


def workspace(tmp_path: Path, *, roots: bool) -> Path:
    """A config whose model answers once, with an agent whose model has nothing to say (its runs
    fail), deleting allowed, ingest offered over HTTP, and ``[mcp] ingest_roots`` only with ``roots``."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nAlpha is the first letter.\n", encoding="utf-8")
    (tmp_path / "replies.json").write_text(json.dumps(["Alpha [1]."]), encoding="utf-8")
    (tmp_path / "mute.json").write_text("[]", encoding="utf-8")
    lines = [
        "[llm]",
        'provider = "scripted"',
        f"model = {json.dumps(str(tmp_path / 'replies.json'))}",
        "[kb]",
        f"path = {json.dumps(str(tmp_path / 'kb'))}",
        "[server]",
        "max_question_chars = 1000",
        "[mcp]",
        "ingest_over_http = true",
        "allow_delete = true",
    ]
    if roots:
        lines.append(f"ingest_roots = [{json.dumps(str(tmp_path / 'docs'))}]")
    lines += [
        "[agents.mute]",
        'reasoning = "toolcall"',
        "kb = false",
        f"llm = {json.dumps('scripted:' + str(tmp_path / 'mute.json'))}",
    ]
    path = tmp_path / "reasonloop.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


CALLS: list[tuple[str, dict, str, str]] = [
    # tool, arguments, code, words the message must hold
    ("ask", {"question": ""}, "request.invalid", "question: the question is empty"),
    ("ask", {"question": " \n\t "}, "request.invalid", "question: the question is empty"),
    ("ask", {}, "request.invalid", "question: Field required"),
    ("ask", {"question": 42}, "request.invalid", "question: Input should be a valid string"),
    ("ask", {"question": "x" * 1001}, "request.invalid", "over the limit of 1000 ([server] max_question_chars)"),
    ("ask", {"question": "q", "reasoning": "telepathy"}, "request.invalid", "unknown reasoning 'telepathy'"),
    ("ask", {"question": "q", "agent": "nobody"}, "request.invalid", "no agent 'nobody'"),
    ("ask", {"question": "q", "settings": {"top_k": 10_000}}, "request.invalid", "settings.top_k"),
    ("ask", {"question": "q", "settings": [1]}, "request.invalid", "settings: Input should be a valid dictionary"),
    ("ask", {"question": "q", "agent": "mute"}, "llm.script_exhausted", "no reply left"),
    ("search", {"query": ""}, "request.invalid", "query: the query is empty"),
    ("search", {"query": "   "}, "request.invalid", "query: the query is empty"),
    ("search", {"query": "x" * 1001}, "request.invalid", "query: the query has 1001 characters"),
    ("search", {"query": "x", "top_k": 0}, "request.invalid", "top_k: Input should be greater than or equal to 1"),
    ("search", {"query": "x", "mode": "psychic"}, "request.invalid", "mode: Input should be 'hybrid'"),
    ("search", {"query": "x", "filters": {"page": {"gt": 3}}}, "request.invalid", "filters.page: unknown operator gt"),
    ("search", {"query": "x", "filters": {"page": {"in": 3}}}, "request.invalid", "filters.page.in: needs a list"),
    ("search", {"query": "x", "filters": "page=3"}, "request.invalid", "filters: Input should be a valid dictionary"),
    ("search", {"query": "alpha"}, "kb.empty", "the knowledge base has no documents yet"),
    ("ingest", {"paths_or_urls": []}, "request.invalid", "paths_or_urls: List should have at least 1 item"),
    ("ingest", {"paths_or_urls": "docs"}, "request.invalid", "paths_or_urls: Input should be a valid list"),
    ("ingest", {"paths_or_urls": ["https://example.org/"]}, "tool.blocked", "[mcp] ingest_urls = true"),
    ("list_documents", {"page": "x"}, "", ""),  # takes no arguments: extra ones are ignored, not an error
    ("kb_stats", {}, "", ""),
    ("delete_document", {"document": ""}, "request.invalid", "document: String should have at least 1 character"),
    ("delete_document", {"document": "nope"}, "kb.document_not_found", "'nope'"),
    (
        "answer_approval",
        {"run_id": "run_nope", "approval_id": "apr_1", "decision": "confirm"},
        "run.not_found",
        "run_nope",
    ),
    ("answer_approval", {"run_id": "r", "approval_id": "a", "decision": "maybe"}, "request.invalid", "decision: Input"),
    ("answer_approval", {"run_id": "", "approval_id": "a", "decision": "confirm"}, "request.invalid", "run_id: String"),
    (
        "summon",
        {},
        "tool.not_found",
        "no tool 'summon' (tools: answer_approval, ask, delete_document, ingest, kb_stats",
    ),
]


async def check_errors(client: Client, docs: Path, *, roots: bool) -> None:
    names = {tool.name for tool in (await client.list_tools()).tools}
    assert names == {"search", "ask", "answer_approval", "ingest", "list_documents", "kb_stats", "delete_document"}
    tried = set()
    for tool, arguments, code, words in CALLS:
        tried.add(tool)
        result = await client.call_tool(tool, arguments)
        text = text_of(result)
        if not code:
            assert not result.is_error, (tool, text)
            continue
        assert result.is_error, (tool, arguments, text)
        assert CODE.match(text) and text.startswith(f"[{code}] "), (tool, arguments, text)
        assert words in text, (tool, arguments, text)
        assert "Error executing tool" not in text and "validation error for" not in text, text
    assert tried >= names  # every tool's errors were read

    ingest = await client.call_tool("ingest", {"paths_or_urls": [str(docs)]})
    if roots:
        assert not ingest.is_error, text_of(ingest)
        outside = await client.call_tool("ingest", {"paths_or_urls": [str(docs.parent / "replies.json")]})
        assert text_of(outside).startswith("[tool.blocked] ") and "outside the allowed roots" in text_of(outside)
    else:  # no roots set: ingest reads nothing, and says how to allow it
        text = text_of(ingest)
        assert ingest.is_error and text.startswith("[tool.blocked] ingesting local paths is off until "), text
        assert "[mcp] ingest_roots" in text and str(docs) in text
        assert (await client.call_tool("kb_stats", {})).structured_content["documents"] == 0


def no_traceback(log: str) -> None:
    assert "Traceback" not in log, log
    assert "Error executing tool" not in log, log


async def test_every_tool_error_over_http_starts_with_its_code(tmp_path):
    config = workspace(tmp_path, roots=False)
    async with served(config, tmp_path) as url, http_client(url, None) as client:
        await check_errors(client, tmp_path / "docs", roots=False)
    no_traceback((tmp_path / "serve.log").read_text())


async def test_every_tool_error_over_stdio_starts_with_its_code(tmp_path):
    config = workspace(tmp_path, roots=True)
    params = StdioServerParameters(
        command=REASONLOOP, args=["-c", str(config), "mcp"], cwd=str(tmp_path), env=clean_env()
    )
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            await check_errors(client, tmp_path / "docs", roots=True)
    no_traceback((tmp_path / "stderr.log").read_text())


async def test_ingest_roots_default_to_none(tmp_path):
    """A server started in a folder full of documents still reads none of them until told to."""
    (tmp_path / "notes.md").write_text("# Notes\n\nPrivate.\n", encoding="utf-8")
    (tmp_path / "replies.json").write_text(json.dumps(["ok"]), encoding="utf-8")
    config = tmp_path / "reasonloop.toml"
    config.write_text(
        f'[llm]\nprovider = "scripted"\nmodel = {json.dumps(str(tmp_path / "replies.json"))}\n'
        f"[kb]\npath = {json.dumps(str(tmp_path / 'kb'))}\n",
        encoding="utf-8",
    )
    params = StdioServerParameters(
        command=REASONLOOP, args=["-c", str(config), "mcp"], cwd=str(tmp_path), env=clean_env()
    )
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            for source in (".", "notes.md", str(tmp_path / "notes.md"), "/"):
                refused = await client.call_tool("ingest", {"paths_or_urls": [source]})
                assert refused.is_error, source
                assert text_of(refused).startswith(
                    "[tool.blocked] ingesting local paths is off until [mcp] ingest_roots"
                )
            assert (await client.call_tool("kb_stats", {})).structured_content["documents"] == 0
            assert "reasonloop mcp --ingest-root" in text_of(refused)
    no_traceback((tmp_path / "stderr.log").read_text())

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.md").write_text("# Todo\n\nWater the plants.\n", encoding="utf-8")
    params.args += ["--ingest-root", "notes"]  # what the host's configuration may pass instead
    with (tmp_path / "stderr-rooted.log").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            added = await client.call_tool("ingest", {"paths_or_urls": [str(tmp_path / "notes")]})
            assert not added.is_error and added.structured_content["added"] == [str(tmp_path / "notes" / "todo.md")]
            outside = await client.call_tool("ingest", {"paths_or_urls": [str(tmp_path / "notes.md")]})
            assert text_of(outside).startswith("[tool.blocked] ") and "outside the allowed roots" in text_of(outside)
    no_traceback((tmp_path / "stderr-rooted.log").read_text())
