"""Reading the replies of a research run's planner, judge and report writer, as small models write them.

The planner and the judge are asked for one JSON object. Models wrap it in prose or a code fence,
use single quotes or trailing commas, name the keys differently, or write a numbered list instead:
:func:`json_object` finds the first object that reads, and the readers accept the usual synonyms.
A judge reply that carries no decision at all is reported as unreadable (``None``), never guessed;
the strategy asks again once, then falls back. The report is markdown: ``## `` headings start its
sections, and the section named like "Not established" lists what the research could not find.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from reasonloop.events import JudgeOutcome, ReportSection

__all__ = ["Judgement", "json_object", "parse_judgement", "parse_questions", "parse_report"]

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_ITEM = re.compile(r"^\s*(?:[-*•]|\(?\d{1,2}[.)、:：]|[Qq]\d{1,2}[.:：])\s*(?P<q>.+?)\s*$")
_HEADING = re.compile(r"^\s*#{1,4}\s+(?P<title>.+?)\s*#*\s*$")

_OUTCOMES: dict[str, JudgeOutcome] = {
    "answer": "answer",
    "answerable": "answer",
    "sufficient": "answer",
    "enough": "answer",
    "caveat": "caveat",
    "answer_with_caveat": "caveat",
    "answerwithcaveat": "caveat",
    "partial": "caveat",
    "gap": "gap",
    "gaps": "gap",
    "insufficient": "gap",
    "follow_up": "gap",
    "followup": "gap",
    "research": "gap",
    "search": "gap",
    "more": "gap",
    "reconcile": "reconcile",
    "contradiction": "reconcile",
    "conflict": "reconcile",
    "unanswerable": "unanswerable",
    "cannot_answer": "unanswerable",
    "none": "unanswerable",
    "回答": "answer",
    "充分": "answer",
    "附带说明": "caveat",
    "缺口": "gap",
    "矛盾": "reconcile",
    "无法回答": "unanswerable",
}
_DECISION_KEYS = ("decision", "outcome", "verdict", "action", "result", "决定", "结论")
_GAP_KEYS = ("gaps", "missing", "follow_up", "followups", "questions", "缺口", "缺失")
_QUESTION_KEYS = ("questions", "research_questions", "subquestions", "sub_questions", "plan", "问题")
_NOT_ESTABLISHED = re.compile(
    r"not\s+(?:been\s+)?established|could\s+not|unknown|open\s+questions|gaps|未能确定|无法确定|未确定", re.I
)


def _candidates(text: str) -> list[str]:
    fenced = _FENCE.findall(text)
    return [*fenced, text]


def _load(raw: str) -> Any:
    for attempt in (raw, _TRAILING_COMMA.sub(r"\1", raw)):
        try:
            return json.loads(attempt)
        except ValueError:
            pass
    if "'" in raw and '"' not in raw:  # a dict written the Python way
        return _load(raw.replace("'", '"')) if raw.count("'") % 2 == 0 else None
    return None


def json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` that reads (inside a code fence, or among prose), or None."""
    decoder = json.JSONDecoder()
    for candidate in _candidates(text):
        for start in [m.start() for m in re.finditer(r"\{", candidate)]:
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except ValueError:
                end = candidate.rfind("}")
                value = _load(candidate[start : end + 1]) if end > start else None
            if isinstance(value, dict):
                return {str(k).strip().lower(): v for k, v in value.items()}
    return None


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if isinstance(value, list):
        out = []
        for item in value:
            if isinstance(item, dict):
                item = next((v for v in item.values() if isinstance(v, str)), "")
            if isinstance(item, str) and item.strip():
                out.append(item.strip())
        return out
    return []


def _dedupe(items: list[str], limit: int) -> list[str]:
    seen: dict[str, str] = {}
    for item in items:
        seen.setdefault(" ".join(item.split()).casefold(), item)
    return list(seen.values())[:limit]


