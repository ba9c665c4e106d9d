"""Native tool calling: parallel calls, tool messages, budgets, bad arguments, fallback to ReAct."""

from __future__ import annotations

import asyncio

from reasonloop.agents import Agent
from reasonloop.events import Answer, ErrorEvent, Progress, Thought, ToolResult
from reasonloop.llm.base import Message
from reasonloop.llm.scripted import ScriptedProvider
from tests.reasoning.helpers import FakeRetriever, Gauge, collect_events, make_tools


def calls(*pairs, text: str = "") -> dict:
    return {"text": text, "tool_calls": [{"id": f"c{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(pairs)]}


async def test_several_calls_of_one_turn_run_concurrently_and_answer_as_tool_messages() -> None:
    gauge = Gauge()
    llm = ScriptedProvider(
        replies=[
            calls(("slow", {"key": "a"}), ("slow", {"key": "b"}), ("slow", {"key": "c"}), text="Let me check."),
            "All three are slow [x].",
        ]
    )
    a = Agent("toolcall", llm=llm, tools=make_tools(gauge))
    events = await collect_events(a, "q")
    assert gauge.max_active == 3  # overlapped, not one after another
    tool_messages = [m for m in llm.prompts[1] if m.role == "tool"]
    assert [(m.tool_call_id, m.name, m.content) for m in tool_messages] == [
        ("c0", "slow", "slow a"),
        ("c1", "slow", "slow b"),
        ("c2", "slow", "slow c"),
    ]
    assistant = llm.prompts[1][-4]
    assert assistant.role == "assistant" and [c.name for c in assistant.tool_calls] == ["slow"] * 3
    assert any(isinstance(e, Thought) and e.text == "Let me check." for e in events)
    assert llm.tools_seen[0] and {t.name for t in llm.tools_seen[0]} == {"lookup", "boom", "slow"}
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.stop_reason == "final" and answer.usage.tool_calls == 3


async def test_docsearch_is_offered_with_a_kb_and_citations_map(retriever: FakeRetriever) -> None:
    llm = ScriptedProvider(replies=[calls(("docsearch", {"query": "Germany"})), "Berlin [1]."])
    result = await Agent("toolcall", llm=llm, kb=retriever).run("Capital of Germany?")
    assert result.content == "Berlin [1]." and result.citations[0].source == "germany.md"
    assert retriever.queries == ["Germany"]


async def test_calls_beyond_the_budget_get_a_tool_message_and_a_forced_answer() -> None:
    llm = ScriptedProvider(replies=[calls(("lookup", {"key": "a"}), ("lookup", {"key": "b"})), "Only a."])
    a = Agent("toolcall", llm=llm, tools=make_tools(), settings={"max_tool_calls": 1})
    events = await collect_events(a, "q")
    results = [e for e in events if isinstance(e, ToolResult)]
    assert sorted(r.error["type"] if r.error else "ok" for r in results) == ["ToolBudgetExhausted", "ok"]
    final_prompt = llm.prompts[-1]
    assert llm.tools_seen[-1] is None
    assert not any(m.role == "tool" or m.tool_calls for m in final_prompt)  # flattened for a tool-less call
    assert any("budget" in m.content for m in final_prompt)
    assert events[-1].stop_reason == "max_tool_calls" and events[-1].text == "Only a."


async def test_max_rounds_with_tool_calls_every_turn() -> None:
    llm = ScriptedProvider(replies=[calls(("lookup", {"key": "a"})), calls(("lookup", {"key": "b"})), "Done."])
    result = await Agent("toolcall", llm=llm, tools=make_tools(), settings={"max_rounds": 2}).run("q")
    assert result.stop_reason == "max_rounds" and result.content == "Done." and result.usage.llm_calls == 3


async def test_arguments_that_are_not_json_become_an_error_observation() -> None:
    llm = ScriptedProvider(
        replies=[
            {"tool_calls": [{"id": "x", "name": "lookup", "arguments": '{"key": '}]},
            {"tool_calls": [{"id": "y", "name": "nosuch", "arguments": {}}]},
            "Recovered.",
        ]
    )
    result = await Agent("toolcall", llm=llm, tools=make_tools()).run("q")
    assert [s.error["type"] for s in result.steps] == ["ToolArgumentsInvalid", "ToolNotFound"]
    assert result.content == "Recovered." and result.usage.tool_calls == 0


async def test_tool_exception_is_reported_to_the_model() -> None:
    llm = ScriptedProvider(replies=[calls(("boom", {"key": "k"})), "It broke."])
    result = await Agent("toolcall", llm=llm, tools=make_tools()).run("q")
    assert '"type": "RuntimeError"' in next(m for m in llm.prompts[1] if m.role == "tool").content
    assert result.content == "It broke."


async def test_guard_trip_and_pass() -> None:
    llm = ScriptedProvider(replies=["No tools needed."])
    tripped = await Agent("toolcall", llm=llm, tools=make_tools(), settings={"require_tool_call": True}).run("q")
    assert tripped.stop_reason == "guard" and tripped.steps[-1].observation == "No tools needed."
    llm = ScriptedProvider(replies=[calls(("lookup", {"key": "a"})), "value a"])
    passed = await Agent("toolcall", llm=llm, tools=make_tools(), settings={"require_tool_call": True}).run("q")
    assert passed.stop_reason == "final" and passed.content == "value a"


async def test_history_is_sent() -> None:
    llm = ScriptedProvider(replies=["Yes, 330 metres."])
    history = [Message.user("How tall is the Eiffel Tower?"), Message.assistant("330 metres.")]
    await Agent("toolcall", llm=llm, tools=make_tools()).run("Really?", history=history)
    assert [m.content for m in llm.prompts[0][1:]] == ["How tall is the Eiffel Tower?", "330 metres.", "Really?"]


async def test_model_without_native_tools_falls_back_to_react() -> None:
    llm = ScriptedProvider(replies=["Action: lookup[a]", "Final Answer: value a"], native_tools=False)
    events = await collect_events(Agent("toolcall", llm=llm, tools=make_tools()), "q")
    assert any(isinstance(e, Progress) and "ReAct" in e.message for e in events)
    assert events[-1].text == "value a" and list(llm.tools_seen) == [None, None]


async def test_token_and_time_budgets() -> None:
    llm = ScriptedProvider(replies=[calls(("lookup", {"key": "a"})), "From a."])
    result = await Agent("toolcall", llm=llm, tools=make_tools(), settings={"max_tokens": 20}).run("q")
    assert result.stop_reason == "max_tokens" and result.content == "From a."
    llm = ScriptedProvider(replies=[calls(("slow", {"key": "a", "seconds": 30}), ("lookup", {"key": "b"})), "Late."])
    result = await Agent("toolcall", llm=llm, tools=make_tools(), settings={"timeout_s": 0.05}).run("q")
    assert result.stop_reason == "timeout" and result.content == "Late."
    assert sorted(s.error["type"] if s.error else "ok" for s in result.steps) == ["ToolTimeout", "ok"]
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_the_run_deadline_never_interrupts_the_consumer() -> None:
    # The answer streams slowly; the consumer takes longer over one delta than the whole run may
    # last. The deadline ends the model turn at its next wait, not the consumer's own await.
    llm = ScriptedProvider(replies=["a slow streamed answer", "Short."], chunk_size=2, delay_s=0.01)
    agent = Agent("toolcall", llm=llm, tools=make_tools(), settings={"timeout_s": 0.1})
    events, slept = [], 0
    async for event in agent.stream("q"):
        events.append(event)
        if event.type == "answer_delta" and slept == 0:
            await asyncio.sleep(0.25)  # raises CancelledError if the run's deadline cancels the task here
            slept += 1
    answer = events[-1]
    assert slept == 1 and isinstance(answer, Answer) and answer.stop_reason == "timeout"
    assert answer.text == "Short."  # the forced answer, after the cut-short turn


async def test_an_llm_wrapper_with_the_documented_stream_signature_still_works() -> None:
    seen: list[int] = []

    class Traced(ScriptedProvider):
        def stream(self, messages, *, tools=None, stop=None, max_tokens=None, temperature=None):  # type: ignore[override]
            seen.append(len(messages))
            return super().stream(messages, tools=tools, stop=stop, max_tokens=max_tokens, temperature=temperature)

    llm = Traced(replies=[calls(("lookup", {"key": "a"})), "From a."])
    result = await Agent("toolcall", llm=llm, tools=make_tools()).run("q")
    assert result.stop_reason == "final" and result.content == "From a." and len(seen) == 2


async def test_a_model_whose_turns_cannot_be_read_ends_the_run_suggesting_react() -> None:
    llm = ScriptedProvider(
        replies=[
            "",
            {"tool_calls": [{"id": "x", "name": "lookup", "arguments": "key is a"}]},
            "<tool_call>lookup a</tool_call>",
            "Never asked for.",
        ]
    )
    events = await collect_events(Agent("toolcall", llm=llm, tools=make_tools()), "q")
    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.code == "agent.format_not_followed"
    assert "did not follow the toolcall format: 3 replies in a row could not be read" in error.message
    assert "<tool_call> tag does not hold a JSON object" in error.message and "--reasoning react" in error.message
    assert llm.requests == 3 and not [e for e in events if isinstance(e, Answer)]
    assert "Your last reply could not be read: the reply is empty" in llm.prompts[1][-1].content
    assert llm.prompts[2][-1].role == "tool" and "not valid JSON" in llm.prompts[2][-1].content


async def test_an_empty_turn_is_asked_again_not_answered_with_nothing() -> None:
    llm = ScriptedProvider(replies=["", "<think>   </think>", "Berlin."])
    result = await Agent("toolcall", llm=llm, tools=make_tools()).run("q")
    assert result.content == "Berlin." and llm.requests == 3 and result.error is None
