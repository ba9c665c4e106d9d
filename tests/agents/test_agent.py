"""The Agent API: resolution by id, the event contract, RunResult, errors, cancellation."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from reasonloop.agents import Agent, ask
from reasonloop.errors import ConfigError, PluginNotFound
from reasonloop.events import Answer, ErrorEvent, Event, Progress, RunStarted, Thought, ToolCall, ToolResult
from reasonloop.kb.base import Filter, Hit
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.plugin_table import PLUGINS
from reasonloop.reasoning.base import Reasoning, RunContext
from reasonloop.reasoning.strategies.react import ReActReasoning
from reasonloop.registry import PluginInfo, Registry
from reasonloop.tools.base import ToolContext, tool
from reasonloop.tools.docsearch import DocSearchTool


class OneDoc:
    async def search(self, query: str, top_k: int = 10, filters: list[Filter] | None = None) -> list[Hit]:
        return [Hit(chunk_id="k1", document_id="d", source="a.md", text="The sky is blue.")]


class FakeKB:
    def retriever(self) -> OneDoc:
        return OneDoc()


@pytest.fixture
def registry() -> Registry:
    return Registry(use_entry_points=False)


def test_builtins_resolve_by_id_and_register(registry: Registry) -> None:
    assert Agent("react", llm=ScriptedProvider(replies=[]), registry=registry).strategy is ReActReasoning
    assert registry.ids("reasoning") == []  # resolved without being listed
    registry.add_builtins()
    assert {r.id for r in PLUGINS if r.kind == "reasoning"} == set(registry.ids("reasoning"))
    assert registry.get("tool", "docsearch") is DocSearchTool
    registry.add_builtins()  # idempotent
    assert registry.entries("run_store")[0].source == "builtin"


def test_third_party_strategy_by_id_and_unknown_ids(registry: Registry) -> None:
    class Echo(Reasoning):
        info = PluginInfo(id="echo", name="Echo", description="Repeats the question")

        async def stream(self, question: str) -> AsyncIterator[Event]:
            yield self.answer(question)

    registry.register("reasoning", "echo", Echo)
    assert Agent("echo", llm=ScriptedProvider(replies=[]), registry=registry).reasoning_id == "echo"
    with pytest.raises(PluginNotFound, match="nosuch"):
        Agent("nosuch", llm=ScriptedProvider(replies=[]), registry=registry)
    with pytest.raises(PluginNotFound):
        Agent("react", llm=ScriptedProvider(replies=[]), tools=["nosuch"], registry=registry)


def test_settings_are_validated_and_schema_is_published() -> None:
    with pytest.raises(ConfigError, match="max_rounds"):
        Agent("react", llm=ScriptedProvider(replies=[]), settings={"max_rounds": 0})
    with pytest.raises(ConfigError, match="colour"):
        Agent("react", llm=ScriptedProvider(replies=[]), settings={"colour": "red"})
    schema = ReActReasoning.settings_schema()["properties"]
    assert schema["max_rounds"]["default"] == 6 and schema["max_tool_calls"]["default"] == 10
    assert {"max_tokens", "timeout_s", "require_tool_call"} <= set(schema)


def test_tools_by_id_default_docsearch_and_duplicates(registry: Registry) -> None:
    llm = ScriptedProvider(replies=[])
    assert list(Agent("react", llm=llm, kb=FakeKB(), registry=registry).tools) == ["docsearch"]
    assert list(Agent("react", llm=llm, tools=["docsearch"], registry=registry).tools) == ["docsearch"]
    assert Agent("react", llm=llm, registry=registry).tools == {}
    assert Agent("qa", llm=llm, kb=FakeKB(), registry=registry).tools == {}
    with pytest.raises(ConfigError, match="docsearch"):
        Agent("react", llm=llm, tools=[DocSearchTool(), DocSearchTool()])
    with pytest.raises(ConfigError, match="kb must be"):
        Agent("react", llm=llm, kb=42)


async def test_run_result_has_the_documented_shape() -> None:
    llm = ScriptedProvider(replies=["Action: docsearch[sky colour]", "Final Answer: Blue [1]."])
    result = await Agent("react", llm=llm, kb=FakeKB()).run(
        "What colour is the sky?", history=[{"role": "system", "content": "dropped"}], run_id="run-1"
    )
    data = json.loads(result.model_dump_json())
    assert data["content"] == "Blue [1]." and data["stop_reason"] == "final"
    assert data["citations"][0]["chunk_id"] == "k1" and data["citations"][0]["marker"] == 1
    assert data["steps"] == [
        {
            "action": "docsearch",
            "action_input": "sky colour",
            "observation": "[1] (a.md)\nThe sky is blue.",
            "error": None,
        }
    ]
    assert data["usage"]["llm_calls"] == 2 and data["usage"]["tool_calls"] == 1
    assert data["usage"]["prompt_tokens"] > 0 and data["usage"]["completion_tokens"] > 0
    assert data["meta"]["run_id"] == "run-1" and data["meta"]["reasoning"] == "react"
    assert data["meta"]["started_at"] <= data["meta"]["ended_at"]
    assert [m.role for m in llm.prompts[0]] == ["system", "user"]


async def test_llm_failure_ends_with_an_error_event() -> None:
    agent = Agent("react", llm=ScriptedProvider(replies=[]))
    events = [e async for e in agent.stream("q")]
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], ErrorEvent)
    assert events[-1].code == "llm.script_exhausted"
    result = await agent.run("q")
    assert result.stop_reason == "error" and result.error["code"] == "llm.script_exhausted"


async def test_strategy_defects_become_error_events() -> None:
    class Silent(Reasoning):
        info = PluginInfo(id="silent")

        async def stream(self, question: str) -> AsyncIterator[Event]:
            yield Thought(text="hmm")

    class Broken(Reasoning):
        info = PluginInfo(id="broken")

        async def stream(self, question: str) -> AsyncIterator[Event]:
            raise ValueError("bad plugin")
            yield  # pragma: no cover

    class Chatty(Reasoning):
        info = PluginInfo(id="chatty")

        async def stream(self, question: str) -> AsyncIterator[Event]:
            yield self.answer("one")
            yield self.answer("two")

    silent = [e async for e in Agent(Silent, llm=ScriptedProvider(replies=[])).stream("q")]
    assert silent[-1].code == "run.error" and "without an answer" in silent[-1].message
    broken = [e async for e in Agent(Broken, llm=ScriptedProvider(replies=[])).stream("q")]
    assert broken[-1].code == "run.error" and "ValueError: bad plugin" in broken[-1].message
    chatty = [e async for e in Agent(Chatty, llm=ScriptedProvider(replies=[])).stream("q")]
    assert [e.type for e in chatty] == ["run_started", "answer"]


async def test_nested_events_join_the_stream_in_order() -> None:
    @tool
    async def sub_agent(topic: str, ctx: ToolContext) -> str:
        """Delegates to a helper that reports progress."""
        await ctx.emit(Progress(message=f"helper on {topic}", depth=ctx.depth + 1, parent_call_id=ctx.call_id))
        return "helper done"

    llm = ScriptedProvider(replies=["Action: sub_agent[x]", "Final Answer: ok"])
    events = [e async for e in Agent("react", llm=llm, tools=[sub_agent]).stream("q")]
    nested = next(e for e in events if isinstance(e, Progress) and e.depth == 1)
    call = next(e for e in events if isinstance(e, ToolCall))
    assert nested.parent_call_id == call.call_id and nested.seq > call.seq
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


@pytest.mark.parametrize("calls", [1, 3])
async def test_cancelling_the_consumer_mid_tool_leaves_no_task(calls: int) -> None:
    started = asyncio.Event()
    cancelled: list[str] = []

    @tool
    async def wait_forever(key: str) -> str:
        """Never returns on its own."""
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(key)
            raise
        return "never"

    reply = {"tool_calls": [{"name": "wait_forever", "arguments": {"key": f"k{i}"}} for i in range(calls)]}
    agent = Agent("toolcall", llm=ScriptedProvider(replies=[reply]), tools=[wait_forever])
    seen: list[Event] = []

    async def consume() -> None:
        async for event in agent.stream("q"):
            seen.append(event)

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(cancelled) == calls
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert not any(isinstance(e, Answer) for e in seen)


async def test_closing_the_stream_while_a_tool_runs_cancels_it_at_once() -> None:
    cancelled: list[str] = []

    @tool
    async def wait(key: str) -> str:
        """Returns at once for "fast", never for "slow"."""
        try:
            await asyncio.sleep(0 if key == "fast" else 3600)
        except asyncio.CancelledError:
            cancelled.append(key)
            raise
        return key

    calls = [{"name": "wait", "arguments": {"key": key}} for key in ("fast", "slow")]
    stream = Agent("toolcall", llm=ScriptedProvider(replies=[{"tool_calls": calls}]), tools=[wait]).stream("q")
    async for event in stream:
        if isinstance(event, ToolResult):  # "fast" is done, "slow" is running
            break
    await stream.aclose()
    # No event-loop turn in between: aclose itself cancelled the tool, not a later GC finaliser.
    assert cancelled == ["slow"]
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_llm_spec_and_ask_helper(tmp_path: Path) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(["Final Answer: from a file"]), encoding="utf-8")
    result = await ask("q", reasoning="react", llm=f"scripted:{script}")
    assert result.content == "from a file"


async def test_context_is_fresh_per_run() -> None:
    agent = Agent("react", llm=ScriptedProvider(replies=["Final Answer: a", "Final Answer: b"]))
    first, second = await agent.run("q"), await agent.run("q")
    assert (first.content, second.content) == ("a", "b")
    assert second.usage.llm_calls == 1 and first.meta.run_id != second.meta.run_id
    ctx = agent.context()
    assert isinstance(ctx, RunContext) and ctx.scope.retrievers == [] and ctx.steps == []


async def test_closing_the_stream_early_stops_the_run_and_its_tools() -> None:
    started = asyncio.Event()
    cancelled: list[str] = []

    @tool
    async def wait_forever(key: str) -> str:
        """Never returns on its own."""
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(key)
            raise
        return "never"

    reply = {"tool_calls": [{"name": "wait_forever", "arguments": {"key": f"k{i}"}} for i in range(2)]}
    stream = Agent("toolcall", llm=ScriptedProvider(replies=[reply]), tools=[wait_forever]).stream("q")
    async for event in stream:
        if isinstance(event, ToolCall):
            break
    await stream.aclose()
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert cancelled == []  # closed before any tool started
    assert not started.is_set()


async def test_run_wide_budget_overrides_the_strategy_settings() -> None:
    replies = ["Action: docsearch[a]", "Enough."]
    agent = Agent(
        "react",
        llm=ScriptedProvider(replies=replies),
        kb=FakeKB(),
        settings={"max_rounds": 5},
        budget={"max_rounds": 1},
    )
    result = await agent.run("q")
    assert result.stop_reason == "max_rounds" and result.usage.llm_calls == 2 and result.content == "Enough."


async def test_nested_events_of_concurrent_tools_arrive_while_the_tools_run() -> None:
    seen_nested = asyncio.Event()

    @tool
    async def helper(topic: str, ctx: ToolContext) -> str:
        """Reports progress, then waits until someone has seen it."""
        await ctx.emit(Progress(message=f"working on {topic}", depth=1, parent_call_id=ctx.call_id))
        await seen_nested.wait()
        return f"{topic} done"

    reply = {"tool_calls": [{"name": "helper", "arguments": {"topic": t}} for t in ("a", "b")]}
    agent = Agent("toolcall", llm=ScriptedProvider(replies=[reply, "both done"]), tools=[helper])
    events: list[Event] = []
    async with asyncio.timeout(5):  # without live delivery the tools would wait forever
        async for event in agent.stream("q"):
            events.append(event)
            if isinstance(event, Progress) and event.depth == 1:
                seen_nested.set()
    assert events[-1].text == "both done"
    assert sum(isinstance(e, Progress) and e.depth == 1 for e in events) == 2


async def test_a_lone_tool_that_emits_events_streams_them_live() -> None:
    seen_nested = asyncio.Event()

    @tool
    async def helper(topic: str, ctx: ToolContext) -> str:
        """Reports progress, then waits until someone has seen it."""
        await ctx.emit(Progress(message=f"working on {topic}", depth=1, parent_call_id=ctx.call_id))
        await seen_nested.wait()
        return f"{topic} done"

    helper.emits_events = True
    agent = Agent("react", llm=ScriptedProvider(replies=["Action: helper[a]", "Final Answer: done"]), tools=[helper])
    async with asyncio.timeout(5):
        async for event in agent.stream("q"):
            if isinstance(event, Progress) and event.depth == 1:
                seen_nested.set()
    assert seen_nested.is_set()


async def test_events_a_tool_emits_outside_a_tool_round_still_reach_the_stream() -> None:
    @tool
    async def announce(ctx: ToolContext) -> str:
        """Say something along the way."""
        await ctx.emit(Progress(message="from inside the tool", depth=1, parent_call_id=ctx.call_id))
        return "done"

    class Direct(Reasoning):
        """A plugin strategy that calls its tool itself, not through a tool round."""

        info = PluginInfo(id="direct", name="Direct", description="calls its tool directly")

        async def stream(self, question: str) -> AsyncIterator[Event]:
            out = await announce.invoke({}, self.ctx.tool_context("c1"))
            yield Thought(text=out.text)
            yield Answer(text="ok")

    events = [e async for e in Agent(Direct, llm=ScriptedProvider(replies=["unused"])).stream("q")]
    kinds = [(type(e).__name__, getattr(e, "message", getattr(e, "text", ""))) for e in events]
    assert ("Progress", "from inside the tool") in kinds
    assert kinds.index(("Progress", "from inside the tool")) < kinds.index(("Thought", "done"))
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # numbered once, without gaps
