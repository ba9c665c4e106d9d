"""ReAct end to end through the scripted model: every ending, guard, tool failures, history."""

from __future__ import annotations

import json

from reasonloop.agents import Agent
from reasonloop.events import Answer, AnswerDelta, ErrorEvent, Progress, ToolCall, ToolResult
from reasonloop.kb.base import Hit
from reasonloop.llm.base import Message
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.tokens import count_tokens
from tests.reasoning.helpers import FakeRetriever, collect_events, make_tools, types


def act(tool: str, arguments: dict | str) -> str:
    value = json.dumps(arguments) if isinstance(arguments, dict) else arguments
    return f"Thought: use {tool}\nAction: {tool}\nAction Input: {value}"


def agent(replies, **kwargs) -> tuple[Agent, ScriptedProvider]:
    llm = ScriptedProvider(replies=replies)
    kwargs.setdefault("tools", make_tools())
    return Agent("react", llm=llm, **kwargs), llm


async def test_final_answer_after_a_search_cites_the_evidence(retriever: FakeRetriever) -> None:
    a, llm = agent(
        [act("docsearch", {"query": "capital France"}), "Thought: found\nFinal Answer: Paris [1]."],
        kb=retriever,
        tools=None,
    )
    events = await collect_events(a, "What is the capital of France?")
    assert types(events)[0] == "run_started" and types(events)[-1] == "answer"
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert len({e.run_id for e in events}) == 1
    answer = events[-1]
    assert isinstance(answer, Answer)
    assert answer.text == "Paris [1]." and answer.stop_reason == "final"
    assert [(c.marker, c.source, c.page, c.chunk_id) for c in answer.citations] == [(1, "france.md", 1, "c1")]
    assert "".join(e.text for e in events if isinstance(e, AnswerDelta)) == "Paris [1]."
    assert answer.usage.llm_calls == 2 and answer.usage.tool_calls == 1
    # Generation stops at the observation, which is ours to write.
    assert "Observation:" in llm.stops_seen[0]
    assert llm.prompts[1][-1].content.startswith("Observation: [1] France (france.md, p. 1)")


async def test_unparseable_reply_is_the_direct_answer() -> None:
    a, _ = agent(["Thought: Hello there! Nice to meet you."])
    result = await a.run("hi")
    assert result.content == "Hello there! Nice to meet you." and result.stop_reason == "final"


async def test_max_rounds_forces_one_tool_less_answer() -> None:
    a, llm = agent(
        [act("lookup", {"key": "a"}), act("lookup", {"key": "b"}), "It is a and b."], settings={"max_rounds": 2}
    )
    result = await a.run("q")
    assert result.stop_reason == "max_rounds"
    assert result.content == "It is a and b."
    assert [s.action for s in result.steps] == ["lookup", "lookup"]
    assert llm.tools_seen[-1] is None
    assert "max rounds" in llm.prompts[-1][-1].content
    assert result.usage.llm_calls == 3


async def test_calls_beyond_the_tool_budget_are_not_executed_and_the_model_is_told() -> None:
    a, llm = agent(
        [act("lookup", {"key": "a"}), act("lookup", {"key": "b"}), "Only a is known."], settings={"max_tool_calls": 1}
    )
    events = await collect_events(a, "q")
    results = [e for e in events if isinstance(e, ToolResult)]
    assert results[0].error is None and results[0].output == "value of a"
    assert results[1].error["type"] == "ToolBudgetExhausted" and results[1].error["code"] == "tool.budget_exhausted"
    assert "budget" in llm.prompts[2][-2].content  # the observation told the model
    answer = events[-1]
    assert answer.stop_reason == "max_tool_calls" and answer.usage.tool_calls == 1
    assert answer.text == "Only a is known."


async def test_max_tokens_budget_ends_the_loop() -> None:
    a, _ = agent([act("lookup", {"key": "a"}), "Answer from a."], settings={"max_tokens": 50})
    result = await a.run("q")
    assert result.stop_reason == "max_tokens" and result.content == "Answer from a."


async def test_timeout_budget_stops_a_slow_tool() -> None:
    a, _ = agent([act("slow", {"key": "k", "seconds": 30}), "Gave up waiting."], settings={"timeout_s": 0.05})
    result = await a.run("q")
    assert result.stop_reason == "timeout"
    assert result.steps[0].error["type"] == "ToolTimeout"
    assert result.content == "Gave up waiting."


