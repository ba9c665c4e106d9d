"""The root command: the typer app and its global options, and the CLI's state, which every
command shares. Command modules register themselves on :data:`app`; the consoles they print to
are in :mod:`reasonloop.cli.console`.

The root command's group imports a command's module only when click first looks the command up
(to run it), and every command module only when it lists them (``--help``), so
``reasonloop --version`` imports none of them and ``reasonloop search`` only its own
(benchmarks/startup.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ClassVar

import typer
from typer.core import TyperGroup

from reasonloop import __version__

if TYPE_CHECKING:
    import click

    from reasonloop.config import Settings

__all__ = ["CLIState", "RootGroup", "app", "state"]


class RootGroup(TyperGroup):
    """The root command's group, whose commands are built on first need."""

    load_commands: ClassVar[Callable[[str | None], None] | None] = None
    """Imports the module registering a command (every module for None), which registers on
    :data:`app`; set by :mod:`reasonloop.cli.app`."""

    command_order: ClassVar[tuple[str, ...]] = ()
    """The commands in the order ``--help`` lists them, whichever module was imported first."""

    _built_all = False

    def _build(self, name: str | None) -> None:
        load = RootGroup.load_commands
        if self._built_all or load is None or (name is not None and name in self.commands):
            return
        load(name)
        built = typer.main.get_command(app)
        assert isinstance(built, TyperGroup)
        for cmd_name, command in built.commands.items():
            self.commands.setdefault(cmd_name, command)
        if name is None:
            self._built_all = True
            rank = {n: i for i, n in enumerate(RootGroup.command_order)}
            ordered = sorted(self.commands.items(), key=lambda item: rank.get(item[0], len(rank)))
            self.commands = dict(ordered)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._build(None)
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self._build(cmd_name)
        return super().get_command(ctx, cmd_name)


app = typer.Typer(
    name="reasonloop",
    cls=RootGroup,
    help="Answer questions over your own documents with pluggable reasoning.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # help as written: it quotes TOML sections ([kb] path) that markup would swallow
)


@dataclass
class CLIState:
    config_path: Path | None = None
    debug: bool = False
    _settings: Settings | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            from reasonloop.config import load_settings  # pydantic-settings: only for commands that read settings

            self._settings = load_settings(self.config_path)
        return self._settings


state = CLIState()


def _version(value: bool) -> None:
    if value:
        typer.echo(f"reasonloop {__version__}")
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
        import logging

        logging.basicConfig(level=logging.DEBUG)
