"""ReWOO through the scripted models: plan, parallel work, solve, replan, budgets."""

from __future__ import annotations

import asyncio

from reasonloop.agents import Agent
from reasonloop.events import (
    Answer,
    AnswerDelta,
    ErrorEvent,
    Plan,
    PlannedStep,
    Progress,
    Thought,
    ToolCall,
    ToolResult,
)
from reasonloop.kb.base import Hit
from reasonloop.llm.base import Message
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.tokens import count_tokens
from reasonloop.tools.base import ToolContext, tool
from tests.reasoning.helpers import FakeRetriever, Gauge, collect_events, make_tools
from tests.waiting import await_until


async def test_twelve_step_plan_runs_and_the_solver_sees_all_evidence() -> None:
    plan = "\n".join(
        [f"Plan: fetch {n}\n#E{n} = lookup[k{n}]" for n in range(1, 12)] + ["Plan: combine\n#E12 = lookup[#E10 + #E11]"]
    )
    planner = ScriptedProvider(replies=[plan])
    solver = ScriptedProvider(replies=["All twelve found."])
    a = Agent("rewoo", llm=planner, solver_llm=solver, tools=make_tools(), settings={"max_tool_calls": 20})
    events = await collect_events(a, "Collect twelve values")
    results = [e for e in events if isinstance(e, ToolResult)]
    assert len(results) == 12 and all(r.error is None for r in results)
    last = next(r for r in results if r.call_id == "rewoo_1_E12")
    assert last.output == "value of value of k10 + value of k11"
    solver_prompt = solver.prompts[0][-1].content
    assert "Evidence #E12: value of value of k10 + value of k11" in solver_prompt
    assert len(planner.prompts) == 1 and list(planner.tools_seen) == [None]  # the planner never sees observations
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.text == "All twelve found." and answer.usage.tool_calls == 12
    assert answer.usage.llm_calls == 2


async def test_the_plan_is_an_event_with_its_steps_and_dependencies_and_each_call_names_its_step() -> None:
    text = "Plan: find both\n#E1 = lookup[alpha]\n#E2 = lookup[beta]\nPlan: combine\n#E3 = lookup[#E1 and #E2]\n#E4 = nosuch[x]"
    llm = ScriptedProvider(replies=[text, "Done."])
    events = await collect_events(Agent("rewoo", llm=llm, tools=make_tools(), settings={"replan": False}), "q")
    [plan] = [e for e in events if isinstance(e, Plan)]
    assert plan.attempt == 1
    assert plan.steps == [
        PlannedStep(id="E1", tool="lookup", input="alpha", reason="find both"),
        PlannedStep(id="E2", tool="lookup", input="beta"),
        PlannedStep(id="E3", tool="lookup", input="#E1 and #E2", depends_on=["E1", "E2"], reason="combine"),
        PlannedStep(id="E4", tool="nosuch", input="x", problem=plan.steps[3].problem),
    ]
    assert "unknown tool 'nosuch'" in (plan.steps[3].problem or "")
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert sorted((c.step, c.call_id) for c in calls) == [(f"E{n}", f"rewoo_1_E{n}") for n in range(1, 5)]
    assert all(events.index(plan) < events.index(c) for c in calls)
    # the planner's text is still sent, marked as the plan's old form (kept for one release)
    [old] = [e for e in events if isinstance(e, Thought)]
    assert old.plan_text and old.text == text


async def test_a_replan_is_a_second_plan_event() -> None:
    llm = ScriptedProvider(replies=["#E1 = boom[x]\n#E2 = lookup[#E1]", "#E1 = lookup[x]", "x has a value."])
    events = await collect_events(Agent("rewoo", llm=llm, tools=make_tools()), "q")
    plans = [e for e in events if isinstance(e, Plan)]
    assert [(p.attempt, [(s.id, s.tool, s.depends_on) for s in p.steps]) for p in plans] == [
        (1, [("E1", "boom", []), ("E2", "lookup", ["E1"])]),
        (2, [("E1", "lookup", [])]),
    ]
    second = [e for e in events if isinstance(e, ToolCall) and events.index(e) > events.index(plans[1])]
    assert [(c.step, c.call_id) for c in second] == [("E1", "rewoo_2_E1")]