async def test_empty_forced_answer_is_never_empty() -> None:
    a, _ = agent([act("lookup", {"key": "a"}), ""], settings={"max_rounds": 1})
    result = await a.run("q")
    assert result.stop_reason == "max_rounds" and "max_rounds" in result.content


async def test_tool_exception_becomes_an_observation_and_the_run_goes_on() -> None:
    a, llm = agent([act("boom", {"key": "x"}), "Final Answer: it failed"])
    result = await a.run("q")
    assert result.content == "it failed"
    error = result.steps[0].error
    assert error["tool"] == "boom" and error["type"] == "RuntimeError" and "cannot handle x" in error["error"]
    observation = json.loads(llm.prompts[1][-1].content.removeprefix("Observation: "))
    assert set(observation) == {"tool", "error", "type"}


async def test_unknown_tool_and_invalid_arguments_are_observations() -> None:
    a, _llm = agent([act("nosuch", {"q": 1}), act("lookup", {"wrong": 1}), "Final Answer: done"])
    result = await a.run("q")
    assert [s.error["type"] for s in result.steps] == ["ToolNotFound", "ToolArgumentsInvalid"]
    assert "lookup" in result.steps[0].error["error"]  # the model learns which tools exist
    assert result.content == "done" and result.usage.tool_calls == 1


async def test_plain_and_bracket_inputs_fill_the_first_parameter() -> None:
    a, _ = agent(["Action: lookup[alpha]", "Action: LOOKUP\nAction Input: beta", "Final Answer: ok"])
    result = await a.run("q")
    assert [s.observation for s in result.steps] == ["value of alpha", "value of beta"]


async def test_action_written_with_a_final_answer_runs_first() -> None:
    a, _ = agent([act("lookup", {"key": "a"}) + "\nFinal Answer: guessed", "Final Answer: checked"])
    result = await a.run("q")
    assert [s.action for s in result.steps] == ["lookup"] and result.content == "checked"


async def test_guard_trips_without_a_tool_call_and_keeps_the_raw_text() -> None:
    a, _ = agent(["Final Answer: from memory"], settings={"require_tool_call": True})
    events = await collect_events(a, "q")
    answers = [e for e in events if isinstance(e, Answer)]
    assert len(answers) == 1 and answers[0].stop_reason == "guard"
    assert not [e for e in events if isinstance(e, AnswerDelta)]  # the raw answer never streamed
    result = await agent(["Final Answer: from memory"], settings={"require_tool_call": True})[0].run("q")
    assert result.error["code"] == "agent.guard.tool_call_required"
    assert result.steps[-1].observation == "from memory"
    assert "from memory" not in result.content


async def test_guard_passes_after_a_real_tool_call() -> None:
    a, _ = agent([act("lookup", {"key": "a"}), "Final Answer: a it is"], settings={"require_tool_call": True})
    result = await a.run("q")
    assert result.stop_reason == "final" and result.content == "a it is" and result.error is None


async def test_guard_is_not_satisfied_by_an_unknown_tool() -> None:
    a, _ = agent([act("nosuch", {"q": 1}), "Final Answer: x"], settings={"require_tool_call": True})
    assert (await a.run("q")).stop_reason == "guard"


async def test_history_reaches_the_model_for_a_follow_up() -> None:
    history = [
        {"role": "user", "content": "Tell me about France."},
        Message.assistant("France is a country; its capital is Paris."),
    ]
    a, llm = agent(["Final Answer: About 2 million people live in Paris."])
    result = await a.run("How many people live there?", history=history)
    prompt = llm.prompts[0]
    assert [m.role for m in prompt] == ["system", "user", "assistant", "user"]
    assert "capital is Paris" in prompt[2].content
    assert result.content.startswith("About 2 million")


async def test_instructions_are_appended_and_chinese_questions_get_chinese_prompts() -> None:
    a, llm = agent(["Final Answer: 巴黎"], instructions=["Always be brief."])
    await a.run("法国的首都是哪里？")
    system = llm.prompts[0][0].content
    assert "用中文写 Final Answer" in system
    assert system.rstrip().endswith("- Always be brief.")
    a, llm = agent(["Final Answer: Paris"])
    await a.run("What is the capital of France?")
    assert "Write the Final Answer in English" in llm.prompts[0][0].content


