"""Retrieval-QA: evidence, citations, don't-know, small talk, follow-ups."""

from __future__ import annotations

from reasonloop.agents import Agent
from reasonloop.events import Answer, AnswerDelta, Searched, ToolCall, ToolResult
from reasonloop.llm.base import Message
from reasonloop.llm.scripted import ScriptedProvider
from tests.reasoning.helpers import FakeRetriever, collect_events, types


async def test_answer_cites_numbered_evidence(retriever: FakeRetriever) -> None:
    llm = ScriptedProvider(replies=["The tower is 330 metres tall [2] and in Paris [2][1]."])
    events = await collect_events(Agent("qa", llm=llm, kb=retriever), "How tall is the Eiffel Tower in Paris?")
    assert types(events)[:2] == ["run_started", "searched"]  # its own search: no tool call
    assert not [e for e in events if isinstance(e, (ToolCall, ToolResult))]
    searched = events[1]
    assert isinstance(searched, Searched) and searched.query == "How tall is the Eiffel Tower in Paris?"
    assert len(searched.hit_ids) == searched.hits and {"c1", "c3"} <= set(searched.hit_ids)
    assert [c.marker for c in searched.citations] == list(range(1, len(searched.citations) + 1))
    prompt = llm.prompts[0][-1].content
    assert "[2] Eiffel Tower (eiffel.md)\nThe Eiffel Tower in Paris is 330 metres tall." in prompt
    assert "[1] France (france.md, p. 1)" in prompt
    answer = events[-1]
    assert isinstance(answer, Answer)
    assert [c.chunk_id for c in answer.citations] == ["c3", "c1"]
    assert answer.citations[0].quote == "The Eiffel Tower in Paris is 330 metres tall."
    assert "".join(e.text for e in events if isinstance(e, AnswerDelta)) == answer.text


async def test_no_evidence_says_it_does_not_know_without_asking_the_model() -> None:
    llm = ScriptedProvider(replies=[])
    result = await Agent("qa", llm=llm, kb=FakeRetriever()).run("Who won the 1930 world cup?")
    assert result.content.startswith("The documents don't say.") and result.usage.llm_calls == 0
    assert 'Searched for "Who won the 1930 world cup?"' in result.content and result.abstained
    result = await Agent("qa", llm=llm).run("Who won?")  # no knowledge base at all
    assert result.content.startswith("I don't know") and result.abstained
    result = await Agent("qa", llm=llm, language="zh").run("谁赢了？")
    assert result.content.startswith("我不知道")


async def test_small_talk_is_answered_without_retrieval(retriever: FakeRetriever) -> None:
    llm = ScriptedProvider(replies=["Hello! Ask me about your documents."])
    result = await Agent("qa", llm=llm, kb=retriever).run("Hello!")
    assert retriever.queries == [] and result.content.startswith("Hello!")
    assert "needs no document search" in llm.prompts[0][0].content


async def test_follow_up_is_rewritten_into_a_standalone_query(retriever: FakeRetriever) -> None:
    llm = ScriptedProvider(replies=["Germany main city", "Berlin [1]."])
    history = [Message.user("Tell me about Germany."), Message.assistant("Germany is in Europe.")]
    result = await Agent("qa", llm=llm, kb=retriever).run("What is its capital?", history=history)
    assert retriever.queries == ["Germany main city"]
    assert [m.content for m in llm.prompts[0][1:]] == [
        "Tell me about Germany.",
        "Germany is in Europe.",
        "What is its capital?",
    ]
    assert "Germany is in Europe." in [m.content for m in llm.prompts[1]]
    assert result.citations[0].source == "germany.md"


async def test_follow_up_rewriting_can_be_turned_off(retriever: FakeRetriever) -> None:
    llm = ScriptedProvider(replies=["Berlin [1]."])
    history = [Message.user("Germany?"), Message.assistant("A country.")]
    await Agent("qa", llm=llm, kb=retriever, settings={"rewrite_followups": False}).run(
        "capital of Germany", history=history
    )
    assert retriever.queries == ["capital of Germany"] and len(llm.prompts) == 1


async def test_evidence_is_trimmed_to_the_token_budget(retriever: FakeRetriever) -> None:
    llm = ScriptedProvider(replies=["ok"])
    events = await collect_events(
        Agent("qa", llm=llm, kb=retriever, settings={"max_evidence_tokens": 50}), "Paris capital France Germany Eiffel"
    )
    searched = next(e for e in events if isinstance(e, Searched))
    assert "[1]" in searched.evidence and "[3]" not in searched.evidence
    assert searched.hits == 3 and len(searched.citations) < 3  # found three, showed fewer