async def test_a_reply_with_no_readable_step_is_no_plan_event() -> None:
    llm = ScriptedProvider(replies=["No tools are needed.", "#E1 = lookup[height]", "330 metres."])
    events = await collect_events(Agent("rewoo", llm=llm, tools=make_tools()), "How tall?")
    thoughts = [(e.text, e.plan_text) for e in events if isinstance(e, Thought)]
    assert thoughts == [("No tools are needed.", False), ("#E1 = lookup[height]", True)]
    assert [p.attempt for p in events if isinstance(p, Plan)] == [2]


async def test_independent_steps_run_in_parallel() -> None:
    gauge = Gauge()
    llm = ScriptedProvider(replies=["#E1 = slow[a]\n#E2 = slow[b]\n#E3 = slow[c]\n#E4 = lookup[#E1 #E2 #E3]", "ok"])
    result = await Agent("rewoo", llm=llm, tools=make_tools(gauge)).run("q")
    assert gauge.max_active == 3
    assert result.steps[-1].observation == "value of slow a slow b slow c"


async def test_a_steps_input_is_what_its_tool_received_with_the_plans_text_beside_it() -> None:
    llm = ScriptedProvider(replies=["#E1 = lookup[k1]\n#E2 = lookup[#E1 and k2]\n#E3 = nosuch[#E1]", "done"])
    result = await Agent("rewoo", llm=llm, tools=make_tools()).run("q")
    by_input = {str(s.planned_input): s for s in result.steps if s.action != "answer"}
    assert by_input["k1"].action_input == {"key": "k1"}
    assert by_input["#E1 and k2"].action_input == {"key": "value of k1 and k2"}  # substituted, as the tool got it
    assert by_input["#E1"].action == "nosuch" and by_input["#E1"].action_input == "#E1"  # never ran: the plan's text


async def test_solver_cites_docsearch_evidence(retriever: FakeRetriever) -> None:
    llm = ScriptedProvider(
        replies=[
            "#E1 = docsearch[Eiffel tall]\n#E2 = docsearch[capital France]",
            "The tower is 330 m [1] and stands in Paris [2].",
        ]
    )
    result = await Agent("rewoo", llm=llm, kb=retriever).run("How tall is the tower in the French capital?")
    assert [c.chunk_id for c in result.citations] == ["c3", "c1"]
    assert retriever.queries == ["Eiffel tall", "capital France"]


async def test_failed_evidence_triggers_one_replan_that_knows_the_failures() -> None:
    llm = ScriptedProvider(
        replies=[
            "#E1 = boom[x]\n#E2 = lookup[#E1]\n#E3 = nosuch[y]",
            "#E1 = lookup[x]",
            "x has a value.",
        ]
    )
    events = await collect_events(Agent("rewoo", llm=llm, tools=make_tools()), "q")
    replan_prompt = llm.prompts[1][-1].content
    assert "#E1 = boom[x]" in replan_prompt and "cannot handle x" in replan_prompt
    assert "needs #E1, which failed" in replan_prompt and "unknown tool 'nosuch'" in replan_prompt
    errors = {e.call_id: e.error for e in events if isinstance(e, ToolResult)}
    assert errors["rewoo_1_E1"]["type"] == "RuntimeError" and errors["rewoo_1_E3"]["type"] == "PlanStepFailed"
    assert errors["rewoo_1_E3"]["code"] == "agent.plan_step_failed"
    assert errors["rewoo_2_E1"] is None
    assert "Plan 2:" in llm.prompts[2][-1].content
    assert events[-1].text == "x has a value."


async def test_no_replan_when_disabled() -> None:
    llm = ScriptedProvider(replies=["#E1 = boom[x]", "Nothing found."])
    result = await Agent("rewoo", llm=llm, tools=make_tools(), settings={"replan": False}).run("q")
    assert result.usage.llm_calls == 2 and result.content == "Nothing found."


