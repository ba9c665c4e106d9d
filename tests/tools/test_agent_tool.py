"""Agents as tools: nested events, {content, meta, stack}, depth limit, recursion, tally, no leaking answers."""

from __future__ import annotations

import asyncio

import pytest

from reasonloop.agents import Agent
from reasonloop.errors import ConfigError
from reasonloop.events import Answer, AnswerDelta, Citation, ErrorEvent, RunStarted, Searched, ToolCall, ToolResult
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.tools.agent_tool import AgentTool, agent_tools, tool_name_for
from reasonloop.tools.base import RunScope, ToolContext, ToolOutput, tool


@tool
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def call(name: str, call_id: str = "c1", **arguments: object) -> dict:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


def ask_sub_agent(reasoning: str) -> dict | str:
    """The parent model's first reply, in ``reasoning``'s format: ask the sub-agent about the sky."""
    return {
        "toolcall": call("run_agent", "p1", query="sky"),
        "react": 'Thought: ask\nAction: run_agent\nAction Input: {"query": "sky"}',
        "rewoo": "#E1 = run_agent[sky]",
    }[reasoning]


def researcher(replies: list, **kw: object) -> Agent:
    return Agent(
        "toolcall",
        llm=ScriptedProvider(replies=replies),
        tools=[lookup],
        name="researcher",
        description="Finds facts by looking keys up.",
        **kw,
    )


def writer(sub: Agent, replies: list, settings: dict | None = None, reasoning: str = "toolcall") -> Agent:
    return Agent(reasoning, llm=ScriptedProvider(replies=replies), tools=[sub], name="writer", settings=settings)


async def collect(agent: Agent, question: str = "What colour is the sky?") -> list:
    return [event async for event in agent.stream(question)]


async def test_sub_agent_events_are_nested_in_the_parent_stream() -> None:
    sub = researcher([call("lookup", "s1", key="sky"), "The sky is blue."])
    parent = writer(sub, [call("run_agent", "p1", query="sky colour"), "Blue, says the researcher."])
    events = await collect(parent)

    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    top = [e for e in events if e.depth == 0]
    nested = [e for e in events if e.depth > 0]
    assert {e.depth for e in nested} == {1} and all(e.parent_call_id == "p1" for e in nested)
    assert all(e.parent_call_id is None for e in top)
    assert {e.run_id for e in top} == {events[0].run_id} and {e.run_id for e in nested} != {events[0].run_id}
    kinds = [(e.type, e.depth) for e in events]
    # the sub-run streams between the parent's call and its result
    start = kinds.index(("tool_call", 0))
    end = kinds.index(("tool_result", 0))
    assert ("run_started", 1) in kinds[start:end] and ("answer", 1) in kinds[start:end]
    sub_call = next(e for e in nested if isinstance(e, ToolCall))
    assert (sub_call.tool, sub_call.input) == ("lookup", {"key": "sky"})
    sub_started = next(e for e in nested if isinstance(e, RunStarted))
    assert sub_started.reasoning == "toolcall" and sub_started.question == "sky colour"
    result = next(e for e in top if isinstance(e, ToolResult))
    assert (result.tool, result.output) == ("run_agent", "The sky is blue.")
    answers = [e for e in events if isinstance(e, Answer)]
    assert [(a.depth, a.text) for a in answers] == [(1, "The sky is blue."), (0, "Blue, says the researcher.")]
    assert events[-1] is answers[-1]


async def test_the_sub_agent_answer_goes_to_the_parent_not_to_the_user() -> None:
    sub = researcher([call("lookup", "s1", key="sky"), "SUB ANSWER"])
    parent_llm = ScriptedProvider(replies=[call("run_agent", "p1", query="sky"), "PARENT ANSWER"])
    parent = Agent("toolcall", llm=parent_llm, tools=[sub], name="writer")
    result = await parent.run("q")
    assert result.content == "PARENT ANSWER" and result.stop_reason == "final"
    # the parent's model read the sub-agent's answer as the tool message
    tool_messages = [m for m in parent_llm.prompts[1] if m.role == "tool"]
    assert [m.content for m in tool_messages] == ["SUB ANSWER"]
    # the sub-agent's answer streamed as nested deltas, never at depth 0
    events = await collect(researcher_then(parent_llm_replies=["PARENT"], sub_replies=["SUB " * 20]))
    assert (
        "".join(e.text for e in events if isinstance(e, AnswerDelta) and e.depth == 1).strip() == ("SUB " * 20).strip()
    )
    assert "SUB" not in "".join(e.text for e in events if isinstance(e, AnswerDelta) and e.depth == 0)


