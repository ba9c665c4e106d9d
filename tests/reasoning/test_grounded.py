"""With a base model every strategy answers from retrieved evidence, and the trace says so."""

from __future__ import annotations

import pytest

from reasonloop.agents.agent import Agent
from reasonloop.config import Settings
from reasonloop.events import Answer, Progress, ToolCall
from reasonloop.kb.knowledge_base import KnowledgeBase
from reasonloop.llm.local_provider import render_prompt
from reasonloop.llm.messages import Message
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.reasoning.grounded import is_open_question
from tests.kb.helpers import HashEmbedder

DOCS = [
    ("launch", "Launch notes", "The product was launched on 3 March 2025 in Lyon. The launch drew a large crowd."),
    ("pricing", "Pricing", "The basic plan costs ten euros a month. Annual plans are cheaper."),
]


@pytest.fixture
async def kb(tmp_path):
    kb = KnowledgeBase.open(tmp_path / "kb", Settings(), embedder=HashEmbedder())
    await kb.ingest_records(DOCS)
    yield kb
    await kb.close()


@pytest.mark.parametrize("strategy", ["qa", "decompose", "react", "toolcall", "rewoo"])
async def test_every_strategy_searches_first_and_extracts_a_cited_span(kb, strategy) -> None:
    llm = ScriptedProvider(replies=[" 3 March 2025\nQuestion: more"], base_model=True, native_tools=False)
    events = [e async for e in Agent(reasoning=strategy, llm=llm, kb=kb).stream("When was the product launched?")]
    notes = [e.message for e in events if isinstance(e, Progress)]
    assert any("base model" in n and f"the {strategy} format" in n for n in notes)
    assert [e.tool for e in events if isinstance(e, ToolCall)] == ["docsearch"]
    answer = events[-1]
    assert isinstance(answer, Answer)
    assert answer.text == "3 March 2025 [1]"
    assert answer.citations[0].document_id == "launch"
    # one completion prompt, over the sentences picked from the passages, few-shot, ending in the question
    (prompt,) = llm.prompts
    assert len(prompt) == 1 and prompt[0].is_completion
    assert prompt[0].content.endswith("Question: When was the product launched?\nAnswer:")
    assert "launched on 3 March 2025 in Lyon" in prompt[0].content


async def test_a_span_not_in_the_evidence_gives_way_to_the_best_sentence(kb) -> None:
    llm = ScriptedProvider(replies=["in 2013"], base_model=True)
    result = await Agent(reasoning="react", llm=llm, kb=kb).run("When was the product launched?")
    assert result.content == "The product was launched on 3 March 2025 in Lyon. [1]"


async def test_how_questions_are_answered_with_a_cited_sentence_without_the_model(kb) -> None:
    llm = ScriptedProvider(replies=[], base_model=True)
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run("How does the basic plan cost compare per month?")
    assert result.content == "The basic plan costs ten euros a month. [1]"
    assert result.citations[0].document_id == "pricing"
    assert len(llm.prompts) == 0


async def test_completion_design_reads_the_whole_passages(kb) -> None:
    llm = ScriptedProvider(replies=["3 March 2025"], base_model=True)
    agent = Agent(reasoning="qa", llm=llm, kb=kb, settings={"base_model_answer": "completion"})
    result = await agent.run("When was the product launched?")
    assert result.content == "3 March 2025 [1]"
    assert "[2] The basic plan costs ten euros a month. Annual plans are cheaper." in llm.prompts[0][0].content


async def test_an_instruction_model_keeps_its_strategy(kb) -> None:
    llm = ScriptedProvider(replies=["Launched on 3 March 2025 [1]."])
    events = [e async for e in Agent(reasoning="qa", llm=llm, kb=kb).stream("When was the product launched?")]
    assert not any(isinstance(e, Progress) and "base model" in e.message for e in events)
    assert llm.prompts[0][0].role == "system"


def test_the_local_provider_sends_a_completion_prompt_as_it_is() -> None:
    rendered = render_prompt([Message.completion("Question: x\nAnswer:")], chat_template=None)
    assert rendered.text == "Question: x\nAnswer:" and rendered.stop == []
    chat = render_prompt([Message.user("hi")], chat_template=None)
    assert chat.text == "User: hi\nAssistant:"


def test_open_questions() -> None:
    assert is_open_question("How does reasonloop keep answers grounded?")
    assert is_open_question("为什么天空是蓝色的？")
    assert not is_open_question("When was the product launched?")
    assert not is_open_question("How many people live in Lyon?")


async def test_markdown_headings_and_commands_are_not_taken_for_sentences(tmp_path) -> None:
    kb = KnowledgeBase.open(tmp_path / "kb2", Settings(), embedder=HashEmbedder())
    page = (
        '## Grounded answers\n\nreasonloop ask "How are answers grounded?"\n\n'
        "Answers are grounded because every claim cites the passage it comes from."
    )
    await kb.ingest_records([("guide", "Guide", page)])
    try:
        result = await Agent(reasoning="qa", llm=ScriptedProvider(replies=[], base_model=True), kb=kb).run(
            "How are answers grounded?"
        )
    finally:
        await kb.close()
    assert result.content == "Answers are grounded because every claim cites the passage it comes from. [1]"


async def test_a_greeting_is_answered_without_a_search(kb) -> None:
    llm = ScriptedProvider(replies=["Hello! How can I help?"], base_model=True)
    events = [e async for e in Agent(reasoning="react", llm=llm, kb=kb).stream("Hello!")]
    assert not [e for e in events if isinstance(e, ToolCall)]
    assert events[-1].text == "Hello! How can I help?"


class SpyRetriever:
    """The knowledge base's retriever, recording the options each search was given."""

    def __init__(self, inner) -> None:
        self.inner, self.options = inner, []

    async def search(self, query, top_k=None, filters=None, *, rerank=None, candidates=None):
        self.options.append({"rerank": rerank, "candidates": candidates})
        return await self.inner.search(query, top_k, filters, rerank=rerank, candidates=candidates)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.mark.parametrize("strategy", ["qa", "decompose"])
async def test_the_runs_rerank_overrides_reach_the_search_with_a_base_model(kb, strategy) -> None:
    spy = SpyRetriever(kb.retriever())
    llm = ScriptedProvider(replies=[" 3 March 2025"], base_model=True, native_tools=False)
    settings = {"retrieval": {"rerank": False, "rerank_candidates": 7}}
    result = await Agent(reasoning=strategy, llm=llm, kb=spy, settings=settings).run("When was the product launched?")
    assert result.citations
    assert spy.options == [{"rerank": False, "candidates": 7}]
