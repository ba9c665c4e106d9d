"""What goes to a model and what comes back: chat messages, tool specs and stream chunks.

Messages are frozen dataclasses built by our own code on every step (what comes from
outside goes through :meth:`Message.from_dict`); chunks are what a provider's stream yields.
:mod:`reasonloop.llm.base` re-exports all of them with the :class:`~reasonloop.llm.base.LLM`
contract.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = [
    "COMPLETION",
    "ChatRequest",
    "Done",
    "LLMChunk",
    "Message",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallPart",
    "ToolSpec",
]


# -- messages ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """A tool call the assistant made: ``arguments`` already parsed to a dict."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


_ROLES = frozenset({"system", "user", "assistant", "tool"})


COMPLETION = "completion"
"""The ``name`` of a user message that is a completion prompt (:meth:`Message.completion`)."""


@dataclass(frozen=True, slots=True, weakref_slot=True)
class Message:
    """One chat message. ``tool`` messages answer the assistant tool call ``tool_call_id``.

    Frozen: a message, once built, is shared by every prompt that contains it (history is
    re-sent each step), so nothing may change it behind another prompt's back. A plain
    dataclass, not a validating model: messages are built by our own code on every step;
    what comes from outside (a stored conversation, a request) goes through :meth:`from_dict`.
    """

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCallPart, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    """For ``tool`` messages: the tool's name (Gemini and Ollama need it). For a ``user`` message,
    :data:`COMPLETION` marks a completion prompt (see :meth:`completion`)."""

    @classmethod
    def system(cls, content: str) -> Message:
        return cls("system", content)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls("user", content)

    @classmethod
    def completion(cls, prompt: str) -> Message:
        """A completion prompt for a base model: a provider that can (the local one) sends the text
        as it is, for the model to continue; a chat provider sends it as a user message."""
        return cls("user", prompt, name=COMPLETION)

    @property
    def is_completion(self) -> bool:
        return self.role == "user" and self.name == COMPLETION

    @classmethod
    def assistant(cls, content: str = "", tool_calls: Sequence[ToolCallPart] = ()) -> Message:
        return cls("assistant", content, tuple(tool_calls))

    @classmethod
    def tool(cls, tool_call_id: str, content: str, name: str | None = None) -> Message:
        return cls("tool", content, (), tool_call_id, name)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        """A message from JSON-like data (``role``, ``content``, optional tool fields), checked.

        Raises:
            ValueError: an unknown role, or a field of the wrong type.
        """
        role = data.get("role")
        if role not in _ROLES:
            raise ValueError(f"message role must be one of {sorted(_ROLES)}, got {role!r}")
        content = data.get("content") or ""
        if not isinstance(content, str):
            raise ValueError(f"message content must be text, got {type(content).__name__}")
        calls = []
        for raw in data.get("tool_calls") or ():
            try:
                part = raw if isinstance(raw, ToolCallPart) else ToolCallPart(**dict(raw))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"malformed tool call in message: {raw!r}") from exc
            if not isinstance(part.id, str) or not isinstance(part.name, str) or not isinstance(part.arguments, dict):
                raise ValueError(f"malformed tool call in message: {raw!r}")
            calls.append(part)
        return cls(role, content, tuple(calls), data.get("tool_call_id"), data.get("name"))


class ToolSpec(BaseModel):
    """What a model is told about one tool: name, description, JSON-schema parameters.

    ``parameters`` must be an object schema with refs inlined; :mod:`reasonloop.tools.base`
    builds it from a pydantic model and normalises quirky schemas, providers only reshape it.
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(slots=True)
class ChatRequest:
    """One call, as the base class hands it to a provider's :meth:`LLM._stream`."""

    messages: list[Message]
    tools: list[ToolSpec] | None
    stop: list[str] | None
    max_tokens: int | None
    temperature: float | None


# -- stream chunks ------------------------------------------------------------------------------
@dataclass(slots=True)
class TextDelta:
    text: str
    type: Literal["text"] = "text"


@dataclass(slots=True)
class ToolCallDelta:
    """A piece of a tool call. ``index`` groups pieces of one call; ``id``/``name`` arrive once."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    """A fragment of the JSON arguments; concatenate fragments of the same index."""
    type: Literal["tool_call"] = "tool_call"


@dataclass(slots=True)
class Done:
    """Last chunk of every successful stream."""

    finish_reason: str = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_estimated: bool = False
    """True when the provider reported no usage and the counts are our estimate."""
    type: Literal["done"] = "done"


LLMChunk = TextDelta | ToolCallDelta | Done
