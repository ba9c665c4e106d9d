"""``reasonloop serve``: the HTTP/WebSocket server under uvicorn."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Annotated

import typer

from reasonloop.cli.console import err_console
from reasonloop.cli.root import app, state

if TYPE_CHECKING:
    from reasonloop.config import Settings


@app.command("serve")
def serve(
    host: Annotated[str | None, typer.Option("--host", help="Address to bind (default: \\[server] host).")] = None,
    port: Annotated[int | None, typer.Option("--port", help="Port (default: \\[server] port).")] = None,
    workers: Annotated[
        int | None, typer.Option("--workers", min=1, help="Worker processes (default: \\[server] workers).")
    ] = None,
) -> None:
    """Serve REST, SSE, WebSocket and OpenAI-compatible endpoints."""
    import uvicorn

    from reasonloop.server.asgi import CONFIG_ENV
    from reasonloop.server.auth import auth_warning
    from reasonloop.server.transport.process import uvicorn_options

    settings = state.settings
    server = settings.server.model_copy(
        update={k: v for k, v in {"host": host, "port": port, "workers": workers}.items() if v is not None}
    )
    settings.server = server
    warning = auth_warning(server)
    if warning:
        err_console.print(f"[bold yellow]warning[/] {warning}", highlight=False)
    if server.workers > 1 and settings.runs.store == "sqlite":
        err_console.print(
            'note: several workers share the SQLite run store by polling; use \\[runs] store = "redis" to scale out',
            style="yellow",
        )
    import asyncio

    asyncio.run(_check_run_store(settings))
    options = {
        "host": server.host,
        "port": server.port,
        "log_level": settings.log_level,
        "timeout_graceful_shutdown": 5,
        **uvicorn_options(server),
    }
    logging.basicConfig(level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    if server.workers > 1:
        if state.config_path is not None:
            os.environ[CONFIG_ENV] = str(state.config_path)
        os.environ["REASONLOOP_SERVER__HOST"] = server.host
        os.environ["REASONLOOP_SERVER__PORT"] = str(server.port)
        if "writer_priority" not in settings.runs.model_fields_set:  # workers share the cores
            os.environ.setdefault("REASONLOOP_RUNS__WRITER_PRIORITY", "low")
        uvicorn.run("reasonloop.server.asgi:app_from_env", factory=True, workers=server.workers, **options)
        return
    from reasonloop.server.app import create_app
    from reasonloop.server.transport.process import tune_for_serving

    served = create_app(settings)
    tune_for_serving()
    uvicorn.run(served, **options)


async def _check_run_store(settings: Settings) -> None:
    """Open and close the run store once before serving: a store that cannot be reached stops
    the command with one line naming it (the server's start-up would fail on it anyway, with
    every worker's traceback).

    Raises:
        RunStoreUnavailable: the store cannot be reached or opened.
    """
    from reasonloop.runs.stores import open_store

    store = open_store(settings)
    await store.open()
    await store.close()  # (a store that failed to open holds nothing to close)
