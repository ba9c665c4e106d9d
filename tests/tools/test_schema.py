import jsonschema
import pytest

from reasonloop.tools.schema import coerce_arguments, normalize_schema, params_model


def test_quirky_types_become_json_schema():
    schema = normalize_schema(
        {
            "type": "dict",
            "properties": {
                "ratio": {"type": "float"},
                "pair": {"type": "tuple", "items": {"type": "integer"}},
                "anything": {"type": "any", "description": "whatever"},
                "tags": {"type": "array", "enum": ["a", "b"]},
                "when": {"type": "string", "default": None},
                "flag": {"type": "boolean", "optional": True},
            },
            "required": ["ratio", "missing"],
        }
    )
    props = schema["properties"]
    assert schema["type"] == "object" and schema["required"] == ["ratio"]
    assert props["ratio"]["type"] == "number"
    assert props["pair"] == {"type": "array", "items": {"type": "integer"}}
    assert "type" not in props["anything"]
    assert props["tags"] == {"type": "array", "items": {"enum": ["a", "b"]}}
    assert props["when"]["type"] == ["string", "null"]
    assert "optional" not in props["flag"]
    whole = normalize_schema({"type": "object", "properties": {"p": {"type": "array", "enum": [[1, 2], [3]]}}})
    assert whole["properties"]["p"]["enum"] == [[1, 2], [3]]
    jsonschema.Draft7Validator.check_schema(schema)


@pytest.mark.parametrize(
    "value,schema,expected",
    [
        ("5", {"type": "integer"}, 5),
        ("2.5", {"type": "number"}, 2.5),
        ("7", {"type": "number"}, 7),
        ("true", {"type": "boolean"}, True),
        (True, {"type": "string", "enum": ["True", "False"]}, "True"),
        (2, {"type": "string", "enum": ["1", "2"]}, "2"),
        ("horror", {"type": "string", "enum": ["Horror", "Drama"]}, "Horror"),
        ("five", {"type": "integer"}, "five"),  # not exact: left for validation to refuse
        ("5.5", {"type": "integer"}, "5.5"),
        (
            {"n": "3", "xs": ["1"]},
            {
                "type": "object",
                "properties": {"n": {"type": "integer"}, "xs": {"type": "array", "items": {"type": "integer"}}},
            },
            {"n": 3, "xs": [1]},
        ),
    ],
)
def test_coerce_arguments_fixes_exact_scalars_only(value, schema, expected):
    assert coerce_arguments(value, schema) == expected


def test_params_model_validates_nested_arguments_and_reports_paths():
    model = params_model(
        {
            "type": "object",
            "properties": {
                "query": {
                    "type": "object",
                    "properties": {
                        "genre": {"enum": ["a", "b"]},
                        "words": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["genre"],
                }
            },
            "required": ["query"],
        },
        "find",
    )
    assert model.model_validate({"query": {"genre": "a", "words": ["x"]}}).arguments() == {
        "query": {"genre": "a", "words": ["x"]}
    }
    with pytest.raises(ValueError) as err:
        model.model_validate({"query": {"genre": "c", "words": [{"x": 1}]}})
    assert "query.genre" in str(err.value) and "query.words.0" in str(err.value)
    with pytest.raises(ValueError, match="'query' is a required property"):
        model.model_validate({})


def test_params_model_refuses_a_broken_schema():
    with pytest.raises(jsonschema.SchemaError):
        params_model({"type": "object", "properties": {"n": {"type": "integer", "minimum": "zero"}}})
