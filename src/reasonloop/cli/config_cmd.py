"""``reasonloop config show``."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from reasonloop.cli.console import console
from reasonloop.cli.root import app, state

config_app = typer.Typer(help="Inspect the effective configuration.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("show")
def show(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of TOML.")] = False,
) -> None:
    """Print the effective configuration, secrets masked.

    The file and the environment together, as TOML that loads back as it is: save it as
    reasonloop.toml to start from it.
    """
    from reasonloop.config import masked_dump

    if as_json:
        console.print_json(json.dumps(masked_dump(state.settings)))
        return
    from reasonloop.cli.config_toml import settings_toml

    sys.stdout.write(settings_toml(state.settings))  # not through rich: no markup, no wrapping
