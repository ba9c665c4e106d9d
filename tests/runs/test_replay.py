"""Replay of a run's finished model and tool calls from its step journal (over the real SQLite store)."""

from __future__ import annotations

import asyncio
import json
import logging

from reasonloop.agents import Agent
from reasonloop.config import RunsSettings
from reasonloop.events import Answer, AnswerDelta, Event, ToolResult
from reasonloop.llm.base import Message, collect
from reasonloop.llm.sampling import Sampling, with_sampling
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.runs.replay import StepJournal
from reasonloop.runs.replay.context import journaled
from reasonloop.runs.replay.model import JournaledLLM
from reasonloop.runs.replay.tools import JournaledTool
from reasonloop.runs.stores.sqlite.store import SQLiteRunStore
from reasonloop.tools.agent_tool import AgentTool
from reasonloop.tools.base import ToolContext, tool
from tests.reasoning.helpers import FakeRetriever


def by_tool_results(final: str = "The answer is 42."):
    """A toolcall script read from the request: one ``count`` call per tool result so far, then ``final``."""

    def reply(messages: list[Message], tools) -> dict | str:
        done = sum(1 for m in messages if m.role == "tool")
        if done < 2:
            return {"tool_calls": [{"id": f"c{done}", "name": "count", "arguments": {"n": done}}]}
        return final

    return reply


class Counter:
    """A tool with a side effect (it counts its runs); ``block_at``: the run that waits for ``release``."""

    def __init__(self, block_at: int | None = None, *, stamp_runs: bool = True) -> None:
        self.runs = 0
        self.block_at = block_at
        self.blocked = asyncio.Event()
        self.release = asyncio.Event()

        @tool
        async def count(n: int) -> str:
            """Count one."""
            self.runs += 1
            if self.runs == self.block_at:
                self.blocked.set()
                await self.release.wait()
            return f"counted {n} (run {self.runs})" if stamp_runs else f"counted {n}"

        self.tool = count


async def run(agent: Agent, store, run_id: str, question: str = "q") -> tuple[list[Event], StepJournal]:
    """One life of run ``run_id``: the agent's events with the journal the store holds so far."""
    return await run_on(agent, store, run_id, await store.steps(run_id), question)


async def run_on(
    agent: Agent, store, run_id: str, steps: dict[str, str], question: str = "q"
) -> tuple[list[Event], StepJournal]:
    journal = StepJournal(store, run_id, steps)
    ctx = journaled(agent.context(run_id=run_id), journal)
    try:
        return [e async for e in agent.events(question, ctx)], journal
    finally:
        await journal.flush()  # its steps' writes, which the run itself does not wait for


def same(events: list[Event]) -> list[dict]:
    out = []
    for event in events:
        data = event.to_dict()
        data.pop("ts")
        out.append(data)
    return out


async def test_a_finished_run_replays_without_calling_the_model_or_the_tool(store):
    first_llm, counter = ScriptedProvider(replies=by_tool_results()), Counter()
    first, _ = await run(Agent("toolcall", llm=first_llm, tools=[counter.tool]), store, "run_a")
    assert first_llm.requests == 3 and counter.runs == 2
    again_llm = ScriptedProvider(replies=by_tool_results("never asked"))
    again, journal = await run(Agent("toolcall", llm=again_llm, tools=[counter.tool]), store, "run_a")
    assert again_llm.requests == 0 and counter.runs == 2  # nothing done twice
    assert journal.replayed == 5
    assert same(again) == same(first)  # the same events, the answer's usage included
    answer = again[-1]
    assert isinstance(answer, Answer) and answer.text == "The answer is 42." and answer.usage.llm_calls == 3
    assert answer.usage.prompt_tokens == first[-1].usage.prompt_tokens > 0


async def test_a_run_cut_short_goes_on_from_its_last_finished_step(store):
    counter = Counter(block_at=2)  # the second tool call never ends: the process "dies" there
    agent = Agent("toolcall", llm=(llm := ScriptedProvider(replies=by_tool_results())), tools=[counter.tool])
    life = asyncio.create_task(run(agent, store, "run_b"))
    await asyncio.wait_for(counter.blocked.wait(), 5)
    life.cancel()
    assert llm.requests == 2 and counter.runs == 2
    counter.block_at = None
    again_llm = ScriptedProvider(replies=by_tool_results())
    events, journal = await run(Agent("toolcall", llm=again_llm, tools=[counter.tool]), store, "run_b")
    assert journal.replayed == 3  # two model calls and the first tool call
    assert again_llm.requests == 1 and counter.runs == 3  # the unfinished tool call and the answer
    outputs = [e.output for e in events if isinstance(e, ToolResult)]
    assert outputs == ["counted 0 (run 1)", "counted 1 (run 3)"]  # the first as recorded, not run again
    assert events[-1].text == "The answer is 42."


