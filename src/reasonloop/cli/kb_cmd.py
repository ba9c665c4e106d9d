"""``reasonloop ingest``, ``reasonloop search`` and ``reasonloop kb stats|list|delete``."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from reasonloop.cli.console import console, err_console, escape, rich_console
from reasonloop.cli.root import app, state
from reasonloop.errors import ConfigError

# asyncio and the knowledge base's models and engines are imported by the commands that open
# it: the command line starts without them (benchmarks/startup.py).
if TYPE_CHECKING:
    from reasonloop.kb.base import Filter, IngestProgress
    from reasonloop.kb.retrieval.hybrid import SearchMode

kb_app = typer.Typer(name="kb", help="Inspect and manage the knowledge base.", no_args_is_help=True)
app.add_typer(kb_app, name="kb")

TITLE_CHARS = 30
"""`kb list` cuts titles to this many characters (the id and source are never cut)."""

KBOption = Annotated[
    Path | None, typer.Option("--kb", help="Knowledge base directory (default: [kb] path, i.e. ./.reasonloop).")
]


def _open(kb_dir: Path | None) -> Any:
    from reasonloop.kb.knowledge_base import KnowledgeBase
    from reasonloop.registry import Registry

    settings = state.settings
    return KnowledgeBase.open(kb_dir, settings=settings, registry=Registry(settings.plugins.paths))


def _say_waiting(message: str) -> None:
    err_console.print(f"[yellow]{escape(message)}[/]", highlight=False, soft_wrap=True)


@app.command("ingest")
def ingest(
    paths: Annotated[list[str], typer.Argument(help="Files, folders (recursive) or http(s) URLs.")],
    kb_dir: KBOption = None,
    include: Annotated[list[str] | None, typer.Option("--include", help="Glob a folder's files must match.")] = None,
    exclude: Annotated[list[str] | None, typer.Option("--exclude", help="Glob of files or folders to skip.")] = None,
    prune: Annotated[
        bool, typer.Option("--prune", help="Delete documents whose file left an ingested folder.")
    ] = False,
    readers: Annotated[
        str | None,
        typer.Option(
            "--readers",
            help="Who may read these documents: 'alice,group:finance' (default: a folder's .readers "
            "file, else what a document had; a new one is open to everyone).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Add files, folders and URLs to the knowledge base.

    Unchanged files are skipped (their readers still change with --readers or a .readers file). Exit code: 0 when every source was ingested (or was unchanged),
    3 when some failed or do not exist, 1 when none could be ingested, 130 when stopped with
    Ctrl-C (what was committed by then stays).
    """
    from reasonloop.cli.ingest_report import (
        EXIT_INTERRUPTED,
        FAILED,
        exit_code,
        interrupted_message,
        long_ingest_warning,
        summary_line,
    )
    from reasonloop.kb.access import parse_readers

    canonical = None if readers is None else parse_readers(readers, field_name="--readers")  # before any work
    last: list[IngestProgress] = []
    warned: list[str] = []

    waiting: list[str] = []

    def seen(p: IngestProgress) -> None:
        last[:] = [p]
        if p.waiting and p.waiting not in waiting:  # another process is writing: say so, once
            waiting.append(p.waiting)
            err_console.print(f"[yellow]{escape(p.waiting)}[/]", highlight=False, soft_wrap=True)
        if not warned:
            warning = long_ingest_warning(p)
            if warning:
                warned.append(warning)
                err_console.print(f"[bold yellow]warning[/] {escape(warning)}", highlight=False, soft_wrap=True)

    async def run() -> Any:
        kb = _open(kb_dir)
        try:
            if as_json:
                return await kb.ingest(
                    paths, on_progress=seen, include=include, exclude=exclude, prune=prune, readers=canonical
                )
            from rich.progress import Progress

            from reasonloop.cli.ingest_progress import ingest_columns

            with Progress(*ingest_columns(), console=rich_console(err_console), transient=False) as bar:
                task = bar.add_task("ingesting", total=1, completed=0, files="0/0", ingest=None)

                def update(p: IngestProgress) -> None:
                    seen(p)
                    bar.update(
                        task,
                        total=max(p.chunks_total, 1),
                        completed=p.chunks_done,
                        files=f"{p.files_done}/{p.files_total}",
                        ingest=p,
                    )

                return await kb.ingest(
                    paths, on_progress=update, include=include, exclude=exclude, prune=prune, readers=canonical
                )
        finally:
            await kb.close()

    import asyncio

    try:
        report = asyncio.run(run())
    except KeyboardInterrupt:
        err_console.print(f"[yellow]{escape(interrupted_message(last[0] if last else None))}[/]", soft_wrap=True)
        sys.exit(EXIT_INTERRUPTED)
    if as_json:
        print(report.model_dump_json(indent=2))
    else:
        console.print(summary_line(report))
    for source, reason in report.failed.items():
        err_console.print(f"[yellow]{FAILED}[/] {escape(source)}: {escape(reason)}", highlight=False, soft_wrap=True)
    for source, warning in report.warnings.items():
        err_console.print(f"[yellow]warning[/] {escape(source)}: {escape(warning)}", highlight=False, soft_wrap=True)
    for path, why in report.skipped.items():
        err_console.print(f"[yellow]skipped[/] {escape(path)}: {escape(why)}", highlight=False, soft_wrap=True)
    code = exit_code(report)
    if code:
        sys.exit(code)  # typer.Exit would be swallowed when the app runs with standalone_mode=False


