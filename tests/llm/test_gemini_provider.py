"""GeminiProvider through the official google-genai SDK against a loopback streamGenerateContent server."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from reasonloop.errors import LLMNotConfigured
from reasonloop.llm.base import LLM, Message, ToolCallPart, ToolSpec
from reasonloop.llm.gemini_provider import GeminiProvider
from reasonloop.llm.gemini_schema import gemini_schema
from reasonloop.tools.schema import model_schema
from tests.llm.fixtures.contract import TOOLS, ProviderContract, settings
from tests.llm.fixtures.server import Reply, StubServer
from tests.llm.fixtures.wires import GeminiWire


class TestGeminiContract(ProviderContract):
    wire = GeminiWire()

    def make(self, base_url: str, **overrides: Any) -> LLM:
        return GeminiProvider(settings(provider="gemini", base_url=base_url, **overrides))


def _llm(stub: StubServer) -> GeminiProvider:
    return GeminiProvider(settings(base_url=stub.url, extra={"api_version": "v1beta"}))


async def test_request_shape_system_tools_and_generation_config(stub: StubServer) -> None:
    stub.script(GeminiWire().text(["ok"]))
    await _llm(stub).complete(
        [Message.system("sys"), Message.user("hi")], tools=TOOLS, stop=["END"], max_tokens=7, temperature=0.3
    )
    request = stub.requests[0]
    assert (request.method, request.path) == ("POST", "/v1beta/models/test-model:streamGenerateContent")
    assert request.query["alt"] == ["sse"]
    body = request.json
    assert body["systemInstruction"]["parts"] == [{"text": "sys"}]
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert body["generationConfig"] == {"stopSequences": ["END"], "maxOutputTokens": 7, "temperature": 0.3}
    declarations = body["tools"][0]["functionDeclarations"]
    assert declarations[0] == {
        "name": "get_weather",
        "description": TOOLS[0].description,
        "parameters": {
            "type": "OBJECT",
            "properties": {"city": {"type": "STRING", "description": "City name"}},
            "required": ["city"],
        },
    }
    assert declarations[1]["parameters"] == {"type": "OBJECT", "properties": {"tz": {"type": "STRING"}}}


async def test_function_calls_and_responses_are_sent_back(stub: StubServer) -> None:
    stub.script(GeminiWire().text(["Sunny at 14:00."]))
    history = [
        Message.user("weather and time?"),
        Message.assistant(
            "",
            [
                ToolCallPart(id="call_0", name="get_weather", arguments={"city": "Paris"}),
                ToolCallPart(id="call_1", name="get_time", arguments={"tz": "Europe/Paris"}),
            ],
        ),
        Message.tool("call_0", "sunny"),  # no name: looked up from the call id
        Message.tool("call_1", "14:00", name="get_time"),
    ]
    await _llm(stub).complete(history, tools=TOOLS)
    contents = stub.requests[0].json["contents"]
    assert contents[1] == {
        "role": "model",
        "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
            {"functionCall": {"name": "get_time", "args": {"tz": "Europe/Paris"}}},
        ],
    }
    assert contents[2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"result": "sunny"}}},
            {"functionResponse": {"name": "get_time", "response": {"result": "14:00"}}},
        ],
    }


async def test_error_object_inside_the_stream(stub: StubServer, backoffs: list[float]) -> None:
    error = b'data: {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}\r\n\r\n'
    stub.script(Reply(chunks=[error]), GeminiWire().text(["ok"]))
    result = await _llm(stub).complete([Message.user("hi")])
    assert result.text == "ok" and len(stub.requests) == 2


async def test_stream_without_finish_reason_is_a_bad_response(stub: StubServer) -> None:
    reply = GeminiWire().text(["a", "b"])
    reply.chunks = reply.chunks[:1]
    stub.script(reply)
    with pytest.raises(Exception) as info:
        await _llm(stub).complete([Message.user("hi")])
    assert getattr(info.value, "code", None) == "llm.bad_response"


def test_vendor_endpoint_needs_the_default_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(LLMNotConfigured, match="GEMINI_API_KEY"):
        GeminiProvider(settings())


async def test_api_key_header(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REASONLOOP_TEST_GEMINI_KEY", "g-key")
    stub.script(GeminiWire().text(["ok"]))
    await GeminiProvider(settings(base_url=stub.url, api_key_env="REASONLOOP_TEST_GEMINI_KEY")).complete(
        [Message.user("hi")]
    )
    assert stub.requests[0].headers["x-goog-api-key"] == "g-key"


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (
            {"$schema": "x", "type": "object", "additionalProperties": False, "properties": {}},
            {"type": "OBJECT", "properties": {}},
        ),
        ({"type": ["integer", "null"], "default": 3}, {"type": "INTEGER", "nullable": True}),
        (
            {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "d", "default": None},
            {"type": "STRING", "description": "d", "nullable": True},
        ),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]}),
        ({"const": "a"}, {"type": "STRING", "enum": ["a"]}),
        ({"type": "integer", "enum": [1, 2]}, {"type": "INTEGER"}),
        ({"type": "array", "items": {}}, {"type": "ARRAY", "items": {"type": "STRING"}}),
        (
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "ghost"], "examples": [{}]},
            {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}, "required": ["a"]},
        ),
    ],
)
def test_schema_reshaped_to_what_gemini_accepts(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    assert gemini_schema(schema) == expected


async def test_pydantic_tool_schema_reaches_the_wire_without_unsupported_keys(stub: StubServer) -> None:
    class Window(BaseModel):
        start: int = Field(ge=0)
        end: int | None = None

    class Params(BaseModel):
        query: str = Field(description="What to look for")
        top_k: int = 5
        mode: Literal["bm25", "dense", "hybrid"] = "hybrid"
        tags: list[str] = []
        window: Window | None = None

    stub.script(GeminiWire().text(["ok"]))
    spec = ToolSpec(name="search", description="Search.", parameters=model_schema(Params))
    await _llm(stub).complete([Message.user("hi")], tools=[spec])
    sent = stub.requests[0].json["tools"][0]["functionDeclarations"][0]["parameters"]

    def keys(node: Any) -> set[str]:
        if isinstance(node, dict):
            found = set(node)
            for key, value in node.items():
                found |= keys(value) if key != "properties" else set().union(*(keys(v) for v in value.values()))
            return found
        if isinstance(node, list):
            return set().union(*(keys(v) for v in node)) if node else set()
        return set()

    assert not keys(sent) & {"additionalProperties", "default", "$schema", "$defs", "$ref", "const", "examples"}
    props = sent["properties"]
    assert props["query"] == {"type": "STRING", "description": "What to look for"}
    assert props["mode"] == {"type": "STRING", "enum": ["bm25", "dense", "hybrid"]}
    assert props["tags"] == {"type": "ARRAY", "items": {"type": "STRING"}}
    assert props["window"]["nullable"] is True and props["window"]["type"] == "OBJECT"
    assert props["window"]["properties"]["start"] == {"type": "INTEGER", "minimum": 0}
    assert sent["required"] == ["query"]
