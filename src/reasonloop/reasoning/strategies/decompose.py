"""Decomposition: split the question, answer the parts concurrently, synthesise one answer.

The model splits the question into at most N sub-questions; each is retrieved and answered
at the same time as the others; one streamed synthesis then answers the original question
from the sub-answers, citing the evidence of all of them (numbers are shared by the run).

A sub-question may use the answer of an earlier one, written ``#1``, ``#2``, ... ("1. Who
wrote the report?" / "2. Where does #1 work?"): it waits for that answer, and the reference is
replaced by it (citation markers removed, bounded as a ReWOO reference is:
:func:`~reasonloop.reasoning.formats.rewoo_plan.reference_text`) before it is searched, so the second
hop of a two-hop question is searched with the entity the first hop found. A sub-question
whose earlier answer found no evidence is not searched. ``#n`` that does not name an earlier
sub-question stays text.

The sub-questions are sent as a :class:`~reasonloop.events.Plan` (step ``n`` is sub-question
``n``, its tool ``search``, its dependencies the ``#n`` it uses), and each search as a
:class:`~reasonloop.events.Searched` event naming its step, as soon as it is made: a search the
strategy makes itself is no tool call. The list of sub-questions is also sent as a ``Thought``
marked ``plan_text`` (the form before event schema 2, kept for one release).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import ClassVar

from pydantic import Field

from reasonloop.events import Event, Plan, PlannedStep, Progress, Step, Thought
from reasonloop.llm.base import Message
from reasonloop.plugin_table import field_text
from reasonloop.reasoning.base import Budget, Reasoning, ReasoningSettings
from reasonloop.reasoning.formats.language import detect_language
from reasonloop.reasoning.formats.prompts import render, system_prompt
from reasonloop.reasoning.formats.rewoo_plan import reference_text
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.reasoning.steps.finish import close
from reasonloop.reasoning.steps.intent import needs_no_retrieval
from reasonloop.reasoning.steps.llmcall import Turn, llm_turn
from reasonloop.reasoning.steps.retrieval import Search, direct_answer, run_search, transform
from reasonloop.reasoning.steps.retrieval_settings import RetrievalSettings
from reasonloop.registry import PluginInfo
from reasonloop.tools.evidence import format_evidence

__all__ = ["DecomposeReasoning", "DecomposeSettings", "parse_subquestions", "references"]

_REF = re.compile(r"#(\d+)(?!\d)")
_MARKER = re.compile(r"\s*\[\d+\]")
REFERENCE_TOKENS = 40
"""Most tokens of an earlier sub-answer that replace its ``#n`` reference."""

_ITEM = re.compile(r"^\s*(?:[-*•]|\(?\d{1,2}[.)、:：]|[Qq]\d{1,2}[.:：])\s*(?P<q>.+?)\s*$")


def parse_subquestions(text: str, limit: int) -> list[str]:
    """Numbered or bulleted lines as sub-questions (unmarked lines if none are marked), at most ``limit``."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    marked = [m.group("q") for line in lines if (m := _ITEM.match(line))]
    chosen = marked or [line for line in lines if not line.endswith(":")]
    unique: list[str] = []
    for q in chosen:
        q = q.strip().strip("*").strip()
        if q and q not in unique:
            unique.append(q)
    return unique[:limit]


def references(subquestion: str, index: int) -> list[int]:
    """The earlier sub-questions (numbers below ``index``) that ``subquestion`` refers to as ``#n``."""
    return sorted({n for n in map(int, _REF.findall(subquestion)) if 1 <= n < index})


def _fill(subquestion: str, index: int, answers: dict[int, str]) -> str:
    def one(m: re.Match[str]) -> str:
        n = int(m.group(1))
        if not 1 <= n < index or n not in answers:
            return m.group(0)
        return reference_text(_MARKER.sub("", answers[n]), REFERENCE_TOKENS)

    return _REF.sub(one, subquestion)


def _planned(index: int, subquestion: str) -> PlannedStep:
    """Sub-question ``index`` as a step of the :class:`~reasonloop.events.Plan` event."""
    return PlannedStep(
        id=str(index), tool="search", input=subquestion, depends_on=[str(n) for n in references(subquestion, index)]
    )


class DecomposeSettings(ReasoningSettings):
    max_subquestions: int = Field(
        default=4,
        ge=1,
        le=8,
        **field_text(
            en=("Sub-questions", "Most sub-questions the question is split into."),
            zh=("子问题上限", "问题最多拆成的子问题数。"),
        ),
    )
    top_k: int = Field(
        default=4,
        ge=1,
        le=20,
        **field_text(
            en=("Passages per sub-question", "Passages retrieved for each sub-question."),
            zh=("每个子问题的段落数", "每个子问题检索的段落数。"),
        ),
    )
    retrieval: RetrievalSettings = Field(
        default_factory=RetrievalSettings,
        **field_text(
            en=(
                "Retrieval",
                "Query transforms (extra phrasings, HyDE: per sub-question) and reranking for this run; "
                "a sub-question is standalone already, so follow-ups are not condensed.",
            ),
            zh=("检索", "本次运行的查询改写（额外问法、HyDE：按子问题）与重排序；子问题本身已独立，不改写追问。"),
        ),
    )


