"""What the ``reasonloop eval`` commands share: the command group, common options, the progress bar,
and how a report is shown (tables, JSON or an HTML page)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from reasonloop.cli.console import console, err_console, escape, rich_console
from reasonloop.cli.root import app, state
from reasonloop.errors import ConfigError

if TYPE_CHECKING:
    from rich.progress import Progress

eval_app = typer.Typer(
    name="eval", help="Evaluate retrieval, answers per strategy, and tool routing.", no_args_is_help=True
)
app.add_typer(eval_app, name="eval")

WorkOption = Annotated[
    Path, typer.Option("--work", help="Where indexes and results are kept between runs (reused to resume).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON summary instead of tables.")]
HtmlOption = Annotated[Path | None, typer.Option("--html", help="Also write a self-contained HTML report here.")]
LimitOption = Annotated[int | None, typer.Option("--limit", min=1, help="Only this many questions.")]
SeedOption = Annotated[
    int | None,
    typer.Option("--seed", help="Shuffle the questions with this seed before --limit (same seed, same subset)."),
]
DEFAULT_WORK = Path(".reasonloop-eval")


def progress_bar() -> Progress:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=rich_console(err_console),
        transient=False,
    )


def csv_items(value: str, what: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise ConfigError(f"{what} is empty")
    return items


def slug(text: str) -> str:
    return re.sub(r"[^\w.-]+", "-", text).strip("-")[:60] or "set"


def command_line() -> str:
    return " ".join(["reasonloop", *sys.argv[1:]]) if sys.argv else "reasonloop eval"


def show_report(
    report: Any,
    *,
    html: Path | None,
    title: str,
    kind: str,
    as_json: bool,
    heading: str,
    table: str,
    extra: dict[str, Any] | None = None,
) -> None:
    """The report as an HTML page (when asked), then as JSON (with ``extra``) or as its heading and table."""
    if html:
        from reasonloop.eval.report import write_html

        write_html(html, title, kind=kind, report=report, command=command_line())
    if as_json:
        print(json.dumps({**report.to_dict(), **(extra or {})}, indent=2, ensure_ascii=False))
        return
    console.print(heading, highlight=False, soft_wrap=True)
    console.print(escape(table), highlight=False, soft_wrap=True)


def kb_options(chunk_tokens: int | None) -> dict[str, Any]:
    options = dict(state.settings.kb.options)
    if chunk_tokens:
        options["chunk_tokens"] = chunk_tokens
    return options


def make_llm(spec: str | None) -> Any:
    from reasonloop.llm.resolve import create_llm
    from reasonloop.registry import Registry

    return create_llm(spec, state.settings, registry=Registry(state.settings.plugins.paths))
