"""One LLM turn: stream it, count its usage, hand its text to an answer streamer.

:func:`llm_turn` is an async generator of :class:`~reasonloop.events.AnswerDelta` events
(when the caller passes ``deltas``) that fills a :class:`Turn` with the text and tool
calls. Usage goes into the run's :class:`~reasonloop.events.Usage`. Tool-call arguments
that are not a JSON object do not fail the run: the call is marked invalid and answered
with an error observation.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import from_json

from reasonloop import telemetry
from reasonloop.events import AnswerDelta, Event
from reasonloop.llm.base import LLM, Done, Message, TextDelta, ToolSpec, estimate_prompt_tokens
from reasonloop.llm.deadline import DeadlineReached
from reasonloop.reasoning.formats.planned_call import PlannedCall
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.tokens import count_tokens

__all__ = ["Turn", "llm_turn"]


@dataclass(slots=True)
class Turn:
    """What one model turn produced."""

    text: str = ""
    calls: list[PlannedCall] = field(default_factory=list)
    finish_reason: str = "stop"
    streamed: str = ""
    """The part of the text that went out as answer deltas."""
    cut_short: bool = False
    """The run's deadline interrupted the turn."""


async def llm_turn(
    llm: LLM,
    messages: Sequence[Message],
    turn: Turn,
    tracker: BudgetTracker,
    *,
    tools: Sequence[ToolSpec] | None = None,
    stop: Sequence[str] | None = None,
    deltas: Callable[[str], str] | None = None,
    prelude: Callable[[], Sequence[Event]] | None = None,
    bounded: bool = True,
) -> AsyncIterator[Event]:
    """Stream one call into ``turn``; yield answer deltas chosen by ``deltas(chunk) -> text``.

    Args:
        prelude: Events to yield just before the first answer delta (the thought that
            preceded the answer, so a trace reads in order).
        bounded: Stop at the run's deadline (``turn.cut_short`` tells); the forced final
            answer passes ``False``.
    """
    parts: list[str] = []
    raw_calls: dict[int, list[Any]] = {}
    streamed: list[str] = []
    usage = tracker.usage
    usage.llm_calls += 1
    traced = telemetry.tracing
    call = None if traced is None else traced.chat(llm, messages, tools)
    counted = (usage.prompt_tokens, usage.completion_tokens)
    reported = False
    left = tracker.time_left() if bounded and tracker.deadline is not None else None
    # The run's deadline ends the turn only while it waits on the model, never while our
    # consumer has the turn (as a wall-clock timeout around the yields would).
    until = None if left is None else asyncio.get_running_loop().time() + left
    try:
        # `until` only when there is one: an LLM wrapper overriding stream() may not know it.
        chunks = (
            llm.stream(messages, tools=tools, stop=stop)
            if until is None
            else llm.stream(messages, tools=tools, stop=stop, until=until)
        )
        async for chunk in chunks:
            if isinstance(chunk, TextDelta):
                parts.append(chunk.text)
                if deltas is not None:
                    piece = deltas(chunk.text)
                    if piece:
                        if not streamed and prelude is not None:
                            for event in prelude():
                                yield event
                        streamed.append(piece)
                        yield AnswerDelta(text=piece)
            elif isinstance(chunk, Done):
                reported = True
                usage.prompt_tokens += chunk.prompt_tokens
                usage.completion_tokens += chunk.completion_tokens
                turn.finish_reason = tracker.last_finish = chunk.finish_reason
            else:
                slot = raw_calls.setdefault(chunk.index, [None, None, []])
                slot[0] = slot[0] or chunk.id
                slot[1] = slot[1] or chunk.name
                slot[2].append(chunk.arguments)
    except DeadlineReached:
        turn.cut_short = True
        tracker.hit("timeout")
    finally:
        if not reported and (parts or raw_calls):
            # Cut off before the provider reported usage (a deadline, a stall, a stop): what
            # streamed was produced and its prompt was read, so both are counted, estimated.
            usage.prompt_tokens += estimate_prompt_tokens(messages, tools)
            usage.completion_tokens += count_tokens("".join(parts)) + sum(
                count_tokens("".join(slot[2])) for slot in raw_calls.values()
            )
        if call is not None:
            call.end(
                usage.prompt_tokens - counted[0],
                usage.completion_tokens - counted[1],
                turn.finish_reason,
                "".join(parts),
                sys.exc_info()[1],
            )
    turn.text = "".join(parts)
    turn.streamed = "".join(streamed)
    if raw_calls:
        turn.calls = [_planned(index, raw_calls[index]) for index in sorted(raw_calls)]


def _planned(index: int, slot: list[Any]) -> PlannedCall:
    call_id, name, fragments = slot
    call_id, name = call_id or f"call_{index}", name or ""
    raw = "".join(fragments)
    if not raw.strip():
        return PlannedCall(call_id, name, {}, {})
    try:
        value = from_json(raw)
    except ValueError:
        return PlannedCall(call_id, name, {}, raw, invalid=f"arguments are not valid JSON: {raw[:200]!r}")
    if isinstance(value, dict):
        return PlannedCall(call_id, name, value)
    return PlannedCall(call_id, name, {}, raw, invalid=f"arguments must be a JSON object, got {raw[:200]!r}")
