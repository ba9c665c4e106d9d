"""``reasonloop eval retrieval | qa | routing``: measure retrieval, answers per strategy, tool routing.

Each command shows a progress bar with an ETA on stderr, prints its tables on stdout (or one JSON
summary with ``--json``) and, with ``--html FILE``, writes a self-contained report with plots.
``qa`` and ``routing`` write one result line per question into their results folder (printed),
so running the same command again resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from reasonloop.cli.console import err_console, escape
from reasonloop.cli.root import state
from reasonloop.errors import ConfigError

if TYPE_CHECKING:
    pass

from reasonloop.cli import eval_qa_cmd  # noqa: F401  (registers ``eval qa``)
from reasonloop.cli.eval_common import (
    DEFAULT_WORK,
    HtmlOption,
    JsonOption,
    LimitOption,
    SeedOption,
    WorkOption,
    csv_items,
    eval_app,
    kb_options,
    make_llm,
    progress_bar,
    show_report,
    slug,
)


# -- retrieval ------------------------------------------------------------------------------------
@eval_app.command("retrieval")
def retrieval(
    data: Annotated[
        Path, typer.Argument(help="A BEIR folder, a SQuAD JSON file, or a question JSONL (with --corpus).")
    ],
    corpus: Annotated[
        Path | None, typer.Option("--corpus", help="Corpus JSONL (id, title, text) for a question JSONL.")
    ] = None,
    split: Annotated[str, typer.Option("--split", help="BEIR qrels split.")] = "test",
    modes: Annotated[
        str, typer.Option("--mode", help="Comma-separated: lexical, dense, hybrid.")
    ] = "lexical,dense,hybrid",
    ingest: Annotated[
        str,
        typer.Option(
            "--ingest",
            help="records (one record per document) or files (written as Markdown files, ingested as a user would).",
        ),
    ] = "files",
    chunk_tokens: Annotated[
        int | None, typer.Option("--chunk-tokens", help="Chunk size of the index (default: [kb.options]).")
    ] = None,
    depth: Annotated[int, typer.Option("--depth", min=1, help="Documents ranked per query.")] = 100,
    fetch: Annotated[
        int | None,
        typer.Option(
            "--fetch",
            min=1,
            help="Fold the best N chunks into documents here instead of the knowledge base's per-document search.",
        ),
    ] = None,
    limit: LimitOption = None,
    vector_cache: Annotated[
        Path | None,
        typer.Option("--vector-cache", help="SQLite file of vectors shared between indexes (each text embedded once)."),
    ] = None,
    work: WorkOption = DEFAULT_WORK,
    as_json: JsonOption = False,
    html: HtmlOption = None,
) -> None:
    """Score retrieval per search mode.

    nDCG@10, recall@k, MRR@10 and latency for lexical, dense and hybrid search, side by side.
    """
    import asyncio

    from reasonloop.eval.datasets import load_retrieval_set
    from reasonloop.eval.report import retrieval_table
    from reasonloop.eval.retrieval import MODES, evaluate_retrieval

    chosen = csv_items(modes, "--mode")
    unknown = [m for m in chosen if m not in MODES]
    if unknown:
        raise ConfigError(f"unknown --mode {unknown[0]!r} (choose from {', '.join(MODES)})")
    ds = load_retrieval_set(data, corpus=corpus, split=split)
    options = kb_options(chunk_tokens)
    folder = (
        work
        / f"retrieval-{slug(ds.name)}-{ingest}-{hashlib.sha1(json.dumps(options, sort_keys=True).encode()).hexdigest()[:8]}"
    )

    async def run() -> Any:
        embedder = None
        if vector_cache is not None:
            from reasonloop.kb.embedding.cache import CachedEmbedder
            from reasonloop.kb.embedding.embedders import create_embedder

            embedder = CachedEmbedder(
                create_embedder(state.settings.kb.embedder, options.get("embedder")), vector_cache
            )
        try:
            return await measure(embedder)
        finally:
            if embedder is not None:
                await embedder.aclose()

    async def measure(embedder: Any) -> Any:
        with progress_bar() as bar:
            ingest_task = bar.add_task(f"ingest {ds.name}", total=None)
            tasks: dict[str, Any] = {}

            def on_ingest(p: Any) -> None:
                bar.update(ingest_task, total=p.chunks_total or None, completed=p.chunks_done)

            def on_query(mode: str, done: int, total: int) -> None:
                if mode not in tasks:
                    tasks[mode] = bar.add_task(f"search {mode}", total=total)
                bar.update(tasks[mode], completed=done)

            return await evaluate_retrieval(
                ds,
                workdir=folder,
                ingest=ingest,
                modes=chosen,
                depth=depth,
                options=options,
                limit=limit,
                fetch=fetch,
                embedder=embedder,
                on_progress=on_ingest,
                on_query=on_query,
            )

    report = asyncio.run(run())
    show_report(
        report,
        html=html,
        title=f"Retrieval: {ds.name}",
        kind="retrieval",
        as_json=as_json,
        heading=f"{escape(ds.name)}: {len(ds.queries) if not limit else min(limit, len(ds.queries))} queries, "
        f"{report.index['documents']:,} documents, {report.index['chunks']:,} chunks ({ingest})",
        table=retrieval_table(report),
    )


# -- qa -------------------------------------------------------------------------------------------
# -- routing --------------------------------------------------------------------------------------
@eval_app.command("routing")
def routing(
    data: Annotated[
        Path | None, typer.Argument(help="Routing JSONL (question, tools); default: the bundled bilingual set.")
    ] = None,
    reasoning: Annotated[
        str, typer.Option("--reasoning", "-r", help="The tool-using strategy to route with.")
    ] = "toolcall",
    llm: Annotated[str | None, typer.Option("--llm", help="provider:model (default: the configured [llm]).")] = None,
    kb_dir: Annotated[
        Path | None, typer.Option("--kb", help="Knowledge base the tools work on (default: [kb] path).")
    ] = None,
    tools: Annotated[
        str, typer.Option("--tools", help="Comma-separated tools offered.")
    ] = "docsearch,summarize,kb_stats,feedback",
    limit: LimitOption = None,
    seed: SeedOption = None,
    work: WorkOption = DEFAULT_WORK,
    out: Annotated[Path | None, typer.Option("--out", help="Results folder (default: under --work).")] = None,
    as_json: JsonOption = False,
    html: HtmlOption = None,
    hops: Annotated[
        bool,
        typer.Option(
            "--hops",
            help="Score the auto mode's router on the hop labels (none, single, multi_hop, research) "
            "instead of the tools called: with the model (the rule when it gives no decision) and with the rule alone.",
        ),
    ] = False,
) -> None:
    """Score the tools an agent calls, or the routes of the auto mode.

    Accuracy, per-tool precision and recall, a confusion table and the questions that went wrong;
    on the hop labels, accuracy on the set's dev and held-out parts and a confusion table, for the
    router with the model and for its rule alone.
    """
    import asyncio

    if hops:
        if html:
            raise typer.BadParameter("--html is not available with --hops", param_hint="--html")
        _hop_routing(data, llm, limit, seed, work, out, as_json)
        return

    from reasonloop.eval.datasets import load_routing_set, subsample
    from reasonloop.eval.report import routing_tables
    from reasonloop.eval.routing import bundled_set_path, evaluate_routing
    from reasonloop.registry import Registry, resolve

    registry = Registry(state.settings.plugins.paths)
    resolve("reasoning", reasoning, registry)
    offered = csv_items(tools, "--tools")
    path = data or bundled_set_path()
    items = subsample(load_routing_set(path), limit, seed)
    model = make_llm(llm)
    manifest = {
        "data": str(path.resolve()),
        "limit": limit,
        "seed": seed,
        "model": model.name,
        "reasoning": reasoning,
        "tools": offered,
        "kb": str(kb_dir or state.settings.kb.path),
    }
    key = hashlib.sha1(json.dumps(manifest, sort_keys=True).encode()).hexdigest()[:10]
    folder = out or work / "runs" / f"routing-{slug(path.stem)}-{key}"

    async def run() -> Any:
        from reasonloop.agents.agent import Agent
        from reasonloop.kb.knowledge_base import KnowledgeBase
        from reasonloop.tools.feedback import FeedbackStore

        kb = KnowledgeBase.open(kb_dir, settings=state.settings, registry=registry)
        feedback = FeedbackStore(":memory:")
        try:
            with progress_bar() as bar:
                task = bar.add_task("routing", total=len(items))

                def make_agent() -> Agent:
                    return Agent(
                        reasoning=reasoning, llm=model, kb=kb, tools=offered, registry=registry, feedback=feedback
                    )

                return await evaluate_routing(
                    items,
                    make_agent=make_agent,
                    folder=folder,
                    manifest=manifest,
                    tools=offered,
                    on_result=lambda row, resumed: bar.advance(task),
                )
        finally:
            await kb.close()
            await model.aclose()

    report = asyncio.run(run())
    show_report(
        report,
        html=html,
        title=f"Tool routing: {path.stem} ({model.name})",
        kind="routing",
        as_json=as_json,
        heading=f"results in {escape(str(folder))}",
        table=routing_tables(report),
    )
    if report.failed:
        err_console.print(f"[bold yellow]{report.failed} question(s) failed[/]", highlight=False)
        raise typer.Exit(3)


def _hop_routing(
    data: Path | None, llm: str | None, limit: int | None, seed: int | None, work: Path, out: Path | None, as_json: bool
) -> None:
    import asyncio

    from reasonloop.eval.datasets import load_routing_set, subsample
    from reasonloop.eval.route_hops import evaluate_hops, hop_routing_tables
    from reasonloop.eval.routing import bundled_set_path

    path = data or bundled_set_path()
    items = [i for i in subsample(load_routing_set(path), limit, seed) if i.hops]
    if not items:
        raise ConfigError(f"{path} has no question with a hops label (none, single, multi_hop, research)")
    model = make_llm(llm)
    manifest = {"data": str(path.resolve()), "limit": limit, "seed": seed, "model": model.name}
    key = hashlib.sha1(json.dumps(manifest, sort_keys=True).encode()).hexdigest()[:10]
    folder = out or work / "runs" / f"hops-{slug(path.stem)}-{key}"

    async def run() -> Any:
        try:
            with progress_bar() as bar:
                task = bar.add_task("routing", total=len(items))
                return await evaluate_hops(
                    items, llm=model, folder=folder, manifest=manifest, on_result=lambda row, resumed: bar.advance(task)
                )
        finally:
            await model.aclose()

    report = asyncio.run(run())
    show_report(
        report,
        html=None,
        title=f"Hop routing: {path.stem} ({model.name})",
        kind="hops",
        as_json=as_json,
        heading=f"Hop routing: {path.stem} ({escape(model.name)}); results in {escape(str(folder))}",
        table=hop_routing_tables(report),
    )
    if report.failed:
        err_console.print(f"[bold yellow]{report.failed} question(s) failed[/]", highlight=False)
        raise typer.Exit(3)
