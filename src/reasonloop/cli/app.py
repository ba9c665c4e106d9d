"""Entry point: global options, error handling, and registration of the command modules."""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from reasonloop import __version__
from reasonloop.config import Settings, load_settings
from reasonloop.errors import ReasonLoopError

app = typer.Typer(
    name="reasonloop",
    help="Answer questions over your own documents with pluggable reasoning.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
console = Console()
err_console = Console(stderr=True)


@dataclass
class CLIState:
    config_path: Path | None = None
    debug: bool = False
    _settings: Settings | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(self.config_path)
        return self._settings


state = CLIState()


def _version(value: bool) -> None:
    if value:
        console.print(f"reasonloop {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="Config file (default: ./reasonloop.toml).")
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    state.config_path = config
    state.debug = debug
    state._settings = None
    if debug:
        logging.basicConfig(level=logging.DEBUG)


def _register_commands() -> None:
    # Command modules register themselves on `app` when imported.
    from reasonloop.cli import config_cmd, llm_cmd, plugins_cmd  # noqa: F401

    for optional in ("kb_cmd", "ask_cmd", "serve_cmd", "feedback_cmd"):
        try:
            __import__(f"reasonloop.cli.{optional}")
        except ModuleNotFoundError as exc:
            if exc.name != f"reasonloop.cli.{optional}":
                raise


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; a ReasonLoopError prints one line (code + message) and exits 1."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    _register_commands()
    try:
        app(args=argv, standalone_mode=False)
    except ReasonLoopError as exc:
        if state.debug:
            raise
        # soft_wrap: one line however narrow the terminal (or a pipe's assumed 80 columns).
        err_console.print(
            f"[bold red]error[/] {escape(f'[{exc.code}] {exc.message}')}", highlight=False, soft_wrap=True
        )
        sys.exit(1)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(1)
    except Exception as exc:  # usage errors and anything unexpected
        # Usage errors are click exceptions; typer may vendor its own click, so match by shape.
        show, exit_code = getattr(exc, "show", None), getattr(exc, "exit_code", None)
        if callable(show) and isinstance(exit_code, int):
            show()
            sys.exit(exit_code)
        if state.debug:
            raise
        err_console.print(
            f"[bold red]error[/] {escape(f'{type(exc).__name__}: {exc}')} (run with --debug for details)",
            soft_wrap=True,
        )
        sys.exit(1)
