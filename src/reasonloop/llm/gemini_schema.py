"""Reshape a JSON-schema tool signature into the OpenAPI subset Gemini accepts.

Gemini's function declarations take a ``Schema`` (an OpenAPI 3.0 subset): one upper-case
``type``, ``nullable`` instead of ``null`` unions, string-only ``enum``, a ``format`` only among
the few its type documents (:data:`FORMATS`), and none of ``additionalProperties``, ``$schema``,
``default``, ``const``, ``examples``... and no OBJECT without properties. A schema with such keys
or values is rejected with HTTP 400, so :func:`gemini_schema` keeps only what Gemini reads: an
object that names no properties is left untyped and described as a JSON object, and another
format (``date``, ``email``, ``uri``...) is said in the description instead (the provider leaves a
tool's parameters out entirely when it takes none).
"""

from __future__ import annotations

from typing import Any

__all__ = ["FORMATS", "gemini_schema"]

FORMATS: dict[str, frozenset[str]] = {
    "STRING": frozenset({"enum", "date-time"}),
    "NUMBER": frozenset({"float", "double"}),
    "INTEGER": frozenset({"int32", "int64"}),
}
"""The ``format`` values Gemini documents for each type of its Schema; any other is refused."""

# JSON-schema keys Gemini's Schema understands (beside type/properties/items/anyOf, handled apart).
_KEEP = (
    "description",
    "required",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "pattern",
    "title",
    "nullable",
)
_TYPES = {"string", "number", "integer", "boolean", "array", "object"}


def gemini_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The Gemini form of a JSON schema (input not modified).

    Example::

        >>> gemini_schema({"type": "object", "additionalProperties": False,
        ...                "properties": {"n": {"type": ["integer", "null"], "default": 3}}})
        {'type': 'OBJECT', 'properties': {'n': {'type': 'INTEGER', 'nullable': True}}}
    """
    return _convert(schema, root=True)


def _convert(node: Any, root: bool = False) -> dict[str, Any]:
    if not isinstance(node, dict):
        return {}
    out: dict[str, Any] = {}
    nullable = False
    kind = node.get("type")
    if isinstance(kind, list):
        nullable = "null" in kind
        kinds = [k for k in kind if k in _TYPES]
        kind = kinds[0] if kinds else None
    elif kind == "null":
        nullable, kind = True, None
    variants = node.get("anyOf") or node.get("oneOf")
    if isinstance(variants, list):
        real = [v for v in variants if isinstance(v, dict) and v.get("type") != "null"]
        nullable = nullable or len(real) < len(variants)
        if len(real) == 1 and kind is None:
            merged = _convert(real[0])
            merged.update({k: v for k, v in _convert({**node, "anyOf": None, "oneOf": None}).items() if k != "type"})
            if nullable:
                merged["nullable"] = True
            return merged
        if real:
            out["anyOf"] = [_convert(v) for v in real]
    if kind is None and "const" in node:
        kind = _json_type(node["const"])
    if kind in _TYPES:
        out["type"] = kind.upper()
    for key in _KEEP:
        if key in node and node[key] is not None:
            out[key] = node[key]
    enum = node.get("enum")
    if enum is None and "const" in node:
        enum = [node["const"]]
    if isinstance(enum, list):
        strings = [e for e in enum if isinstance(e, str)]
        # Gemini takes enums of strings on strings only (``"True"`` on a boolean is refused).
        if strings and len(strings) == len([e for e in enum if e is not None]) and out.get("type") in (None, "STRING"):
            out["enum"] = strings
            out.setdefault("type", "STRING")
            nullable = nullable or None in enum

    fmt = node.get("format")
    if isinstance(fmt, str) and fmt:
        if fmt in FORMATS.get(out.get("type", ""), ()):
            out["format"] = fmt
        else:  # refused by Gemini: the model still reads it in the description
            out["description"] = f"{out.get('description', '')} (format: {fmt})".strip()

    props = node.get("properties")
    if isinstance(props, dict):
        out["properties"] = {str(name): _convert(sub) for name, sub in props.items()}
        out.setdefault("type", "OBJECT")
        if isinstance(out.get("required"), list):
            out["required"] = [r for r in out["required"] if r in out["properties"]]
            if not out["required"]:
                del out["required"]
    elif "required" in out:
        del out["required"]
    if out.get("type") == "ARRAY" or "items" in node:
        out["items"] = _convert(node.get("items")) or {"type": "STRING"}
        out.setdefault("type", "ARRAY")
    if not root and out.get("type") == "OBJECT" and not out.get("properties"):
        # Gemini refuses an OBJECT without properties; an untyped value stays open.
        del out["type"]
        out.pop("properties", None)
        out["description"] = f"{out.get('description', '')} (a JSON object)".strip()
    if nullable:
        out["nullable"] = True
    return out


def _json_type(value: Any) -> str | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None
