"""A small MCP server used by the MCP client tests (stdio or streamable HTTP).

Run ``python catalog_server.py stdio`` or ``python catalog_server.py http PORT``.

Tools: ``find_books`` (nested object, array and enum arguments), ``explode`` (always
fails), ``hang`` (sleeps for the given seconds), ``whoami`` (the server's process id).
"""

from __future__ import annotations

import asyncio
import os
import sys
from enum import StrEnum

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field


class Genre(StrEnum):
    fiction = "fiction"
    science = "science"
    history = "history"


class Range(BaseModel):
    low: int = Field(ge=0)
    high: int


class Query(BaseModel):
    title_words: list[str] = Field(min_length=1)
    genre: Genre
    years: Range | None = None


server = MCPServer("catalog", log_level="WARNING")


@server.tool()
def find_books(query: Query, limit: int = 3) -> str:
    """Find books whose title contains all the given words."""
    years = f" {query.years.low}-{query.years.high}" if query.years else ""
    return f"{limit} {query.genre.value} books about {' '.join(query.title_words)}{years}"


@server.tool()
def explode(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"exploded: {reason}")


@server.tool()
async def hang(seconds: float, mark: str = "") -> str:
    """Sleep for the given number of seconds, then answer (``mark``: a file that gets a line as the
    sleep begins, so a test knows the call has arrived)."""
    if mark:
        with open(mark, "a", encoding="utf-8") as f:  # noqa: ASYNC230  # one short line, before the sleep
            f.write("hanging\n")
    await asyncio.sleep(seconds)
    return "woke up"


@server.tool()
def whoami() -> str:
    """The server's process id."""
    return str(os.getpid())


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
