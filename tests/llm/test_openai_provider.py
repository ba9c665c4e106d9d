"""OpenAIProvider through the official openai SDK against a loopback chat-completions server."""

from __future__ import annotations

from typing import Any

import pytest

from reasonloop.errors import LLMNotConfigured
from reasonloop.llm.base import LLM, Message, ToolCallDelta, ToolCallPart
from reasonloop.llm.openai_provider import OpenAIProvider
from tests.llm.fixtures.contract import TOOLS, ProviderContract, settings
from tests.llm.fixtures.server import Reply, StubServer
from tests.llm.fixtures.wires import OpenAIWire


class TestOpenAIContract(ProviderContract):
    wire = OpenAIWire()

    def make(self, base_url: str, **overrides: Any) -> LLM:
        return OpenAIProvider(settings(provider="openai", base_url=base_url + "/v1", **overrides))


async def test_request_carries_tools_stop_limits_and_usage_option(stub: StubServer) -> None:
    stub.script(OpenAIWire().text(["ok"]))
    llm = OpenAIProvider(settings(base_url=stub.url + "/v1"))
    await llm.complete(
        [Message.system("sys"), Message.user("hi")], tools=TOOLS, stop=["END"], max_tokens=5, temperature=0.2
    )
    request = stub.requests[0]
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    body = request.json
    assert body["model"] == "test-model" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]
    assert body["tools"][0] == {
        "type": "function",
        "function": {"name": "get_weather", "description": TOOLS[0].description, "parameters": TOOLS[0].parameters},
    }
    assert (body["stop"], body["max_tokens"], body["temperature"]) == (["END"], 5, 0.2)
    assert "authorization" not in request.headers or request.headers["authorization"] == "Bearer no-key"


async def test_tool_calls_and_results_are_sent_back(stub: StubServer) -> None:
    stub.script(OpenAIWire().text(["It is sunny."]))
    llm = OpenAIProvider(settings(base_url=stub.url + "/v1"))
    history = [
        Message.user("weather?"),
        Message.assistant("", [ToolCallPart(id="call_1", name="get_weather", arguments={"city": "Paris"})]),
        Message.tool("call_1", "sunny", name="get_weather"),
    ]
    await llm.complete(history, tools=TOOLS)
    sent = stub.requests[0].json["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
        ],
    }
    assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}


async def test_parallel_call_fragments_stream_in_order(stub: StubServer) -> None:
    stub.script(OpenAIWire().tool_calls())
    llm = OpenAIProvider(settings(base_url=stub.url + "/v1"))
    deltas = [c async for c in llm.stream([Message.user("x")], tools=TOOLS) if isinstance(c, ToolCallDelta)]
    assert [d.index for d in deltas] == [0, 0, 1, 0, 1, 0, 1]
    assert [d.id for d in deltas if d.id] == ["call_get_weather", "call_get_time"]


async def test_api_key_is_sent_as_bearer(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REASONLOOP_TEST_OPENAI_KEY", "sk-test-123")
    stub.script(OpenAIWire().text(["ok"]))
    llm = OpenAIProvider(settings(base_url=stub.url + "/v1", api_key_env="REASONLOOP_TEST_OPENAI_KEY"))
    await llm.complete([Message.user("hi")])
    assert stub.requests[0].headers["authorization"] == "Bearer sk-test-123"


def test_vendor_endpoint_needs_the_default_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMNotConfigured, match="OPENAI_API_KEY"):
        OpenAIProvider(settings())


async def test_stream_without_finish_reason_is_a_bad_response(stub: StubServer) -> None:
    stub.script(OpenAIWire().text(["cut"]))
    stub.replies[0].chunks = stub.replies[0].chunks[:1]  # the server ends the body early but cleanly
    llm = OpenAIProvider(settings(base_url=stub.url + "/v1"))
    with pytest.raises(Exception) as info:
        await llm.complete([Message.user("hi")])
    assert getattr(info.value, "code", None) == "llm.bad_response"


async def test_error_object_inside_the_stream_is_retried(stub: StubServer, backoffs: list[float]) -> None:
    error = b'data: {"error": {"message": "The server is overloaded", "type": "server_error"}}\n\n'
    stub.script(Reply(chunks=[error]), OpenAIWire().text(["ok"]))
    llm = OpenAIProvider(settings(base_url=stub.url + "/v1"))
    assert (await llm.complete([Message.user("hi")])).text == "ok"
    assert len(stub.requests) == 2


async def test_max_tokens_field_follows_the_endpoint(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    stub.script(OpenAIWire().text(["ok"]))
    # The vendor endpoint, routed to the stub through the SDK's own base-URL variable.
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url + "/v1")
    await OpenAIProvider(settings()).complete([Message.user("hi")], max_tokens=4)
    custom = settings(base_url=stub.url + "/v1", extra={"max_tokens_param": "max_completion_tokens"})
    await OpenAIProvider(custom).complete([Message.user("hi")], max_tokens=6)
    first, second = (r.json for r in stub.requests)
    assert first["max_completion_tokens"] == 4 and "max_tokens" not in first
    assert second["max_completion_tokens"] == 6