SCORE_LEGENDS = {
    "dense": "cosine similarity of the chunk to the query (1 is identical)",
    "lexical": "BM25 keyword relevance (0 and up)",
    "zscore": (
        "dense and BM25 scores, each standardised over this query's candidates (BM25 0 for a text without "
        "a query word) and added: relative to this query only, 0 is an average candidate and below 0 a weaker one"
    ),
    "minmax": "dense and BM25 scores, each scaled to 0-1 over this query's candidates (BM25 from 0) and added (0 to 2)",
    "rrf": "reciprocal-rank fusion of the dense and BM25 rankings (small positive numbers; only the order means much)",
}


def score_legend(mode: str, fusion: str | None) -> str:
    """What the numbers after each hit of ``reasonloop search`` mean (higher is better in every mode)."""
    key = mode if mode != "hybrid" else (fusion or "")
    what = SCORE_LEGENDS.get(key, "the retriever's own score")
    return f"{mode} search, higher is better; {what}"


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
    no_rerank: Annotated[bool, typer.Option("--no-rerank", help="Skip the configured reranker.")] = False,
    candidates: Annotated[
        int | None, typer.Option("--candidates", min=1, help="Fused candidates the reranker orders.")
    ] = None,
    reader: Annotated[
        str | None,
        typer.Option(
            "--reader", help="Search as this reader: PRINCIPAL or PRINCIPAL:GROUP,GROUP (default: everything)."
        ),
    ] = None,
) -> None:
    """Search the knowledge base without an LLM."""
    from reasonloop.kb.access import Reader

    if mode not in ("hybrid", "dense", "lexical"):
        raise ConfigError(f"--mode must be hybrid, dense or lexical, got {mode!r}")
    parsed = [_parse_filter(f) for f in filters or []]
    as_reader = None if reader is None else Reader.parse(reader, field_name="--reader")

    async def run() -> Any:
        kb = _open(kb_dir)
        try:
            seen = kb if as_reader is None else kb.for_reader(as_reader)
            fusion = getattr(seen.retriever({"mode": mode}), "fusion", None)
            hits = await seen.search(
                query,
                top_k=top_k,
                filters=parsed or None,
                mode=cast("SearchMode", mode),
                rerank=False if no_rerank else None,
                candidates=candidates,
            )
            return hits, fusion
        finally:
            await kb.close()

    import asyncio

    hits, fusion = asyncio.run(run())
    if as_json:
        print(json.dumps([h.model_dump() for h in hits], ensure_ascii=False, indent=2))
        return
    if not hits:
        console.print("no hits")
        return
    console.print(f"[dim]score: {escape(score_legend(mode, fusion))}[/]", highlight=False, soft_wrap=True)
    for rank, hit in enumerate(hits, start=1):
        where = hit.source + (f" p.{hit.metadata['page']}" if hit.metadata.get("page") else "")
        scores = f"{hit.score:.4f}" + (f" rerank {hit.rerank_score:.4f}" if hit.rerank_score is not None else "")
        console.print(f"[bold]{rank}.[/] [cyan]{escape(where)}[/] [dim]{scores}[/]", highlight=False)
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
    # The id and the source are what `kb delete` takes: shown whole, however narrow the terminal.
    rows = [
        (
            d.id,
            d.source,
            d.title,
            str(d.chunks),
            f"{d.bytes:,}",
            time.strftime("%Y-%m-%d %H:%M", time.localtime(d.updated)),
        )
        for d in docs
    ]
    headers = ("id", "source", "title", "chunks", "bytes", "updated")
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    widths[2] = min(widths[2], TITLE_CHARS)
    if sum(widths) + 2 * (len(widths) - 1) <= console.width:
        from rich.table import Table

        table = Table(*headers, box=None, pad_edge=False, padding=(0, 2, 0, 0))
        for column in table.columns:
            column.no_wrap = True
        table.columns[2].max_width = TITLE_CHARS
        table.columns[3].justify = table.columns[4].justify = "right"
        for row in rows:
            table.add_row(*(escape(cell) for cell in row))
        console.print(table)
    else:  # one document per two lines: the id and the whole source, then the rest
        for d_id, source, title, chunks, size, updated in rows:
            console.print(f"[bold]{d_id}[/]  {escape(source)}", highlight=False, soft_wrap=True)
            console.print(
                f"  [dim]{escape(title)} · {chunks} chunks · {size} bytes · {updated}[/]",
                highlight=False,
                soft_wrap=True,
            )
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
                removed.extend(await kb.delete(target, on_wait=_say_waiting))
        finally:
            await kb.close()
        return removed

    import asyncio

    removed = asyncio.run(run())
    for source in removed:
        console.print(f"deleted {escape(source)}", highlight=False)