@dataclass
class _Finding:
    index: int
    question: str
    evidence: str = ""
    answer: str = ""
    done: asyncio.Event = field(default_factory=asyncio.Event)


class DecomposeReasoning(Reasoning):
    """Split into sub-questions answered concurrently, then one synthesis with citations."""

    info: ClassVar[PluginInfo] = PluginInfo.declared("reasoning", "decompose")
    Settings = DecomposeSettings

    async def stream(self, question: str) -> AsyncIterator[Event]:
        ctx, settings = self.ctx, self.settings
        language = ctx.language or detect_language(question)
        self.language = language
        tracker = self.tracker = BudgetTracker(ctx.budget or Budget(), ctx.usage, ctx.scope.pauses)
        answer = Turn()
        if needs_no_retrieval(question):
            system = system_prompt("chat", language, ctx.instructions)
            async for event in direct_answer(ctx, tracker, ctx.llm, system, ctx.history, question, answer):
                yield event
            yield close(ctx, settings, tracker, answer.text, language)
            return

        # 1. Split.
        yield Progress(message="splitting the question")
        split = Turn()
        system = render("decompose", language, max_subquestions=settings.max_subquestions)
        async for event in llm_turn(
            ctx.llm, [Message.system(system), *ctx.history, Message.user(question)], split, tracker
        ):
            yield event
        subquestions = parse_subquestions(split.text, settings.max_subquestions) or [question]
        yield Thought(text="\n".join(f"{i}. {q}" for i, q in enumerate(subquestions, 1)), plan_text=True)
        yield Plan(steps=[_planned(i, q) for i, q in enumerate(subquestions, 1)])

        # 2. Retrieve and answer every sub-question concurrently; each search is reported as it is
        # made, each answer as it is given.
        findings = [_Finding(i, q) for i, q in enumerate(subquestions, 1)]
        by_index = {f.index: f for f in findings}
        said: asyncio.Queue[Event | asyncio.Task[_Finding]] = asyncio.Queue()
        tasks = [asyncio.create_task(self._answer_part(f, by_index, said.put_nowait)) for f in findings]
        for task in tasks:
            task.add_done_callback(said.put_nowait)
        try:
            for _ in tasks:
                while not isinstance(item := await said.get(), asyncio.Task):
                    yield item
                f = item.result()
                ctx.steps.append(Step(action="subquestion", action_input=f.question, observation=f.answer))
                yield Thought(text=f"{f.question}\n{f.answer}")
        finally:
            leftovers = [t for t in tasks if not t.done()]
            for task in leftovers:
                task.cancel()
            if leftovers:
                await asyncio.gather(*leftovers, return_exceptions=True)

        # 3. Synthesise.
        if not any(f.evidence for f in findings) and not ctx.history:
            yield close(ctx, settings, tracker, render("dont_know", language), language)
            return
        text = "\n\n".join(
            f"Sub-question {f.index}: {f.question}\nEvidence:\n{f.evidence or '(none)'}\nAnswer: {f.answer}"
            for f in findings
        )
        user = render("decompose_synthesis_user", language, findings=text, question=question)
        system = system_prompt("decompose_synthesis", language, ctx.instructions)
        async for event in direct_answer(ctx, tracker, ctx.llm, system, ctx.history, user, answer):
            yield event
        yield close(ctx, settings, tracker, answer.text, language)

    async def _answer_part(
        self, finding: _Finding, by_index: dict[int, _Finding], say: Callable[[Event], None]
    ) -> _Finding:
        try:
            return await self._answer(finding, by_index, say)
        finally:
            finding.done.set()

    async def _answer(self, finding: _Finding, by_index: dict[int, _Finding], say: Callable[[Event], None]) -> _Finding:
        ctx, settings = self.ctx, self.settings
        earlier = [by_index[n] for n in references(finding.question, finding.index)]
        for f in earlier:
            await f.done.wait()
        if any(not f.evidence for f in earlier):
            finding.answer = render("dont_know", self.language)
            return finding
        finding.question = _fill(finding.question, finding.index, {f.index: f.answer for f in earlier})
        found = Search(query=finding.question)
        async for _ in transform(ctx, self.tracker, finding.question, settings.retrieval, self.language, found):
            pass
        await run_search(ctx, settings.top_k, settings.retrieval, found)
        finding.evidence, citations = format_evidence(
            found.hits, ctx.scope.evidence_log(), settings.max_evidence_tokens
        )
        if ctx.retrievers:  # with no knowledge source nothing was searched
            ctx.searched()
            for note in found.notes():
                say(note)
            say(found.event(settings.top_k, finding.evidence or "(no passages found)", citations, str(finding.index)))
        if not finding.evidence:
            finding.answer = render("dont_know", self.language)
            return finding
        turn = Turn()
        user = render("qa_user", self.language, evidence=finding.evidence, question=finding.question)
        messages = [Message.system(render("qa", self.language)), Message.user(user)]
        async for _ in llm_turn(ctx.llm, messages, turn, self.tracker):
            pass
        finding.answer = turn.text.strip()
        return finding