async def test_cycle_in_planner_output_is_failed_evidence_not_a_hang() -> None:
    llm = ScriptedProvider(replies=["#E1 = lookup[#E2]\n#E2 = lookup[#E1]", "#E1 = lookup[z]", "done"])
    result = await Agent("rewoo", llm=llm, tools=make_tools()).run("q")
    assert result.content == "done"
    assert [s.error["type"] if s.error else "ok" for s in result.steps] == ["PlanStepFailed", "PlanStepFailed", "ok"]


async def test_tool_budget_fails_extra_steps_and_is_the_stop_reason() -> None:
    llm = ScriptedProvider(replies=["#E1 = lookup[a]\n#E2 = lookup[b]\n#E3 = lookup[c]", "Partial answer."])
    result = await Agent("rewoo", llm=llm, tools=make_tools(), settings={"max_tool_calls": 2}).run("q")
    assert result.stop_reason == "max_tool_calls" and result.usage.tool_calls == 2
    assert sum(1 for s in result.steps if s.error and s.error["type"] == "ToolBudgetExhausted") == 1
    assert result.content == "Partial answer."


async def test_small_talk_skips_planning() -> None:
    llm = ScriptedProvider(replies=["Hello!"])
    events = await collect_events(Agent("rewoo", llm=llm, tools=make_tools()), "hello")
    assert events[-1].text == "Hello!" and len(llm.prompts) == 1
    assert not [e for e in events if isinstance(e, ToolCall)]


async def test_a_plan_without_steps_is_asked_for_again_with_the_history() -> None:
    llm = ScriptedProvider(
        replies=["No tools are needed.", "Plan: look the height up\n#E1 = lookup[height]", "As I said, 330 metres."]
    )
    history = [Message.user("How tall is the Eiffel Tower?"), Message.assistant("330 metres.")]
    events = await collect_events(Agent("rewoo", llm=llm, tools=make_tools()), "Say it again?", history=history)
    assert any(isinstance(e, Thought) for e in events)
    retry = llm.prompts[1]
    assert [m.content for m in retry[1:3]] == ["How tall is the Eiffel Tower?", "330 metres."]
    assert retry[-2].content == "No tools are needed." and "No step of your plan could be read" in retry[-1].content
    assert "#E1 = tool[input]" in retry[-1].content and "lookup" in retry[-1].content
    assert [m.message for m in events if isinstance(m, Progress)][1].startswith("planning again")
    assert [e.call_id for e in events if isinstance(e, ToolCall)] == ["rewoo_2_E1"]
    assert "Plan 2:" not in llm.prompts[2][-1].content  # the unreadable plan is no section of the evidence
    assert "".join(e.text for e in events if isinstance(e, AnswerDelta)) == "As I said, 330 metres."


async def test_two_plans_without_steps_end_the_run_with_a_clear_error_not_an_answer() -> None:
    llm = ScriptedProvider(replies=["I think the answer is 42.", "", "42, surely."], native_tools=False)
    events = await collect_events(Agent("rewoo", llm=llm, tools=make_tools()), "What is the answer?")
    assert not [e for e in events if isinstance(e, Answer | ToolCall)]
    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.code == "agent.format_not_followed"
    assert "wrote no step that could be read in 2 plans" in error.message
    assert "the reply is empty" in error.message and "--reasoning qa" in error.message
    assert len(llm.prompts) == 2  # no solver call: nothing was gathered to solve from
    result = await Agent(
        "rewoo", llm=ScriptedProvider(replies=["Paris."]), tools=make_tools(), settings={"replan": False}
    ).run("q")
    assert result.stop_reason == "error" and result.error["code"] == "agent.format_not_followed"
    assert "in 1 plan " in result.error["message"] and result.error["suggestion"] == "toolcall"


async def test_an_unreadable_replan_keeps_the_first_plans_evidence() -> None:
    llm = ScriptedProvider(replies=["#E1 = lookup[a]\n#E2 = boom[b]", "Sorry, I cannot plan.", "a has a value."])
    result = await Agent("rewoo", llm=llm, tools=make_tools()).run("q")
    assert result.content == "a has a value." and result.error is None
    assert "Evidence #E1: value of a" in llm.prompts[2][-1].content