async def test_identical_calls_side_by_side_get_their_own_replies_in_any_order(store):
    model = ScriptedProvider(replies=["one", "two"], delay_s=0.01, repeat_last=True)
    journal = StepJournal(store, "run_p")
    ask = [Message.user("same question")]
    first = await asyncio.gather(*(collect(JournaledLLM(model, journal).stream(ask)) for _ in range(2)))
    assert sorted(c.text for c in first) == ["one", "two"] and model.requests == 2
    journal = StepJournal(store, "run_p", await store.steps("run_p"))
    wrapped = JournaledLLM(model, journal)
    again = await asyncio.gather(*(collect(wrapped.stream(ask)) for _ in range(2)))
    assert [c.text for c in again] == ["one", "two"]  # the first asked gets the first recorded
    assert model.requests == 2 and journal.replayed == 2
    assert [(c.prompt_tokens, c.completion_tokens) for c in again] == [
        (c.prompt_tokens, c.completion_tokens) for c in first
    ]
    different = await collect(wrapped.stream([Message.user("another question")]))
    assert different.text == "two" and model.requests == 3  # not recorded: asked for real


async def test_rewoo_steps_replay_in_any_order(store):
    finished: list[str] = []

    @tool
    async def fetch(key: str) -> str:
        """Fetch a key."""
        await asyncio.sleep({"a": 0.06, "b": 0.0, "c": 0.03}[key])  # b ends first, then c, then a
        finished.append(key)
        return f"value {key}"

    plan = "#E1 = fetch[a]\n#E2 = fetch[b]\n#E3 = fetch[c]"
    first_llm = ScriptedProvider(replies=[plan, "a, b and c"])
    first, _ = await run(Agent("rewoo", llm=first_llm, tools=[fetch]), store, "run_w")
    assert finished == ["b", "c", "a"]
    again_llm = ScriptedProvider(replies=[])
    again, journal = await run(Agent("rewoo", llm=again_llm, tools=[fetch]), store, "run_w")
    assert finished == ["b", "c", "a"] and again_llm.requests == 0 and journal.replayed == 5
    results = {e.call_id: e.output for e in again if isinstance(e, ToolResult)}
    assert results == {e.call_id: e.output for e in first if isinstance(e, ToolResult)}
    assert again[-1].text == first[-1].text == "a, b and c"


async def test_an_unreadable_step_is_done_again_and_recorded_anew(store, caplog):
    counter = Counter(stamp_runs=False)  # its output the same each time: the model calls after it replay
    agent = Agent("toolcall", llm=ScriptedProvider(replies=by_tool_results()), tools=[counter.tool])
    await run(agent, store, "run_c")
    steps = await store.steps("run_c")
    tool_key = next(k for k in steps if k.startswith("tool:"))
    llm_key = next(k for k in steps if k.startswith("llm:"))
    await store.put_step("run_c", tool_key, "{not json")
    await store.put_step("run_c", llm_key, json.dumps({"chunks": [["t", 3]]}))  # JSON, but not a reply
    again_llm = ScriptedProvider(replies=by_tool_results())
    with caplog.at_level(logging.WARNING, logger="reasonloop.runs.replay.steps"):
        events, journal = await run(Agent("toolcall", llm=again_llm, tools=[counter.tool]), store, "run_c")
    assert events[-1].text == "The answer is 42."
    assert again_llm.requests == 1 and counter.runs == 3 and journal.replayed == 3
    assert sum("unreadable" in r.getMessage() for r in caplog.records) == 2
    healed = await store.steps("run_c")
    assert json.loads(healed[tool_key])["text"].startswith("counted") and json.loads(healed[llm_key])["chunks"]


async def test_a_reply_cut_short_is_not_recorded(store):
    journal = StepJournal(store, "run_s")
    model = ScriptedProvider(replies=["a long reply in pieces"], chunk_size=2)
    stream = JournaledLLM(model, journal).stream([Message.user("q")])
    async for _ in stream:
        break
    await stream.aclose()
    assert await store.steps("run_s") == {}


async def test_replayed_searches_keep_their_evidence_numbers_and_citations(store):
    def reply(messages, tools):
        done = sum(1 for m in messages if m.role == "tool")
        queries = ["capital of France", "Eiffel Tower metres"]
        if done < 2:
            return {"tool_calls": [{"id": f"s{done}", "name": "docsearch", "arguments": {"query": queries[done]}}]}
        return "Paris [1] has a 330 metre tower [2]."

    retriever = FakeRetriever()
    first, _ = await run(Agent("toolcall", llm=ScriptedProvider(replies=reply), kb=retriever), store, "run_d")
    assert len(retriever.queries) == 2
    again, _ = await run(Agent("toolcall", llm=ScriptedProvider(replies=reply), kb=retriever), store, "run_d")
    assert len(retriever.queries) == 2  # not searched again
    assert same(again) == same(first)
    assert [c.marker for c in again[-1].citations] == [c.marker for c in first[-1].citations]
    assert again[-1].citations  # the answer's citations are rebuilt from the restored evidence


