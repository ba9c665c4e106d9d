"""``reasonloop mcp``: reasonloop as an MCP server on stdin/stdout, for hosts that start a command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from reasonloop.cli.root import app, state


@app.command("mcp")
def mcp(
    kb_dir: Annotated[
        Path | None, typer.Option("--kb", help="Knowledge base directory (default: [kb] path, i.e. ./.reasonloop).")
    ] = None,
    ingest_roots: Annotated[
        list[Path] | None,
        typer.Option(
            "--ingest-root",
            help="A folder the ingest tool may read, with everything below it (repeatable; replaces [mcp] ingest_roots).",
        ),
    ] = None,
) -> None:
    """Serve search and ask to an MCP client over stdio."""
    import asyncio
    import logging

    from reasonloop.server.mcp_stdio import serve_stdio

    settings = state.settings
    if kb_dir is not None:
        settings.kb = settings.kb.model_copy(update={"path": str(kb_dir)})
    if ingest_roots:
        settings.mcp = settings.mcp.model_copy(update={"ingest_roots": [str(root) for root in ingest_roots]})
    # stdout carries the protocol: every log line goes to stderr.
    logging.basicConfig(level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    asyncio.run(serve_stdio(settings))
