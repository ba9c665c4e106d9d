"""OpenAIProvider through the official openai SDK against a loopback chat-completions server."""

from __future__ import annotations

import math
from typing import Any

import pytest

from reasonloop.errors import ConfigError, LLMError, LLMNotConfigured, LLMNotSupported
from reasonloop.llm.base import LLM, Message, ToolCallDelta, ToolCallPart
from reasonloop.llm.openai_provider import OpenAIProvider
from tests.llm.fixtures.contract import TOOLS, ProviderContract, settings
from tests.llm.fixtures.server import Reply, StubServer
from tests.llm.fixtures.wires import OpenAIWire


class TestOpenAIContract(ProviderContract):
    wire = OpenAIWire()
    scores_continuations = True

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


# -- scoring continuations -----------------------------------------------------------------------
def chat_logprobs(top: dict[str, float], usage: tuple[int, int] | None = (25, 1)) -> Reply:
    """A chat completion with the first token's ``top_logprobs``, shaped as OpenAI's API answers."""
    listed = [{"token": t, "logprob": v, "bytes": list(t.encode())} for t, v in top.items()]
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": listed[0]["token"], "refusal": None},
                "logprobs": {"content": [{**listed[0], "top_logprobs": listed}], "refusal": None},
                "finish_reason": "length",
            }
        ],
        "system_fingerprint": "fp_test",
    }
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return Reply.json(200, body)


