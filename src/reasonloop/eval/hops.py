"""The hops of multi-hop questions, and how many of each hop's documents a run retrieved.

A two-hop question ("Who was the first president of the association which published the
Journal of Psychotherapy Integration?") needs one document to find the bridge entity (the
American Psychological Association) and a second, found only by searching for that entity.
:func:`read_hops` gives each question its :class:`Hop` list, in the order a reader must take
them:

- **MuSiQue** (a JSON list with ``question_decomposition``): the set's own decomposition, each
  hop with its sub-question (``#1`` standing for the first hop's answer), its answer and the
  paragraph that supports it.
- **HotpotQA** (two supporting paragraphs, no decomposition): a *comparison* when both
  paragraphs' titles are in the question (two independent hops, one per title); otherwise a
  *bridge*: the first hop is the paragraph that names the other one's title, looked up by its own
  title when the question names it (by the question otherwise), and the second hop is a search
  for the other title (the bridge entity). A question whose order cannot be read this way has
  no hops.

:func:`hop_recall` counts, per strategy, the questions whose first-hop document, second-hop
document and every hop document were among those the run retrieved.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reasonloop.eval.datasets import Doc, QAItem, QASet

__all__ = ["Hop", "HopRecall", "hop_recall", "hop_section", "hop_table", "hotpot_hops", "read_hops"]


@dataclass(frozen=True, slots=True)
class Hop:
    """One hop of a multi-hop question."""

    doc_id: str
    """The document that supports this hop."""
    query: str
    """What a reader searches for this hop; ``#k`` stands for the answer of hop ``k``."""
    answer: str = ""
    """What the hop finds (the bridge to the next hop); empty when the hop is a lookup of an
    entity the question names already."""


_PAREN = re.compile(r"\s*\([^)]*\)\s*$")


def _name(doc: Doc) -> str:
    """A title without its trailing disambiguation: ``Kiss and Tell (1945 film)`` -> ``Kiss and Tell``."""
    return _PAREN.sub("", doc.title or doc.id).strip()


def hotpot_hops(item: QAItem, docs: Mapping[str, Doc]) -> tuple[Hop, ...]:
    """The hops of a HotpotQA question from its two supporting paragraphs (``()`` when unclear)."""
    if len(item.gold_ids) != 2 or any(g not in docs for g in item.gold_ids):
        return ()
    a, b = (docs[g] for g in item.gold_ids)
    question = item.question.lower()
    in_q = {d.id: _name(d).lower() in question for d in (a, b)}
    if all(in_q.values()):  # comparison: one lookup per entity, in the question's order
        first, second = sorted((a, b), key=lambda d: question.find(_name(d).lower()))
        return (Hop(first.id, _name(first)), Hop(second.id, _name(second)))
    a_names_b = _name(b).lower() in a.text.lower()
    b_names_a = _name(a).lower() in b.text.lower()
    if a_names_b != b_names_a:
        first, second = (a, b) if a_names_b else (b, a)
    elif a_names_b and in_q[a.id] != in_q[b.id]:
        first, second = (a, b) if in_q[a.id] else (b, a)
    else:
        return ()
    # the first hop looks up the entity the question names (its title), else the question itself
    lookup = _name(first) if in_q[first.id] else item.question
    return (Hop(first.id, lookup, answer=_name(second)), Hop(second.id, "#1"))


def _doc_index(docs: Sequence[Doc]) -> dict[tuple[str, str], str]:
    return {(d.title, d.text): d.id for d in docs}


def _musique_hops(raw: Mapping[str, Any], index: Mapping[tuple[str, str], str]) -> tuple[Hop, ...]:
    paragraphs = raw.get("paragraphs") or []
    hops = []
    for step in raw.get("question_decomposition") or []:
        at = step.get("paragraph_support_idx")
        para = next((p for p in paragraphs if p.get("idx") == at), None)
        if para is None:
            return ()
        doc_id = index.get((para.get("title", ""), para.get("paragraph_text", "")))
        if doc_id is None:
            return ()
        hops.append(Hop(doc_id, str(step.get("question", "")).strip(), str(step.get("answer", "")).strip()))
    return tuple(hops) if len(hops) > 1 else ()


