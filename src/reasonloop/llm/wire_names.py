"""Tool names every vendor accepts: ``[A-Za-z_][A-Za-z0-9_-]{0,63}``.

Tools come with names no vendor chose: an MCP server's ``files.read``, a function spec's
``math.factorial``. OpenAI, Anthropic and Gemini refuse names outside that pattern, so
:meth:`LLM.stream <reasonloop.llm.base.LLM.stream>` sends such tools (and the earlier calls
and results of the conversation that name them) under a wire name, and gives the tool calls
it streams back their own names. Names already acceptable are sent as they are.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterable

from reasonloop.llm.messages import ChatRequest, Message

__all__ = ["MAX_NAME", "wire_name", "wire_names", "wire_request"]

MAX_NAME = 64
_BAD_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_SAFE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
"""A name every vendor accepts as it is (what :func:`wire_name` leaves unchanged)."""


def wire_name(name: str) -> str:
    """``name`` made acceptable to every vendor (deterministic; a hash suffix keeps long names apart)."""
    safe = _BAD_CHARS.sub("_", name) or "_"
    if not (safe[0].isalpha() or safe[0] == "_"):
        safe = "_" + safe
    if len(safe) > MAX_NAME:
        safe = f"{safe[: MAX_NAME - 9]}_{hashlib.sha1(name.encode()).hexdigest()[:8]}"
    return safe


def wire_names(names: Iterable[str]) -> dict[str, str]:
    """Original name -> wire name, unique within one request (names already safe keep theirs)."""
    names = list(dict.fromkeys(names))
    out = {name: name for name in names if wire_name(name) == name}
    used = set(out)
    for name in names:
        if name in out:
            continue
        wire = wire_name(name)
        if wire in used:
            wire = f"{wire[: MAX_NAME - 9]}_{hashlib.sha1(name.encode()).hexdigest()[:8]}"
        used.add(wire)
        out[name] = wire
    return out


def wire_request(request: ChatRequest) -> tuple[ChatRequest, dict[str, str] | None]:
    """``request`` with its tools under wire names, and wire name -> own name to read the reply
    with; ``(request, None)`` when every name is acceptable already (nearly always)."""
    if not request.tools or all(_SAFE.fullmatch(t.name) for t in request.tools):
        return request, None
    names = wire_names(t.name for t in request.tools)
    tools = [t.model_copy(update={"name": names[t.name]}) for t in request.tools]
    messages = [_renamed(m, names) for m in request.messages]
    wired = dataclasses.replace(request, tools=tools, messages=messages)
    return wired, {wire: own for own, wire in names.items()}


def _renamed(message: Message, names: dict[str, str]) -> Message:
    if message.tool_calls:
        calls = tuple(dataclasses.replace(c, name=names.get(c.name, c.name)) for c in message.tool_calls)
        return dataclasses.replace(message, tool_calls=calls)
    if message.name is not None and message.name in names:
        return dataclasses.replace(message, name=names[message.name])
    return message
