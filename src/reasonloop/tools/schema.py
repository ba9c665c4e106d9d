"""JSON-schema shaping for tool parameters.

Models read a plain object schema: refs inlined, no pydantic titles, every property typed.
:func:`model_schema` makes one from a pydantic model; :func:`normalize_schema` repairs the
schemas found in the wild (``"type": "dict"``, ``"float"``, ``"tuple"``, ``"any"``,
missing types) so that every provider accepts the same schema.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

__all__ = ["inline_refs", "model_schema", "normalize_schema"]

# Type names seen in hand-written schemas, mapped to JSON-schema types.
_TYPE_ALIASES = {
    "dict": "object",
    "map": "object",
    "object": "object",
    "float": "number",
    "double": "number",
    "number": "number",
    "int": "integer",
    "integer": "integer",
    "long": "integer",
    "str": "string",
    "string": "string",
    "char": "string",
    "bool": "boolean",
    "boolean": "boolean",
    "list": "array",
    "array": "array",
    "tuple": "array",
    "set": "array",
    "null": "null",
    "none": "null",
}
_ANY = "any"


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every local ``$ref`` replaced by its definition and ``$defs`` removed.

    Recursive models cannot be inlined fully; a reference met again inside itself becomes
    an untyped object.
    """
    defs = {**schema.get("$defs", {}), **schema.get("definitions", {})}

    def walk(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/"):
                key = ref.rsplit("/", 1)[-1]
                if key in seen or key not in defs:
                    return {"type": "object"}
                merged = {**copy.deepcopy(defs[key]), **{k: v for k, v in node.items() if k != "$ref"}}
                return walk(merged, seen | {key})
            return {k: walk(v, seen) for k, v in node.items() if k not in ("$defs", "definitions")}
        if isinstance(node, list):
            return [walk(v, seen) for v in node]
        return node

    return walk(schema, frozenset())


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "title" and isinstance(v, str):
                continue
            if k == "properties" and isinstance(v, dict):
                out[k] = {name: _strip_titles(prop) for name, prop in v.items()}
            else:
                out[k] = _strip_titles(v)
        return out
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """Object schema of a pydantic model, ready for any provider."""
    schema = _strip_titles(inline_refs(model.model_json_schema()))
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return normalize_schema(schema)


def normalize_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Repair a hand-written parameter schema into standard JSON schema.

    Maps type aliases (``dict``, ``float``, ``tuple``, ...), drops ``any`` (no type means
    any), gives arrays ``items`` when missing, keeps only ``required`` names that exist,
    and makes the top level an object.
    """
    out = _normalize(inline_refs(schema) if isinstance(schema, dict) else {})
    if out.get("type") != "object":
        out = {"type": "object", "properties": out.get("properties", {})}
    out.setdefault("properties", {})
    return out


def _normalize(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "type":
            mapped = _map_type(value)
            if mapped is not None:
                out["type"] = mapped
        elif key == "properties" and isinstance(value, dict):
            out["properties"] = {str(n): _normalize(p) if isinstance(p, dict) else {} for n, p in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _normalize(value)
        elif key == "items" and isinstance(value, list):  # tuple-style items
            out["items"] = _normalize(value[0]) if value else {}
        elif key in ("anyOf", "oneOf", "allOf") and isinstance(value, list):
            out[key] = [_normalize(v) for v in value if isinstance(v, dict)]
        elif key == "enum" and isinstance(value, list):
            out["enum"] = value
        else:
            out[key] = value
    kind = out.get("type")
    if isinstance(kind, list):
        # A union of types: keep JSON-schema form without 'null' dupes.
        kinds = list(dict.fromkeys(k for k in kind if k))
        out["type"] = kinds[0] if len(kinds) == 1 else kinds
        kind = out["type"]
    if kind == "array" and "items" not in out:
        out["items"] = {}
    if kind == "object" or "properties" in out:
        props = out.get("properties")
        if isinstance(props, dict):
            required = out.get("required")
            if isinstance(required, list):
                out["required"] = [r for r in required if isinstance(r, str) and r in props]
                if not out["required"]:
                    del out["required"]
            elif "required" in out:
                del out["required"]
    return out


def _map_type(value: Any) -> Any:
    if isinstance(value, str):
        low = value.strip().lower()
        if low == _ANY:
            return None
        return _TYPE_ALIASES.get(low, "string")
    if isinstance(value, list):
        mapped = [m for m in (_map_type(v) for v in value) if m]
        return mapped or None
    return None
