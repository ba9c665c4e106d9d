"""The official openai SDK as a client of /v1/chat/completions, streaming and not."""

from __future__ import annotations

import asyncio
import functools

import httpx
import openai
import pytest

from reasonloop.agents import AgentRunner
from reasonloop.events import Answer, AnswerDelta
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.server import create_app
from tests.llm_runner import LLMRunner
from tests.runs.helpers import GatedRunner
from tests.server.helpers import make_settings, serve
from tests.waiting import await_until

ANSWER = "Tantivy is a full-text search engine library written in Rust."


@pytest.fixture
async def base(tmp_path):
    settings = make_settings(tmp_path)
    llm = ScriptedProvider(replies=[ANSWER], chunk_size=6, repeat_last=True)
    async with serve(create_app(settings, runner=LLMRunner(llm)), settings) as url:
        yield url, llm


@pytest.mark.integration
async def test_non_streaming_completion(base):
    url, llm = base
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    raw = await client.chat.completions.with_raw_response.create(
        model="reasonloop",
        messages=[
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "earlier question"},
            {"role": "assistant", "content": "earlier answer"},
            {"role": "user", "content": "What is tantivy?"},
        ],
    )
    completion = raw.parse()
    assert completion.choices[0].message.content == ANSWER
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage.completion_tokens > 0
    run_id = raw.headers["x-run-id"]
    assert completion.id == f"chatcmpl-{run_id}"
    assert [m.content for m in llm.prompts[-1]] == [
        "be brief",
        "earlier question",
        "earlier answer",
        "What is tantivy?",
    ]
    async with httpx.AsyncClient(base_url=url) as http:
        trace = (await http.get(f"/v1/runs/{run_id}")).json()
    assert trace["run"]["status"] == "completed" and trace["result"]["content"] == ANSWER
    await client.close()