def chat_without_logprobs() -> Reply:
    """A chat completion from a server that ignores ``logprobs``."""
    message = {"role": "assistant", "content": "Yes"}
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "length"}
    body = {"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [choice]}
    return Reply.json(200, body)


def echoed(tokens: list[tuple[str, float | None]], generated: str = ".", usage: tuple[int, int] = (7, 1)) -> Reply:
    """A legacy ``/completions`` response echoing the prompt with its tokens' log-probabilities."""
    pieces = [*tokens, (generated, -0.5)]
    offsets, at = [], 0
    for token, _ in pieces:
        offsets.append(at)
        at += len(token)
    logprobs = {
        "tokens": [t for t, _ in pieces],
        "token_logprobs": [v for _, v in pieces],
        "top_logprobs": [None if v is None else {t: v} for t, v in pieces],
        "text_offset": offsets,
    }
    choice = {"text": "".join(t for t, _ in pieces), "index": 0, "logprobs": logprobs, "finish_reason": "length"}
    body = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m", "choices": [choice]}
    body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return Reply.json(200, body)


TOP = {"Yes": math.log(0.8), "No": math.log(0.15), " Yes": math.log(0.03), "Maybe": math.log(0.015)}
"""A first token's listed probabilities: 0.995 of the whole, so an unlisted token has at most 0.005."""


async def test_chat_scoring_asks_for_the_first_tokens_log_probabilities(stub: StubServer) -> None:
    stub.script(chat_logprobs(TOP))
    llm = OpenAIProvider(settings(base_url=stub.url + "/v1", extra={"extra_body": {"seed": 1}}))
    scores = await llm.score("Is the sky blue? Answer:", ["Yes", "No", " Yes", "Maybe so", ""])
    assert scores == [TOP["Yes"], TOP["No"], TOP[" Yes"], TOP["Maybe"], 0.0]
    request = stub.requests[0]
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    body = request.json
    assert body["messages"] == [{"role": "user", "content": "Is the sky blue? Answer:"}]
    assert (body["logprobs"], body["top_logprobs"], body["max_tokens"], body["seed"]) == (True, 20, 1, 1)
    assert not body.get("stream")
    assert list(llm.calls) == [(25, 1, False, 1)]
    assert llm.capabilities.scores_continuations


async def test_chat_scoring_gives_an_unlisted_first_token_an_upper_bound(stub: StubServer) -> None:
    stub.script(chat_logprobs(TOP), chat_logprobs({"Yes": math.log(0.5), "No": math.log(0.3)}))
    llm = OpenAIProvider(settings(base_url=stub.url + "/v1"))
    # What the list leaves over (0.005) is less than its last token's 0.015: that is the bound.
    yes, unlisted = await llm.score("p", ["Yes", "Perhaps"])
    assert (yes, unlisted) == (TOP["Yes"], pytest.approx(math.log(0.005)))
    # 0.2 left over, 0.3 listed last: the bound is what is left over.
    assert await llm.score("p", ["Perhaps"]) == [pytest.approx(math.log(0.2))]
    # 0.4 left over, 0.1 listed last: an unlisted token is no likelier than the last listed one.
    stub.script(chat_logprobs({"Yes": math.log(0.5), "No": math.log(0.1)}))
    assert await llm.score("p", ["Perhaps"]) == [pytest.approx(math.log(0.1))]


async def test_chat_scoring_cannot_tell_apart_continuations_with_the_same_first_token(stub: StubServer) -> None:
    stub.script(chat_logprobs(TOP))
    llm = OpenAIProvider(settings(base_url=stub.url + "/v1"))
    with pytest.raises(LLMNotSupported, match="'Yes' and 'Yes, it is' both start with the token 'Yes'"):
        await llm.score("p", ["Yes", "Yes, it is"])
    assert llm.capabilities.scores_continuations  # this call's continuations, not the server, were the problem
    assert await llm.score("p", ["Yes", "No"]) == [TOP["Yes"], TOP["No"]]


async def test_a_server_without_log_probabilities_is_not_supported_and_asked_once(stub: StubServer) -> None:
    stub.script(chat_without_logprobs())
    llm = OpenAIProvider(settings(base_url=stub.url + "/v1"))
    with pytest.raises(LLMNotSupported, match="returned no log-probabilities") as info:
        await llm.score("p", ["Yes", "No"])
    assert info.value.code == "llm.not_supported"
    assert not llm.capabilities.scores_continuations
    with pytest.raises(LLMNotSupported, match="returned no log-probabilities"):
        await llm.score("q", ["Yes", "No"])
    assert len(stub.requests) == 1  # remembered: the second call did not ask


async def test_a_server_refusing_log_probabilities_is_remembered(stub: StubServer) -> None:
    stub.script(OpenAIWire().error(400, "logprobs is not supported with this model"))
    llm = OpenAIProvider(settings(base_url=stub.url + "/v1"))
    with pytest.raises(LLMNotSupported, match="logprobs is not supported with this model"):
        await llm.score("p", ["Yes"])
    assert not llm.capabilities.scores_continuations
    assert len(stub.requests) == 1


async def test_other_scoring_failures_are_the_usual_errors_and_retried(stub: StubServer, backoffs: list[float]) -> None:
    stub.script(OpenAIWire().error(503, "busy"), chat_logprobs(TOP))
    llm = OpenAIProvider(settings(base_url=stub.url + "/v1"))
    assert await llm.score("p", ["No"]) == [TOP["No"]]
    assert len(stub.requests) == 2 and len(backoffs) == 1
    stub.requests.clear()
    stub.script(OpenAIWire().error(404, "model 'test-model' not found"))
    with pytest.raises(LLMError) as info:
        await llm.score("p", ["No"])
    assert info.value.code == "llm.bad_request"
    assert llm.capabilities.scores_continuations  # a missing model says nothing about log-probabilities


async def test_completions_scoring_sums_the_echoed_continuation_tokens(stub: StubServer) -> None:
    prompt_tokens = [("The", None), (" capital", -9.9), (" of", -0.8), (" France", -4.8), (" is", -1.3)]
    stub.script(
        echoed([*prompt_tokens, (" Paris", -2.4), (",", -1.0), (" France", -3.0)]),
        echoed([*prompt_tokens, (" London", -6.8)]),
    )
    llm = OpenAIProvider(settings(base_url=stub.url + "/v1", extra={"scoring": "completions"}))
    scores = await llm.score("The capital of France is", [" Paris, France", "", " London"])
    assert scores == pytest.approx([-2.4 - 1.0 - 3.0, 0.0, -6.8])
    assert [r.path for r in stub.requests] == ["/v1/completions"] * 2
    first = stub.requests[0].json
    assert first["prompt"] == "The capital of France is Paris, France"
    assert (first["echo"], first["logprobs"], first["max_tokens"]) == (True, 1, 1)
    assert list(llm.calls) == [(14, 2, False, 1)]


async def test_completions_scoring_counts_a_token_straddling_the_prompts_end(stub: StubServer) -> None:
    # The prompt ends in a space the continuation's first token absorbs (" Paris").
    stub.script(echoed([("The", None), (" capital", -9.9), (" is", -1.3), (" Paris", -2.4)]))
    llm = OpenAIProvider(settings(base_url=stub.url + "/v1", extra={"scoring": "completions"}))
    assert await llm.score("The capital is ", ["Paris"]) == [-2.4]


async def test_completions_scoring_without_echo_is_not_supported(stub: StubServer) -> None:
    # The server ignored echo: only the generated token comes back, after the text sent.
    text = "The capital of France is Paris"
    logprobs = {"tokens": ["."], "token_logprobs": [-0.5], "top_logprobs": [{".": -0.5}], "text_offset": [len(text)]}
    choice = {"text": ".", "index": 0, "logprobs": logprobs, "finish_reason": "length"}
    stub.script(
        Reply.json(200, {"id": "c", "object": "text_completion", "created": 1, "model": "m", "choices": [choice]})
    )
    llm = OpenAIProvider(settings(base_url=stub.url + "/v1", extra={"scoring": "completions"}))
    with pytest.raises(LLMNotSupported, match="did not echo"):
        await llm.score("The capital of France is", [" Paris"])
    assert not llm.capabilities.scores_continuations


async def test_scoring_off_asks_nothing(stub: StubServer) -> None:
    llm = OpenAIProvider(settings(base_url=stub.url + "/v1", extra={"scoring": "off"}))
    assert not llm.capabilities.scores_continuations
    with pytest.raises(LLMNotSupported, match="scoring continuations is off"):
        await llm.score("p", ["Yes"])
    assert stub.requests == []


def test_unknown_scoring_way_is_config_error() -> None:
    with pytest.raises(ConfigError, match=r"llm\.extra\.scoring"):
        OpenAIProvider(settings(base_url="http://127.0.0.1:9/v1", extra={"scoring": "echo"}))


async def test_a_server_without_the_completions_endpoint_is_remembered(stub: StubServer) -> None:
    stub.script(OpenAIWire().error(404, "Not Found"))
    llm = OpenAIProvider(settings(base_url=stub.url + "/v1", extra={"scoring": "completions"}))
    with pytest.raises(LLMNotSupported, match="Not Found"):
        await llm.score("p", [" yes", " no"])
    assert not llm.capabilities.scores_continuations
    assert len(stub.requests) == 1
