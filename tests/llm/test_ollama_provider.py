"""OllamaProvider through the official ollama client against a loopback /api/chat NDJSON server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reasonloop.errors import LLMError
from reasonloop.llm.base import LLM, Message, ToolCallPart, ToolSpec
from reasonloop.llm.ollama_provider import OllamaProvider
from tests.llm.fixtures.contract import TOOLS, ProviderContract, settings
from tests.llm.fixtures.server import Reply, StubServer
from tests.llm.fixtures.wires import OllamaWire


class TestOllamaContract(ProviderContract):
    wire = OllamaWire()

    def make(self, base_url: str, **overrides: Any) -> LLM:
        return OllamaProvider(settings(provider="ollama", base_url=base_url, **overrides))


def _llm(stub: StubServer, **overrides: Any) -> OllamaProvider:
    return OllamaProvider(settings(base_url=stub.url, **overrides))


async def test_request_shape_tools_and_options(stub: StubServer) -> None:
    stub.script(OllamaWire().text(["ok"]))
    llm = _llm(stub, extra={"options": {"num_ctx": 4096}})
    await llm.complete(
        [Message.system("sys"), Message.user("hi")], tools=TOOLS, stop=["END"], max_tokens=9, temperature=0
    )
    request = stub.requests[0]
    assert (request.method, request.path) == ("POST", "/api/chat")
    body = request.json
    assert body["model"] == "test-model" and body["stream"] is True
    assert body["messages"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]
    assert body["options"] == {"num_ctx": 4096, "num_predict": 9, "stop": ["END"], "temperature": 0}
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": TOOLS[0].description,
            "parameters": {
                "type": "object",
                "required": ["city"],
                "properties": {"city": {"type": "string", "description": "City name"}},
            },
        },
    }


async def test_nested_schema_detail_survives_in_the_description(stub: StubServer) -> None:
    stub.script(OllamaWire().text(["ok"]))
    nested = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    spec = ToolSpec(name="f", parameters={"type": "object", "properties": {"filter": nested}})
    await _llm(stub).complete([Message.user("hi")], tools=[spec])
    prop = stub.requests[0].json["tools"][0]["function"]["parameters"]["properties"]["filter"]
    assert prop["type"] == "object"
    note = prop["description"].removeprefix("JSON schema: ")
    assert json.loads(note) == {"properties": {"a": {"type": "integer"}}, "required": ["a"]}


async def test_tool_calls_and_results_are_sent_back(stub: StubServer) -> None:
    stub.script(OllamaWire().text(["sunny"]))
    history = [
        Message.user("weather?"),
        Message.assistant("", [ToolCallPart(id="call_0", name="get_weather", arguments={"city": "Paris"})]),
        Message.tool("call_0", "sunny", name="get_weather"),
    ]
    await _llm(stub).complete(history, tools=TOOLS)
    sent = stub.requests[0].json["messages"]
    assert sent[1]["role"] == "assistant" and not sent[1].get("content")
    assert sent[1]["tool_calls"] == [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]
    assert sent[2] == {"role": "tool", "content": "sunny", "tool_name": "get_weather"}


async def test_error_line_inside_the_stream(stub: StubServer, backoffs: list[float]) -> None:
    stub.script(Reply(chunks=[b'{"error": "model runner crashed"}\n'], content_type="application/x-ndjson"))
    with pytest.raises(LLMError) as info:
        await _llm(stub, max_retries=1).complete([Message.user("hi")])
    assert info.value.code == "llm.server_error" and "runner crashed" in info.value.message
    assert len(stub.requests) == 2


async def test_stream_without_done_is_a_bad_response(stub: StubServer) -> None:
    reply = OllamaWire().text(["a"])
    reply.chunks = reply.chunks[:1]
    stub.script(reply)
    with pytest.raises(LLMError) as info:
        await _llm(stub).complete([Message.user("hi")])
    assert info.value.code == "llm.bad_response"


async def test_no_key_needed_by_default_and_bearer_when_named(
    stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    monkeypatch.setenv("REASONLOOP_TEST_OLLAMA_KEY", "o-key")
    stub.script(OllamaWire().text(["ok"]))
    await _llm(stub).complete([Message.user("hi")])
    await _llm(stub, api_key_env="REASONLOOP_TEST_OLLAMA_KEY").complete([Message.user("hi")])
    assert "authorization" not in stub.requests[0].headers
    assert stub.requests[1].headers["authorization"] == "Bearer o-key"


async def test_missing_model_says_how_to_pull_it(stub: StubServer) -> None:
    stub.script(OllamaWire().error(404, "model 'test-model' not found"))
    with pytest.raises(LLMError) as info:
        await _llm(stub).complete([Message.user("hi")])
    assert info.value.code == "llm.bad_request"
    assert "ollama pull test-model" in info.value.message
