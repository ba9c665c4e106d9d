"""AnthropicProvider through the official anthropic SDK against a loopback Messages API server."""

from __future__ import annotations

from typing import Any

import pytest

from reasonloop.errors import LLMError, LLMNotConfigured
from reasonloop.llm.anthropic_provider import DEFAULT_MAX_TOKENS, AnthropicProvider
from reasonloop.llm.base import LLM, Message, ToolCallPart
from tests.llm.fixtures.contract import TOOLS, ProviderContract, settings
from tests.llm.fixtures.server import Reply, StubServer
from tests.llm.fixtures.wires import AnthropicWire, sse


class TestAnthropicContract(ProviderContract):
    wire = AnthropicWire()

    def make(self, base_url: str, **overrides: Any) -> LLM:
        return AnthropicProvider(settings(provider="anthropic", base_url=base_url, **overrides))


def _llm(stub: StubServer) -> AnthropicProvider:
    return AnthropicProvider(settings(base_url=stub.url))


async def test_request_separates_system_and_reshapes_tools(stub: StubServer) -> None:
    stub.script(AnthropicWire().text(["ok"]))
    await _llm(stub).complete([Message.system("sys"), Message.user("hi")], tools=TOOLS, stop=["END"], temperature=0.1)
    request = stub.requests[0]
    assert (request.method, request.path) == ("POST", "/v1/messages")
    body = request.json
    assert body["system"] == "sys"
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert body["tools"][0] == {
        "name": "get_weather",
        "description": TOOLS[0].description,
        "input_schema": TOOLS[0].parameters,
    }
    assert (body["stop_sequences"], body["max_tokens"]) == (["END"], DEFAULT_MAX_TOKENS)
    assert "temperature" not in body  # the Messages API of this SDK has no temperature
    assert body["stream"] is True


async def test_tool_use_and_parallel_results_are_sent_back(stub: StubServer) -> None:
    stub.script(AnthropicWire().text(["Sunny, 14:00."]))
    history = [
        Message.user("weather and time?"),
        Message.assistant(
            "Checking.",
            [
                ToolCallPart(id="toolu_1", name="get_weather", arguments={"city": "Paris"}),
                ToolCallPart(id="toolu_2", name="get_time", arguments={"tz": "Europe/Paris"}),
            ],
        ),
        Message.tool("toolu_1", "sunny"),
        Message.tool("toolu_2", "14:00"),
    ]
    await _llm(stub).complete(history, tools=TOOLS, max_tokens=50)
    sent = stub.requests[0].json["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {"tz": "Europe/Paris"}},
        ],
    }
    assert sent[2] == {  # both results in one user turn, as the API requires
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "14:00"},
        ],
    }
    assert stub.requests[0].json["max_tokens"] == 50


async def test_tool_call_ids_come_from_tool_use_blocks(stub: StubServer) -> None:
    stub.script(AnthropicWire().tool_calls())
    result = await _llm(stub).complete([Message.user("x")], tools=TOOLS)
    assert result.text == "Checking."
    assert [c.id for c in result.tool_calls] == ["toolu_get_weather", "toolu_get_time"]


async def test_overloaded_error_event_mid_stream(stub: StubServer, backoffs: list[float]) -> None:
    event = sse({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "error")
    stub.script(Reply(chunks=[event]), AnthropicWire().text(["ok"]))
    result = await _llm(stub).complete([Message.user("hi")])
    assert result.text == "ok" and len(stub.requests) == 2  # nothing had streamed: retried


async def test_stream_without_message_stop_is_a_bad_response(stub: StubServer) -> None:
    reply = AnthropicWire().text(["cut"])
    reply.chunks = reply.chunks[:2]
    stub.script(reply)
    with pytest.raises(LLMError) as info:
        await _llm(stub).complete([Message.user("hi")])
    assert info.value.code == "llm.bad_response"


def test_vendor_endpoint_needs_the_default_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(LLMNotConfigured, match="ANTHROPIC_API_KEY"):
        AnthropicProvider(settings())


async def test_api_key_is_sent(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REASONLOOP_TEST_ANTHROPIC_KEY", "sk-ant-test")
    stub.script(AnthropicWire().text(["ok"]))
    llm = AnthropicProvider(settings(base_url=stub.url, api_key_env="REASONLOOP_TEST_ANTHROPIC_KEY"))
    await llm.complete([Message.user("hi")])
    headers = stub.requests[0].headers
    sent = {headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer ")}
    assert "sk-ant-test" in sent
