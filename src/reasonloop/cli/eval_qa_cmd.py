"""``reasonloop eval qa``: answers per strategy, scored (correct, abstained, wrong, EM, F1, cost).

One result line per question goes into the results folder (printed), so running the same command
again resumes where it stopped; ``--baseline`` compares with an earlier run.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from reasonloop.cli.console import err_console, escape
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
from reasonloop.cli.root import state
from reasonloop.errors import ConfigError


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
    reader: Annotated[
        str | None,
        typer.Option(
            "--reader", help="Search as this reader: PRINCIPAL or PRINCIPAL:GROUP,GROUP (default: everything)."
        ),
    ] = None,
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

    from reasonloop.kb.access import Reader

    as_reader = None if reader is None else Reader.parse(reader, field_name="--reader")  # before any work

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
    strategies = csv_items(reasoning, "--reasoning")
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
        model = make_llm(llm)
    judge_llm = make_llm(judge) if judge else None
    options = kb_options(None)
    # The documents' content is part of the key: an edited corpus gets a new knowledge base.
    contents = hashlib.sha1()
    for doc in sorted(chosen.docs, key=lambda d: d.id):
        contents.update(json.dumps([doc.id, doc.title, doc.text], ensure_ascii=False).encode())
    kb_key = hashlib.sha1(json.dumps([contents.hexdigest(), options], sort_keys=True).encode()).hexdigest()[:8]
    kb_folder = work / f"kb-{slug(full.name)}-{'own' if own_docs else 'all'}-{kb_key}"
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
    folder = out or work / "runs" / f"{slug(full.name)}-{key}"

    async def run() -> Any:
        from reasonloop.kb.knowledge_base import KnowledgeBase

        try:
            with progress_bar() as bar:
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
                        retriever=(kb if as_reader is None else kb.for_reader(as_reader)).retriever(),
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
    show_report(
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
