"""``reasonloop eval retrieval | qa | routing``: measure retrieval, answers per strategy, tool routing.

Each command shows a progress bar with an ETA on stderr, prints its tables on stdout (or one JSON
summary with ``--json``) and, with ``--html FILE``, writes a self-contained report with plots.
``qa`` and ``routing`` write one result line per question into their results folder (printed),
so running the same command again resumes where it stopped.
"""

from __future__ import annotations

import hashlib
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


def _progress() -> Progress:
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


def _csv(value: str, what: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise ConfigError(f"{what} is empty")
    return items


def _slug(text: str) -> str:
    return re.sub(r"[^\w.-]+", "-", text).strip("-")[:60] or "set"


def _command() -> str:
    return " ".join(["reasonloop", *sys.argv[1:]]) if sys.argv else "reasonloop eval"


def _show(
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

        write_html(html, title, kind=kind, report=report, command=_command())
    if as_json:
        print(json.dumps({**report.to_dict(), **(extra or {})}, indent=2, ensure_ascii=False))
        return
    console.print(heading, highlight=False, soft_wrap=True)
    console.print(escape(table), highlight=False, soft_wrap=True)


def _options(chunk_tokens: int | None) -> dict[str, Any]:
    options = dict(state.settings.kb.options)
    if chunk_tokens:
        options["chunk_tokens"] = chunk_tokens
    return options


def _llm(spec: str | None) -> Any:
    from reasonloop.llm.resolve import create_llm
    from reasonloop.registry import Registry

    return create_llm(spec, state.settings, registry=Registry(state.settings.plugins.paths))


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

    chosen = _csv(modes, "--mode")
    unknown = [m for m in chosen if m not in MODES]
    if unknown:
        raise ConfigError(f"unknown --mode {unknown[0]!r} (choose from {', '.join(MODES)})")
    ds = load_retrieval_set(data, corpus=corpus, split=split)
    options = _options(chunk_tokens)
    folder = (
        work
        / f"retrieval-{_slug(ds.name)}-{ingest}-{hashlib.sha1(json.dumps(options, sort_keys=True).encode()).hexdigest()[:8]}"
    )

    async def run() -> Any:
        embedder = None
        if vector_cache is not None:
            from reasonloop.kb.cache import CachedEmbedder
            from reasonloop.kb.embedding import create_embedder

            embedder = CachedEmbedder(
                create_embedder(state.settings.kb.embedder, options.get("embedder")), vector_cache
            )
        try:
            return await measure(embedder)
        finally:
            if embedder is not None:
                await embedder.aclose()

    async def measure(embedder: Any) -> Any:
        with _progress() as bar:
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
    _show(
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
@eval_app.command("qa")
def qa(
    data: Annotated[Path, typer.Argument(help="HotpotQA JSONL, SQuAD JSON (CMRC 2018), or a question JSONL.")],
    reasoning: Annotated[str, typer.Option("--reasoning", "-r", help="Comma-separated strategy ids.")] = "qa",
    llm: Annotated[str | None, typer.Option("--llm", help="provider:model (default: the configured [llm]).")] = None,
    ideal: Annotated[
        bool,
        typer.Option("--ideal", help="Use the scripted model replaying ideal replies (each strategy's exact cost)."),
    ] = False,
    corpus: Annotated[
        Path | None,
        typer.Option("--corpus", help="For a question JSONL: a corpus JSONL, or a folder of .md/.txt documents."),
    ] = None,
    kb_dir: Annotated[
        Path | None, typer.Option("--kb", help="Ask over this existing knowledge base instead of the set's documents.")
    ] = None,
    own_docs: Annotated[
        bool,
        typer.Option("--own-docs", help="Build the knowledge base from the chosen questions' own documents only."),
    ] = False,
    limit: LimitOption = None,
    seed: SeedOption = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Questions run at once.")] = 1,
    sets: Annotated[list[str] | None, typer.Option("--set", help="strategy.key=value setting (repeatable).")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", min=1, help="Tokens per model call.")] = None,
    temperature: Annotated[float, typer.Option("--temperature", min=0, max=2, help="Sampling temperature.")] = 0.0,
    judge: Annotated[
        str | None, typer.Option("--judge", help="provider:model judging faithfulness and relevance (off by default).")
    ] = None,
    work: WorkOption = DEFAULT_WORK,
    out: Annotated[
        Path | None, typer.Option("--out", help="Results folder (default: under --work, one per configuration).")
    ] = None,
    as_json: JsonOption = False,
    html: HtmlOption = None,
    show_errors: Annotated[
        int,
        typer.Option("--show-errors", min=0, help="Also print the first N answers that are not correct, wrong first."),
    ] = 0,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            help="Compare with an earlier run: its results folder (or its results.jsonl), paired per question.",
        ),
    ] = None,
    fail_if_worse: Annotated[
        bool,
        typer.Option("--fail-if-worse", help="Exit 4 when a figure is worse than --baseline's beyond its interval."),
    ] = False,
) -> None:
    """Score answers and their cost per strategy.

    Correct, abstained and wrong answers (overall and per group of questions), exact match, F1,
    evidence recall, citation precision, model calls, tokens, tool calls and time per strategy,
    side by side, each mean with its 95% interval. Exit code 3 when some questions failed
    (recorded; run again to retry), 4 when a figure is worse than the baseline's and failing on it was asked.
    """
    import asyncio

    from reasonloop.cli.eval_review import WORSE_EXIT, compare_with_baseline, print_baseline
    from reasonloop.cli.eval_review import show_errors as print_errors
    from reasonloop.eval.comparison import load_baseline
    from reasonloop.eval.datasets import load_qa_set
    from reasonloop.eval.hops import hop_section, read_hops
    from reasonloop.eval.judge import Judge
    from reasonloop.eval.qa import evaluate_qa, open_eval_kb
    from reasonloop.eval.report import qa_tables
    from reasonloop.llm.sampling import Sampling
    from reasonloop.registry import Registry, resolve

    if fail_if_worse and baseline is None:
        raise ConfigError("--fail-if-worse needs --baseline PREVIOUS (the results folder of an earlier run)")
    if baseline is not None:
        load_baseline(baseline)  # a missing or unreadable baseline stops the command before anything runs
    strategies = _csv(reasoning, "--reasoning")
    registry = Registry(state.settings.plugins.paths)
    for strategy in strategies:
        resolve("reasoning", strategy, registry)
    settings = _strategy_settings(sets or [], strategies)
    full = load_qa_set(data, corpus=corpus)
    chosen = full.select(limit, seed, own_docs=own_docs)
    hops = read_hops(data, chosen)  # multi-hop sets: the documents of each hop (MuSiQue, HotpotQA)
    if ideal:
        from reasonloop.eval.oracle import ideal_model

        model = ideal_model(chosen.items, hops)
        model.model = "ideal-hops" if hops else "ideal"
    else:
        model = _llm(llm)
    judge_llm = _llm(judge) if judge else None
    options = _options(None)
    # The documents' content is part of the key: an edited corpus gets a new knowledge base.
    contents = hashlib.sha1()
    for doc in sorted(chosen.docs, key=lambda d: d.id):
        contents.update(json.dumps([doc.id, doc.title, doc.text], ensure_ascii=False).encode())
    kb_key = hashlib.sha1(json.dumps([contents.hexdigest(), options], sort_keys=True).encode()).hexdigest()[:8]
    kb_folder = work / f"kb-{_slug(full.name)}-{'own' if own_docs else 'all'}-{kb_key}"
    manifest = {
        "data": str(data.resolve()),
        "corpus": str(corpus.resolve()) if corpus else "",
        "limit": limit,
        "seed": seed,
        "kb": str(kb_dir or kb_folder),
        "max_tokens": max_tokens,
        "temperature": temperature,
        "judge": judge or "",
    }
    key = hashlib.sha1(
        json.dumps({**manifest, "model": model.name, "settings": settings}, sort_keys=True).encode()
    ).hexdigest()[:10]
    folder = out or work / "runs" / f"{_slug(full.name)}-{key}"

    async def run() -> Any:
        from reasonloop.kb.knowledge_base import KnowledgeBase

        try:
            with _progress() as bar:
                if kb_dir is not None:
                    kb = KnowledgeBase.open(kb_dir, settings=state.settings, registry=registry)
                else:
                    ingest_task = bar.add_task(f"knowledge base ({len(chosen.docs):,} documents)", total=None)

                    def on_ingest(p: Any) -> None:
                        bar.update(ingest_task, total=p.chunks_total or None, completed=p.chunks_done)

                    kb = await open_eval_kb(chosen, kb_folder, options=options, on_progress=on_ingest)
                    bar.update(ingest_task, total=1, completed=1)
                try:
                    tasks = {s: bar.add_task(f"{s}", total=len(chosen.items)) for s in strategies}
                    failed = dict.fromkeys(strategies, 0)

                    def on_result(row: dict[str, Any], resumed: bool) -> None:
                        if row.get("error"):
                            failed[row["strategy"]] += 1
                            bar.update(
                                tasks[row["strategy"]],
                                description=f"{row['strategy']} ({failed[row['strategy']]} failed)",
                            )
                        bar.advance(tasks[row["strategy"]])

                    return await evaluate_qa(
                        chosen,
                        strategies,
                        llm=model,
                        retriever=kb.retriever(),
                        folder=folder,
                        manifest=manifest,
                        concurrency=concurrency,
                        settings=settings,
                        registry=registry,
                        sampling=Sampling(max_tokens=max_tokens, temperature=temperature),
                        judge=Judge(judge_llm) if judge_llm else None,
                        on_result=on_result,
                    )
                finally:
                    await kb.close()
        finally:
            await model.aclose()
            if judge_llm is not None:
                await judge_llm.aclose()

    report = asyncio.run(run())
    diffs = compare_with_baseline(report, baseline) if baseline is not None else []
    _show(
        report,
        html=html,
        title=f"Answers: {full.name} ({model.name})",
        kind="qa",
        as_json=as_json,
        heading=f"{escape(full.name)}: {len(chosen.items)} questions, model {escape(model.name)}; "
        f"results in {escape(str(folder))}",
        table=qa_tables(report.scores, report.rows) + hop_section(report, hops),
        extra={"baseline": [d.to_dict() for d in diffs]} if baseline is not None else None,
    )
    if not as_json:
        if show_errors:
            print_errors(report, show_errors)
        if baseline is not None:
            print_baseline(baseline, diffs)
    failures = sum(s.failed for s in report.scores)
    if failures:
        err_console.print(
            f"[bold yellow]{failures} question(s) failed[/] (recorded in {escape(str(folder))}; "
            "run the same command again to retry them)",
            highlight=False,
            soft_wrap=True,
        )
        for s in report.scores:
            for line in s.errors[:3]:
                err_console.print(f"  {escape(s.strategy)}: {escape(line)}", highlight=False, soft_wrap=True)
        raise typer.Exit(3)
    worse = [d for d in diffs if d.worse]
    if fail_if_worse and worse:
        err_console.print(
            f"[bold red]{len(worse)} figure(s) worse than the baseline[/] beyond their 95% interval",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(WORSE_EXIT)


def _strategy_settings(pairs: list[str], strategies: list[str]) -> dict[str, dict[str, Any]]:
    from reasonloop.cli.ask_cmd import parse_sets

    out: dict[str, dict[str, Any]] = {}
    for key, value in parse_sets(pairs).items():
        strategy, dot, name = key.partition(".")
        if not dot or strategy not in strategies:
            raise ConfigError(f"--set expects strategy.key=value for one of {', '.join(strategies)}, got {key!r}")
        out.setdefault(strategy, {})[name] = value
    return out


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
) -> None:
    """Score the tools an agent calls.

    Accuracy, per-tool precision and recall, a confusion table and the questions that went wrong.
    """
    import asyncio

    from reasonloop.eval.datasets import load_routing_set, subsample
    from reasonloop.eval.report import routing_tables
    from reasonloop.eval.routing import bundled_set_path, evaluate_routing
    from reasonloop.registry import Registry, resolve

    registry = Registry(state.settings.plugins.paths)
    resolve("reasoning", reasoning, registry)
    offered = _csv(tools, "--tools")
    path = data or bundled_set_path()
    items = subsample(load_routing_set(path), limit, seed)
    model = _llm(llm)
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
    folder = out or work / "runs" / f"routing-{_slug(path.stem)}-{key}"

    async def run() -> Any:
        from reasonloop.agents.agent import Agent
        from reasonloop.kb.knowledge_base import KnowledgeBase
        from reasonloop.tools.feedback import FeedbackStore

        kb = KnowledgeBase.open(kb_dir, settings=state.settings, registry=registry)
        feedback = FeedbackStore(":memory:")
        try:
            with _progress() as bar:
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
    _show(
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
