"""The text of a tool-calling turn: calls written as text, thinking, and what may stream.

A model served without a tool-call parser (a raw chat template, some Ollama and llama.cpp
setups) writes its calls into the text: ``<tool_call>`` tags, ``<function=...>`` tags, or a
JSON object naming a tool (:mod:`reasonloop.reasoning.formats.text_calls`). :func:`read_text_turn`
turns such a turn into the calls it asks for, or into its answer, or says why it cannot be
read. A bare JSON object counts as a call only when it names one of the run's tools or a
final answer, so an answer that shows JSON stays an answer. :class:`ProseStream` streams a
turn's text as answer deltas, but never a ``<think>`` block or a call written as text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reasonloop.reasoning.formats.planned_call import PlannedCall, coerce_input
from reasonloop.reasoning.formats.react_parser import strip_scaffolding
from reasonloop.reasoning.formats.text_calls import (
    TextCall,
    broken_json_call,
    final_text,
    find_json_call,
    find_tag_calls,
    is_final_name,
    iter_json_calls,
    prose_before,
)
from reasonloop.tools.base import Tool

__all__ = ["ProseStream", "TextTurn", "read_text_turn"]


@dataclass(slots=True)
class TextTurn:
    """A tool-calling turn, read."""

    calls: list[PlannedCall] = field(default_factory=list)
    answer: str | None = None
    """The answer, when the turn asks for no tool."""
    thought: str = ""
    said: str = ""
    """The prose beside the calls, kept in the conversation with them."""
    problem: str | None = None
    """Why the turn cannot be read."""


def _known(name: str, tools: Mapping[str, Tool]) -> str | None:
    if name in tools:
        return name
    folded = name.lower()
    return next((n for n in tools if n.lower() == folded), None)


def _planned(call: TextCall, tools: Mapping[str, Tool], call_id: str) -> PlannedCall:
    name = _known(call.name, tools) or call.name
    raw: Any = call.arguments
    if isinstance(raw, dict):
        return PlannedCall(call_id, name, raw)
    tool = tools.get(name)
    arguments = coerce_input(tool, raw) if tool is not None and raw not in (None, "") else {}
    return PlannedCall(call_id, name, arguments, raw_input=raw)


def _joined(*parts: str) -> str:
    return "\n".join(p for p in parts if p)


def read_text_turn(text: str, native: Sequence[PlannedCall], tools: Mapping[str, Tool], id_prefix: str) -> TextTurn:
    """Read a turn: its native ``calls``, else the calls written in ``text``, else its answer.

    Args:
        native: The calls the provider returned as tool calls.
        id_prefix: Call ids for calls read from text (``<prefix>_0``, ...).
    """
    cleaned, think = strip_scaffolding(text)
    if native:
        prose = cleaned.strip()
        unreadable = all(c.invalid is not None or not c.tool for c in native)
        problem = (native[0].invalid or "a tool call names no tool") if unreadable else None
        return TextTurn(list(native), thought=_joined(think, prose), said=prose, problem=problem)
    tags = find_tag_calls(cleaned)
    if tags is not None:
        if not tags.calls:
            return TextTurn(thought=think, problem=tags.problem)
        prose = prose_before(cleaned, tags.calls[0].start)
        wanted = [c for c in tags.calls if not is_final_name(c.name)]
        if not wanted:
            return TextTurn(answer=final_text(tags.calls[0].arguments), thought=think)
        calls = [_planned(c, tools, f"{id_prefix}_{i}") for i, c in enumerate(wanted)]
        return TextTurn(calls, thought=_joined(think, prose), said=prose)
    call = find_json_call(cleaned)
    if call is not None and is_final_name(call.name):
        return TextTurn(answer=final_text(call.arguments), thought=think)
    if call is not None and _known(call.name, tools) is not None:
        wanted = [c for c in iter_json_calls(cleaned) if _known(c.name, tools) is not None]
        prose = prose_before(cleaned, call.start)
        calls = [_planned(c, tools, f"{id_prefix}_{i}") for i, c in enumerate(wanted)]
        return TextTurn(calls, thought=_joined(think, prose), said=prose)
    body = cleaned.strip()
    if call is None and body.lstrip("`json \n").startswith("{") and broken_json_call(body):
        return TextTurn(thought=think, problem="the reply starts a JSON tool call that is not valid JSON")
    if not body:
        return TextTurn(thought=think, problem="the reply holds only thinking" if think else "the reply is empty")
    return TextTurn(answer=_FINAL_LABEL.sub("", body, count=1).strip(), thought=think)


_CALL_TAGS = ("<tool_call>", "<function=")
_THINK_TAGS = ("<think>", "<thinking>")
_FINAL_LABEL = re.compile(r"^(?:\*\*)?final[ _]?answer(?:\*\*)?\s*[:：](?:\*\*)?\s*", re.I)


def _opens_with_data(text: str) -> bool | None:
    """Whether a turn opens with a JSON object, fenced or not (``None``: cannot tell yet)."""
    if text.startswith("```"):
        newline = text.find("\n")
        if newline < 0:
            return None
        rest = text[newline:].lstrip()
        return None if not rest else rest.startswith("{")
    return text.startswith("{")


def _visible(text: str) -> str:
    """The part of ``text`` that may stream as answer: ``<think>`` blocks and a ``Final Answer:``
    label left out, nothing from a call tag on, nothing of a turn that opens with a JSON object,
    and no tail that may still become a tag."""
    text = text.lstrip()
    if _opens_with_data(text) is not False:
        return ""
    out: list[str] = []
    i = 0
    while (j := text.find("<", i)) >= 0:
        out.append(text[i:j])
        tail = text[j:]
        if tail.startswith(_CALL_TAGS):
            return _unlabelled("".join(out).lstrip())
        if tail.startswith(_THINK_TAGS):
            end = tail.find("</think")
            close = tail.find(">", end) if end >= 0 else -1
            if close < 0:
                return _unlabelled("".join(out).lstrip())  # thinking still under way
            i = j + close + 1
            continue
        if any(tag.startswith(tail) for tag in (*_CALL_TAGS, *_THINK_TAGS)):
            return _unlabelled("".join(out).lstrip())  # may still become a tag
        out.append("<")
        i = j + 1
    out.append(text[i:])
    return _unlabelled("".join(out).lstrip())


def _unlabelled(text: str) -> str:
    """``text`` without a leading ``Final Answer:`` ("" while it may still become one)."""
    if len(text) < 16 and "final answer:".startswith(text.lower().replace("_", " ").strip("*")):
        return ""
    return _FINAL_LABEL.sub("", text, count=1)


class ProseStream:
    """Answer deltas from a tool-calling turn's text, chunk by chunk (see :func:`_visible`)."""

    __slots__ = ("_buf", "_sent")

    def __init__(self) -> None:
        self._buf = ""
        self._sent = 0

    def feed(self, chunk: str) -> str:
        self._buf += chunk
        visible = _visible(self._buf)
        out = visible[self._sent :]
        self._sent = max(self._sent, len(visible))
        return out