async def test_a_failed_parent_does_not_claim_the_sub_agents_answer() -> None:
    sub = researcher(["SUB ANSWER streamed in pieces"])
    result = await writer(sub, [call("run_agent", "p1", query="q")]).run("q")  # the parent's script runs out
    assert result.stop_reason == "error" and result.error["code"] == "llm.script_exhausted"
    assert result.content == ""


def researcher_then(parent_llm_replies: list, sub_replies: list) -> Agent:
    sub = researcher(sub_replies)
    return writer(sub, [call("run_agent", "p1", query="q"), *parent_llm_replies])


async def test_the_description_is_the_sub_agents_and_naming_follows_the_count() -> None:
    sub = researcher(["x"])
    parent_llm = ScriptedProvider(replies=["done"])
    await Agent("toolcall", llm=parent_llm, tools=[sub], name="w").run("q")
    [spec] = parent_llm.tools_seen[0]
    assert (spec.name, spec.description) == ("run_agent", "Finds facts by looking keys up.")
    assert set(spec.parameters["properties"]) == {"query", "context"} and spec.parameters["required"] == ["query"]

    other = Agent("qa", llm=ScriptedProvider(replies=[]), name="fact.checker")
    assert [t.name for t in agent_tools([sub, other])] == ["agent_researcher", "agent_fact_checker"]
    assert tool_name_for("a b/c") == "agent_a_b_c"
    with pytest.raises(ConfigError, match="distinct names"):
        agent_tools([sub, researcher([])])
    with pytest.raises(ConfigError, match="needs a name"):
        AgentTool(Agent("qa", llm=ScriptedProvider(replies=[])))
    with pytest.raises(ConfigError, match="max_depth"):
        AgentTool(sub, max_depth=0)


async def test_direct_call_returns_content_meta_and_stack() -> None:
    sub = researcher([call("lookup", "s1", key="sky"), "The sky is blue."])
    emitted: list = []

    async def emit(event: object) -> None:
        emitted.append(event)

    ctx = ToolContext(run_id="parent", call_id="c9", depth=0, emit=emit, scope=RunScope(agent_stack=("writer",)))
    out = await AgentTool(sub).invoke({"query": "sky", "context": "the user is a painter"}, ctx)
    assert out.ok and out.text == "The sky is blue."
    data = out.data
    assert data["content"] == "The sky is blue." and data["stack"] == ["writer", "researcher"]
    meta = data["meta"]
    assert meta["agent"] == "researcher" and meta["stop_reason"] == "final" and meta["tool_calls"] == 1
    assert meta["run_id"] and meta["run_id"] != "parent" and meta["depth"] == 1
    assert meta["ended_at"] >= meta["started_at"] and meta["elapsed_s"] >= 0
    assert meta["usage"]["llm_calls"] == 2 and meta["usage"]["tool_calls"] == 1
    assert emitted and all(e.depth == 1 and e.parent_call_id == "c9" for e in emitted)
    started = emitted[0]
    assert isinstance(started, RunStarted) and started.question == "sky\n\nContext: the user is a painter"
    assert AgentTool(sub).tool_calls_made(out) == 1
    assert AgentTool(sub).tool_calls_made(ToolOutput(text="x")) == 0


