"""Reading ReAct text the way real models write it.

:func:`parse_react` turns one model turn into a :class:`ReActParse`: a thought, an action
with its input, and/or a final answer. It tolerates JSON or plain action input, the
``tool[input]`` and ``tool("input")`` forms, code fences, markdown bold, Chinese labels and
full-width colons, numbered labels (``Thought 2:``), extra whitespace and any case, a
JSON blob ``{"action": ..., "action_input": ...}``, and observations the model invented
(everything from ``Observation:`` on is dropped). When an action and a final answer appear
together the action wins: the answer was written before seeing the observation.

:class:`AnswerSpotter` finds the answer inside a stream of text as it arrives, so answer
tokens can be streamed live.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["AnswerSpotter", "ReActParse", "cut_observation", "parse_react"]

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
_NO_ACTION = {"", "none", "n/a", "null", "no", "no action", "无", "final answer", "finish", "final_answer"}

Kind = Literal["action", "final", "text"]


@dataclass(slots=True)
class ReActParse:
    """One ReAct turn, read."""

    raw: str
    thought: str = ""
    action: str | None = None
    action_input: Any = None
    """A dict (JSON object input) or a string."""
    final_answer: str | None = None

    @property
    def kind(self) -> Kind:
        if self.action is not None:
            return "action"
        return "final" if self.final_answer is not None else "text"

    def text_answer(self) -> str:
        """The turn as a direct answer: labels and fences removed, a leading ``Thought:`` stripped."""
        if self.final_answer is not None:
            return self.final_answer
        text = _unfence(cut_observation(self.raw)).strip()
        return _LABEL.sub("", text, count=1).strip() if _LABEL.match(text) else text


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


def _json_blob(text: str) -> ReActParse | None:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        value = json.loads(text[start : end + 1])
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict) or "action" not in value:
        return None
    action = str(value.get("action") or "").strip()
    action_input = value.get("action_input", value.get("input", value.get("args", "")))
    thought = re.sub(r"```[\w-]*\s*$", "", text[:start]).strip()
    if action.lower() in _NO_ACTION:
        answer = action_input if isinstance(action_input, str) else json.dumps(action_input, ensure_ascii=False)
        return ReActParse(raw=text, thought=thought, final_answer=answer.strip())
    return ReActParse(raw=text, thought=thought, action=action, action_input=action_input)


def parse_react(text: str) -> ReActParse:
    """Read one ReAct turn (see the module docstring for what is tolerated)."""
    body = _unfence(cut_observation(text).strip())
    final = _FINAL.search(body)  # labels inside the final answer's prose are not split off
    cut = final.start() if final else len(body)
    body = _MIDLINE.sub("\n", body[:cut]) + body[cut:]
    sections: list[tuple[str, str]] = []
    matches = list(_LABEL.finditer(body))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        sections.append((_canonical(m.group("label")), body[m.end() : end].strip()))
    if not any(label in ("action", "final") for label, _ in sections):
        blob = _json_blob(body)
        if blob is not None:
            blob.raw = text
            return blob
    result = ReActParse(raw=text)
    prefix = body[: matches[0].start()].strip() if matches else ""
    result.thought = prefix
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
    if action_text is not None:
        name, inline = _split_call(_clean_action(action_text))
        lines = action_text.strip().splitlines()
        if name.lower() in _NO_ACTION:
            if result.final_answer is None and isinstance(result.action_input, str) and name:
                result.final_answer = result.action_input
            result.action_input = None
        else:
            result.action = name
            if inline is not None and result.action_input is None:
                result.action_input = inline
            elif result.action_input is None and len(lines) > 1:
                result.action_input = _clean_input("\n".join(lines[1:]))
            elif result.action_input is None:
                result.action_input = ""
    return result


def _canonical(label: str) -> str:
    key = label.lower().replace("_", " ")
    if key in ("thought", "思考", "想法"):
        return "thought"
    if key in ("action input", "actioninput", "行动输入", "动作输入"):
        return "input"
    if key in ("action", "行动", "动作"):
        return "action"
    return "final"


_FINAL = re.compile(r"(?:final[ _]?answer|最终答案|最终回答)\s*(?:\*\*)?\s*[:：](?:\*\*)?[ \t]*", re.I)
_LEAD = re.compile(r"^\s*(?:\*\*)?\s*(thought|action|final|思考|行动|最终|answer|答案|```)", re.I)


class AnswerSpotter:
    """Picks the answer out of streamed text, chunk by chunk.

    Args:
        direct: The text is the answer unless it starts like a ReAct turn (forced
            answers); otherwise the answer starts after ``Final Answer:``.
    """

    __slots__ = ("_buf", "_direct", "_scanned", "_sent", "_start")

    def __init__(self, direct: bool = False) -> None:
        self._buf = ""
        self._direct = direct
        self._start: int | None = None
        self._sent = 0
        self._scanned = 0

    @property
    def head(self) -> str:
        """The text before the answer (once the answer has started)."""
        return self._buf[: self._start] if self._start is not None else ""

    def feed(self, chunk: str) -> str:
        """The part of ``chunk`` (and of what was held back) that is answer text."""
        self._buf += chunk
        if self._start is None:
            m = _FINAL.search(self._buf, max(0, self._scanned - 24))
            self._scanned = len(self._buf)
            if m:
                self._start = m.end()
            elif self._direct:
                head = self._buf.lstrip()
                if len(head) < 16 and "\n" not in head:
                    return ""
                if _LEAD.match(head):
                    self._direct = False
                    return ""
                self._start = 0
            else:
                return ""
        out = self._buf[self._start + self._sent :]
        if not self._sent:
            stripped = out.lstrip()
            self._start += len(out) - len(stripped)
            out = stripped
        self._sent += len(out)
        return out
