"""Answer evaluation: strategies side by side on a question set, quality and cost per strategy.

For each strategy and question, an :class:`~reasonloop.agents.agent.Agent` answers over the
set's own knowledge base and its event stream is read for: the answer and its citations, every
passage the run retrieved (the ``ToolResult`` citations), its usage and its wall time. Each
finished question is one line in the results folder (:class:`~reasonloop.eval.results.ResultStore`),
so an interrupted evaluation resumes and a finished one is never recomputed. A question whose
run fails is recorded as an error and the evaluation goes on.

Scores per question: exact match and F1 (:mod:`reasonloop.eval.metrics`, best over the accepted
answers), *evidence recall* (share of the gold documents among those the run retrieved),
*citation precision* (share of the answer's citations whose passage contains an accepted
answer) and, with a judge model, faithfulness and relevance (:mod:`reasonloop.eval.judge`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reasonloop.errors import ConfigError
from reasonloop.eval.datasets import QAItem, QASet
from reasonloop.eval.metrics import best_exact_match, best_f1, contains_answer, mean, percentile, strip_citations
from reasonloop.eval.results import ResultStore
from reasonloop.events import Answer, ErrorEvent, ToolCall, ToolResult
from reasonloop.kb.base import Hit
from reasonloop.llm.base import LLM
from reasonloop.llm.sampling import Sampling

__all__ = ["QAReport", "RecordingRetriever", "StrategyScore", "evaluate_qa", "open_eval_kb", "summarize"]


async def open_eval_kb(
    qa: QASet,
    workdir: str | Path,
    *,
    options: dict[str, Any] | None = None,
    embedder: Any = None,
    on_progress: Callable[[Any], None] | None = None,
) -> Any:
    """The knowledge base of ``qa``'s own documents in ``workdir/kb`` (built once, then reused).

    Documents are ingested as records, so a hit's ``document_id`` is the set's document id.

    Raises:
        ConfigError: the set has no documents of its own.
    """
    from reasonloop.eval.datasets import RetrievalSet
    from reasonloop.eval.retrieval import build_index

    if not qa.docs:
        raise ConfigError(f"{qa.name} has no documents of its own: give a corpus or an existing knowledge base")
    kb, _ = await build_index(
        RetrievalSet(qa.name, qa.docs, [], {}), workdir, options=options, embedder=embedder, on_progress=on_progress
    )
    return kb


class RecordingRetriever:
    """A retriever that remembers every hit it returned (full chunk text, for the scores)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.hits: dict[str, Hit] = {}

    async def search(self, query: str, top_k: int | None = None, filters: Any = None, **kwargs: Any) -> list[Hit]:
        hits = await self.inner.search(query, top_k, filters, **kwargs)
        for hit in hits:
            self.hits.setdefault(hit.chunk_id, hit)
        return hits

    def __getattr__(self, name: str) -> Any:  # similarity, stats, ... of the wrapped retriever
        return getattr(self.inner, name)


@dataclass
class StrategyScore:
    """One row of the side-by-side table (means per answered question; times in seconds)."""

    strategy: str
    questions: int = 0
    failed: int = 0
    em: float = 0.0
    f1: float = 0.0
    evidence_recall: float | None = None
    citation_precision: float | None = None
    llm_calls: float = 0.0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    tool_calls: float = 0.0
    seconds: float = 0.0
    p50_s: float = 0.0
    p95_s: float = 0.0
    faithfulness: float | None = None
    relevance: float | None = None
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class QAReport:
    name: str
    model: str
    scores: list[StrategyScore]
    rows: dict[str, list[dict[str, Any]]]
    folder: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model": self.model,
            "folder": self.folder,
            "strategies": [s.to_dict() for s in self.scores],
        }


def _optional_mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return mean(present) if present else None


def summarize(strategy: str, rows: list[dict[str, Any]], failed: list[dict[str, Any]]) -> StrategyScore:
    """The table row of ``strategy`` from its finished rows and its failed ones."""
    score = StrategyScore(strategy, questions=len(rows) + len(failed), failed=len(failed))
    score.errors = sorted(
        {f"{r['id']}: {r['error'].get('code', '')} {r['error'].get('message', '')}"[:200] for r in failed}
    )
    if not rows:
        return score
    times = [r["seconds"] for r in rows]
    score.em = 100 * mean(r["em"] for r in rows)
    score.f1 = 100 * mean(r["f1"] for r in rows)
    score.evidence_recall = _optional_mean([r.get("evidence_recall") for r in rows])
    score.citation_precision = _optional_mean([r.get("citation_precision") for r in rows])
    for name in ("llm_calls", "prompt_tokens", "completion_tokens", "tool_calls"):
        setattr(score, name, mean(r["usage"][name] for r in rows))
    score.seconds = mean(times)
    score.p50_s, score.p95_s = percentile(times, 50), percentile(times, 95)
    score.faithfulness = _optional_mean([r.get("judge", {}).get("faithfulness") for r in rows])
    score.relevance = _optional_mean([r.get("judge", {}).get("relevance") for r in rows])
    return score