async def test_depth_limit_refuses_the_call_and_the_run_goes_on() -> None:
    sub_llm = ScriptedProvider(replies=["never asked"])
    sub = Agent("toolcall", llm=sub_llm, name="deep")
    out = await AgentTool(sub, max_depth=2).invoke({"query": "q"}, ToolContext(depth=2))
    assert out.error is not None and out.error["code"] == "agent.depth_exceeded"
    assert "limit is 2" in out.error["error"] and not sub_llm.prompts

    # a chain a -> b -> c: with max_depth 1, b's call to c is refused inside b's run
    c = Agent("toolcall", llm=ScriptedProvider(replies=["c answers"]), name="c")
    b_llm = ScriptedProvider(replies=[call("run_agent", "b1", query="ask c"), "b answers without c"])
    b = Agent("toolcall", llm=b_llm, tools=[AgentTool(c, max_depth=1)], name="b")
    a = Agent(
        "toolcall",
        llm=ScriptedProvider(replies=[call("run_agent", "a1", query="ask b"), "a done"]),
        tools=[AgentTool(b, max_depth=1)],
        name="a",
    )
    events = await collect(a)
    refused = next(e for e in events if isinstance(e, ToolResult) and e.call_id == "b1")
    assert refused.depth == 1 and refused.error["type"] == "AgentDepthExceeded"
    assert not any(isinstance(e, RunStarted) and e.depth == 2 for e in events)
    assert events[-1].text == "a done" and events[-1].depth == 0


async def test_recursion_is_refused() -> None:
    a_llm = ScriptedProvider(replies=[call("run_agent", "a1", query="ask b"), "a done"])
    b_llm = ScriptedProvider(replies=[call("run_agent", "b1", query="ask a again"), "b done"])
    a = Agent("toolcall", llm=a_llm, name="a")
    b = Agent("toolcall", llm=b_llm, tools=[AgentTool(a)], name="b")
    a.tools["run_agent"] = AgentTool(b)  # a cycle built by hand: refused at run time
    events = await collect(a)
    refused = next(e for e in events if isinstance(e, ToolResult) and e.call_id == "b1")
    assert refused.depth == 1 and "a -> b -> a" in refused.error["error"]
    assert len(a_llm.prompts) == 2  # a ran once: its first turn and its answer
    assert events[-1].text == "a done"
    out = await AgentTool(a).invoke({"query": "q"}, ToolContext(scope=RunScope(agent_stack=("a", "x"))))
    assert out.error["code"] == "agent.recursion"


@pytest.mark.parametrize("reasoning", ["toolcall", "react", "rewoo"])
async def test_sub_agent_tool_calls_satisfy_require_tool_call(reasoning: str) -> None:
    first = ask_sub_agent(reasoning)
    settings = {"require_tool_call": True}
    # the sub-agent looked something up: its call counts for the parent
    grounded = researcher([call("lookup", "s1", key="sky"), "blue"])
    result = await writer(grounded, [first, "Final Answer: It is blue."], settings, reasoning).run("q")
    assert result.stop_reason == "final" and result.error is None and "blue" in result.content

    # the sub-agent answered from its head: delegating alone is no tool call
    ungrounded = researcher(["blue, I think"])
    result = await writer(ungrounded, [first, "Final Answer: It is blue."], settings, reasoning).run("q")
    assert result.stop_reason == "guard" and result.error["code"] == "agent.guard.tool_call_required"


async def test_a_sub_agent_s_own_search_is_evidence_for_the_guard_but_no_tool_call() -> None:
    class Docs:
        async def search(self, query, top_k=10, filters=None):
            from reasonloop.kb.base import Hit

            return [Hit(chunk_id="k1", document_id="d", source="sky.md", text="The sky is blue.")]

    searcher = Agent("qa", llm=ScriptedProvider(replies=["Blue [1]."]), kb=Docs(), name="researcher")
    settings = {"require_tool_call": True}
    events = await collect(writer(searcher, [call("run_agent", "p1", query="sky"), "It is blue [1]."], settings))
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.stop_reason == "final" and answer.text == "It is blue [1]."
    result = next(e for e in events if isinstance(e, ToolResult) and e.call_id == "p1")
    assert result.error is None
    # the parent made one tool call (run_agent); the sub-run searched once and called no tool
    assert (answer.usage.tool_calls, answer.usage.searches) == (1, 0)
    assert [(e.depth, e.query) for e in events if isinstance(e, Searched)] == [(1, "sky")]


