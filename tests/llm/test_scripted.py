"""The scripted provider: deterministic replies, recorded prompts, real stop handling."""

from __future__ import annotations

import dataclasses
import json

import pytest

from reasonloop.config import LLMSettings
from reasonloop.errors import ConfigError, LLMBadResponse, LLMNotSupported
from reasonloop.llm import scripted
from reasonloop.llm.base import Done, Message, TextDelta, ToolCallDelta, ToolSpec
from reasonloop.llm.resolve import create_llm
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.registry import Registry

USER = [Message.user("question?")]


async def test_text_reply_streams_in_chunks():
    llm = ScriptedProvider(replies=["Hello there, world"], chunk_size=5)
    chunks = [c async for c in llm.stream(USER)]
    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["Hello", " ther", "e, wo", "rld"]
    assert isinstance(chunks[-1], Done)
    assert chunks[-1].finish_reason == "stop"
    assert chunks[-1].usage_estimated


async def test_tool_call_reply():
    llm = ScriptedProvider(
        replies=[
            {
                "text": "Checking.",
                "tool_calls": [
                    {"name": "search", "arguments": {"query": "cats"}},
                    {"id": "mine", "name": "stats", "arguments": '{"raw": true}'},
                ],
            }
        ]
    )
    completion = await llm.complete(USER)
    assert completion.text == "Checking."
    assert completion.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in completion.tool_calls] == [
        ("call_1_0", "search", {"query": "cats"}),
        ("mine", "stats", {"raw": True}),
    ]


async def test_replies_in_order_and_prompts_recorded():
    llm = ScriptedProvider(replies=["one", "two"])
    tools = [ToolSpec(name="search")]
    assert (await llm.complete(USER, tools=tools)).text == "one"
    follow_up = [*USER, Message.assistant("one"), Message.user("again")]
    assert (await llm.complete(follow_up, stop=["x"])).text == "two"
    assert [[m.content for m in p] for p in llm.prompts] == [["question?"], ["question?", "one", "again"]]
    assert list(llm.tools_seen) == [tools, None]
    assert list(llm.stops_seen) == [None, ["x"]]
    assert llm.remaining == 0


async def test_only_the_most_recent_requests_are_kept_and_call_ids_stay_unique(monkeypatch):
    monkeypatch.setattr(scripted, "RECORDED_REQUESTS", 3)
    llm = ScriptedProvider(replies=[{"tool_calls": [{"name": "search", "arguments": {}}]}], repeat_last=True)
    ids = []
    for n in range(5):
        completion = await llm.complete([Message.user(f"q{n}")])
        ids.append(completion.tool_calls[0].id)
    assert [p[0].content for p in llm.prompts] == ["q2", "q3", "q4"]
    assert len(llm.tools_seen) == len(llm.stops_seen) == 3
    assert llm.requests == 5 and len(set(ids)) == 5


async def test_recorded_prompts_cannot_change_later():
    messages = [Message.user("original")]
    llm = ScriptedProvider(replies=["ok"])
    await llm.complete(messages)
    messages.append(Message.user("appended later"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        messages[0].content = "changed later"
    assert [m.content for m in llm.prompts[0]] == ["original"]


async def test_stop_sequence_cuts_the_text_before_the_earliest_stop():
    llm = ScriptedProvider(replies=["Thought: a\nAction: b\nObservation: c"])
    completion = await llm.complete(USER, stop=["Observation:", "Action:"])
    assert completion.text == "Thought: a\n"


async def test_exhausted_script_is_an_error_not_a_retry():
    llm = ScriptedProvider(replies=["only"])
    await llm.complete(USER)
    with pytest.raises(LLMBadResponse) as info:
        await llm.complete(USER)
    assert info.value.code == "llm.script_exhausted"
    assert "had 1" in info.value.message


async def test_repeat_last():
    llm = ScriptedProvider(replies=["a", "b"], repeat_last=True)
    texts = [(await llm.complete(USER)).text for _ in range(4)]
    assert texts == ["a", "b", "b", "b"]


async def test_reply_function_sees_messages_and_tools():
    def reply(messages, tools):
        return f"{len(messages)} messages, tools={[t.name for t in tools or []]}"

    llm = ScriptedProvider(replies=reply)
    assert (await llm.complete(USER, tools=[ToolSpec(name="t")])).text == "1 messages, tools=['t']"


def test_capabilities_follow_native_tools_flag():
    assert ScriptedProvider(replies=[]).capabilities.native_tools
    text_only = ScriptedProvider(replies=[], native_tools=False).capabilities
    assert (text_only.native_tools, text_only.parallel_tools) == (False, False)


async def test_replies_from_a_json_file(tmp_path):
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(["from file", {"tool_calls": [{"name": "f", "arguments": {}}]}]), encoding="utf-8")
    llm = ScriptedProvider(LLMSettings(provider="scripted", model=str(path)))
    assert (await llm.complete(USER)).text == "from file"
    assert (await llm.complete(USER)).tool_calls[0].name == "f"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [(None, "not found"), ("{not json", "is not JSON"), ('{"a": 1}', "must hold a JSON list"), ("[1, 2]", "must hold")],
)
def test_bad_replies_file_is_config_error(tmp_path, content, fragment):
    path = tmp_path / "replies.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=fragment):
        ScriptedProvider(LLMSettings(provider="scripted", model=str(path)))


