"""Tool calls a model writes as data inside its text: JSON objects and XML-ish tags.

Models asked for a text format often answer with a structured call instead, and models
served without a tool-call parser put their native calls in the text. Both are read here:

- a JSON object naming a tool, with any of the key pairs ``action``/``action_input``,
  ``tool_name``/``tool_arguments``, ``tool``/``tool_input``, ``name``/``arguments`` (or
  ``parameters``), or ``{"function": {"name", "arguments"}}``; fenced or not. An object
  with ``name`` needs an arguments key too, so a record like ``{"name": "Ada"}`` in an
  answer is never taken for a call;
- ``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` (several per turn allowed);
- ``<function=NAME>{...}</function>``, and the same with ``<parameter=KEY>value</parameter>``
  children instead of JSON.

A call whose name is a final action (``Final Answer``, ``final_answer``, ``finish``...)
carries the answer: :func:`final_text` reads it from a string or a one-field object.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "TextCall",
    "TextCalls",
    "broken_json_call",
    "final_text",
    "find_json_call",
    "find_tag_calls",
    "is_final_name",
    "iter_json_calls",
    "prose_before",
]

_NAME_KEYS = ("action", "tool_name", "tool", "name", "function")
_ARG_KEYS = ("action_input", "tool_arguments", "tool_input", "arguments", "parameters", "args", "input")
_FINAL_NAMES = frozenset({"final answer", "final_answer", "finalanswer", "final", "finish", "answer", "最终答案"})
_ANSWER_KEYS = ("answer", "final_answer", "text", "response", "content", "output", "result")
_MAX_OBJECTS = 32
"""``{`` positions tried per text: enough for any real turn, bounded for a hostile one."""

_TOOL_CALL = re.compile(r"<tool_call>\s*(?P<body>.*?)\s*(?:</tool_call>|$)", re.S)
_FUNCTION = re.compile(r"<function=(?P<name>[^>\s]+)>\s*(?P<body>.*?)\s*(?:</function>|$)", re.S)
_PARAMETER = re.compile(r"<parameter=(?P<key>[^>\s]+)>\s*(?P<value>.*?)\s*(?:</parameter>|(?=<parameter=)|$)", re.S)
_FENCE = re.compile(r"^```[\w-]*\s*\n?(.*?)\n?```$", re.S)
_CALL_START = re.compile(r"^[ \t]*(?P<open>\{)\s*\"(?:" + "|".join(_NAME_KEYS) + r")\"\s*:", re.M)


_LEAD_IN = re.compile(
    r"(?:```[\w-]*|<\|[\w-]+\|>|\[TOOL_CALLS\]|\[|(?:^|\n)[ \t*]*(?:action|行动|动作)[ \t]*(?:\*\*)?[:：](?:\*\*)?)\s*$",
    re.I,
)
"""What may stand right before a call: a fence, a special token, a list's bracket, an Action label."""


def prose_before(text: str, start: int) -> str:
    """The prose before a call at ``text[start]``, without what leads into the call."""
    head = text[:start].rstrip()
    while (m := _LEAD_IN.search(head)) is not None and m.end() > m.start():
        head = head[: m.start()].rstrip()
    return head.strip()


@dataclass(slots=True)
class TextCall:
    """One call read from text."""

    name: str
    arguments: Any
    """A dict, a string, or ``None`` (no input)."""
    start: int = 0
    end: int = 0
    """Where the call sits in the text it was read from."""


@dataclass(slots=True)
class TextCalls:
    """What tags in a turn hold: the calls read, and why the others could not be read."""

    calls: list[TextCall]
    problem: str | None = None


def is_final_name(name: str) -> bool:
    """True for a tool name that means "this is the answer"."""
    return name.strip().strip("`*\"'").lower().replace("-", "_") in _FINAL_NAMES


def final_text(arguments: Any) -> str:
    """The answer carried by a final action's input: a string, or an object's answer field."""
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments.strip()
    if isinstance(arguments, dict):
        for key in _ANSWER_KEYS:
            if isinstance(arguments.get(key), str):
                return arguments[key].strip()
        strings = [v for v in arguments.values() if isinstance(v, str)]
        if len(strings) == 1:
            return strings[0].strip()
    return json.dumps(arguments, ensure_ascii=False)


def _maybe_json(value: Any) -> Any:
    """Arguments given as a JSON string (as OpenAI's wire format does) read as an object."""
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return value
        return parsed if isinstance(parsed, dict) else value
    return value


def _as_call(value: Any) -> TextCall | None:
    """A decoded JSON value as a call, when its keys say it is one."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):  # {"type": "function", "function": {...}}
        return _as_call(value["function"])
    name_key = next((k for k in _NAME_KEYS if isinstance(value.get(k), str) and value[k].strip()), None)
    if name_key is None:
        return None
    arg_key = next((k for k in _ARG_KEYS if k in value), None)
    if arg_key is None and name_key in ("name", "function"):
        return None
    arguments = _maybe_json(value.get(arg_key)) if arg_key else None
    return TextCall(name=value[name_key].strip(), arguments=arguments)


def find_json_call(text: str) -> TextCall | None:
    """The first JSON object in ``text`` that is a call (see the module docstring)."""
    return next(iter_json_calls(text), None)


def iter_json_calls(text: str) -> Iterator[TextCall]:
    """Every JSON object in ``text`` that is a call, in order (a list of calls gives each)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    tries = 0
    while start >= 0 and tries < _MAX_OBJECTS:
        tries += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        call = _as_call(value)
        if call is not None:
            call.start, call.end = start, end
            yield call
            start = text.find("{", end)
        else:
            start = text.find("{", start + 1)  # a call may sit inside an object that is none


def broken_json_call(text: str) -> bool:
    """True when a line of ``text`` opens a JSON call (``{"action": ...``) that is not valid JSON."""
    decoder = json.JSONDecoder()
    for m in _CALL_START.finditer(text):
        try:
            decoder.raw_decode(text, m.start("open"))
        except json.JSONDecodeError:
            return True
    return False


def _unfence(text: str) -> str:
    m = _FENCE.match(text.strip())
    return m.group(1).strip() if m else text.strip()


def find_tag_calls(text: str) -> TextCalls | None:
    """The calls in ``<tool_call>`` or ``<function=...>`` tags; ``None`` when there are no tags."""
    calls: list[TextCall] = []
    problems: list[str] = []
    for m in _TOOL_CALL.finditer(text):
        body = _unfence(m.group("body"))
        try:
            value = json.loads(body)
        except json.JSONDecodeError:
            value = None
        call = _as_call(value)
        if call is None:
            problems.append(f"a <tool_call> tag does not hold a JSON object with a name and arguments: {body[:120]!r}")
            continue
        call.start, call.end = m.start(), m.end()
        calls.append(call)
    for m in _FUNCTION.finditer(text):
        body = _unfence(m.group("body"))
        params = {p.group("key"): p.group("value") for p in _PARAMETER.finditer(body)}
        if params:
            arguments: Any = params
        elif not body:
            arguments = None
        else:
            arguments = _maybe_json(body)
            if not isinstance(arguments, dict):
                problems.append(f"the <function={m.group('name')}> tag does not hold a JSON object: {body[:120]!r}")
                continue
        calls.append(TextCall(name=m.group("name").strip("\"'"), arguments=arguments, start=m.start(), end=m.end()))
    if not calls and not problems:
        return None
    calls.sort(key=lambda c: c.start)
    return TextCalls(calls=calls, problem="; ".join(problems) or None)
