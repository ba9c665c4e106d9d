"""Tool-routing evaluation: does an agent call the tools a question needs, and only those?

Each question of a labelled set (:func:`~reasonloop.eval.datasets.load_routing_set`) is asked to
an agent offered the knowledge tools (``docsearch``, ``summarize``, ``kb_stats``, ``feedback`` by
default); the tools it called are compared with the label:

- *accuracy*: the set of tools called equals the labelled set (an empty label: no tool called);
- *per-tool precision and recall* over the questions;
- a *confusion table* of the labelled first tool (or ``none``) against the first tool called;
- the questions that went wrong, with what was called.

The package ships a bilingual set of its own: :data:`BUNDLED_SET` (``reasonloop eval routing``
uses it when no file is given).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from reasonloop.eval.datasets import RoutingItem
from reasonloop.eval.results import ResultStore
from reasonloop.events import ErrorEvent, ToolCall

__all__ = ["BUNDLED_SET", "DEFAULT_TOOLS", "RoutingReport", "bundled_set_path", "evaluate_routing", "score_routing"]

DEFAULT_TOOLS = ("docsearch", "summarize", "kb_stats", "feedback")
BUNDLED_SET = "routing_bilingual.jsonl"
NONE = "none"


def bundled_set_path() -> Path:
    """The shipped labelled set (English and Chinese questions)."""
    return Path(str(files("reasonloop.eval") / "data" / BUNDLED_SET))


@dataclass
class RoutingReport:
    questions: int
    failed: int
    accuracy: float
    per_tool: dict[str, dict[str, float]]
    confusion: dict[str, dict[str, int]]
    wrong: list[dict[str, Any]] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "rows"}


def score_routing(rows: Sequence[dict[str, Any]], tools: Sequence[str] = DEFAULT_TOOLS) -> RoutingReport:
    """Accuracy, per-tool precision/recall and the confusion table of finished ``rows``.

    Each row has ``expected`` and ``called`` (lists of tool names); rows with ``error`` count as failed.
    """
    done = [r for r in rows if not r.get("error")]
    names = sorted(set(tools) | {t for r in done for t in (*r["expected"], *r["called"])})
    per_tool: dict[str, dict[str, float]] = {}
    for name in names:
        tp = sum(1 for r in done if name in r["called"] and name in r["expected"])
        fp = sum(1 for r in done if name in r["called"] and name not in r["expected"])
        fn = sum(1 for r in done if name not in r["called"] and name in r["expected"])
        per_tool[name] = {
            "precision": tp / (tp + fp) if tp + fp else 0.0,
            "recall": tp / (tp + fn) if tp + fn else 0.0,
            "support": float(tp + fn),
        }
    confusion: dict[str, dict[str, int]] = {}
    counts = Counter(
        (r["expected"][0] if r["expected"] else NONE, r["called"][0] if r["called"] else NONE) for r in done
    )
    for (expected, called), n in sorted(counts.items()):
        confusion.setdefault(expected, {})[called] = n
    right = [r for r in done if set(r["called"]) == set(r["expected"])]
    wrong = [
        {"id": r["id"], "question": r["question"], "expected": r["expected"], "called": r["called"]}
        for r in done
        if set(r["called"]) != set(r["expected"])
    ]
    return RoutingReport(
        questions=len(rows),
        failed=len(rows) - len(done),
        accuracy=len(right) / len(done) if done else 0.0,
        per_tool=per_tool,
        confusion=confusion,
        wrong=wrong,
        rows=list(rows),
    )


async def evaluate_routing(
    items: Sequence[RoutingItem],
    *,
    make_agent: Callable[[], Any],
    folder: str | Path,
    manifest: dict[str, Any],
    tools: Sequence[str] = DEFAULT_TOOLS,
    on_result: Callable[[dict[str, Any], bool], None] | None = None,
) -> RoutingReport:
    """Ask every question to a fresh agent from ``make_agent`` and score the tools it called.

    Results go to ``folder`` one line per question (resumed like :func:`~reasonloop.eval.qa.evaluate_qa`).
    """
    store = ResultStore(folder, {"kind": "routing", **manifest})
    try:
        for item in items:
            if store.has("routing", item.id):
                if on_result:
                    on_result(store.done[("routing", item.id)], True)
                continue
            called: list[str] = []
            error = None
            started = time.perf_counter()
            try:
                agent = make_agent()
                async for event in agent.stream(item.question):
                    if event.depth:
                        continue
                    if isinstance(event, ToolCall) and event.tool not in called:
                        called.append(event.tool)
                    elif isinstance(event, ErrorEvent):
                        error = {"code": event.code, "message": event.message}
            except Exception as exc:  # recorded, and the evaluation goes on
                error = {"code": type(exc).__name__, "message": str(exc)}
            row = {
                "strategy": "routing",
                "id": item.id,
                "question": item.question,
                "category": item.category,
                "language": item.language,
                "expected": list(item.tools),
                "called": called,
                "seconds": time.perf_counter() - started,
            }
            if error:
                row["error"] = error
            store.add(row)
            if on_result:
                on_result(row, False)
    finally:
        store.close()
    ids = [i.id for i in items]
    return score_routing([*store.rows("routing", ids), *store.failed("routing", ids)], tools)
