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


async def _open(path, records):
    kb = KnowledgeBase.open(path, Settings(), embedder=HashEmbedder())
    await kb.ingest_records(records)
    return kb


@pytest.fixture
async def kb(tmp_path):
    kb = await _open(tmp_path / "kb", DOCS)
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


PEOPLE = [
    ("bull", "Emma Bull", "Emma Bull (born December 13, 1954) is an American science fiction writer."),
    ("woolf", "Virginia Woolf", "Adeline Virginia Woolf (25 January 1882 – 28 March 1941) was an English writer."),
    ("gyor", "Vib Gyor", "Vib Gyor was a band that was formed in Leeds, England."),
    ("montreal", "Of Montreal", "Of Montreal is an American rock band from Athens, Georgia."),
    ("rick", "Ranger Rick", "Ranger Rick is a children's nature magazine published in the United States."),
    ("hotrod", "Hot Rod", "Hot Rod is a monthly car magazine published in the United States."),
    ("tennis", "Tennis", "Tennis is a sports magazine about the game of tennis."),
]


@pytest.fixture
async def people(tmp_path):
    kb = await _open(tmp_path / "people", PEOPLE)
    yield kb
    await kb.close()


async def _ask(kb, question: str, replies: list[str]) -> tuple[str, list[str], ScriptedProvider]:
    llm = ScriptedProvider(replies=replies, base_model=True)
    events = [e async for e in Agent(reasoning="qa", llm=llm, kb=kb).stream(question)]
    notes = [e.message for e in events if isinstance(e, Progress)]
    return events[-1].text, notes, llm


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Who was born earlier, Emma Bull or Virginia Woolf?", "Virginia Woolf"),
        ("Who was born more recently, Emma Bull or Virginia Woolf?", "Emma Bull"),
    ],
)
async def test_a_choice_between_dates_is_decided_by_the_years_in_the_evidence(people, question, expected) -> None:
    text, notes, llm = await _ask(people, question, replies=[])
    assert text.startswith(f"{expected} [")
    assert any("compared the years the evidence gives: Emma Bull 1954, Virginia Woolf 1882" in n for n in notes)
    assert not llm.prompts  # no model call


async def test_a_choice_goes_to_the_option_the_evidence_says_the_question_of(people) -> None:
    text, notes, llm = await _ask(people, "Which band formed in England, Of Montreal or Vib Gyor?", replies=[])
    assert text.startswith("Vib Gyor [")
    assert any("picked the option the evidence says most of the question about" in n for n in notes)
    assert not llm.prompts


@pytest.mark.parametrize(("reply", "expected"), [("Virginia Woolf", "Virginia Woolf"), ("Woolf", "Virginia Woolf")])
async def test_otherwise_the_model_chooses_and_its_reply_is_snapped_to_an_option(people, reply, expected) -> None:
    text, _, llm = await _ask(people, "Who wrote more novels, Emma Bull or Virginia Woolf?", replies=[reply])
    assert text.startswith(f"{expected} [")
    (prompt,) = llm.prompts
    assert "answer the question with one of the two names it gives" in prompt[0].content
    assert prompt[0].content.endswith("Question: Who wrote more novels, Emma Bull or Virginia Woolf?\nAnswer:")


async def test_a_reply_naming_neither_option_still_answers_with_an_option(people) -> None:
    text, _, _ = await _ask(people, "Who wrote more novels, Emma Bull or Virginia Woolf?", replies=["Jane Austen"])
    assert text.split(" [")[0] in {"Emma Bull", "Virginia Woolf"}


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Are Hot Rod and Ranger Rick both magazines?", "Yes"),
        ("Are Ranger Rick and Tennis both sports magazines?", "No"),
        ("Are Hot Rod and Ranger Rick both published in the United States?", "Yes"),
        ("Are Hot Rod and Tennis both published in the United States?", "No"),
    ],
)
async def test_yes_or_no_is_what_the_evidence_states_of_each_named_thing(people, question, expected) -> None:
    text, notes, llm = await _ask(people, question, replies=[])
    assert text.split(" [")[0] == expected
    assert any(n.startswith("yes/no from what the evidence states") for n in notes)
    assert not llm.prompts


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Are Emma Bull and Of Montreal of the same nationality?", "Yes"),  # both "American"
        ("Are Emma Bull and Virginia Woolf of the same nationality?", "No"),
        ("Are Emma Bull and Virginia Woolf of different nationalities?", "Yes"),
    ],
)
async def test_same_or_different_compares_the_lead_sentences(people, question, expected) -> None:
    text, _, _ = await _ask(people, question, replies=[])
    assert text.split(" [")[0] == expected


async def test_a_choice_no_passage_speaks_of_still_answers(people) -> None:
    text, _, _ = await _ask(people, "Who was born first, Zorblax Quux or Mirela Tonk?", replies=["Mirela Tonk"])
    assert text.startswith("Mirela Tonk [")


async def test_a_yes_no_question_about_one_thing_needs_more_than_its_name(people) -> None:
    text, _, _ = await _ask(people, "Is Emma Bull a British novelist?", replies=[])
    assert text.split(" [")[0] == "No"  # the evidence says American science fiction writer
    text, _, _ = await _ask(people, "Is Emma Bull an American science fiction writer?", replies=[])
    assert text.split(" [")[0] == "Yes"


def test_a_reply_is_snapped_by_the_words_that_tell_the_options_apart() -> None:
    from reasonloop.reasoning.grounded import _snap

    options = ("Battle of Peleliu", "Battle of Belleau Wood")
    assert _snap("Battle", options) is None  # both options say "Battle"
    assert _snap("the Belleau Wood battle", options) == "Battle of Belleau Wood"


def test_a_shared_month_is_no_shared_descriptor() -> None:
    from reasonloop.reasoning.evidence_sentences import Sentence, descriptors

    a = Sentence("Ann Lee (born 3 March 1950) is a Swedish painter.", 1, title="Ann Lee")
    b = Sentence("Bo Kim (born 9 March 1960) is a Korean painter.", 2, title="Bo Kim")
    names = ("Ann Lee", "Bo Kim")
    assert descriptors(a, names) & descriptors(b, names) == set()
