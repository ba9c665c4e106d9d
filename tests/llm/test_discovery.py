"""Finding models served on this machine: an Ollama-speaking loopback server, OpenAI-compatible ones
(fixtures speaking LM Studio's and reasonloop's own dialects, and the real llama.cpp server), and
every port closed."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from reasonloop.config import LLMSettings
from reasonloop.llm import discovery
from reasonloop.llm.discovery import Discovery, discover, discover_sync, kind_from_name
from reasonloop.llm.resolve import create_llm, resolve_auto
from tests.llm.fixtures.llama_server import llama_server_at
from tests.llm.fixtures.local_servers import (
    OLLAMA_MODELS,
    closed_port,
    discovery_settings,
    ollama_app,
    openai_app,
    serving,
)


@pytest.fixture
def seen() -> list[str]:
    return []


@pytest.fixture
async def ollama(seen) -> AsyncIterator[int]:
    async with serving(ollama_app(OLLAMA_MODELS, seen)) as port:
        yield port


# -- names ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("qwen2.5-7b-instruct", "instruct"),
        ("gemma-3-12b-it", "instruct"),
        ("lmstudio-community/Meta-Llama-3.1-8B-Instruct-GGUF", "instruct"),
        ("vicuna-13b-chat", "instruct"),
        ("llama3:text", "base"),
        ("gemma-3-270m-pt", "base"),
        ("mistral-7b-base", "base"),
        ("text-embedding-nomic-embed-text-v1.5", "embedding"),
        ("bge-reranker-v2-m3", "embedding"),
        ("gemma-3-270m", "unknown"),
        ("gpt-oss-20b", "unknown"),
        ("italian-poetry-7b", "unknown"),  # "it" only as a whole word
    ],
)
def test_kind_from_name(name, kind):
    assert kind_from_name(name) == kind


# -- Ollama -------------------------------------------------------------------------------------
@pytest.mark.integration
async def test_ollama_models_are_judged_by_what_the_server_says(ollama, seen):
    found = await discover(discovery_settings([ollama]), fresh=True)
    by_name = {m.name: m for m in found.models}
    assert list(by_name) == list(OLLAMA_MODELS)
    chat = by_name["llama3.2:3b"]
    assert (chat.kind, chat.kind_from, chat.tool_calls, chat.context_length) == ("instruct", "server", True, 131072)
    assert chat.base_url == f"http://127.0.0.1:{ollama}" and chat.spec == "ollama:llama3.2:3b"
    text = by_name["llama3:text"]
    assert (text.kind, text.kind_from, text.tool_calls, text.context_length) == ("base", "server", False, 8192)
    assert by_name["nomic-embed-text:latest"].kind == "embedding"
    older = by_name["phi3:mini"]  # no capabilities: its template has roles but no .Tools
    assert (older.kind, older.kind_from, older.tool_calls) == ("instruct", "server", False)
    mystery = by_name["mystery-7b-instruct"]
    assert (mystery.kind, mystery.kind_from, mystery.tool_calls) == ("instruct", "name", None)
    assert found.choice() is chat  # the server's word beats the name's
    assert [p.answered for p in found.probes] == [True, False]
    assert found.probes[1].error == "connection refused"
    assert sorted(seen) == sorted(["/api/tags", *(f"/api/show {n}" for n in OLLAMA_MODELS)])


@pytest.mark.integration
async def test_a_base_or_embedding_model_is_never_chosen(seen):
    models = {k: OLLAMA_MODELS[k] for k in ("llama3:text", "nomic-embed-text:latest")}
    async with serving(ollama_app(models, seen)) as port:
        found = await discover(discovery_settings([port]), fresh=True)
        assert [m.kind for m in found.models] == ["base", "embedding"]
        assert found.choice() is None
        resolved, note = await asyncio.to_thread(resolve_auto, discovery_settings([port]))
    assert note == ""
    assert resolved.provider == "local"  # the embedded model, as without discovery


@pytest.mark.integration
async def test_create_llm_uses_the_found_model_and_says_how_to_change_it(ollama):
    llm = await asyncio.to_thread(create_llm, None, discovery_settings([ollama], temperature=0.2))
    try:
        assert llm.id == "ollama" and llm.model == "llama3.2:3b"
        assert llm.settings.base_url == f"http://127.0.0.1:{ollama}"
        assert llm.settings.temperature == 0.2  # the rest of [llm] still applies
        assert llm.capabilities.context_window == 131072
        assert "ollama:llama3.2:3b" in llm.chosen_by and "instruction-tuned (server says)" in llm.chosen_by
        assert "--llm" in llm.chosen_by and "REASONLOOP_LLM__DISCOVER=false" in llm.chosen_by
    finally:
        await llm.aclose()


@pytest.mark.integration
async def test_a_model_without_tool_calls_is_built_without_native_tools(ollama):
    llm = await asyncio.to_thread(create_llm, None, discovery_settings([ollama], model="phi3:mini"))
    try:
        assert llm.model == "phi3:mini"
        assert not llm.capabilities.native_tools  # toolcall then runs the ReAct text format
    finally:
        await llm.aclose()
    llm = await asyncio.to_thread(create_llm, None, discovery_settings([ollama]))
    try:
        assert llm.model == "llama3.2:3b" and llm.capabilities.native_tools
    finally:
        await llm.aclose()


@pytest.mark.integration
async def test_a_model_named_in_the_settings_is_taken_from_the_server_that_has_it(ollama):
    resolved, note = await asyncio.to_thread(resolve_auto, discovery_settings([ollama], model="llama3:text"))
    assert (resolved.provider, resolved.model, resolved.base_url) == (
        "ollama",
        "llama3:text",
        f"http://127.0.0.1:{ollama}",
    )
    assert "base model" in note


@pytest.mark.integration
async def test_discover_off_asks_nothing(ollama, seen):
    resolved, note = await asyncio.to_thread(resolve_auto, discovery_settings([ollama], discover=False))
    assert seen == [] and note == ""
    assert resolved.provider != "ollama"


@pytest.mark.integration
async def test_a_configured_base_url_or_provider_asks_nothing(ollama, seen):
    await asyncio.to_thread(resolve_auto, discovery_settings([ollama], base_url="http://127.0.0.1:1/v1"))
    await asyncio.to_thread(resolve_auto, discovery_settings([ollama], provider="scripted"))
    assert seen == []


@pytest.mark.integration
async def test_a_result_is_reused_for_a_while(ollama, seen, monkeypatch):
    looking = discovery_settings([ollama])
    first = await discover(looking, fresh=True)
    asked = len(seen)
    assert await discover(looking) is first and len(seen) == asked
    await discover(looking.model_copy(update={"discover_openai_ports": [closed_port()]}))
    assert len(seen) == asked * 2  # other ports: asked again
    monkeypatch.setattr(discovery, "CACHE_TTL_S", 0.0)
    assert await discover(looking) is not first
    assert len(seen) == asked * 3  # expired: asked again


@pytest.mark.integration
def test_discover_sync_works_inside_and_outside_an_event_loop(seen):
    async def inside() -> Discovery:
        async with serving(ollama_app(OLLAMA_MODELS, seen)) as port:
            return await asyncio.to_thread(discover_sync, discovery_settings([port]), fresh=True)

    assert asyncio.run(inside()).choice().name == "llama3.2:3b"
    assert discover_sync(discovery_settings(), fresh=True).models == ()


@pytest.mark.integration
async def test_a_loopback_ollama_url_is_looked_at_too(ollama):
    looking = discovery_settings(ollama_url=f"http://localhost:{ollama}")
    found = await discover(looking, fresh=True)
    assert found.choice().name == "llama3.2:3b"
    assert [p.url for p in found.probes][:2] == [
        f"http://127.0.0.1:{looking.discover_ollama_ports[0]}",
        f"http://127.0.0.1:{ollama}",
    ]


# -- OpenAI-compatible servers ------------------------------------------------------------------
@pytest.mark.integration
async def test_lm_studio_style_server_adds_types_tools_and_context(seen):
    routes = {
        "/v1/models": {"data": [{"id": "qwen2.5-7b-instruct"}, {"id": "my-finetune"}, {"id": "nomic-v1.5"}]},
        "/api/v0/models": {
            "data": [
                {"id": "qwen2.5-7b-instruct", "type": "llm", "max_context_length": 32768, "capabilities": ["tool_use"]},
                {"id": "my-finetune", "type": "llm", "max_context_length": 4096, "capabilities": []},
                {"id": "nomic-v1.5", "type": "embeddings", "max_context_length": 2048},
            ]
        },
        "/props": 404,
    }
    async with serving(openai_app(routes, seen)) as port:
        found = await discover(discovery_settings(openai=[port]), fresh=True)
    qwen, mine, nomic = found.models
    assert (qwen.server, qwen.base_url, qwen.spec) == (
        "openai",
        f"http://127.0.0.1:{port}/v1",
        "openai:qwen2.5-7b-instruct",
    )
    assert (qwen.kind, qwen.kind_from, qwen.tool_calls, qwen.context_length) == ("instruct", "name", True, 32768)
    assert (mine.kind, mine.tool_calls, mine.context_length) == ("unknown", False, 4096)
    assert (nomic.kind, nomic.kind_from) == ("embedding", "server")
    assert found.choice() is qwen
    assert qwen.describe() == "instruction-tuned (by name), tool calls, 32768 tokens"


@pytest.mark.integration
async def test_llama_cpp_style_chat_template_says_instruction_tuned(seen):
    routes = {
        "/v1/models": {"data": [{"id": "model.gguf", "meta": {"n_ctx_train": 4096}}]},
        "/props": {"chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}"},
        "/api/v0/models": 404,
    }
    async with serving(openai_app(routes, seen)) as port:
        [model] = (await discover(discovery_settings(openai=[port]), fresh=True)).models
    assert (model.kind, model.kind_from, model.context_length) == ("instruct", "server", 4096)


@pytest.mark.integration
async def test_reasonloop_servers_and_refusals_offer_nothing(seen):
    own = {"/v1/models": {"object": "list", "data": [{"id": "react", "owned_by": "reasonloop"}]}}
    locked = {"/v1/models": 401}
    async with serving(openai_app(own, seen)) as mine, serving(openai_app(locked, seen)) as theirs:
        found = await discover(discovery_settings(openai=[mine, theirs]), fresh=True)
    assert found.models == ()
    assert [(p.answered, p.error) for p in found.probes[1:]] == [(True, "reasonloop's own server"), (False, "HTTP 401")]


@pytest.mark.integration
async def test_replies_that_are_not_what_the_api_says_are_left_out(seen):
    from starlette.responses import PlainTextResponse

    async def text(request: Request) -> PlainTextResponse:
        return PlainTextResponse("hello")

    odd_ollama = Starlette(routes=[Route("/api/tags", lambda request: JSONResponse([1, 2]))])
    odd_openai = openai_app(
        {
            "/v1/models": {"data": [{"id": "good-instruct", "meta": {"n_ctx_train": True}}, "junk", {"id": 7}]},
            "/api/v0/models": {"data": "nothing"},
            "/props": [],
        },
        seen,
    )
    not_json = Starlette(routes=[Route("/v1/models", text)])
    async with serving(odd_ollama) as a, serving(odd_openai) as b, serving(not_json) as c:
        found = await discover(discovery_settings([a], [b, c]), fresh=True)
    [model] = found.models
    assert (model.name, model.kind, model.context_length, model.tool_calls) == ("good-instruct", "instruct", None, None)
    assert [(p.answered, p.error) for p in found.probes] == [
        (False, "unexpected reply"),
        (True, ""),
        (False, "not JSON"),
    ]


@pytest.mark.integration
async def test_a_server_that_does_not_answer_in_time_is_left_out(seen):
    async def slow(request: Request) -> JSONResponse:
        await asyncio.sleep(1)
        return JSONResponse({})

    app = Starlette(routes=[Route("/api/tags", slow)])
    async with serving(app) as port:
        found = await discover(discovery_settings([port], discover_timeout_s=0.2), fresh=True)
    assert found.models == ()
    assert (found.probes[0].answered, found.probes[0].error) == (False, "timed out")


# -- every port closed --------------------------------------------------------------------------
async def test_every_port_closed_finds_nothing_and_falls_back():
    quiet = discovery_settings([closed_port()], [closed_port(), closed_port()])
    found = await discover(quiet, fresh=True)
    assert found.models == () and found.choice() is None
    assert [(p.answered, p.error) for p in found.probes] == [(False, "connection refused")] * 3
    resolved, note = await asyncio.to_thread(resolve_auto, quiet)
    assert note == ""
    assert resolved.provider == "local"  # the embedded model, as without discovery


def test_port_check_finds_the_listening_ports_only():
    from reasonloop.llm._port_check import listening

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        open_port = server.getsockname()[1]
        closed = closed_port()
        assert listening("127.0.0.1", [closed, open_port, open_port], 0.5) == {open_port}
    assert listening("127.0.0.1", [open_port, closed], 0.5) == set()
    assert listening("127.0.0.1", [], 0.5) == set()


def test_ports_must_be_real_ports():
    with pytest.raises(ValueError, match="discover_openai_ports"):
        LLMSettings(discover_openai_ports=[0])


# -- the real llama.cpp server ------------------------------------------------------------------
@pytest.mark.llm_real
async def test_discovers_the_real_llama_cpp_server_and_answers_through_it(tmp_path):
    from reasonloop.llm.base import Message, TextDelta

    with llama_server_at(tmp_path / "server.log", alias="gemma-3-270m") as (base_url, port):
        quiet_ollama = closed_port()
        found = await discover(discovery_settings([quiet_ollama], [port]), fresh=True)
        [model] = found.models
        # llama-cpp-python's server lists names only: the name is all there is, and it says nothing.
        assert (model.server, model.name, model.base_url) == ("openai", "gemma-3-270m", base_url)
        assert (model.kind, model.kind_from, model.tool_calls, model.context_length) == ("unknown", "name", None, None)
        assert found.choice() is model  # nothing better on the machine
        llm = await asyncio.to_thread(create_llm, None, discovery_settings([quiet_ollama], [port], max_retries=0))
        try:
            assert (llm.id, llm.model, llm.settings.base_url) == ("openai", "gemma-3-270m", base_url)
            assert "openai:gemma-3-270m" in llm.chosen_by
            text = ""
            async for chunk in llm.stream(
                [Message.user("What is the capital of France?")], temperature=0, max_tokens=40
            ):
                if isinstance(chunk, TextDelta):
                    text += chunk.text
            assert "Paris" in text
        finally:
            await llm.aclose()


@pytest.mark.integration
async def test_the_run_records_the_found_model_and_why(ollama):
    from reasonloop.agents import Agent

    llm = await asyncio.to_thread(create_llm, None, discovery_settings([ollama]))
    try:
        agent = Agent(reasoning="qa", llm=llm)
        result = await agent.run("What is the capital of France?")
        events = [e async for e in agent.stream("What is the capital of France?")]
    finally:
        await llm.aclose()
    assert [type(e).__name__ for e in events[:2]] == ["RunStarted", "Progress"]
    assert events[1].message == f"ollama:llama3.2:3b: {llm.chosen_by}"  # the trace says it too
    assert result.meta.model == "ollama:llama3.2:3b"
    assert result.meta.model_chosen_by == llm.chosen_by and "found on this machine" in result.meta.model_chosen_by