def parse_questions(text: str, limit: int) -> list[str]:
    """The research questions of a planner's reply: the JSON object's list (``questions`` or a
    synonym), else a JSON list, else its numbered or bulleted lines; at most ``limit``, no repeats."""
    data = json_object(text)
    if data is not None:
        for key in _QUESTION_KEYS:
            if key in data:
                return _dedupe(_strings(data[key]), limit)
    for candidate in _candidates(text):
        start = candidate.find("[")
        if start >= 0:
            try:
                value, _ = json.JSONDecoder().raw_decode(candidate, start)
            except ValueError:
                value = None
            if isinstance(value, list) and _strings(value):
                return _dedupe(_strings(value), limit)
    items = [m.group("q") for line in text.splitlines() if (m := _ITEM.match(line))]
    items = [q for q in items if not q.startswith(("{", "}", "```"))]
    return _dedupe(items, limit)


@dataclass(slots=True)
class Judgement:
    """A judge's decision, as read."""

    outcome: JudgeOutcome
    reason: str = ""
    gaps: list[str] = field(default_factory=list)
    contradiction: str = ""


def _outcome(value: Any) -> JudgeOutcome | None:
    if not isinstance(value, str):
        return None
    key = re.sub(r"[\s\-/]+", "_", value.strip().strip(".!").lower())
    if key in _OUTCOMES:
        return _OUTCOMES[key]
    for word in re.split(r"[_,;:()]+", key):  # "answer (with caveat)", "gap: ..."
        if word in ("caveat",):
            return "caveat"
    for word in re.split(r"[_,;:()]+", key):
        if word in _OUTCOMES:
            return _OUTCOMES[word]
    return None


def parse_judgement(text: str, limit: int) -> Judgement | None:
    """The judge's decision in ``text``, or None when it carries none that reads.

    A ``gap`` that names no missing piece cannot be researched: it is read as ``caveat`` (answer
    with what there is, saying it is incomplete)."""
    data = json_object(text)
    if data is None:
        return None
    outcome = next((o for k in _DECISION_KEYS if (o := _outcome(data.get(k))) is not None), None)
    if outcome is None:
        return None
    reason = next(
        (v.strip() for k in ("reason", "why", "explanation", "理由") if isinstance(v := data.get(k), str)), ""
    )
    gaps = _dedupe([g for k in _GAP_KEYS if k in data for g in _strings(data[k])], limit)
    contradiction = next(
        (v.strip() for k in ("contradiction", "conflict", "矛盾") if isinstance(v := data.get(k), str)), ""
    )
    if outcome == "gap" and not gaps:
        outcome = "caveat"
    if outcome == "reconcile" and not contradiction:
        contradiction = reason
        if not contradiction:
            outcome = "caveat"
    return Judgement(outcome, reason, gaps if outcome == "gap" else [], contradiction if outcome == "reconcile" else "")


def parse_report(text: str) -> tuple[list[ReportSection], list[str]]:
    """The report's sections (``## `` headings; the whole text is one section when it has none) and
    the items of its "Not established" section, which is not one of the sections returned."""
    sections: list[ReportSection] = []
    unestablished: list[str] = []
    title, lines = "", []

    def flush() -> None:
        body = "\n".join(lines).strip()
        if title and _NOT_ESTABLISHED.search(title):
            items = [m.group("q") for line in lines if (m := _ITEM.match(line))]
            unestablished.extend(items or ([body] if body and not _nothing(body) else []))
        elif body or title:
            sections.append(ReportSection(title=title or "Answer", text=body))

    for line in text.splitlines():
        m = _HEADING.match(line)
        if m:
            flush()
            title, lines = m.group("title").strip(), []
        else:
            lines.append(line)
    flush()
    return [s for s in sections if s.text], _dedupe(unestablished, 50)


def _nothing(body: str) -> bool:
    return body.strip(" .。").casefold() in {"none", "nothing", "n/a", "无", "没有"}
