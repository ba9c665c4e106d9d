from reasonloop.llm.base import ToolSpec
from reasonloop.tools.formats import gemini_schema, to_anthropic, to_gemini, to_openai, wire_name, wire_names


def test_wire_names_are_safe_unique_and_bounded():
    assert wire_name("ChaDri.change_drink") == "ChaDri_change_drink"
    assert wire_name("9lives") == "_9lives"
    long = wire_name("x" * 100)
    assert len(long) == 64 and long != wire_name("x" * 99)
    names = wire_names(["a.b", "a_b"])
    assert len(set(names.values())) == 2 and names["a_b"] == "a_b"


def test_openai_and_anthropic_keep_the_schema():
    spec = ToolSpec(name="a.b", description="d", parameters={"type": "object", "properties": {"x": {"type": "string"}}})
    assert to_openai(spec)["function"] == {"name": "a_b", "description": "d", "parameters": spec.parameters}
    assert to_anthropic(spec) == {"name": "a_b", "description": "d", "input_schema": spec.parameters}


def test_gemini_subset():
    schema = {
        "type": "object",
        "properties": {
            "when": {"type": ["string", "null"], "format": "uri"},
            "level": {"type": "integer", "enum": [1, 2]},
            "either": {"type": ["string", "integer"]},
            "free": {"type": "object", "description": "bag"},
            "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "list": {"type": "array", "items": {}},
        },
        "required": ["when"],
        "additionalProperties": False,
    }
    out = gemini_schema(schema)
    props = out["properties"]
    assert "additionalProperties" not in out and out["required"] == ["when"]
    assert props["when"] == {"type": "string", "nullable": True}
    assert "enum" not in props["level"] and "one of: 1, 2" in props["level"]["description"]
    assert [b["type"] for b in props["either"]["anyOf"]] == ["string", "integer"]
    assert "type" not in props["free"] and "JSON object" in props["free"]["description"]
    assert props["maybe"] == {"type": "string", "nullable": True}
    assert props["list"]["items"] == {"type": "string"}


def test_gemini_leaves_out_empty_parameters():
    assert "parameters" not in to_gemini(ToolSpec(name="ping", description="p"))