async def test_tool_call_events_pair_up() -> None:
    a, _ = agent([act("lookup", {"key": "a"}), "Final Answer: ok"])
    events = await collect_events(a, "q")
    call = next(e for e in events if isinstance(e, ToolCall))
    result = next(e for e in events if isinstance(e, ToolResult))
    assert call.call_id == result.call_id and call.input == {"key": "a"}
    assert types(events).index("tool_call") < types(events).index("tool_result")


async def test_docsearch_follows_the_strategys_evidence_budget() -> None:
    long = [Hit(chunk_id=f"x{i}", document_id="d", source="big.md", text="alpha " * 200) for i in range(3)]
    a, llm = agent(
        [act("docsearch", {"query": "alpha words"}), "Final Answer: ok"],
        kb=FakeRetriever(long),
        tools=None,
        settings={"max_evidence_tokens": 60},
    )
    await a.run("q")
    observation = llm.prompts[1][-1].content
    assert count_tokens(observation) <= 70 and "[2]" not in observation


async def test_forced_answer_that_still_calls_a_tool_keeps_only_the_thought() -> None:
    a, _ = agent([act("lookup", {"key": "a"}), "Thought: a is known\nAction: lookup[b]"], settings={"max_rounds": 1})
    result = await a.run("q")
    assert result.content == "a is known" and len(result.steps) == 1
    a, _ = agent([act("lookup", {"key": "a"}), "Action: lookup[b]"], settings={"max_rounds": 1})
    assert "could not reach an answer" in (await a.run("q")).content


NO_FORMAT = [
    "Action: I will look through the documents for this",
    "",
    '<tool_call>\n{"name": "lookup", "arguments": {"key": \n</tool_call>',
    "Final Answer: never asked for",
]


async def test_a_model_that_never_follows_the_format_ends_the_run_saying_so() -> None:
    a, llm = agent(NO_FORMAT)
    events = await collect_events(a, "q")
    assert not [e for e in events if isinstance(e, Answer | ToolCall)]
    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.code == "agent.format_not_followed"
    assert "did not follow the react format: 3 replies in a row could not be read" in error.message
    assert "--reasoning toolcall" in error.message and "native tool calls" in error.message
    assert llm.requests == 3  # not looped to the round budget (6)
    retry = llm.prompts[1]
    assert retry[-2].content == NO_FORMAT[0] and "could not be read: the Action line names no tool" in retry[-1].content
    assert "Action: one tool name from [lookup, boom, slow]" in retry[-1].content
    assert llm.prompts[2][-2].content == "(an empty reply)"
    progress = [e.message for e in events if isinstance(e, Progress)]
    assert len(progress) == 2 and all("asking again" in m for m in progress)


async def test_a_text_only_model_that_follows_no_format_is_told_to_use_qa() -> None:
    llm = ScriptedProvider(replies=NO_FORMAT, native_tools=False)
    result = await Agent("toolcall", llm=llm, tools=make_tools()).run("q")  # falls back to ReAct
    assert result.stop_reason == "error" and result.error["code"] == "agent.format_not_followed"
    assert result.error["suggestion"] == "qa" and "--reasoning qa" in result.error["message"]
    assert result.error["strategy"] == "react" and result.error["model"] == llm.name


async def test_one_unreadable_turn_is_asked_again_and_a_readable_one_starts_the_count_again() -> None:
    a, llm = agent(["", act("lookup", {"key": "a"}), "Action: look it up", "", "Final Answer: value of a"])
    result = await a.run("q")
    assert result.content == "value of a" and result.stop_reason == "final" and result.error is None
    assert [s.observation for s in result.steps] == ["value of a"] and llm.requests == 5


async def test_a_forced_answer_never_shows_its_thinking() -> None:
    a, _ = agent([act("lookup", {"key": "a"}), "<think>It must be a.</think>\nIt is a."], settings={"max_rounds": 1})
    events = await collect_events(a, "q")
    assert events[-1].text == "It is a." and events[-1].stop_reason == "max_rounds"
    assert "think" not in "".join(e.text for e in events if isinstance(e, AnswerDelta))
