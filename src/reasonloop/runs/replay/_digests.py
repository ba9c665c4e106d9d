"""Digests of the messages and tool specs a model call sends, each object digested once.

Why: a run re-sends its whole conversation with every model call, so digesting each call's
messages anew costs the square of the run's length (benchmarks/README.md, "Design notes: Digests of what a model call sends").
Messages are frozen and tool specs built once per tool: each object's digest is kept while the
object lives (a weak reference, so the cache holds no conversation alive and an id is never
mistaken for a newer object's).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from reasonloop.llm.base import Message, ToolSpec
from reasonloop.runs.replay.steps import digest

__all__ = ["message_digests", "spec_digests"]

_cache: dict[int, tuple[weakref.ref[Any], str]] = {}


def _digests(items: Sequence[Any], make: Callable[[Any], str]) -> list[str]:
    cache, out = _cache, []
    for item in items:
        key = id(item)
        entry = cache.get(key)
        if entry is None or entry[0]() is not item:
            entry = cache[key] = (weakref.ref(item, lambda _, key=key: cache.pop(key, None)), make(item))
        out.append(entry[1])
    return out


def _message(m: Message) -> str:
    return digest([m.role, m.content, [[c.id, c.name, c.arguments] for c in m.tool_calls], m.tool_call_id, m.name])


def message_digests(messages: Sequence[Message]) -> list[str]:
    """One digest per message (its role, text, tool calls, and what it answers)."""
    return _digests(messages, _message)


def spec_digests(specs: Sequence[ToolSpec]) -> list[str]:
    """One digest per tool spec (its name, description and parameters)."""
    return _digests(specs, lambda spec: digest(spec.model_dump()))