async def test_a_tool_that_streamed_the_answer_streams_it_again_on_replay(store):
    @tool
    async def write(topic: str, ctx: ToolContext) -> str:
        """Write the answer."""
        for piece in ("Lyon ", "is ", "old."):
            await ctx.emit(AnswerDelta(text=piece, depth=ctx.depth))
        return "Lyon is old."

    def reply(messages, tools):
        if not any(m.role == "tool" for m in messages):
            return {"tool_calls": [{"id": "w", "name": "write", "arguments": {"topic": "Lyon"}}]}
        return ""

    first_llm = ScriptedProvider(replies=reply)
    first, _ = await run(Agent("toolcall", llm=first_llm, tools=[write]), store, "run_t")
    again, journal = await run(Agent("toolcall", llm=ScriptedProvider(replies=[]), tools=[write]), store, "run_t")
    deltas = [e.text for e in again if isinstance(e, AnswerDelta)]
    assert deltas == [e.text for e in first if isinstance(e, AnswerDelta)] and "".join(deltas).startswith(
        "Lyon is old."
    )
    assert journal.replayed == first_llm.requests + 1


async def test_an_unfinished_sub_agent_replays_its_own_finished_steps(store):
    counter = Counter(block_at=2)
    sub_llm = ScriptedProvider(replies=by_tool_results("sub answer"))
    sub = Agent("toolcall", llm=sub_llm, tools=[counter.tool], name="helper", description="helps")

    def parent_reply(messages, tools):
        if not any(m.role == "tool" for m in messages):
            return {"tool_calls": [{"id": "p0", "name": "run_agent", "arguments": {"query": "count twice"}}]}
        return "parent answer"

    parent = Agent("toolcall", llm=ScriptedProvider(replies=parent_reply), tools=[AgentTool(sub)])
    seen: list[Event] = []

    async def first_life() -> None:
        journal = StepJournal(store, "run_n")
        ctx = journaled(parent.context(run_id="run_n"), journal)
        async for event in parent.events("q", ctx):
            seen.append(event)

    life = asyncio.create_task(first_life())
    await asyncio.wait_for(counter.blocked.wait(), 5)
    life.cancel()
    await asyncio.gather(life, return_exceptions=True)
    assert sub_llm.requests == 2 and counter.runs == 2
    counter.block_at = None
    events, _ = await run(parent, store, "run_n")
    assert sub_llm.requests == 3 and counter.runs == 3  # only the unfinished call and the sub-agent's answer
    assert events[-1].text == "parent answer"
    sub_runs = {e.run_id for e in seen + events if e.depth == 1}
    assert len(sub_runs) == 1  # the sub-run has the same id in both lives
    nested_first = [e for e in seen if e.depth == 1]
    nested_again = [e for e in events if e.depth == 1][: len(nested_first)]
    assert same(nested_again) == same(nested_first)


async def test_a_store_that_cannot_keep_steps_costs_the_run_nothing(tmp_path, caplog):
    gone = SQLiteRunStore(RunsSettings(sqlite_path=str(tmp_path / "gone.sqlite")))
    await gone.open()
    await gone.close()  # every write now fails: the store is not open
    counter = Counter()
    agent = Agent("toolcall", llm=ScriptedProvider(replies=by_tool_results()), tools=[counter.tool])
    with caplog.at_level(logging.WARNING, logger="reasonloop.runs.replay.steps"):
        events, _ = await run_on(agent, gone, "run_g", steps={})
    assert events[-1].text == "The answer is 42." and counter.runs == 2
    assert sum("not recorded" in r.getMessage() for r in caplog.records) == 5


async def test_tools_a_run_adds_later_are_journaled_too(store):
    counter = Counter()
    journal = StepJournal(store, "run_l")
    ctx = journaled(Agent("toolcall", llm=ScriptedProvider(replies=[])).context(run_id="run_l"), journal)
    ctx.tools.setdefault("count", counter.tool)  # as tools of MCP servers join when a run starts
    ctx.tools.update({"again": counter.tool})
    assert all(isinstance(t, JournaledTool) for t in ctx.tools.values())
    assert ctx.tools.setdefault("count", counter.tool) is ctx.tools["count"]
    assert ctx.llm is ctx.scope.llm and isinstance(ctx.llm, JournaledLLM)


async def test_a_runs_own_sampling_reaches_the_model_and_is_part_of_what_a_call_asks(store):
    model = ScriptedProvider(replies=["a reply of several words"], repeat_last=True)
    sampled = with_sampling(model, Sampling(max_tokens=2, temperature=0.5))  # a wrapper without time limits
    journal = StepJournal(store, "run_x")
    short = await collect(JournaledLLM(sampled, journal).stream([Message.user("q")]))
    assert model.sampling_seen[-1] == (2, 0.5) and short.finish_reason == "length"
    await journal.flush()
    again = StepJournal(store, "run_x", await store.steps("run_x"))
    await collect(JournaledLLM(model, again).stream([Message.user("q")]))  # asked without the run's sampling
    assert model.requests == 2 and again.replayed == 0  # another call: not answered from the first
