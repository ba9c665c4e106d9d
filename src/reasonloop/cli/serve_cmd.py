"""``reasonloop serve``: the HTTP/WebSocket server under uvicorn."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from reasonloop.cli.console import err_console, escape
from reasonloop.cli.root import app, state

if TYPE_CHECKING:
    from reasonloop.config import Settings


@app.command("serve")
def serve(
    host: Annotated[str | None, typer.Option("--host", help="Address to bind (default: [server] host).")] = None,
    port: Annotated[int | None, typer.Option("--port", help="Port (default: [server] port).")] = None,
    workers: Annotated[
        int | None, typer.Option("--workers", min=1, help="Worker processes (default: [server] workers).")
    ] = None,
    kb_dir: Annotated[
        Path | None, typer.Option("--kb", help="Knowledge base directory (default: [kb] path, i.e. ./.reasonloop).")
    ] = None,
    access_log: Annotated[
        bool, typer.Option("--access-log", help="Log every request (client, method, path, status) on stdout.")
    ] = False,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the web UI in the browser once the server listens.")
    ] = False,
) -> None:
    """Serve REST, SSE, WebSocket and OpenAI-compatible endpoints."""
    from reasonloop.cli.serving import run_server
    from reasonloop.server.asgi import CONFIG_ENV
    from reasonloop.server.auth import auth_warning
    from reasonloop.server.transport.process import uvicorn_options

    settings = state.settings
    server = settings.server.model_copy(
        update={k: v for k, v in {"host": host, "port": port, "workers": workers}.items() if v is not None}
    )
    settings.server = server
    if kb_dir is not None:
        settings.kb = settings.kb.model_copy(update={"path": str(kb_dir)})
    warning = auth_warning(server)
    if warning:
        err_console.print(f"[bold yellow]warning[/] {warning}", highlight=False)
    if server.workers > 1 and settings.runs.store == "sqlite":
        err_console.print(
            'note: several workers share the SQLite run store by polling; use \\[runs] store = "redis" to scale out',
            style="yellow",
            soft_wrap=True,
        )
    import asyncio

    asyncio.run(_check_run_store(settings))
    options = {
        "host": server.host,
        "port": server.port,
        "timeout_graceful_shutdown": 5,
        **uvicorn_options(server),
    }
    _log_levels(options, settings.log_level, access_log)
    logging.basicConfig(level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    where: list[str] = []

    def listening(url: str) -> None:
        where.append(url)
        ws = "ws" + url.removeprefix("http")
        many = f" with {server.workers} workers" if server.workers > 1 else ""
        err_console.print(f"reasonloop serving on [bold]{url}[/]{many} (Ctrl-C stops)", highlight=False, soft_wrap=True)
        err_console.print(
            f"  web UI {url}/ · API docs {url}/docs · WebSocket {ws}/v1/ws · knowledge base {escape(settings.kb.path)}",
            highlight=False,
            soft_wrap=True,
        )
        if open_browser:  # in a thread: a browser that takes its time to start holds up no request
            import threading
            import webbrowser

            threading.Thread(target=webbrowser.open, args=(f"{url}/",), daemon=True).start()

    if server.workers > 1:
        if state.config_path is not None:
            os.environ[CONFIG_ENV] = str(state.config_path)
        os.environ["REASONLOOP_SERVER__HOST"] = server.host
        os.environ["REASONLOOP_SERVER__PORT"] = str(server.port)
        os.environ["REASONLOOP_KB__PATH"] = settings.kb.path
        if "writer_priority" not in settings.runs.model_fields_set:  # workers share the cores
            os.environ.setdefault("REASONLOOP_RUNS__WRITER_PRIORITY", "low")
        started = run_server(
            "reasonloop.server.asgi:app_from_env",
            factory=True,
            workers=server.workers,
            on_listening=listening,
            **options,
        )
    else:
        from reasonloop.server.app import create_app
        from reasonloop.server.transport.process import tune_for_serving

        served = create_app(settings)
        tune_for_serving()
        started = run_server(served, workers=1, on_listening=listening, **options)
    if not started:
        sys.exit(1)  # uvicorn said why (address in use, start-up failed)
    err_console.print(f"reasonloop stopped serving on {where[0]}" if where else "reasonloop stopped", highlight=False)


def _log_levels(options: dict[str, Any], level: str, access_log: bool) -> None:
    """uvicorn's loggers at ``level``, its request log at info when asked for (and silent otherwise)."""
    loggers = options["log_config"]["loggers"]
    for name in ("uvicorn", "uvicorn.error"):
        loggers.setdefault(name, {})["level"] = level.upper()
    loggers.setdefault("uvicorn.access", {})["level"] = "INFO" if access_log else level.upper()
    options["log_level"] = None  # the levels above, not one level for every uvicorn logger
    options["access_log"] = access_log or level == "debug" or level == "info"


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