async def test_a_failing_sub_agent_is_an_observation_with_its_cause() -> None:
    sub = researcher([])  # the script is empty: the sub-run fails
    parent = writer(sub, [call("run_agent", "p1", query="q"), "answered anyway"])
    events = await collect(parent)
    failed = next(e for e in events if isinstance(e, ToolResult) and e.depth == 0)
    assert failed.error["type"] == "SubAgentFailed" and "llm.script_exhausted" in failed.error["error"]
    assert any(isinstance(e, ErrorEvent) and e.depth == 1 for e in events)
    assert isinstance(events[-1], Answer) and events[-1].text == "answered anyway" and events[-1].depth == 0


async def test_sub_agent_citations_keep_their_numbers_in_the_parent() -> None:
    class Docs:
        async def search(self, query, top_k=10, filters=None):
            from reasonloop.kb.base import Hit

            return [Hit(chunk_id="k1", document_id="d", source="sky.md", text="The sky is blue.")]

    sub = Agent(
        "toolcall",
        llm=ScriptedProvider(replies=[call("docsearch", "s1", query="sky"), "Blue [1]."]),
        kb=Docs(),
        name="researcher",
    )
    result = await writer(sub, [call("run_agent", "p1", query="sky"), "The sky is blue [1]."]).run("q")
    assert [(c.marker, c.chunk_id) for c in result.citations] == [(1, "k1")]
    assert isinstance(result.citations[0], Citation)


async def test_stopping_the_parent_cancels_the_sub_agent() -> None:
    state = {"started": False, "cancelled": False}
    running = asyncio.Event()

    @tool
    async def slow(key: str) -> str:
        """Takes forever."""
        state["started"] = True
        running.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            state["cancelled"] = True
            raise
        return "never"

    sub = Agent("toolcall", llm=ScriptedProvider(replies=[call("slow", "s1", key="k")]), tools=[slow], name="sub")
    parent = writer(sub, [call("run_agent", "p1", query="q")])
    seen: list = []

    async def consume() -> None:
        async for event in parent.stream("q"):
            seen.append(event)

    task = asyncio.create_task(consume())
    await asyncio.wait_for(running.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert state["started"] and state["cancelled"]
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert not any(isinstance(e, Answer) for e in seen)


@pytest.mark.parametrize("reasoning", ["toolcall", "react", "rewoo"])
async def test_the_sub_agents_model_usage_counts_in_the_parents_usage_and_budget(reasoning: str) -> None:
    first = ask_sub_agent(reasoning)
    sub = researcher([call("lookup", "s1", key="sky"), "The sky is blue. " * 40])
    parent = writer(sub, [first, "Final Answer: It is blue."], reasoning=reasoning)
    result = await parent.run("q")
    sub_usage = sub.llm.calls  # the sub-agent's two model calls
    assert len(sub_usage) == 2 and len(parent.llm.calls) == 2
    assert result.usage.llm_calls == 4
    parent_tokens = sum(c.prompt_tokens + c.completion_tokens for c in parent.llm.calls)
    sub_tokens = sum(c.prompt_tokens + c.completion_tokens for c in sub_usage)
    assert result.usage.total_tokens == parent_tokens + sub_tokens

    # a token budget the sub-run alone exhausts ends the parent's loop after the call
    if reasoning != "rewoo":  # rewoo plans once: there is no loop to end
        sub = researcher([call("lookup", "s1", key="sky"), "The sky is blue. " * 40])
        budget = {"max_tokens": parent_tokens + 1}
        result = await writer(sub, [first, "From what I have: blue."], budget, reasoning).run("q")
        assert result.stop_reason == "max_tokens"


async def test_a_sub_agent_that_times_out_still_counts_its_model_calls() -> None:
    @tool
    async def stall(key: str) -> str:
        """Never answer."""
        await asyncio.Event().wait()
        return key

    sub = Agent(
        "toolcall", llm=ScriptedProvider(replies=[call("stall", "s1", key="k")]), tools=[stall], name="slowpoke"
    )
    parent = Agent(
        "toolcall",
        llm=ScriptedProvider(replies=[call("run_agent", "p1", query="q"), "Gave up on it."]),
        tools=[AgentTool(sub, timeout_s=0.05)],
        name="boss",
    )
    result = await parent.run("q")
    assert result.steps[0].error["code"] == "tool.timeout"
    assert result.usage.llm_calls == 3  # the parent's two calls and the sub-agent's one before it stalled
    assert asyncio.all_tasks() == {asyncio.current_task()}
