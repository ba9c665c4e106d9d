"""Entry point: error handling, and registration of the command modules on the root command."""

from __future__ import annotations

import os
import sys

import typer
from rich.markup import escape

from reasonloop.cli.root import app, err_console, state
from reasonloop.errors import ReasonLoopError

__all__ = ["app", "main"]


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
        # Without standalone mode, click returns the code of a typer.Exit (Ctrl-C is Exit(130)).
        code = app(args=argv, standalone_mode=False)
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
    if isinstance(code, int) and code:
        if code == 130:
            err_console.print("interrupted")
        sys.exit(code)
