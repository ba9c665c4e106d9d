"""``reasonloop config show``."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from reasonloop.cli.console import console
from reasonloop.cli.root import app, state

config_app = typer.Typer(help="Inspect the effective configuration.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("show")
def show(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of TOML-like text.")] = False,
) -> None:
    """Print the effective configuration (file + environment), secrets masked."""
    from reasonloop.config import masked_dump

    data = masked_dump(state.settings)
    if as_json:
        console.print_json(json.dumps(data))
        return
    for section, values in data.items():
        if isinstance(values, dict):
            console.print(f"[bold]\\[{section}][/]")
            for key, value in values.items():
                console.print(f"{key} = {json.dumps(value, ensure_ascii=False)}", highlight=False)
            console.print()
        else:
            console.print(f"{section} = {json.dumps(values)}", highlight=False)
