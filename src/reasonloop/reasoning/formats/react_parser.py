"""Reading ReAct text the way real models write it.

:func:`parse_react` turns one model turn into a :class:`ReActParse`: a thought, an action
with its input, and/or a final answer. It reads the ``Thought / Action / Action Input /
Final Answer`` labels (any case, markdown bold, numbered ``Thought 2:``, Chinese labels and
full-width colons, labels run together on one line), JSON or plain action input, the
``tool[input]`` and ``tool("input")`` forms, ``Finish[answer]``, code fences, and calls
written as data (:mod:`reasonloop.reasoning.formats.text_calls`: a JSON object after ``Action:`` or
on its own, fenced or not, and ``<tool_call>`` / ``<function=...>`` tags). Scaffolding never
reaches the answer: ``<think>`` blocks become the thought, ``Do I need to use a tool?`` lines
are dropped (``No`` then ``AI:`` is the final answer), a bare label is no answer, and
``Action Input: None`` means no input. Observations the model invented are dropped
(everything from ``Observation:`` on). When an action and a final answer appear together the
action wins: the answer was written before seeing the observation.

A turn that tries the format and cannot be read (an action naming no tool, a call that is not
valid JSON, an empty reply) has kind ``"unreadable"`` and says why in ``problem``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from reasonloop.reasoning.formats.answer_spotter import FINAL_LABEL
from reasonloop.reasoning.formats.text_calls import (
    TextCall,
    broken_json_call,
    final_text,
    find_json_call,
    find_tag_calls,
    is_final_name,
    prose_before,
)

__all__ = ["ReActParse", "cut_observation", "parse_react", "strip_scaffolding"]

_COLON = r"\s*(?:\d+\s*)?(?:\*\*)?\s*[:：](?:\*\*)?[ \t]*"
_LABELS = (
    r"(?P<label>thought|final[ _]?answer|action[ _]?input|action|answer"
    r"|最终答案|最终回答|答案|思考|想法|行动输入|动作输入|行动|动作)"
)
_LABEL = re.compile(r"^[ \t>#*_-]*(?:\*\*)?" + _LABELS + _COLON, re.I | re.M)
_OBSERVATION = re.compile(r"^[ \t>#*_-]*(?:\*\*)?(?:observation|观察|观察结果)" + _COLON, re.I | re.M)
# Labels some models put mid-line ("... done. Action Input: x").
_MIDLINE = re.compile(r"(?<=\S)[ \t]+(?=(?:Action Input|Final Answer|Action)\s*[:：])")
_FENCE = re.compile(r"^\s*```[\w-]*[ \t]*\n?(.*?)\n?```\s*$", re.S)
_CALL = re.compile(r"^(?P<name>[\w.\-]+)\s*(?:\[(?P<br>.*)\]|\((?P<par>.*)\))\s*$", re.S)
_KWARG = re.compile(r"^\s*(\w+)\s*=\s*(.+?)\s*$", re.S)
_TOOL_NAME = re.compile(r"^[\w.\-]+$")
_NO_ACTION = {"", "none", "n/a", "null", "no", "no action", "无"}
_NO_INPUT = {"none", "null", "n/a", "无"}
_THINK = re.compile(r"<think(?:ing)?>(?P<t>.*?)(?:</think(?:ing)?>|$)", re.S | re.I)
_THINK_CLOSE = re.compile(r"^(?P<t>(?:(?!<think).)*?)</think(?:ing)?>", re.S | re.I)
_NEED_TOOL_NO = re.compile(
    r"^[ \t]*(?:thought\s*[:：]\s*)?do i need to use a tool\?[ \t]*no\.?[ \t]*\n\s*(?:ai|assistant)\s*[:：][ \t]*",
    re.I | re.M,
)
_NEED_TOOL = re.compile(r"^[ \t]*(?:thought\s*[:：]\s*)?do i need to use a tool\?.*$\n?", re.I | re.M)

Kind = Literal["action", "final", "text", "unreadable"]


@dataclass(slots=True)
class ReActParse:
    """One ReAct turn, read."""

    raw: str
    thought: str = ""
    action: str | None = None
    action_input: Any = None
    """A dict (JSON object input) or a string."""
    final_answer: str | None = None
    problem: str | None = None
    """Why the turn cannot be read (its kind is then ``"unreadable"``)."""

    @property
    def kind(self) -> Kind:
        if self.action is not None:
            return "action"
        if self.problem is not None:
            return "unreadable"
        return "final" if self.final_answer is not None else "text"

    def text_answer(self) -> str:
        """The turn as a direct answer: scaffolding, labels and fences removed, a leading label
        stripped; an unreadable turn answers only with its thought."""
        if self.final_answer is not None:
            return self.final_answer
        if self.problem is not None:
            return self.thought
        text = _unfence(strip_scaffolding(cut_observation(self.raw))[0]).strip()
        return _LABEL.sub("", text, count=1).strip() if _LABEL.match(text) else text


def strip_scaffolding(text: str) -> tuple[str, str]:
    """``text`` without ``<think>`` blocks and ``Do I need to use a tool?`` lines, and the thinking.

    ``Do I need to use a tool? No`` followed by ``AI:`` becomes ``Final Answer:``.
    """
    thoughts: list[str] = []
    if (m := _THINK_CLOSE.match(text)) is not None:  # the opening tag was in the prompt
        thoughts.append(m.group("t").strip())
        text = text[m.end() :]

    def keep(m: re.Match[str]) -> str:
        thoughts.append(m.group("t").strip())
        return ""

    text = _THINK.sub(keep, text)
    text = _NEED_TOOL.sub("", _NEED_TOOL_NO.sub("Final Answer: ", text))
    return text, "\n".join(t for t in thoughts if t)


def cut_observation(text: str) -> str:
    """``text`` up to an ``Observation:`` the model wrote itself."""
    m = _OBSERVATION.search(text)
    return text[: m.start()] if m else text


def _unfence(text: str) -> str:
    m = _FENCE.match(text)
    return m.group(1) if m else text


def _unquote(text: str) -> str:
    text = text.strip()
    while len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        text = text[1:-1].strip()
    return text


def _clean_input(text: str) -> Any:
    text = _unfence(text.strip()).strip()
    if text.lower().rstrip(".") in _NO_INPUT:  # "Action Input: None": no input, not the word
        return None
    if text[:1] in '{["' and text[-1:] in '}]"':
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict | str):
            return value
    return _unquote(text)


def _split_call(action: str) -> tuple[str, Any]:
    """``tool[input]`` / ``tool("input")`` / ``tool(key="v")`` -> (tool, input); else (action, None)."""
    m = _CALL.match(action)
    if not m:
        return action, None
    inner = m.group("br") if m.group("br") is not None else m.group("par")
    kw = _KWARG.match(inner)
    if kw and not inner.lstrip().startswith(("{", '"', "'")):
        return m.group("name"), {kw.group(1): _clean_input(kw.group(2))}
    return m.group("name"), _clean_input(inner)


def _clean_action(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first.strip().strip("`*\"'").strip().rstrip(".。,，").strip()


def _from_call(raw: str, thought: str, call: TextCall) -> ReActParse:
    """A call read from data (a JSON object or a tag) as a ReAct turn."""
    if is_final_name(call.name) or call.name.lower() in _NO_ACTION:
        return ReActParse(raw=raw, thought=thought, final_answer=final_text(call.arguments))
    arguments = "" if call.arguments is None else call.arguments
    return ReActParse(raw=raw, thought=thought, action=call.name, action_input=arguments)


def _outside(body: str, start: int) -> str:
    """The prose before a call, as its thought (a leading label removed)."""
    text = prose_before(body, start)
    return _LABEL.sub("", text, count=1).strip() if _LABEL.match(text) else text


def _data_call(raw: str, body: str, think: str) -> ReActParse | None:
    """A turn that writes its call as data (tags, or a JSON object) instead of labels."""
    tags = find_tag_calls(body)
    if tags is not None:
        if not tags.calls:
            return ReActParse(raw=raw, thought=think, problem=tags.problem)
        first = tags.calls[0]
        return _from_call(raw, _outside(body, first.start) or think, first)
    call = find_json_call(body)
    if call is not None:
        return _from_call(raw, _outside(body, call.start) or think, call)
    if broken_json_call(body):
        return ReActParse(raw=raw, thought=think, problem="the reply starts a JSON tool call that is not valid JSON")
    return None


def parse_react(text: str) -> ReActParse:
    """Read one ReAct turn (see the module docstring for what is tolerated)."""
    cleaned, think = strip_scaffolding(cut_observation(text))
    body = _unfence(cleaned.strip())
    final = FINAL_LABEL.search(body)  # labels inside the final answer's prose are not split off
    cut = final.start() if final else len(body)
    body = _MIDLINE.sub("\n", body[:cut]) + body[cut:]
    sections: list[tuple[str, str]] = []
    matches = list(_LABEL.finditer(body))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        sections.append((_canonical(m.group("label")), body[m.end() : end].strip()))
    if not any(label in ("action", "final") for label, _ in sections):
        data = _data_call(text, body, think)
        if data is not None:
            return data
    result = ReActParse(raw=text)
    result.thought = body[: matches[0].start()].strip() if matches else ""
    action_text: str | None = None
    for label, content in sections:
        if label == "thought" and not result.thought:
            result.thought = content
        elif label == "action" and action_text is None:
            action_text = content
        elif label == "input" and action_text is not None and result.action_input is None:
            result.action_input = _clean_input(content)
        elif label == "final" and result.final_answer is None:
            result.final_answer = _unfence(content).strip()
    result.thought = result.thought or think
    if action_text is not None:
        _read_action(result, action_text)
    if result.kind == "final" and not result.final_answer and result.problem is None:
        result.problem = "the Final Answer is empty"
    elif result.kind == "text" and not result.text_answer() and result.problem is None:
        result.problem = "the reply is empty" if not text.strip() else "the reply holds no thought, action or answer"
    return result


def _read_action(result: ReActParse, action_text: str) -> None:
    """Fill ``result`` from what follows ``Action:`` (a name, ``tool[input]``, or a JSON call)."""
    data = _unfence(action_text.strip())
    if data.startswith("{"):
        call = find_json_call(data)
        if call is None:
            result.problem = "the Action holds JSON that is not a valid tool call"
            return
        read = _from_call(result.raw, result.thought, call)
        result.action, result.action_input, result.final_answer = read.action, read.action_input, read.final_answer
        return
    name, inline = _split_call(_clean_action(action_text))
    lines = action_text.strip().splitlines()
    if is_final_name(name) or name.lower() in _NO_ACTION:
        if result.final_answer is None and inline is not None:
            result.final_answer = final_text(inline)  # Finish[answer]
        elif result.final_answer is None and name and result.action_input not in (None, ""):
            result.final_answer = final_text(result.action_input)
        elif result.final_answer is None:  # "Action: None" and no input: the thought is the reply
            result.final_answer = "" if is_final_name(name) else result.thought
        result.action_input = None
    elif not _TOOL_NAME.match(name):
        result.problem = f"the Action line names no tool: {name[:80]!r}"
        result.action_input = None
    else:
        result.action = name
        if inline is not None and result.action_input is None:
            result.action_input = inline
        elif result.action_input is None and len(lines) > 1:
            result.action_input = _clean_input("\n".join(lines[1:]))
        if result.action_input is None:
            result.action_input = ""


def _canonical(label: str) -> str:
    key = label.lower().replace("_", " ")
    if key in ("thought", "思考", "想法"):
        return "thought"
    if key in ("action input", "actioninput", "行动输入", "动作输入"):
        return "input"
    if key in ("action", "行动", "动作"):
        return "action"
    return "final"