@kb_app.command("readers")
def readers_of(
    target: Annotated[str, typer.Argument(help="A document id or source (a folder changes everything in it).")],
    readers: Annotated[
        str | None, typer.Option("--set", help="Who may read it from now on: 'alice,group:finance'.")
    ] = None,
    everyone: Annotated[bool, typer.Option("--everyone", help="Open it to everyone in the tenant.")] = False,
    kb_dir: KBOption = None,
) -> None:
    """Show or change who may read a document. Exit code 1 when no document matched."""
    from reasonloop.errors import RequestInvalid
    from reasonloop.kb.access import parse_readers

    if readers is not None and everyone:
        raise RequestInvalid("give --set or --everyone, not both", field="--set")
    canonical = None if readers is None else parse_readers(readers, field_name="--set")

    async def run() -> Any:
        kb = _open(kb_dir)
        try:
            if readers is None and not everyone:
                found = await kb.document(target)
                if found is None:
                    from reasonloop.errors import DocumentNotFound

                    raise DocumentNotFound(f"no document with id or source {target!r}", document=target)
                return [found[0]]
            return await kb.set_readers(target, canonical)
        finally:
            await kb.close()

    import asyncio

    for doc in asyncio.run(run()):
        who = "everyone in the tenant" if doc.readers is None else ", ".join(doc.readers)
        console.print(f"{escape(doc.id)}  {escape(doc.source)}: {escape(who)}", highlight=False, soft_wrap=True)
