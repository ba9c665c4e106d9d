"""The MCP server over stdio (``reasonloop mcp``): the HTTP app's run manager and knowledge bases,
opened in this process without a listening socket, answering one MCP client on stdin/stdout."""

from __future__ import annotations

from reasonloop.config import Settings

__all__ = ["serve_stdio"]


async def serve_stdio(settings: Settings) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin."""
    from reasonloop.server.app import create_app
    from reasonloop.server.mcp.server import build_mcp_server

    settings = settings.model_copy(update={"mcp": settings.mcp.model_copy(update={"http": False})})
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        await build_mcp_server(app.state.reasonloop, transport="stdio").run_stdio_async()
