"""Answer evaluation: strategies side by side on a question set, quality and cost per strategy.

For each strategy and question, an :class:`~reasonloop.agents.agent.Agent` answers over the
set's own knowledge base and its event stream is read for: the answer and its citations, every
passage the run retrieved (the citations of its ``ToolResult`` and ``Searched`` events), its usage
(tool calls and the searches the strategy made itself apart) and its wall time. Each
finished question is one line in the results folder (:class:`~reasonloop.eval.results.ResultStore`),
so an interrupted evaluation resumes and a finished one is never recomputed. A question whose
run fails is recorded as an error and the evaluation goes on.

Scores per question: its outcome, *correct*, *abstained* or *wrong*
(:mod:`reasonloop.eval.outcomes`, read with the answer's ``abstained`` flag), exact match and F1
(:mod:`reasonloop.eval.metrics`, best over the accepted answers; none for a question without
one), *evidence recall* (share of the gold documents among those the run retrieved), *citation
precision* (share of the answer's citations whose passage contains an accepted answer, or for a
yes/no question the set's evidence sentence when it gives one) and, with a judge model, faithfulness and relevance (:mod:`reasonloop.eval.judge`). Per strategy, the
outcomes are counted over all questions and per group of questions (:attr:`QAItem.group`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reasonloop.errors import ConfigError
from reasonloop.eval.answer_scores import answer_language, best_exact_match, best_f1
from reasonloop.eval.comparison import figure_intervals
from reasonloop.eval.datasets import QAItem, QASet
from reasonloop.eval.intervals import Interval
from reasonloop.eval.metrics import contains_answer, mean, percentile, strip_citations
from reasonloop.eval.outcomes import is_yes_no, outcome, wrong_share, yes_no_of
from reasonloop.eval.results import ResultStore
from reasonloop.eval.scoring import rescore, row_outcome
from reasonloop.events import Answer, ErrorEvent, RunStarted, Searched, ToolCall, ToolResult
from reasonloop.kb.base import Hit
from reasonloop.llm.base import LLM
from reasonloop.llm.sampling import Sampling

__all__ = [
    "GroupScore",
    "QAReport",
    "RecordingRetriever",
    "StrategyScore",
    "evaluate_qa",
    "evidence_recall",
    "open_eval_kb",
    "summarize",
]


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
class GroupScore:
    """The outcomes of one strategy on one group of questions (EM and F1 over those with an answer)."""

    questions: int = 0
    failed: int = 0
    correct: int = 0
    abstained: int = 0
    wrong: int = 0
    wrong_share: float | None = None
    """``wrong / (correct + wrong)``: how often an answer not counted as abstained is wrong."""
    em: float | None = None
    f1: float | None = None
    intervals: dict[str, Interval] = field(default_factory=dict)
    """``em`` and ``f1`` -> mean and 95% bootstrap interval over the group's questions."""

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["intervals"] = {name: i.to_dict() for name, i in self.intervals.items()}
        return out


@dataclass
class StrategyScore:
    """One row of the side-by-side table (means per answered question; times in seconds)."""

    strategy: str
    questions: int = 0
    failed: int = 0
    ran: str = ""
    """What actually answered when it differs from ``strategy`` ("react → evidence answer: base model")."""
    correct: int = 0
    abstained: int = 0
    wrong: int = 0
    wrong_share: float | None = None
    """``wrong / (correct + wrong)``: how often an answer not counted as abstained is wrong."""
    em: float = 0.0
    f1: float = 0.0
    evidence_recall: float | None = None
    citation_precision: float | None = None
    llm_calls: float = 0.0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    tool_calls: float = 0.0
    searches: float = 0.0
    """Searches the strategy made itself, outside a tool round (qa's, decompose's): no tool calls."""
    seconds: float = 0.0
    p50_s: float = 0.0
    p95_s: float = 0.0
    faithfulness: float | None = None
    relevance: float | None = None
    errors: list[str] = field(default_factory=list)
    groups: dict[str, GroupScore] = field(default_factory=dict)
    """Per group of questions (only when the set names groups), in the order they first appear."""
    intervals: dict[str, Interval] = field(default_factory=dict)
    """Figure key (``em``, ``f1``, ``correct``, ``seconds``, ...) -> its mean and 95% bootstrap interval
    (:func:`~reasonloop.eval.comparison.figure_intervals`)."""

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["groups"] = {name: g.to_dict() for name, g in self.groups.items()}
        out["intervals"] = {name: i.to_dict() for name, i in self.intervals.items()}
        return out


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


def _counts(score: GroupScore | StrategyScore, rows: list[dict[str, Any]]) -> None:
    for row in rows:
        kind = row_outcome(row)
        setattr(score, kind, getattr(score, kind) + 1)
    score.wrong_share = wrong_share(score.correct, score.wrong)