async def test_guard_on_rewoo() -> None:
    llm = ScriptedProvider(replies=["#E1 = nosuch[x]", "#E1 = nosuch[y]", "From memory."])
    result = await Agent("rewoo", llm=llm, tools=make_tools(), settings={"require_tool_call": True}).run("q")
    assert result.stop_reason == "guard" and result.steps[-1].observation == "From memory."


async def test_time_budget_fails_unfinished_steps_and_still_solves() -> None:
    plan = '#E1 = slow[{"key": "a", "seconds": 30}]\n#E2 = lookup[#E1]\n#E3 = lookup[c]'
    llm = ScriptedProvider(replies=[plan, "What I have."])
    result = await Agent("rewoo", llm=llm, tools=make_tools(), settings={"timeout_s": 0.1}).run("q")
    assert result.stop_reason == "timeout" and result.content == "What I have."
    outcome = {s.planned_input: (s.error or {}).get("error", "ok") for s in result.steps}  # by the plan's text
    assert "time budget" in outcome['{"key": "a", "seconds": 30}']
    assert "needs #E1" in outcome["#E1"] and outcome["c"] == "ok"
    assert result.usage.llm_calls == 2  # no replan once the time is up


async def test_a_steps_nested_events_arrive_while_it_runs_beside_other_steps() -> None:
    """Steps run as concurrent tool rounds (a time budget makes them tasks); one that emits while
    another has already ended still wakes the stream."""
    release = asyncio.Event()

    @tool
    async def quick(key: str) -> str:
        """Answer at once."""
        return f"quick {key}"

    @tool
    async def slow(key: str, ctx: ToolContext) -> str:
        """Say something, then wait to be let go."""
        await await_until(lambda: "ToolResult" in seen)  # the quick step has ended
        await ctx.emit(Progress(message=f"working on {key}", depth=1, parent_call_id=ctx.call_id))
        await release.wait()
        return f"slow {key}"

    llm = ScriptedProvider(replies=["#E1 = quick[a]\n#E2 = slow[b]", "done"])
    agent = Agent("rewoo", llm=llm, tools=[quick, slow], settings={"timeout_s": 30})
    seen: list[str] = []

    async def consume() -> None:
        async for event in agent.stream("q"):
            seen.append(type(event).__name__)
            if isinstance(event, Progress) and event.message == "working on b":
                release.set()  # seen while the step still runs: only then may it end

    await asyncio.wait_for(consume(), 10)
    assert "Answer" in seen


async def test_a_reference_sends_a_bounded_piece_of_the_evidence_and_the_trace_shows_it() -> None:
    long = "The X200 is made by Acme Corporation. " + "Acme also makes kettles and toasters for hotels. " * 40
    retriever = FakeRetriever([Hit(chunk_id="m1", document_id="d", source="makers.md", text=long)])
    plan = "Plan: who makes it #E1 = docsearch[maker of the X200]\nPlan: where #E2 = docsearch[head office of #E1]"
    llm = ScriptedProvider(replies=[plan, "Acme [1]."])
    events = await collect_events(Agent("rewoo", llm=llm, kb=retriever), "Where is the maker of the X200 based?")
    sent = [e.input["query"] for e in events if isinstance(e, ToolCall)]
    # the sentence of #E1's evidence that shares most words with #E1's own input
    assert sent[1] == "head office of The X200 is made by Acme Corporation."
    assert "[1]" not in sent[1] and "makers.md" not in sent[1]
    assert count_tokens(sent[1]) <= count_tokens("head office of ") + 40 < count_tokens(long)
    assert retriever.queries[1] == sent[1]  # what the trace shows is what the tool got
    result = await Agent("rewoo", llm=ScriptedProvider(replies=[plan, "Acme [1]."]), kb=retriever).run("q")
    assert result.steps[1].planned_input == "head office of #E1" and result.steps[1].action_input == {"query": sent[1]}
    wide = Agent("rewoo", llm=ScriptedProvider(replies=[plan, "ok"]), kb=retriever, settings={"reference_tokens": 12})
    assert (await wide.run("q")).steps[1].action_input == {
        "query": "head office of The X200 is made by Acme Corporation."
    }
