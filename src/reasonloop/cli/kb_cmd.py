"""``reasonloop ingest``, ``reasonloop search`` and ``reasonloop kb stats|list|delete``."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from reasonloop.cli.console import console, err_console
from reasonloop.cli.root import app, state
from reasonloop.errors import ConfigError

# asyncio and the knowledge base's models and engines are imported by the commands that open
# it: the command line starts without them (benchmarks/startup.py).
if TYPE_CHECKING:
    from reasonloop.kb.base import Filter, IngestProgress
    from reasonloop.kb.hybrid import SearchMode

kb_app = typer.Typer(name="kb", help="Inspect and manage the knowledge base.", no_args_is_help=True)
app.add_typer(kb_app, name="kb")

KBOption = Annotated[
    Path | None, typer.Option("--kb", help="Knowledge base directory (default: kb.path, i.e. ./.reasonloop).")
]


def _open(kb_dir: Path | None) -> Any:
    from reasonloop.kb.knowledge_base import KnowledgeBase
    from reasonloop.registry import Registry

    settings = state.settings
    return KnowledgeBase.open(kb_dir, settings=settings, registry=Registry(settings.plugins.paths))


class _RateETA(ProgressColumn):
    """Embedding rate (chunks/s actually embedded) and the time left for the known chunks."""

    def render(self, task: Task) -> Text:
        p: IngestProgress | None = task.fields.get("ingest")
        if p is None or p.seconds <= 0:
            return Text("")
        rate = p.chunks_done / p.seconds
        left = p.chunks_total - p.chunks_done
        eta = f"ETA {left / rate:,.0f}s" if rate > 0 and left > 0 else ""
        embedded = p.chunks_embedded / p.seconds
        return Text(f"{embedded:,.1f} emb/s {eta}", style="progress.data.speed")


@app.command("ingest")
def ingest(
    paths: Annotated[list[str], typer.Argument(help="Files, folders (recursive) or http(s) URLs.")],
    kb_dir: KBOption = None,
    include: Annotated[list[str] | None, typer.Option("--include", help="Glob a folder's files must match.")] = None,
    exclude: Annotated[list[str] | None, typer.Option("--exclude", help="Glob of files or folders to skip.")] = None,
    prune: Annotated[
        bool, typer.Option("--prune", help="Delete documents whose file left an ingested folder.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Add documents to the knowledge base (unchanged files are skipped)."""

    async def run() -> Any:
        kb = _open(kb_dir)
        try:
            if as_json:
                return await kb.ingest(paths, include=include, exclude=exclude, prune=prune)
            columns = (
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TextColumn("files {task.fields[files]}"),
                TextColumn("chunks {task.completed:,.0f}/{task.total:,.0f}"),
                _RateETA(),
                TimeElapsedColumn(),
            )
            with Progress(*columns, console=err_console, transient=False) as bar:
                task = bar.add_task("ingesting", total=1, completed=0, files="0/0", ingest=None)

                def update(p: IngestProgress) -> None:
                    bar.update(
                        task,
                        total=max(p.chunks_total, 1),
                        completed=p.chunks_done,
                        files=f"{p.files_done}/{p.files_total}",
                        ingest=p,
                    )

                return await kb.ingest(paths, on_progress=update, include=include, exclude=exclude, prune=prune)
        finally:
            await kb.close()

    import asyncio

    report = asyncio.run(run())
    if as_json:
        print(report.model_dump_json(indent=2))
        return
    console.print(
        f"added {len(report.added)}, updated {len(report.updated)}, unchanged {len(report.unchanged)}, "
        f"deleted {len(report.deleted)}, failed {len(report.failed)}; "
        f"{report.chunks_added} chunks ({report.chunks_embedded} embedded) in {report.seconds:.1f}s"
    )
    for source, reason in report.failed.items():
        err_console.print(f"[yellow]skipped[/] {escape(source)}: {escape(reason)}", highlight=False)


def _parse_filter(raw: str) -> Filter:
    """``field=value`` (equality) or ``field:op=json`` (``year:range=[2000,2010]``)."""
    from reasonloop.kb.base import Filter

    key, sep, value = raw.partition("=")
    if not sep or not key:
        raise ConfigError(f"--filter {raw!r}: expected field=value or field:op=value")
    field, _, op = key.partition(":")
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    return Filter(field=field, op=op or "eq", value=parsed)


