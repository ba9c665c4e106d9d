"""``reasonloop models``: the models served on this machine, what each can do, and which one ``auto`` uses."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from reasonloop.cli.console import console
from reasonloop.cli.root import app, state


@app.command("models")
def models(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the models served on this machine and what each can do.

    Asks Ollama, LM Studio, llama.cpp's server and vLLM at their usual loopback ports. Looks even when ``[llm] discover`` is off; the model marked ``*`` is the one in use.
    """
    from reasonloop.errors import LLMNotConfigured
    from reasonloop.llm.discovery import discover_sync
    from reasonloop.llm.resolve import resolve_auto

    settings = state.settings.llm
    found = discover_sync(settings, fresh=True)
    try:
        used, _ = resolve_auto(settings)  # reuses what was just found
        in_use = f"{used.provider}:{used.model}" if used.model else used.provider
        in_use += " (the embedded model)" if used.provider == "local" else ""
        in_use += f" at {used.base_url}" if used.base_url else ""
    except LLMNotConfigured:
        used, in_use = None, "nothing: no model is configured or found"
    chosen = next(
        (
            m
            for m in found.models
            if used is not None and (m.server, m.name, m.base_url) == (used.provider, used.model, used.base_url)
        ),
        None,
    )
    if as_json:
        report: dict[str, Any] = {
            "models": [{**m.as_dict(), "chosen": m is chosen} for m in found.models],
            "probes": [
                {"server": p.server, "url": p.url, "answered": p.answered, "error": p.error} for p in found.probes
            ],
            "in_use": in_use,
            "discover": settings.discover,
        }
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return
    from rich.markup import escape
    from rich.table import Table

    if found.models:
        table = Table("", "model", "served by", "kind", "tool calls", "context")
        for m in found.models:
            kind = {"instruct": "instruction-tuned", "base": "base", "embedding": "not for chat"}.get(m.kind, "unknown")
            tools = "?" if m.tool_calls is None else ("yes" if m.tool_calls else "no")
            table.add_row(
                "*" if m is chosen else "",
                escape(m.spec),
                escape(m.base_url),
                f"{kind} ({'server' if m.kind_from == 'server' else 'by name'})",
                tools,
                str(m.context_length or "?"),
            )
        console.print(table)
    else:
        console.print("no models found on this machine")
    for probe in found.probes:
        if not probe.answered or probe.error:
            console.print(f"[dim]{escape(probe.url)} ({probe.server}): {escape(probe.error)}[/]")
    console.print(f"in use: {escape(in_use)}")
    if chosen is None and found.choice() is not None and not settings.discover:
        console.print("[dim]\\[llm] discover is off: auto does not use these[/]")
    console.print(
        "change it with --llm provider:model, or \\[llm] provider/model/base_url in reasonloop.toml", soft_wrap=True
    )
