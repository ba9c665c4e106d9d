"""Every schema Gemini is sent stays inside the OpenAPI subset its ``Schema`` documents.

The checker below is written from Gemini's documentation of ``Schema`` (the fields it lists, the
types of its ``Type`` enum, and the formats it names per type: ``float``/``double`` on NUMBER,
``int32``/``int64`` on INTEGER, ``enum``/``date-time`` on STRING), not from the converter, and is
run over every function of the BFCL v4 specs in the shared evaluation data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reasonloop.llm.base import Message, ToolSpec
from reasonloop.llm.gemini_provider import GeminiProvider
from reasonloop.llm.gemini_schema import gemini_schema
from reasonloop.tools.spec_tool import SpecTool
from tests.llm.fixtures.contract import settings
from tests.llm.fixtures.server import StubServer
from tests.llm.fixtures.wires import GeminiWire

BFCL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "bfcl_v4"
BFCL_FUNCTIONS = 8463
"""Functions in the BFCL v4 single-turn files (INDEX.md of the shared data)."""

FIELDS = {
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
}
"""The fields of Gemini's ``Schema``."""
TYPES = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"}
DOCUMENTED_FORMATS = {"NUMBER": {"float", "double"}, "INTEGER": {"int32", "int64"}, "STRING": {"enum", "date-time"}}


def subset_problems(node: Any, where: str = "$") -> list[str]:
    """What Gemini's documented Schema subset does not allow in ``node`` (empty: it conforms)."""
    if not isinstance(node, dict):
        return [f"{where}: not an object"]
    problems = [f"{where}: field {key!r}" for key in node if key not in FIELDS]
    kind = node.get("type")
    if kind is not None and kind not in TYPES:
        problems.append(f"{where}: type {kind!r}")
    if "format" in node and node["format"] not in DOCUMENTED_FORMATS.get(kind, set()):
        problems.append(f"{where}: format {node['format']!r} on {kind!r}")
    if "enum" in node and (kind != "STRING" or not all(isinstance(v, str) for v in node["enum"])):
        problems.append(f"{where}: enum on {kind!r}")
    if kind == "OBJECT" and not node.get("properties"):
        problems.append(f"{where}: OBJECT without properties")
    if ("properties" in node or "required" in node) and kind != "OBJECT":
        problems.append(f"{where}: properties on {kind!r}")
    if not set(node.get("required") or ()) <= set(node.get("properties") or ()):
        problems.append(f"{where}: required names a missing property")
    if kind == "ARRAY" and not isinstance(node.get("items"), dict):
        problems.append(f"{where}: ARRAY without items")
    for name, sub in (node.get("properties") or {}).items():
        problems += subset_problems(sub, f"{where}.{name}")
    if "items" in node:
        problems += subset_problems(node["items"], f"{where}[]")
    for i, branch in enumerate(node.get("anyOf") or ()):
        problems += subset_problems(branch, f"{where}|{i}")
    return problems


def test_the_checker_refuses_what_gemini_refuses():
    assert subset_problems({"type": "STRING", "format": "date"}) == ["$: format 'date' on 'STRING'"]
    assert subset_problems({"type": "INTEGER", "format": "date-time"})
    assert subset_problems({"type": "OBJECT", "properties": {"a": {"type": "STRING", "format": "email"}}})
    assert subset_problems({"type": "ARRAY", "items": {"type": "STRING", "additionalProperties": False}})
    assert subset_problems({"type": "OBJECT", "properties": {}})
    assert subset_problems({"type": "STRING", "format": "date-time", "enum": ["a"]}) == []


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string", "format": "date"}, {"type": "STRING", "description": "(format: date)"}),
        (
            {"type": "string", "format": "email", "description": "Who to write to"},
            {"type": "STRING", "description": "Who to write to (format: email)"},
        ),
        ({"type": "string", "format": "date-time"}, {"type": "STRING", "format": "date-time"}),
        ({"type": "string", "format": "enum", "enum": ["a"]}, {"type": "STRING", "format": "enum", "enum": ["a"]}),
        ({"type": "integer", "format": "int64"}, {"type": "INTEGER", "format": "int64"}),
        ({"type": "number", "format": "double"}, {"type": "NUMBER", "format": "double"}),
        ({"type": "string", "format": "float"}, {"type": "STRING", "description": "(format: float)"}),
        ({"type": "integer", "format": "date-time"}, {"type": "INTEGER", "description": "(format: date-time)"}),
        (
            {"type": "array", "format": "csv", "items": {"type": "string", "format": "uri"}},
            {
                "type": "ARRAY",
                "description": "(format: csv)",
                "items": {"type": "STRING", "description": "(format: uri)"},
            },
        ),
        (
            {"type": ["string", "null"], "format": "date"},
            {"type": "STRING", "description": "(format: date)", "nullable": True},
        ),
    ],
)
def test_formats_gemini_does_not_document_move_to_the_description(schema, expected):
    assert gemini_schema(schema) == expected
    assert subset_problems(gemini_schema(schema)) == []


async def test_a_date_parameter_reaches_the_wire_without_its_format(stub: StubServer):
    schema = {
        "type": "object",
        "properties": {
            "day": {"type": "string", "format": "date", "description": "The day"},
            "at": {"type": "string", "format": "date-time"},
        },
        "required": ["day"],
    }
    stub.script(GeminiWire().text(["ok"]))
    llm = GeminiProvider(settings(base_url=stub.url, extra={"api_version": "v1beta"}))
    await llm.complete([Message.user("hi")], tools=[ToolSpec(name="book", description="Book.", parameters=schema)])
    sent = stub.requests[0].json["tools"][0]["functionDeclarations"][0]["parameters"]
    assert sent["properties"]["day"] == {"type": "STRING", "description": "The day (format: date)"}
    assert sent["properties"]["at"] == {"type": "STRING", "format": "date-time"}
    assert subset_problems(sent) == []


def _bfcl_functions() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(BFCL.glob("BFCL_v4_*.json")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                item = json.loads(line)
                out += [(f"{path.stem}/{item['id']}/{fn['name']}", fn) for fn in item["function"]]
    return out


def _formats(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["format"]] if isinstance(node.get("format"), str) else []
        return own + [f for value in node.values() for f in _formats(value)]
    if isinstance(node, list):
        return [f for value in node for f in _formats(value)]
    return []


@pytest.mark.integration
@pytest.mark.skipif(not BFCL.is_dir(), reason=f"BFCL data not found at {BFCL} (the shared evaluation data)")
def test_every_bfcl_function_converts_into_the_documented_subset():
    functions = _bfcl_functions()
    assert len(functions) == BFCL_FUNCTIONS
    problems: list[str] = []
    with_formats = 0
    seen: set[str] = set()
    for where, fn in functions:
        with_formats += bool(_formats(fn.get("parameters")))
        key = json.dumps(fn, sort_keys=True)
        if key in seen:  # the same function offered by several items
            continue
        seen.add(key)
        parameters = SpecTool(fn["name"], fn.get("description", ""), fn.get("parameters")).spec().parameters
        converted = gemini_schema(parameters)
        if converted.get("properties"):  # a tool that takes nothing is declared without parameters
            problems += [f"{where}: {p}" for p in subset_problems(converted)]
    assert with_formats == 4  # the functions with "format": "date", each converted above
    assert problems == [], problems[:10]