@pytest.mark.integration
async def test_streaming_completion(base):
    url, _ = base
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    stream = await client.chat.completions.create(
        model="reasonloop",
        messages=[{"role": "user", "content": "What is tantivy?"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    parts, finish, usage = [], None, None
    async for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            parts.append(choice.delta.content or "")
            finish = choice.finish_reason or finish
    assert "".join(parts) == ANSWER
    assert len([p for p in parts if p]) > 1  # it streamed in pieces
    assert finish == "stop" and usage is not None and usage.total_tokens > 0
    await client.close()


@pytest.mark.integration
async def test_sdk_sees_errors(base):
    url, _ = base
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.UnprocessableEntityError):
        await client.chat.completions.create(model="reasonloop", messages=[{"role": "assistant", "content": "hi"}])
    await client.close()


async def _leave_a_stream_after_the_first_part(url: str) -> tuple[str, str]:
    """Stream a completion and stop reading after its first content part; the run id and that part."""
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    raw = await client.chat.completions.with_raw_response.create(
        model="reasonloop", messages=[{"role": "user", "content": "What is tantivy?"}], stream=True
    )
    run_id = raw.headers["x-run-id"]
    stream = raw.parse()
    part = ""
    async for chunk in stream:
        part = "".join(c.delta.content or "" for c in chunk.choices)
        if part:
            break
    await stream.close()
    await client.close()
    return run_id, part


async def _final_run(url: str, run_id: str) -> dict:
    async with httpx.AsyncClient(base_url=url) as http:

        async def ended() -> dict | None:
            trace = (await http.get(f"/v1/runs/{run_id}")).json()
            return trace if trace["run"]["status"] not in ("queued", "running") else None

        return await await_until(ended, interval=0.02, what=f"run {run_id} ended")


async def _give_up_on_a_whole_answer(url: str, runner: GatedRunner) -> tuple[str, str]:
    """Ask for a whole (non-streamed) completion and time out waiting; the run id and nothing read."""
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=1.0)
    with pytest.raises(openai.APITimeoutError):  # the client gives up and closes its connection
        await client.chat.completions.create(model="reasonloop", messages=[{"role": "user", "content": "q"}])
    await client.close()
    (run_id,) = runner.entered
    return run_id, ""


@pytest.mark.integration
@pytest.mark.parametrize("stop_on_disconnect", [True, False])
@pytest.mark.parametrize("leave", ["stream", "whole"])
async def test_a_client_that_leaves_stops_its_run_unless_told_not_to(tmp_path, stop_on_disconnect, leave):
    settings = make_settings(tmp_path, chat_stop_on_disconnect=stop_on_disconnect)
    runner = GatedRunner(steps=3)  # waits after each part until released: it never ends by itself
    async with serve(create_app(settings, runner=runner), settings) as url:
        if leave == "stream":  # stops reading a streamed answer after its first part
            run_id, read = await _leave_a_stream_after_the_first_part(url)
            assert read == "part0 "
        else:
            run_id, _ = await _give_up_on_a_whole_answer(url, runner)
        if not stop_on_disconnect:
            await asyncio.sleep(0.3)  # time for a wrong stop to happen before the run may go on
            runner.finish(run_id)
        trace = await _final_run(url, run_id)
    if stop_on_disconnect:
        assert trace["run"]["status"] == "stopped" and trace["result"]["content"] == "part0 "
    else:
        assert trace["run"]["status"] == "completed" and trace["result"]["content"] == "part0 part1 part2 "


async def test_a_stream_read_to_its_end_or_its_error_is_not_abandoned():
    from reasonloop.events import ErrorEvent
    from reasonloop.server.routes.openai import _stream

    async def events(*items):
        for item in items:
            yield item

    calls: list[str] = []
    ends = {"answer": Answer(text="done"), "error": ErrorEvent(code="llm.error", message="no")}
    for name, end in ends.items():
        chunks = [
            c
            async for c in _stream(
                events(AnswerDelta(text="done"), end), "id", 0, "m", False, functools.partial(calls.append, name)
            )
        ]
        assert chunks[-1] == "data: [DONE]\n\n"
    assert calls == []
    early = _stream(
        events(AnswerDelta(text="do"), AnswerDelta(text="ne"), Answer(text="done")),
        "id",
        0,
        "m",
        False,
        lambda: calls.append("left"),
    )
    assert "role" in await anext(early)
    assert "do" in await anext(early)
    await early.aclose()  # the client left before the answer
    assert calls == ["left"]
    after_answer = _stream(events(Answer(text="done")), "id", 0, "m", False, lambda: calls.append("late"))
    _ = [await anext(after_answer) for _ in range(3)]  # role, content, finish: the answer is out
    await after_answer.aclose()  # gone before [DONE]: the run had ended already
    after_error = _stream(events(ends["error"]), "id", 0, "m", False, lambda: calls.append("late"))
    _ = [await anext(after_error) for _ in range(2)]  # role, error
    await after_error.aclose()
    assert calls == ["left"]


@pytest.mark.integration
async def test_developer_messages_are_instructions_like_system_ones(base):
    url, llm = base
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    await client.chat.completions.create(
        model="reasonloop",
        messages=[{"role": "developer", "content": "answer in French"}, {"role": "user", "content": "hi"}],
    )
    prompt = llm.prompts[-1]
    assert [(m.role, m.content) for m in prompt] == [("system", "answer in French"), ("user", "hi")]
    await client.close()


@pytest.mark.integration
async def test_models_are_listed_and_an_unknown_one_is_not_found(tmp_path):
    settings = make_settings(tmp_path)
    app = create_app(settings, runner=AgentRunner(settings, llm=ScriptedProvider(replies=[ANSWER], repeat_last=True)))
    async with serve(app, settings) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        async with httpx.AsyncClient(base_url=url) as http:
            strategies = {p["id"] for p in (await http.get("/v1/reasoning")).json() if not p["error"]}
        listed = {m.id async for m in client.models.list()}
        assert {"reasonloop", "default"} | strategies <= listed and strategies
        assert (await client.models.retrieve("qa")).id == "qa"
        with pytest.raises(openai.NotFoundError):
            await client.models.retrieve("telepathy")
        with pytest.raises(openai.NotFoundError) as info:
            await client.chat.completions.create(model="telepathy", messages=[{"role": "user", "content": "q"}])
        assert "telepathy" in str(info.value)
        answered = await client.chat.completions.create(model="qa", messages=[{"role": "user", "content": "q"}])
        assert answered.choices[0].message.content
        await client.close()


@pytest.mark.integration
async def test_max_tokens_and_temperature_reach_the_runs_model_calls(tmp_path):
    settings = make_settings(tmp_path)
    llm = ScriptedProvider(replies=[ANSWER], repeat_last=True)
    app = create_app(settings, runner=AgentRunner(settings, llm=llm))
    async with serve(app, settings) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        question = [{"role": "user", "content": "What is tantivy?"}]  # a strategy that always asks its model
        await client.chat.completions.create(model="toolcall", messages=question, max_tokens=40, temperature=0.2)
        assert llm.sampling_seen[-1] == (40, 0.2)
        stream = await client.chat.completions.create(
            model="toolcall", messages=question, max_completion_tokens=9, max_tokens=40, stream=True
        )
        _ = [chunk async for chunk in stream]
        assert llm.sampling_seen[-1] == (9, None)  # the newer name wins
        whole = await client.chat.completions.create(model="toolcall", messages=question)
        assert llm.sampling_seen[-1] == (None, None)  # the next run is back on the model's settings
        assert whole.choices[0].finish_reason == "stop" and whole.choices[0].message.content == ANSWER
        cut = await client.chat.completions.create(model="toolcall", messages=question, max_tokens=3)
        assert cut.choices[0].finish_reason == "length"  # how an OpenAI client learns the answer was cut
        assert len(cut.choices[0].message.content) < len(ANSWER)
        for wrong in ({"temperature": 3.5}, {"max_tokens": 0}, {"n": 2}):
            with pytest.raises(openai.UnprocessableEntityError) as info:
                await client.chat.completions.create(model="toolcall", messages=question, **wrong)
            assert next(iter(wrong)) in str(info.value)
        await client.close()


@pytest.mark.integration
async def test_the_reasoning_lane_shows_a_plan_from_its_event_once(tmp_path):
    settings = make_settings(tmp_path)
    llm = ScriptedProvider(replies=["1. Who makes the Aria 2?\n2. Who founded #1?"], repeat_last=True)
    app = create_app(settings, runner=AgentRunner(settings, llm=llm))
    async with serve(app, settings) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        stream = await client.chat.completions.create(
            model="decompose",
            messages=[{"role": "user", "content": "Who founded the maker of the Aria 2?"}],
            stream=True,
        )
        lane = "".join(
            [
                (chunk.choices[0].delta.model_extra or {}).get("reasoning_content") or ""
                async for chunk in stream
                if chunk.choices
            ]
        )
        await client.close()
    assert "Plan:\n#1 search: Who makes the Aria 2?\n#2 search: Who founded #1? (after #1)\n" in lane
    assert "1. Who makes the Aria 2?" not in lane  # the plan's text is not sent beside its event
