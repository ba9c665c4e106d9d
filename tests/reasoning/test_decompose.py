"""Decomposition: sub-questions answered concurrently, one synthesis citing all of them."""

from __future__ import annotations

from reasonloop.agents import Agent
from reasonloop.events import Answer, Plan, PlannedStep, Searched, Thought, ToolCall, ToolResult
from reasonloop.llm.base import Message
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.reasoning.strategies.decompose import parse_subquestions, references
from tests.reasoning.helpers import FakeRetriever, collect_events


def reply(messages: list[Message], tools) -> str:
    system, last = messages[0].content, messages[-1].content
    if "sub-questions" in system and "Split" in system:
        return "1. What is the capital of France?\n2. What is the capital of Germany?\n3. How tall is the Eiffel Tower?"
    if last.startswith("Sub-questions"):
        return "Paris [1] and Berlin [2]; the tower is 330 m [3]."
    return "sub answer for: " + last.rsplit("Question: ", 1)[-1]


async def test_sub_questions_are_retrieved_concurrently_and_synthesised_with_citations() -> None:
    retriever = FakeRetriever(delay_s=0.02)
    llm = ScriptedProvider(replies=reply)
    events = await collect_events(Agent("decompose", llm=llm, kb=retriever), "Compare France and Germany")
    assert retriever.max_active == 3
    assert sorted(retriever.queries) == sorted(
        ["What is the capital of France?", "What is the capital of Germany?", "How tall is the Eiffel Tower?"]
    )
    searches = [e for e in events if isinstance(e, Searched)]
    assert sorted((e.step, e.query) for e in searches) == [
        ("1", "What is the capital of France?"),
        ("2", "What is the capital of Germany?"),
        ("3", "How tall is the Eiffel Tower?"),
    ]
    assert all(e.hits == len(e.hit_ids) > 0 and e.citations and e.evidence.startswith("[") for e in searches)
    # a search the strategy makes itself is no tool call: none on the wire, none counted
    assert not any(isinstance(e, (ToolCall, ToolResult)) for e in events)
    [plan] = [e for e in events if isinstance(e, Plan)]
    assert [(s.id, s.tool, s.input, s.depends_on) for s in plan.steps] == [
        ("1", "search", "What is the capital of France?", []),
        ("2", "search", "What is the capital of Germany?", []),
        ("3", "search", "How tall is the Eiffel Tower?", []),
    ]
    # the plan's text as before, marked as the plan's old form (kept for one release)
    [listing] = [e for e in events if isinstance(e, Thought) and e.plan_text]
    assert listing.text.startswith("1. What is the capital of France?")
    assert events.index(plan) < min(events.index(e) for e in searches)
    answer = events[-1]
    assert isinstance(answer, Answer)
    assert len(answer.citations) == 3 and {c.chunk_id for c in answer.citations} <= {"c1", "c2", "c3"}
    synthesis = llm.prompts[-1][-1].content
    assert "sub answer for: What is the capital of Germany?" in synthesis
    assert answer.usage.llm_calls == 5
    assert (answer.usage.tool_calls, answer.usage.searches) == (0, 3)


async def test_at_most_n_sub_questions() -> None:
    llm = ScriptedProvider(replies=reply)
    result = await Agent("decompose", llm=llm, kb=FakeRetriever(), settings={"max_subquestions": 2}).run("q?")
    assert [s.action_input for s in result.steps if s.action == "subquestion"] != []
    assert len([s for s in result.steps if s.action == "subquestion"]) == 2


async def test_nothing_found_anywhere_is_dont_know() -> None:
    llm = ScriptedProvider(replies=["1. unrelated thing one\n2. unrelated thing two"])
    result = await Agent("decompose", llm=llm, kb=FakeRetriever()).run("zzz qqq?")
    assert result.content.startswith("I don't know") and result.usage.llm_calls == 1


def test_parse_subquestions_forms() -> None:
    assert parse_subquestions("Sub-questions:\n1. A?\n2) B?\n- C?\n1. A?", 5) == ["A?", "B?", "C?"]
    assert parse_subquestions("A?\nB?", 5) == ["A?", "B?"]
    assert parse_subquestions("1、甲？\n2、乙？", 1) == ["甲？"]
    assert parse_subquestions("", 3) == []


def test_references_name_only_earlier_sub_questions() -> None:
    assert references("Where does #1 work, and #2?", 3) == [1, 2]
    assert references("Who sang the #3 hit?", 3) == []  # not an earlier sub-question: text
    assert references("What is #12?", 13) == [12]


async def test_a_sub_question_waits_for_the_answer_it_refers_to_and_searches_with_it() -> None:
    def chained(messages: list[Message], tools) -> str:
        system, last = messages[0].content, messages[-1].content
        if "sub-questions" in system and "Split" in system:
            return "1. What is the capital of France?\n2. What river flows through #1?"
        if last.startswith("Sub-questions"):
            return "The Seine [2]."
        asked = last.rsplit("Question: ", 1)[-1]
        return "Paris [1]" if "capital" in asked else "The Seine [2]"

    retriever = FakeRetriever(delay_s=0.01)
    llm = ScriptedProvider(replies=chained)
    agent = Agent("decompose", llm=llm, kb=retriever)
    result = await agent.run("Which river flows through the capital of France?")
    # the second search ran after the first answer, with that answer in place of #1 (markers removed)
    assert retriever.queries == ["What is the capital of France?", "What river flows through Paris?"]
    assert retriever.max_active == 1
    assert [s.action_input for s in result.steps] == [
        "What is the capital of France?",
        "What river flows through Paris?",
    ]
    # the plan says step 2 needs step 1; the search says what was searched once #1 was known
    events = await collect_events(agent, "Which river flows through the capital of France?")
    [plan] = [e for e in events if isinstance(e, Plan)]
    assert plan.steps == [
        PlannedStep(id="1", tool="search", input="What is the capital of France?"),
        PlannedStep(id="2", tool="search", input="What river flows through #1?", depends_on=["1"]),
    ]
    searches = [(e.step, e.query) for e in events if isinstance(e, Searched)]
    assert searches == [("1", "What is the capital of France?"), ("2", "What river flows through Paris?")]


async def test_a_sub_question_whose_earlier_answer_found_nothing_is_not_searched() -> None:
    def chained(messages: list[Message], tools) -> str:
        if "sub-questions" in messages[0].content and "Split" in messages[0].content:
            return "1. zzz qqq?\n2. What river flows through #1?"
        return "I don't know."

    retriever = FakeRetriever()
    events = await collect_events(Agent("decompose", llm=ScriptedProvider(replies=chained), kb=retriever), "qqq zzz?")
    assert retriever.queries == ["zzz qqq?"]
    assert events[-1].text.startswith("I don't know")
    # the one search made is the one reported, found nothing, and counted
    [searched] = [e for e in events if isinstance(e, Searched)]
    assert (searched.step, searched.hits, searched.hit_ids, searched.citations) == ("1", 0, [], [])
    assert (events[-1].usage.searches, events[-1].usage.tool_calls) == (1, 0)


async def test_without_a_knowledge_base_nothing_is_searched_or_reported_as_searched() -> None:
    events = await collect_events(Agent("decompose", llm=ScriptedProvider(replies=reply)), "Compare France and Germany")
    assert [e for e in events if isinstance(e, Plan)] and not [e for e in events if isinstance(e, Searched)]
    assert events[-1].usage.searches == 0
