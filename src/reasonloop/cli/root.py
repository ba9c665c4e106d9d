"""The root command: the typer app and its global options, and what every command shares (the
consoles and the CLI's state). Command modules register themselves on :data:`app`."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from reasonloop import __version__
from reasonloop.config import Settings, load_settings

__all__ = ["CLIState", "app", "console", "err_console", "state"]

app = typer.Typer(
    name="reasonloop",
    help="Answer questions over your own documents with pluggable reasoning.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # help as written: it quotes TOML sections ([kb] path) that markup would swallow
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