async def _one(
    item: QAItem,
    strategy: str,
    make_agent: Callable[[str, RecordingRetriever], Any],
    retriever: Any,
    sampling: Sampling | None,
    judge: Any,
) -> dict[str, Any]:
    recorder = RecordingRetriever(retriever)
    agent = make_agent(strategy, recorder)
    started = time.perf_counter()
    answer: Answer | None = None
    error: dict[str, Any] | None = None
    tool_calls: list[str] = []
    retrieved: list[str] = []
    trace: list[str] = []
    async for event in agent.stream(item.question, sampling=sampling):
        if event.depth:
            continue
        if isinstance(event, ToolCall):
            tool_calls.append(event.tool)
        elif isinstance(event, ToolResult):
            retrieved.extend(c.document_id or "" for c in event.citations)
        elif isinstance(event, Answer):
            answer = event
        elif isinstance(event, ErrorEvent):
            error = {"code": event.code, "message": event.message}
        if type(event).__name__ in ("Progress", "Thought"):
            trace.append(getattr(event, "message", "") or getattr(event, "text", ""))
    seconds = time.perf_counter() - started
    row: dict[str, Any] = {
        "strategy": strategy,
        "id": item.id,
        "question": item.question,
        "answers": list(item.answers),
        "seconds": seconds,
    }
    if error is not None or answer is None:
        row["error"] = error or {"code": "run.error", "message": "no answer"}
        return row
    text = answer.text.strip()
    scored = strip_citations(text)
    retrieved_ids = list(dict.fromkeys([*retrieved, *(h.document_id for h in recorder.hits.values())]))
    cited = [c for c in answer.citations if c.chunk_id or c.quote]
    cited_text = [(recorder.hits[c.chunk_id].text if c.chunk_id in recorder.hits else c.quote) for c in cited]
    row.update(
        prediction=text,
        em=best_exact_match(scored, item.answers),
        f1=best_f1(scored, item.answers),
        evidence_recall=(len(set(item.gold_ids) & set(retrieved_ids)) / len(set(item.gold_ids)))
        if item.gold_ids
        else None,
        citation_precision=mean(contains_answer(t, item.answers) for t in cited_text) if cited_text else None,
        usage={
            "llm_calls": answer.usage.llm_calls,
            "prompt_tokens": answer.usage.prompt_tokens,
            "completion_tokens": answer.usage.completion_tokens,
            "tool_calls": answer.usage.tool_calls,
        },
        tools=tool_calls,
        retrieved=retrieved_ids[:20],
        cited=[c.document_id for c in cited],
        stop_reason=answer.stop_reason,
        trace=[t for t in trace if t][:5],
    )
    if judge is not None:
        row["judge"] = await judge.score(item.question, text, cited_text)
    return row


async def evaluate_qa(
    qa: QASet,
    strategies: Sequence[str],
    *,
    llm: LLM,
    retriever: Any,
    folder: str | Path,
    manifest: dict[str, Any] | None = None,
    limit: int | None = None,
    concurrency: int = 1,
    settings: dict[str, dict[str, Any]] | None = None,
    sampling: Sampling | None = None,
    judge: Any = None,
    registry: Any = None,
    on_result: Callable[[dict[str, Any], bool], None] | None = None,
) -> QAReport:
    """Run every strategy on every question of ``qa`` (the first ``limit``) and score them.

    Args:
        llm: The model every strategy uses.
        retriever: The knowledge base's retriever (searched by every run, wrapped to record hits).
        folder: Where results go (``results.jsonl``, ``manifest.json``); reused to resume.
        manifest: What identifies this evaluation (set, model, options); a folder made for another
            manifest is refused.
        settings: Per-strategy settings.
        sampling: The runs' ``max_tokens`` / ``temperature``.
        judge: A :class:`~reasonloop.eval.judge.Judge` for the model-judged scores (off when None).
        on_result: ``(row, resumed)`` after each question (resumed: read back from the folder).

    Raises:
        PluginNotFound: an unknown strategy id (before anything runs).
        ConfigError: no strategies, or the folder holds another evaluation.
    """
    from reasonloop.agents.agent import Agent
    from reasonloop.registry import resolve

    if not strategies:
        raise ConfigError("no strategies to evaluate")
    for strategy in strategies:
        resolve("reasoning", strategy, registry)  # PluginNotFound names the id and the known ones
    items = qa.items[:limit] if limit else list(qa.items)
    manifest = {"set": qa.name, "model": llm.name, "strategies": sorted(strategies), **(manifest or {})}
    manifest["strategy_settings"] = {s: (settings or {}).get(s, {}) for s in sorted(strategies)}
    store = ResultStore(folder, {k: v for k, v in manifest.items() if k != "strategies"})

    def make_agent(strategy: str, recorder: RecordingRetriever) -> Agent:
        return Agent(
            reasoning=strategy, llm=llm, kb=recorder, settings=(settings or {}).get(strategy), registry=registry
        )

    gate = asyncio.Semaphore(max(1, concurrency))

    async def run(item: QAItem, strategy: str) -> None:
        if store.has(strategy, item.id):
            if on_result:
                on_result(store.done[(strategy, item.id)], True)
            return
        async with gate:
            try:
                row = await _one(item, strategy, make_agent, retriever, sampling, judge)
            except Exception as exc:  # a defect outside the run's own error handling: recorded too
                row = {
                    "strategy": strategy,
                    "id": item.id,
                    "question": item.question,
                    "answers": list(item.answers),
                    "seconds": 0.0,
                    "error": {"code": type(exc).__name__, "message": str(exc)},
                }
            store.add(row)
            if on_result:
                on_result(row, False)

    try:
        for strategy in strategies:
            await asyncio.gather(*(run(item, strategy) for item in items))
    finally:
        store.close()
    ids = [i.id for i in items]
    rows = {s: store.rows(s, ids) for s in strategies}
    scores = [summarize(s, rows[s], store.failed(s, ids)) for s in strategies]
    return QAReport(qa.name, llm.name, scores, rows, str(store.folder))