def read_hops(path: str | Path, qa: QASet) -> dict[str, tuple[Hop, ...]]:
    """Question id -> its hops, for the questions of ``qa`` read from ``path`` (see the module doc).

    A set that is neither MuSiQue nor HotpotQA has no hops (an empty mapping).
    """
    path = Path(path)
    wanted = {item.id for item in qa.items}
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not (isinstance(data, list) and data and isinstance(data[0], dict)):
            return {}
        index = _doc_index(qa.docs)
        out = {}
        for raw in data:
            if isinstance(raw, dict) and str(raw.get("id")) in wanted and "question_decomposition" in raw:
                hops = _musique_hops(raw, index)
                if hops:
                    out[str(raw["id"])] = hops
        return out
    docs = {d.id: d for d in qa.docs}
    if not any(item.context_ids for item in qa.items):
        return {}
    return {item.id: hops for item in qa.items if (hops := hotpot_hops(item, docs))}


@dataclass
class HopRecall:
    """Per strategy: of the questions with hops, how many had each hop's document retrieved."""

    strategy: str
    questions: int = 0
    first: int = 0
    second: int = 0
    every: int = 0
    """Questions whose every hop document was retrieved."""
    usage: dict[str, float] = field(default_factory=dict)
    """Model calls, prompt and completion tokens, tool calls and searches per question, over the same questions."""

    def share(self, name: str) -> float | None:
        return getattr(self, name) / self.questions if self.questions else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "questions": self.questions,
            **{f"{n}_hop": self.share(n) for n in ("first", "second", "every")},
            **self.usage,
        }


def hop_recall(strategy: str, rows: Sequence[Mapping[str, Any]], hops: Mapping[str, Sequence[Hop]]) -> HopRecall:
    """Count, over the finished ``rows`` of ``strategy`` whose question has hops, the questions whose
    first-hop, second-hop and every hop document is among the row's ``retrieved`` documents."""
    score = HopRecall(strategy)
    for row in rows:
        chain = hops.get(row.get("id", ""))
        if not chain or "error" in row:
            continue
        retrieved = set(row.get("retrieved") or ())
        found = [hop.doc_id in retrieved for hop in chain]
        score.questions += 1
        score.first += found[0]
        score.second += found[1]
        score.every += all(found)
        for name, value in (row.get("usage") or {}).items():
            score.usage[name] = score.usage.get(name, 0.0) + value
    score.usage = {name: total / score.questions for name, total in score.usage.items()}
    return score


def hop_table(scores: Sequence[HopRecall]) -> str:
    """A Markdown table: per strategy, the share of questions with each hop's document retrieved,
    and model calls, tokens (prompt + completion), tool calls and the searches a strategy made itself
    (qa's, decompose's: no tool calls) per question."""
    lines = [
        "| strategy | questions | 1st hop found | 2nd hop found | all hops found | model calls | tokens | tool calls "
        "| searches |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in scores:
        cells = [s.strategy, str(s.questions)]
        cells += [f"{100 * v:.0f}%" if (v := s.share(n)) is not None else "-" for n in ("first", "second", "every")]
        u = s.usage
        tokens = u.get("prompt_tokens", 0.0) + u.get("completion_tokens", 0.0)
        cells += [f"{u.get('llm_calls', 0.0):.2f}", f"{tokens:.0f}", f"{u.get('tool_calls', 0.0):.2f}"]
        cells.append(f"{u.get('searches', 0.0):.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def hop_section(report: Any, hops: Mapping[str, Sequence[Hop]]) -> str:
    """The per-hop table of a :class:`~reasonloop.eval.qa.QAReport`, after a blank line ('' without hops)."""
    if not hops:
        return ""
    scores = [hop_recall(s.strategy, report.rows.get(s.strategy, []), hops) for s in report.scores]
    return "\n\nEvidence per hop, over the questions whose hops are known:\n" + hop_table(scores)
