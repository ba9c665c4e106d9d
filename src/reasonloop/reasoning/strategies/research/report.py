"""The research's report: the findings as the judge and the writer read them, the draft sent after
each finished sub-research (no model call), and the cited report the model writes at the end.

Its own module because what the report says, and what it says could not be established, is
decided from the tasks alone, apart from how the research loop got them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from reasonloop.events import Citation, Event, Judged, Progress, Report, ReportSection
from reasonloop.llm.base import Message
from reasonloop.reasoning.base import ReasoningSettings, RunContext
from reasonloop.reasoning.formats.prompts import render, system_prompt
from reasonloop.reasoning.formats.research_replies import parse_report
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.reasoning.steps.citations import markers
from reasonloop.reasoning.steps.finish import close
from reasonloop.reasoning.steps.llmcall import Turn, llm_turn
from reasonloop.reasoning.strategies.research.tasks import TaskState
from reasonloop.tools.evidence import format_evidence

__all__ = ["draft_report", "findings_text", "render_not_established", "write_report"]

_FINDING_TOKENS = 400
"""Most tokens of one finding shown to the judge and the report writer."""


def findings_text(tasks: list[TaskState]) -> str:
    """Each finished task's question and findings (cut to :data:`_FINDING_TOKENS`), or why it has none."""
    from reasonloop.tokens import trim_to_tokens

    lines = []
    for task in tasks:
        if task.status == "done":
            lines.append(f"[{task.step}] {task.question}\n{trim_to_tokens(task.findings, _FINDING_TOKENS)}")
        elif task.status in ("failed", "cancelled"):
            lines.append(f"[{task.step}] {task.question}\n(no findings: {task.note})")
    return "\n\n".join(lines) or "(none)"


def unestablished_items(tasks: list[TaskState], judged: Judged | None) -> list[str]:
    """What the research did not establish: the questions that failed, were cancelled or abstained,
    and what the last judgement left open."""
    items = [t.question for t in tasks if t.status in ("failed", "cancelled") or t.abstained]
    if judged is not None:
        if judged.outcome in ("caveat", "unanswerable") and judged.reason:
            items.append(judged.reason)
        items.extend(judged.gaps)  # gaps still open when the research ended
        if judged.contradiction:
            items.append(judged.contradiction)
    return list(dict.fromkeys(items))


def draft_report(tasks: list[TaskState], language: str, judged: Judged | None = None) -> Report:
    """The report from the findings so far, without a model call (what a stopped run keeps)."""
    sections = [ReportSection(title=t.question, text=t.findings) for t in tasks if t.status == "done"]
    citations: dict[tuple[Any, ...], Citation] = {}
    for task in tasks:
        for c in task.citations:
            citations.setdefault((c.marker, c.start, c.end), c)
    left = unestablished_items(tasks, judged)
    return Report(
        sections=sections,
        unestablished=left,
        citations=list(citations.values()),
        outcome=None if judged is None else judged.outcome,
        partial=True,
        text=_markdown(sections, left, language),
    )


async def write_report(
    ctx: RunContext,
    settings: ReasoningSettings,
    tracker: BudgetTracker,
    language: str,
    tasks: list[TaskState],
    question: str,
    judged: Judged | None,
) -> AsyncIterator[Event]:
    """The model writes the report from the findings and the passages they cite; it streams as the
    answer, then comes as a :class:`~reasonloop.events.Report` and the closing answer."""
    if tracker.stop_reason is not None:
        yield Progress(message=f"research ended: {tracker.stop_reason.replace('_', ' ')}; writing the report")
    left = unestablished_items(tasks, judged)
    done = [t for t in tasks if t.status == "done"]
    if not done:
        text = render("dont_know", language)
        text = _markdown([ReportSection(title=_answer_title(language), text=text)], left, language)
        yield Report(sections=[], unestablished=left, outcome=None if judged is None else judged.outcome, text=text)
        yield close(ctx, settings, tracker, text, language, abstained=True)
        return
    log = ctx.scope.evidence_log()
    cited = list(dict.fromkeys(n for t in done for n in markers(t.findings) if n in log.hits))
    passages, _ = format_evidence([log.hits[n] for n in cited], log, settings.max_evidence_tokens)
    note = ""
    if left:
        note = "\n" + render_not_established(language) + "\n" + "\n".join(f"- {u}" for u in left)
    user = render(
        "research_report_user",
        language,
        question=question,
        findings=findings_text(tasks),
        passages=passages or "(none)",
        note=note,
    )
    system = system_prompt("research_report", language, ctx.instructions)
    messages = [Message.system(system), *ctx.history, Message.user(user)]
    turn = Turn()
    async for event in llm_turn(ctx.llm, messages, turn, tracker, deltas=lambda piece: piece, bounded=False):
        yield event
    sections, listed = parse_report(turn.text)
    text = turn.text.strip()
    if not sections:  # an empty or unreadable report: the findings themselves
        draft = draft_report(tasks, language, judged)
        sections, text = draft.sections, draft.text
    listed = [u for u in listed if not _is_none(u)]
    missing = [u for u in left if u not in listed]
    left = list(dict.fromkeys([*listed, *missing]))
    if missing and text == turn.text.strip():  # the model left them out: they are said all the same
        text += "\n\n" + _markdown([], missing, language)
    answer = close(
        ctx, settings, tracker, text, language, abstained=judged is not None and judged.outcome == "unanswerable"
    )
    if not answer.citations:  # a report that cites nothing establishes nothing: it does not decide the question
        answer.abstained = True
    yield Report(
        sections=sections,
        unestablished=left,
        citations=answer.citations,
        outcome=None if judged is None else judged.outcome,
        text=answer.text,
    )
    yield answer


def render_not_established(language: str) -> str:
    return "未能确定（研究中）：" if language == "zh" else "Not established by the research:"


def _answer_title(language: str) -> str:
    return "回答" if language == "zh" else "Answer"


def _is_none(item: str) -> bool:
    return item.strip(" .。").casefold() in {"none", "nothing", "n/a", "无", "没有"}


def _markdown(sections: list[ReportSection], unestablished: list[str], language: str) -> str:
    parts = [f"## {s.title}\n{s.text}" for s in sections]
    if unestablished:
        head = "## 未能确定" if language == "zh" else "## Not established"
        parts.append(head + "\n" + "\n".join(f"- {u}" for u in unestablished))
    return "\n\n".join(parts)
