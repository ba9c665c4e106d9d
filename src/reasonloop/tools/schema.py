"""JSON-schema shaping for tool parameters.

Models read a plain object schema: refs inlined, no pydantic titles, every property typed.
:func:`model_schema` makes one from a pydantic model; :func:`normalize_schema` repairs the
schemas found in the wild (``"type": "dict"``, ``"float"``, ``"tuple"``, ``"any"``,
missing types) so that every provider accepts the same schema.
"""

from __future__ import annotations

import copy
import json
import re
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

if TYPE_CHECKING:
    import jsonschema

__all__ = ["JSONSchemaParams", "coerce_arguments", "inline_refs", "model_schema", "normalize_schema", "params_model"]

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
    out.pop("optional", None)  # a non-standard flag; 'required' says the same thing
    kind = out.get("type")
    if isinstance(kind, list):
        # A union of types: keep JSON-schema form without 'null' dupes.
        kinds = list(dict.fromkeys(k for k in kind if k))
        out["type"] = kinds[0] if len(kinds) == 1 else kinds
        kind = out["type"]
    if "default" in out and out["default"] is None and kind is not None and "null" not in _kinds(kind):
        # "default": null documents that null means "not given": accept it.
        out["type"] = kind = [*_kinds(kind), "null"]
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    if kind == "array" or (isinstance(kind, list) and "array" in kind):
        items = out.setdefault("items", {})
        enum = out.get("enum")
        scalars = isinstance(enum, list) and bool(enum) and not any(isinstance(v, list) for v in enum)
        if scalars and isinstance(items, dict) and "enum" not in items:
            # An enum of scalars written on the array means "each item is one of these".
            items["enum"] = out.pop("enum")
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


def _kinds(kind: Any) -> list[str]:
    return list(kind) if isinstance(kind, list) else [kind]


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


class JSONSchemaParams(BaseModel):
    """Base of parameter models that accept whatever a JSON schema accepts.

    Tools whose arguments are described by a JSON schema rather than Python types (MCP
    tools, specs loaded from files) use :func:`params_model`; the arguments are checked
    against the schema with ``jsonschema`` and kept as extra fields (``model_dump()``
    gives them back).
    """

    model_config = ConfigDict(extra="allow")
    json_schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}
    json_validator: ClassVar[Any] = None

    @model_validator(mode="before")
    @classmethod
    def _check(cls, data: Any) -> Any:
        data = coerce_arguments(data, cls.json_schema)
        errors = sorted(cls.json_validator.iter_errors(data), key=lambda e: list(e.absolute_path))
        if errors:
            message = "; ".join(_describe(e) for e in errors[:5])
            raise PydanticCustomError("json_schema", "{problems}", {"problems": message})
        return data

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.json_schema)

    def arguments(self) -> dict[str, Any]:
        """The validated arguments as a plain dict."""
        return dict(self.__pydantic_extra__ or {})


def _describe(error: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def params_model(schema: dict[str, Any], name: str = "params") -> type[JSONSchemaParams]:
    """A pydantic model whose validation is the (normalised) JSON schema ``schema``.

    Args:
        schema: A parameter schema as found in the wild; it is normalised first.
        name: Class name, for messages.

    Raises:
        jsonschema.SchemaError: the schema is not valid JSON schema even after normalising.
    """
    import jsonschema  # only tools described by JSON schema need it

    normalized = normalize_schema(schema)
    validator_cls = jsonschema.validators.validator_for(normalized, default=jsonschema.Draft7Validator)
    validator_cls.check_schema(normalized)
    validator = validator_cls(normalized)
    return type(name, (JSONSchemaParams,), {"json_schema": normalized, "json_validator": validator})


_INTEGER = re.compile(r"[-+]?\d+")
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


def _is(value: Any, kind: str) -> bool:
    if isinstance(value, bool) and kind in ("integer", "number"):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _JSON_TYPES.get(kind, (object,)))


def coerce_arguments(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` with lossless scalar fixes toward ``schema``, as models often need.

    Models write ``"5"`` for an integer, ``true`` for a ``"True"``/``"False"`` string enum,
    ``"horror"`` for the enum value ``"Horror"``. A scalar that does not have the schema's
    type is converted when the conversion is exact (numeric text to a number, a number or
    boolean to text, ``"true"``/``"false"`` to a boolean), and a string matching exactly one
    enum value up to case takes that value. Anything else is left for validation to report.
    """
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            return {k: coerce_arguments(v, props[k]) if isinstance(props.get(k), dict) else v for k, v in value.items()}
        return value
    if isinstance(value, list):
        items = schema.get("items")
        return [coerce_arguments(v, items) for v in value] if isinstance(items, dict) else value
    kinds = _kinds(schema.get("type")) if schema.get("type") is not None else []
    if kinds and not any(_is(value, k) for k in kinds):
        value = _convert(value, kinds, schema.get("enum"))
    enum = schema.get("enum")
    if isinstance(value, str) and isinstance(enum, list) and value not in enum:
        folded = [e for e in enum if isinstance(e, str) and e.casefold() == value.casefold()]
        if len(folded) == 1:
            value = folded[0]
    return value


def _convert(value: Any, kinds: list[str], enum: Any) -> Any:
    for kind in kinds:
        if kind == "string" and isinstance(value, (bool, int, float)):
            forms = [str(value), json.dumps(value)]
            if isinstance(enum, list):
                return next((f for f in forms if f in enum), value)
            return forms[1] if isinstance(value, bool) else forms[0]
        if isinstance(value, str):
            text = value.strip()
            if kind == "integer" and _INTEGER.fullmatch(text):
                return int(text)
            if kind == "number" and _NUMBER.fullmatch(text):
                number = float(text)
                return int(number) if _INTEGER.fullmatch(text) else number
            if kind == "boolean" and text.lower() in ("true", "false"):
                return text.lower() == "true"
    return value