def test_no_replies_at_all_says_how_to_give_them():
    with pytest.raises(ConfigError, match="scripted:PATH"):
        ScriptedProvider()


async def test_create_llm_builds_it_from_a_spec(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('["via spec"]', encoding="utf-8")
    llm = create_llm(f"scripted:{path}", LLMSettings(), registry=Registry())
    assert isinstance(llm, ScriptedProvider)
    assert (await llm.complete(USER)).text == "via spec"


async def test_tool_call_chunks_carry_arguments_as_json_text():
    llm = ScriptedProvider(replies=[{"tool_calls": [{"name": "f", "arguments": {"q": "猫"}}]}])
    calls = [c async for c in llm.stream(USER) if isinstance(c, ToolCallDelta)]
    assert calls[0].arguments == '{"q": "猫"}'


async def test_first_delay_comes_once_before_the_paced_deltas(monkeypatch):
    import asyncio

    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def recording_sleep(delay: float, *args: object) -> None:
        waits.append(delay)
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", recording_sleep)
    llm = ScriptedProvider(replies=["abcdef"], chunk_size=2, delay_s=0.03, first_delay_s=0.5)
    chunks = [c async for c in llm.stream(USER)]
    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["ab", "cd", "ef"]
    assert waits == [0.5, 0.03, 0.03, 0.03]


# -- scoring continuations -----------------------------------------------------------------------
async def test_score_tables_are_taken_one_per_call_and_calls_recorded():
    llm = ScriptedProvider(replies=[], scores=[{" yes": -0.5, " no": -2.0}, {" A": -1.0, " B": -0.25}])
    assert llm.capabilities.scores_continuations
    assert await llm.score("Is it? Answer:", [" no", " yes"]) == [-2.0, -0.5]
    assert await llm.score("Pick:", [" A", " B", ""]) == [-1.0, -0.25, 0.0]
    assert list(llm.scored) == [("Is it? Answer:", [" no", " yes"]), ("Pick:", [" A", " B", ""])]
    with pytest.raises(LLMBadResponse) as info:
        await llm.score("Again:", [" yes"])
    assert info.value.code == "llm.script_exhausted"
    assert "no scores left (it had 2)" in info.value.message


async def test_score_tables_repeat_the_last_with_repeat_last():
    llm = ScriptedProvider(replies=["a"], scores=[{" yes": -1.0}, {" yes": -3.0}], repeat_last=True)
    assert [await llm.score("p", [" yes"]) for _ in range(3)] == [[-1.0], [-3.0], [-3.0]]


async def test_a_continuation_missing_from_its_table_is_an_error_naming_it():
    llm = ScriptedProvider(replies=[], scores=[{" yes": -1.0}])
    with pytest.raises(LLMBadResponse, match="no score for ' maybe'"):
        await llm.score("p", [" yes", " maybe"])


async def test_scores_function_sees_prompt_and_continuations():
    llm = ScriptedProvider(replies=[], scores=lambda prompt, options: [-float(len(o)) for o in options])
    assert llm.capabilities.scores_continuations
    assert await llm.score("p", [" a", " abc"]) == [-2.0, -4.0]
    wrong = ScriptedProvider(replies=[], scores=lambda prompt, options: [0.0])
    with pytest.raises(LLMBadResponse, match="1 scores for 2 continuations"):
        await wrong.score("p", ["a", "b"])


async def test_without_scores_the_model_cannot_score():
    llm = ScriptedProvider(replies=["text"])
    assert not llm.capabilities.scores_continuations
    with pytest.raises(LLMNotSupported) as info:
        await llm.score("p", [" yes"])
    assert info.value.code == "llm.not_supported"
    assert (await llm.complete(USER)).text == "text"  # replies are unaffected


async def test_replies_and_scores_from_a_json_object_file(tmp_path):
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"replies": ["from file"], "scores": [{" yes": -0.1, " no": -3}]}), encoding="utf-8")
    llm = ScriptedProvider(LLMSettings(provider="scripted", model=str(path)))
    assert llm.capabilities.scores_continuations
    assert (await llm.complete(USER)).text == "from file"
    assert await llm.score("p", [" yes", " no"]) == [-0.1, -3.0]
    only_scores = tmp_path / "scores.json"
    only_scores.write_text(json.dumps({"scores": [{"x": -1}]}), encoding="utf-8")
    assert await ScriptedProvider(LLMSettings(provider="scripted", model=str(only_scores))).score("p", ["x"]) == [-1.0]


@pytest.mark.parametrize(
    "content",
    [
        {"replies": ["a"], "extra": 1},
        {"scores": {"x": -1}},
        {"scores": [{"x": "low"}]},
        {"scores": [{"x": True}]},
        {"replies": "a"},
        {},
    ],
)
def test_bad_script_object_is_config_error(tmp_path, content):
    path = tmp_path / "script.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(ConfigError, match='"replies"'):
        ScriptedProvider(LLMSettings(provider="scripted", model=str(path)))