@app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, help="Number of hits.")] = 10,
    mode: Annotated[str, typer.Option("--mode", "-m", help="hybrid, dense or lexical.")] = "hybrid",
    filters: Annotated[
        list[str] | None,
        typer.Option("--filter", "-f", help="field=value or field:op=json (op: eq, in, range, contains)."),
    ] = None,
    kb_dir: KBOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print hits as JSON.")] = False,
) -> None:
    """Search the knowledge base without an LLM."""
    if mode not in ("hybrid", "dense", "lexical"):
        raise ConfigError(f"--mode must be hybrid, dense or lexical, got {mode!r}")
    parsed = [_parse_filter(f) for f in filters or []]

    async def run() -> Any:
        kb = _open(kb_dir)
        try:
            return await kb.search(query, top_k=top_k, filters=parsed or None, mode=cast("SearchMode", mode))
        finally:
            await kb.close()

    import asyncio

    hits = asyncio.run(run())
    if as_json:
        print(json.dumps([h.model_dump() for h in hits], ensure_ascii=False, indent=2))
        return
    if not hits:
        console.print("no hits")
        return
    for rank, hit in enumerate(hits, start=1):
        where = hit.source + (f" p.{hit.metadata['page']}" if hit.metadata.get("page") else "")
        console.print(f"[bold]{rank}.[/] [cyan]{escape(where)}[/] [dim]{hit.score:.4f}[/]", highlight=False)
        snippet = " ".join(hit.text.split())
        console.print("   " + escape(snippet[:300] + ("…" if len(snippet) > 300 else "")), highlight=False)


@kb_app.command("stats")
def stats(
    kb_dir: KBOption = None, as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False
) -> None:
    """Documents, chunks, bytes, embedding model and last update."""

    async def run() -> Any:
        kb = _open(kb_dir)
        try:
            return kb.path, await kb.stats()
        finally:
            await kb.close()

    import asyncio

    path, s = asyncio.run(run())
    if as_json:
        print(json.dumps({"path": str(path), **s.model_dump()}, ensure_ascii=False, indent=2))
        return
    last = datetime.fromtimestamp(s.last_update, UTC).isoformat(timespec="seconds") if s.last_update else "never"
    console.print(f"knowledge base  {escape(str(path))}")
    console.print(f"documents       {s.documents:,}")
    console.print(f"chunks          {s.chunks:,}")
    console.print(f"bytes           {s.bytes:,}")
    console.print(f"embedding model {escape(s.embedding_model or '-')}")
    console.print(f"last update     {last}")


@kb_app.command("list")
def list_documents(
    kb_dir: KBOption = None, as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False
) -> None:
    """Every document with its id, chunk count and size."""

    async def run() -> Any:
        kb = _open(kb_dir)
        try:
            return await kb.documents()
        finally:
            await kb.close()

    import asyncio

    docs = asyncio.run(run())
    if as_json:
        print(json.dumps([asdict(d) for d in docs], ensure_ascii=False, indent=2))
        return
    table = Table("id", "source", "title", "chunks", "bytes", "updated")
    for d in docs:
        updated = time.strftime("%Y-%m-%d %H:%M", time.localtime(d.updated))
        table.add_row(d.id, escape(d.source), escape(d.title), str(d.chunks), f"{d.bytes:,}", updated)
    console.print(table)
    console.print(f"{len(docs)} documents")


@kb_app.command("delete")
def delete(
    targets: Annotated[list[str], typer.Argument(help="Document ids or sources (a folder removes everything in it).")],
    kb_dir: KBOption = None,
) -> None:
    """Remove documents from the knowledge base."""

    async def run() -> list[str]:
        kb = _open(kb_dir)
        removed: list[str] = []
        try:
            for target in targets:
                removed.extend(await kb.delete(target))
        finally:
            await kb.close()
        return removed

    import asyncio

    removed = asyncio.run(run())
    for source in removed:
        console.print(f"deleted {escape(source)}", highlight=False)
