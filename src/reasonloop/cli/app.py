"""Entry point: error handling, and registration of the command modules on the root command."""

from __future__ import annotations

import sys

import typer

from reasonloop.cli.root import RootGroup, app, state
from reasonloop.errors import ReasonLoopError

__all__ = ["app", "main"]


COMMAND_MODULES = {
    "llm": "llm_cmd",
    "models": "models_cmd",
    "plugins": "plugins_cmd",
    "ingest": "kb_cmd",
    "search": "kb_cmd",
    "ask": "ask_cmd",
    "chat": "chat_cmd",
    "serve": "serve_cmd",
    "mcp": "mcp_cmd",
    "feedback": "feedback_cmd",
    "config": "config_cmd",
    "kb": "kb_cmd",
    "eval": "eval_cmd",
}
"""The module that registers each command, in the order ``--help`` lists them: running a
command imports its own module and no other (benchmarks/startup.py)."""

OPTIONAL_MODULES = {"kb_cmd", "ask_cmd", "chat_cmd", "serve_cmd", "feedback_cmd", "mcp_cmd", "eval_cmd"}
"""Command modules a trimmed install may leave out."""


def _register_commands(name: str | None = None) -> None:
    # Command modules register themselves on `app` when imported; the root group calls this
    # the first time it needs a command (``name``) or all of them (None).
    modules = sorted(set(COMMAND_MODULES.values())) if name is None else [COMMAND_MODULES.get(name)]
    for module in modules:
        if module is None:
            continue
        try:
            __import__(f"reasonloop.cli.{module}")
        except ModuleNotFoundError as exc:
            if module not in OPTIONAL_MODULES or exc.name != f"reasonloop.cli.{module}":
                raise


RootGroup.load_commands = _register_commands
RootGroup.command_order = tuple(COMMAND_MODULES)


def _print_error(text: str, **options: bool) -> None:
    from reasonloop.cli.console import err_console

    err_console.print(text, **options)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; a ReasonLoopError prints one line (code + message) and exits 1."""
    import reasonloop._native_threads  # noqa: F401  # the engines' thread defaults, before anything loads them

    try:
        # Without standalone mode, click returns the code of a typer.Exit (Ctrl-C is Exit(130)).
        code = app(args=argv, standalone_mode=False)
    except ReasonLoopError as exc:
        if state.debug:
            raise
        from rich.markup import escape

        # soft_wrap: one line however narrow the terminal (or a pipe's assumed 80 columns).
        _print_error(f"[bold red]error[/] {escape(f'[{exc.code}] {exc.message}')}", highlight=False, soft_wrap=True)
        sys.exit(1)
    except KeyboardInterrupt:
        _print_error("interrupted")
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
        from rich.markup import escape

        _print_error(
            f"[bold red]error[/] {escape(f'{type(exc).__name__}: {exc}')} (run with --debug for details)",
            soft_wrap=True,
        )
        sys.exit(1)
    if isinstance(code, int) and code:
        if code == 130:
            _print_error("interrupted")
        sys.exit(code)