def summarize(strategy: str, rows: list[dict[str, Any]], failed: list[dict[str, Any]]) -> StrategyScore:
    """The table row of ``strategy`` from its finished rows and its failed ones.

    EM and F1 are means over the rows that have them (an unanswerable question has none). Rows are
    scored again by the current rules first (:func:`rescore`).
    """
    rows = [rescore(r) for r in rows]
    score = StrategyScore(strategy, questions=len(rows) + len(failed), failed=len(failed))
    score.errors = sorted(
        {f"{r['id']}: {r['error'].get('code', '')} {r['error'].get('message', '')}"[:200] for r in failed}
    )
    names = list(dict.fromkeys(r.get("group", "") for r in [*rows, *failed]))
    if any(names):
        for name in names:
            mine = [r for r in rows if r.get("group", "") == name]
            group = GroupScore(
                questions=len(mine) + sum(r.get("group", "") == name for r in failed),
                failed=sum(r.get("group", "") == name for r in failed),
            )
            _counts(group, mine)
            em, f1 = _optional_mean([r.get("em") for r in mine]), _optional_mean([r.get("f1") for r in mine])
            group.em, group.f1 = (None if em is None else 100 * em), (None if f1 is None else 100 * f1)
            group.intervals = {k: v for k, v in figure_intervals(mine).items() if k in ("em", "f1")}
            score.groups[name or "(none)"] = group
    if not rows:
        return score
    ran = [r["ran"] for r in rows if r.get("ran")]
    score.ran = max(set(ran), key=ran.count) if ran else ""
    _counts(score, rows)
    times = [r["seconds"] for r in rows]
    score.em = 100 * (_optional_mean([r.get("em") for r in rows]) or 0.0)
    score.f1 = 100 * (_optional_mean([r.get("f1") for r in rows]) or 0.0)
    score.evidence_recall = _optional_mean([r.get("evidence_recall") for r in rows])
    score.citation_precision = _optional_mean([r.get("citation_precision") for r in rows])
    for name in ("llm_calls", "prompt_tokens", "completion_tokens", "tool_calls", "searches"):
        setattr(score, name, mean(r["usage"].get(name, 0) for r in rows))  # rows of older runs have no searches
    score.seconds = mean(times)
    score.p50_s, score.p95_s = percentile(times, 50), percentile(times, 95)
    score.intervals = figure_intervals(rows)
    score.faithfulness = _optional_mean([r.get("judge", {}).get("faithfulness") for r in rows])
    score.relevance = _optional_mean([r.get("judge", {}).get("relevance") for r in rows])
    return score


def evidence_recall(gold_ids: Sequence[str], ids: Sequence[str], sources: Sequence[str]) -> float | None:
    """Share of ``gold_ids`` among the documents a run retrieved (None when the question names none).

    A gold id is found when it is a retrieved document's id, or its source (the path ``reasonloop kb
    list`` shows, for a knowledge base given with ``--kb``) or the end of that path after a ``/``
    (``policies/travel.md`` finds ``/srv/docs/policies/travel.md``).
    """
    golds = set(gold_ids)
    if not golds:
        return None
    known = set(ids) | {s.replace("\\", "/") for s in sources}

    def found(gold: str) -> bool:
        g = gold.replace("\\", "/")
        return g in known or any(k.endswith("/" + g.lstrip("/")) for k in known)

    return sum(found(g) for g in golds) / len(golds)


def _labels(item: QAItem) -> dict[str, Any]:
    """What a row keeps of the question besides its answers: its group, and that it has no answer."""
    labels: dict[str, Any] = {}
    if item.group:
        labels["group"] = item.group
    if not item.answerable:
        labels["answerable"] = False
    return labels


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
    sources: list[str] = []
    trace: list[str] = []
    ran = run_id = ""
    async for event in agent.stream(item.question, sampling=sampling):
        if event.depth:
            continue
        if isinstance(event, RunStarted):
            ran, run_id = event.ran, event.run_id
        elif isinstance(event, ToolCall):
            tool_calls.append(event.tool)
        elif isinstance(event, ToolResult | Searched):
            retrieved.extend(c.document_id or "" for c in event.citations)
            sources.extend(c.source for c in event.citations if c.source)
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
        **({"run_id": run_id} if run_id else {}),
        "question": item.question,
        "answers": list(item.answers),
        **_labels(item),
        "seconds": seconds,
        **({"ran": ran} if ran else {}),
    }
    if error is not None or answer is None:
        row["error"] = error or {"code": "run.error", "message": "no answer"}
        return row
    text = answer.text.strip()
    scored = strip_citations(text)
    retrieved_ids = list(dict.fromkeys([*retrieved, *(h.document_id for h in recorder.hits.values())]))
    cited = [c for c in answer.citations if c.chunk_id or c.quote]
    cited_text = [(recorder.hits[c.chunk_id].text if c.chunk_id in recorder.hits else c.quote) for c in cited]
    answered = bool(item.answers)
    language = answer_language(item.question, item.answers)
    # A passage cannot contain "yes" or "no": a yes/no answer's citation is checked against the
    # question's evidence sentence when the set gives one.
    cited_golds = [item.evidence] if item.evidence and is_yes_no(item.answers) else list(item.answers)
    row.update(
        prediction=text,
        abstained=answer.abstained,
        outcome=outcome(item.answers, item.answerable, text, answer.abstained),
        language=language,
        em=best_exact_match(scored, item.answers, language) if answered else None,
        f1=best_f1(scored, item.answers, language) if answered else None,
        evidence_recall=evidence_recall(
            item.gold_ids, retrieved_ids, [*sources, *(h.source for h in recorder.hits.values())]
        ),
        citation_precision=mean(contains_answer(t, cited_golds) for t in cited_text)
        if cited_text and cited_golds
        else None,
        usage={
            "llm_calls": answer.usage.llm_calls,
            "prompt_tokens": answer.usage.prompt_tokens,
            "completion_tokens": answer.usage.completion_tokens,
            "tool_calls": answer.usage.tool_calls,
            "searches": answer.usage.searches,
        },
        tools=tool_calls,
        retrieved=retrieved_ids[:20],
        cited=[c.document_id for c in cited],
        stop_reason=answer.stop_reason,
        trace=[t for t in trace if t][:5],
    )
    if is_yes_no(item.answers):
        row["decision"] = yes_no_of(text)  # what the answer's opening decided (None: nothing)
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
                    **_labels(item),
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
    rows = {s: [rescore(r) for r in store.rows(s, ids)] for s in strategies}
    scores = [summarize(s, rows[s], store.failed(s, ids)) for s in strategies]
    return QAReport(qa.name, llm.name, scores, rows, str(store.folder))
