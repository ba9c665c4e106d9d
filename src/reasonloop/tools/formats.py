"""Tool specs in the shapes OpenAI, Anthropic and Gemini expect.

A :class:`~reasonloop.llm.base.ToolSpec` already carries a normalised JSON schema
(:func:`reasonloop.tools.schema.normalize_schema`); these pure functions only reshape it.
Tool names are made safe for every vendor by :func:`wire_name` (letters, digits, ``_``,
``-``; at most 64 characters; starts with a letter or ``_``) — keep the mapping from
:func:`wire_names` to route calls back. Gemini accepts an OpenAPI subset of JSON schema, so
:func:`gemini_schema` rewrites type unions as ``nullable``/``anyOf``, keeps ``enum`` on
strings only and drops keys it does not know.

Example::

    spec = tool.spec()
    openai_tools = [to_openai(spec)]
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any

from reasonloop.llm.base import ToolSpec

__all__ = ["gemini_schema", "to_anthropic", "to_gemini", "to_openai", "wire_name", "wire_names"]

MAX_NAME = 64
_BAD_CHARS = re.compile(r"[^A-Za-z0-9_-]")
# Keys of Gemini's Schema object (an OpenAPI 3.0 subset) that we pass through unchanged.
_GEMINI_KEEP = {
    "description",
    "format",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minProperties",
    "maxProperties",
}
_GEMINI_FORMATS = {"string": {"enum", "date-time"}, "integer": {"int32", "int64"}, "number": {"float", "double"}}
_GEMINI_TYPES = {"string", "number", "integer", "boolean", "array", "object"}


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


def to_openai(spec: ToolSpec, name: str | None = None) -> dict[str, Any]:
    """Chat Completions ``tools`` entry."""
    return {
        "type": "function",
        "function": {
            "name": name or wire_name(spec.name),
            "description": spec.description,
            "parameters": spec.parameters,
        },
    }


def to_anthropic(spec: ToolSpec, name: str | None = None) -> dict[str, Any]:
    """Messages API ``tools`` entry."""
    return {"name": name or wire_name(spec.name), "description": spec.description, "input_schema": spec.parameters}


def to_gemini(spec: ToolSpec, name: str | None = None) -> dict[str, Any]:
    """``functionDeclarations`` entry; ``parameters`` is left out when the tool takes none."""
    out: dict[str, Any] = {"name": name or wire_name(spec.name), "description": spec.description}
    params = gemini_schema(spec.parameters)
    if params.get("properties"):
        out["parameters"] = params
    return out


def gemini_schema(node: Any) -> dict[str, Any]:
    """A JSON-schema node rewritten into Gemini's Schema subset."""
    if not isinstance(node, dict):
        return {}
    out: dict[str, Any] = {k: v for k, v in node.items() if k in _GEMINI_KEEP}
    kinds = node.get("type")
    kinds = list(kinds) if isinstance(kinds, list) else ([kinds] if kinds else [])
    if "null" in kinds:
        out["nullable"] = True
        kinds = [k for k in kinds if k != "null"]
    kinds = [k for k in kinds if k in _GEMINI_TYPES]
    unions = node.get("anyOf") or node.get("oneOf")
    if len(kinds) > 1:
        out["anyOf"] = [gemini_schema({**node, "type": k, "anyOf": None, "oneOf": None}) for k in kinds]
        return out
    if not kinds and isinstance(unions, list):
        branches = [b for b in unions if isinstance(b, dict)]
        if any(b.get("type") == "null" for b in branches):
            out["nullable"] = True
        branches = [gemini_schema(b) for b in branches if b.get("type") != "null"]
        if len(branches) == 1:
            return {**branches[0], **out}
        if branches:
            out["anyOf"] = branches
        return out
    kind = kinds[0] if kinds else None
    if kind is None and "properties" in node:
        kind = "object"
    if kind is not None:
        out["type"] = kind
    if "format" in out and out["format"] not in _GEMINI_FORMATS.get(kind or "", set()):
        del out["format"]
    enum = node.get("enum")
    if isinstance(enum, list) and enum:
        values = [v for v in enum if v is not None]
        if kind in (None, "string") and all(isinstance(v, str) for v in values):
            out["type"] = "string"
            out["enum"] = values
        else:
            allowed = ", ".join(repr(v) for v in values)
            out["description"] = f"{out.get('description', '')} (one of: {allowed})".strip()
    if kind == "array":
        out["items"] = gemini_schema(node.get("items") or {"type": "string"})
        if not out["items"]:
            out["items"] = {"type": "string"}
    if kind == "object":
        props = {str(k): gemini_schema(v) for k, v in (node.get("properties") or {}).items()}
        if props:
            out["properties"] = props
            required = [r for r in node.get("required", []) if r in props]
            if required:
                out["required"] = required
        else:
            # Gemini refuses an OBJECT without properties; an untyped value stays open.
            del out["type"]
            out["description"] = f"{out.get('description', '')} (a JSON object)".strip()
    return out
