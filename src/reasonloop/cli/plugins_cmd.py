"""``reasonloop plugins``: every registered plugin by kind, id and description."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from reasonloop.cli.console import console
from reasonloop.cli.root import app, state


@app.command("plugins")
def plugins(
    kind: Annotated[str | None, typer.Option("--kind", help="Only this kind.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    check: Annotated[
        bool, typer.Option("--check", help="Import every plugin, to show the ones that fail to load.")
    ] = False,
) -> None:
    """List every registered plugin by kind, id and description."""
    from reasonloop.registry import Registry

    registry = Registry(state.settings.plugins.paths)
    Registry.set_default(registry)
    # Plugins with a declared description are listed without importing them (and their SDKs).
    listed = registry.entries(kind) if check else registry.listing(kind)
    rows = [
        {
            "kind": e.kind,
            "id": e.id,
            "description": e.description,
            "source": e.source,
            "target": e.target,
            "error": e.error.to_dict() if e.error else None,
        }
        for e in listed
    ]
    if as_json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    from rich.table import Table

    table = Table("kind", "id", "description", "source")
    for row in rows:
        desc = row["description"] if not row["error"] else f"[red]{row['error']['code']}: {row['error']['message']}[/]"
        table.add_row(row["kind"], row["id"], desc, row["source"])
    console.print(table)
