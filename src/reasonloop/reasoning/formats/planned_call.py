"""A tool call the model asked for, in the one shape every way of asking is read into, and its
arguments read from what a text-format model wrote."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from reasonloop.tools.base import Tool

__all__ = ["PlannedCall", "coerce_input"]


@dataclass(slots=True)
class PlannedCall:
    """A call the model asked for."""

    call_id: str
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_input: Any = None
    """What the model wrote, kept for the steps (defaults to ``arguments``)."""
    planned_input: Any = None
    """The input as a plan wrote it, when the call comes from one (kept beside what the tool got)."""
    step: str | None = None
    """The id of the plan step the call carries out (its :class:`~reasonloop.events.ToolCall` names it)."""
    invalid: str | None = None
    """Why the arguments could not be read (the call is answered with this error)."""


def coerce_input(tool: Tool, raw: Any) -> dict[str, Any]:
    """Tool arguments from what a text-format model wrote.

    A JSON object is used as is; anything else (plain text, a JSON string or number)
    fills the tool's first required parameter (or its first parameter).
    """
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("{"):
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                value = None
            if isinstance(value, dict):
                return value
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            text = text[1:-1]
        raw = text
    fields = tool.Params.model_fields
    if not fields:
        return {}
    primary = next((name for name, f in fields.items() if f.is_required()), next(iter(fields)))
    return {primary: raw if raw is not None else ""}
