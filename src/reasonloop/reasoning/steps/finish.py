"""How a run ends: the guard, citations, the forced tool-less answer, never an empty answer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from reasonloop.errors import GuardTripped
from reasonloop.events import Answer, Citation, Event, Step, StopReason
from reasonloop.llm.base import LLM, Message
from reasonloop.reasoning.base import RunContext
from reasonloop.reasoning.formats.answer_spotter import AnswerSpotter
from reasonloop.reasoning.formats.prompts import render
from reasonloop.reasoning.formats.react_parser import parse_react
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.reasoning.steps.citations import cite
from reasonloop.reasoning.steps.llmcall import Turn, llm_turn

__all__ = ["close", "forced_answer", "guard_armed"]


def guard_armed(settings: Any, ctx: RunContext) -> bool:
    """True when an answer now would be replaced by the ``require_tool_call`` guard."""
    return bool(getattr(settings, "require_tool_call", False)) and ctx.real_tool_calls == 0


def close(
    ctx: RunContext,
    settings: Any,
    tracker: BudgetTracker,
    text: str,
    language: str,
    stop_reason: StopReason | None = None,
    *,
    citations: list[Citation] | None = None,
    abstained: bool = False,
) -> Answer:
    """The run's one :class:`Answer`: guard applied, markers mapped (each citation quoting the
    sentence the answer rests on), never empty. ``citations``: the answer's own, already narrowed;
    ``abstained``: the answer does not decide the question."""
    reason: StopReason = stop_reason or tracker.stop_reason or "final"
    if reason == "final" and tracker.last_finish == "length":  # the answering call ran out of tokens
        reason = "length"
    text = text.strip()
    if guard_armed(settings, ctx):
        error = GuardTripped(
            "the answer was given without calling any tool, and this run requires one", raw_answer=text
        )
        ctx.error = error.to_dict()
        ctx.steps.append(Step(action="answer", action_input=None, observation=text, error=ctx.error))
        return Answer(text=render("guard", language), usage=ctx.usage.copy(), stop_reason="guard")
    if not text:
        text = render("no_answer", language, reason=reason)
    if citations is None:
        log = ctx.scope.evidence
        citations = cite(text, log.citations, log.hits) if log is not None and log.citations else []
    return Answer(text=text, citations=citations, usage=ctx.usage.copy(), stop_reason=reason, abstained=abstained)


async def forced_answer(
    ctx: RunContext,
    settings: Any,
    tracker: BudgetTracker,
    llm: LLM,
    messages: Sequence[Message],
    language: str,
) -> AsyncIterator[Event]:
    """One last tool-less call that answers from what the run gathered, then the Answer."""
    reason: StopReason = tracker.stop_reason or "max_rounds"
    prompt = [*_flatten(messages), Message.user(render("final", language, reason=reason.replace("_", " ")))]
    turn = Turn()
    spotter = None if guard_armed(settings, ctx) else AnswerSpotter(direct=True)
    async for event in llm_turn(llm, prompt, turn, tracker, deltas=spotter.feed if spotter else None, bounded=False):
        yield event
    parsed = parse_react(turn.text)
    # A model that still asks for a tool keeps its thought as the answer, never the call text.
    text = (parsed.final_answer or parsed.thought) if parsed.kind == "action" else parsed.text_answer()
    yield close(ctx, settings, tracker, text, language, reason)


def _flatten(messages: Sequence[Message]) -> list[Message]:
    """Tool calls and results as plain text, so a tool-less call is valid for every provider."""
    if not any(m.role == "tool" or m.tool_calls for m in messages):
        return list(messages)
    out: list[Message] = []
    for m in messages:
        if m.tool_calls:
            calls = "; ".join(f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in m.tool_calls)
            out.append(Message.assistant(f"{m.content}\n[called {calls}]".strip()))
        elif m.role == "tool":
            out.append(Message.user(f"[result of {m.name or 'tool'}]\n{m.content}"))
        else:
            out.append(m)
    return out
