"""IRCoT: one reasoning sentence, one search, until the answer; its limits and the replies it survives."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from reasonloop.agents import Agent
from reasonloop.events import Answer, Progress, RunStarted, Searched, Thought
from reasonloop.kb.base import Filter, Hit
from reasonloop.llm.base import Message
from reasonloop.llm.scripted import ScriptedProvider
from tests.reasoning.helpers import FakeRetriever, collect_events

ARIA = Hit(
    chunk_id="aria",
    document_id="aria-doc",
    source="aria.md",
    title="Aria 2",
    text="The Aria 2 headphones went on sale in 2021. The Aria 2 headphones are made by Northwind Audio.",
    metadata={"start": 0, "end": 95},
)
NORTHWIND = Hit(
    chunk_id="northwind",
    document_id="northwind-doc",
    source="northwind.md",
    title="Northwind Audio",
    text="Northwind Audio sells speakers in Oslo. Northwind Audio was created by Marta Lind in a garage.",
    metadata={"start": 0, "end": 93},
)
CABLES = Hit(
    chunk_id="cables",
    document_id="cables-doc",
    source="cables.md",
    title="Cables",
    text="The firm that builds cables started in Turin.",
)
SHOP = Hit(
    chunk_id="shop",
    document_id="shop-doc",
    source="shop.md",
    title="Shop",
    text="Northwind Audio opened a shop in Bergen.",
)
# No word of four letters or more is shared by the question and NORTHWIND: only a search for the
# bridge entity (Northwind Audio) finds the second hop.
QUESTION = "Who started the firm that builds the Aria 2 headphones?"
HOP1 = "The Aria 2 headphones are made by Northwind Audio [1]."


def corpus() -> FakeRetriever:
    return FakeRetriever([ARIA, CABLES, NORTHWIND, SHOP])


def results(events) -> list[Searched]:
    return [e for e in events if isinstance(e, Searched)]


def test_the_question_alone_does_not_find_the_second_hop() -> None:
    """What makes the two-hop test able to fail."""
    import asyncio

    hits = asyncio.run(corpus().search(QUESTION))
    assert NORTHWIND not in hits and ARIA in hits


async def test_the_answer_in_the_first_sentence_ends_the_run() -> None:
    retriever = corpus()
    llm = ScriptedProvider(replies=["So the answer is: Northwind Audio [1]."])
    events = await collect_events(Agent("ircot", llm=llm, kb=retriever), "Who makes the Aria 2 headphones?")
    assert retriever.queries == ["Who makes the Aria 2 headphones?"]
    assert [e.text for e in events if isinstance(e, Thought)] == ["So the answer is: Northwind Audio [1]"]
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.stop_reason == "final"
    assert answer.text == "Northwind Audio [1]"
    assert [c.chunk_id for c in answer.citations] == ["aria"]
    assert answer.usage.llm_calls == 1 and (answer.usage.tool_calls, answer.usage.searches) == (0, 1)
    system, *_, user = llm.prompts[0]
    assert "So the answer is:" in system.content
    assert "[1] Aria 2 (aria.md)" in user.content and "(none yet)" in user.content


async def test_two_hops_the_second_search_is_the_first_sentence() -> None:
    retriever = corpus()
    llm = ScriptedProvider(replies=[HOP1, "So the answer is: Marta Lind [3]"])
    events = await collect_events(Agent("ircot", llm=llm, kb=retriever), QUESTION)
    # the sentence is searched without its citation marker
    assert retriever.queries == [QUESTION, "The Aria 2 headphones are made by Northwind Audio."]
    searches = [e for e in events if isinstance(e, Searched)]
    assert [s.query for s in searches] == retriever.queries
    # the second step was shown the new passage and the sentence so far
    second = llm.prompts[1][-1].content
    assert "[3] Northwind Audio (northwind.md)" in second and HOP1 in second
    assert [e.text for e in events if isinstance(e, Thought)] == [HOP1, "So the answer is: Marta Lind [3]"]
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.text == "Marta Lind [3]" and answer.stop_reason == "final"
    assert [c.document_id for c in answer.citations] == ["northwind-doc"]
    assert answer.usage.llm_calls == 2 and (answer.usage.tool_calls, answer.usage.searches) == (0, 2)
    result = await Agent(
        "ircot", llm=ScriptedProvider(replies=[HOP1, "So the answer is: Marta Lind [3]"]), kb=corpus()
    ).run(QUESTION)
    assert [s.action for s in result.steps] == ["docsearch", "reason", "docsearch", "reason"]


async def test_max_steps_ends_with_a_forced_answer_that_names_the_limit() -> None:
    retriever = corpus()
    llm = ScriptedProvider(
        replies=[
            HOP1,
            "Northwind Audio sells speakers in Oslo [3].",
            "Northwind Audio made them [1]; its founder is unclear.",
        ]
    )
    events = await collect_events(Agent("ircot", llm=llm, kb=retriever, settings={"max_steps": 2}), QUESTION)
    # the last step's sentence is not searched: no step follows it
    assert len(retriever.queries) == 2
    assert any(isinstance(e, Progress) and e.message == "reasoning stopped: max rounds" for e in events)
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.stop_reason == "max_rounds"
    assert answer.text == "Northwind Audio made them [1]; its founder is unclear."
    assert [c.chunk_id for c in answer.citations] == ["aria"]
    forced = llm.prompts[-1]
    assert "max rounds" in forced[-1].content  # the model is told which limit ended the chain
    assert "Northwind Audio sells speakers in Oslo [3]." in forced[-2].content  # with the reasoning so far
    assert answer.usage.llm_calls == 3


async def test_the_run_budget_ends_the_chain_too() -> None:
    llm = ScriptedProvider(replies=[HOP1, "Northwind Audio makes them [1]."])
    agent = Agent("ircot", llm=llm, kb=corpus(), budget={"max_tool_calls": 1})
    events = await collect_events(agent, QUESTION)
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.stop_reason == "max_tool_calls"
    assert answer.usage.searches == 1 and "max tool calls" in llm.prompts[-1][-1].content


async def test_a_forced_answer_left_empty_still_says_why() -> None:
    llm = ScriptedProvider(replies=[HOP1, ""])
    answer = (await collect_events(Agent("ircot", llm=llm, kb=corpus(), settings={"max_steps": 1}), QUESTION))[-1]
    assert isinstance(answer, Answer) and answer.stop_reason == "max_rounds"
    assert answer.text and "max_rounds" in answer.text


@pytest.mark.parametrize(
    "reply", ["", "   \n", "**Next sentence:**", "So the answer is:", HOP1, f"Question: {QUESTION}"]
)
async def test_a_reply_with_no_new_sentence_answers_from_the_passages(reply) -> None:
    retriever = corpus()
    # the last cases repeat the sentence already written, and the question
    llm = ScriptedProvider(replies=[HOP1, reply, "Marta Lind created Northwind Audio [3]."])
    events = await collect_events(Agent("ircot", llm=llm, kb=retriever), QUESTION)
    warning = [e for e in events if isinstance(e, Progress) and e.level == "warning"]
    assert len(warning) == 1 and "answering from the passages found" in warning[0].message
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.stop_reason == "final"
    assert answer.text == "Marta Lind created Northwind Audio [3]."
    assert [c.chunk_id for c in answer.citations] == ["northwind"]
    last = llm.prompts[-1]
    assert "cite each passage you use" in last[0].content.lower()  # the answer prompt, not a step
    assert HOP1 in last[-1].content and "[3] Northwind Audio" in last[-1].content


async def test_the_first_reply_empty_and_the_answer_empty_never_crash() -> None:
    llm = ScriptedProvider(replies=["", ""])
    answer = (await collect_events(Agent("ircot", llm=llm, kb=corpus()), QUESTION))[-1]
    assert isinstance(answer, Answer) and answer.text  # never an empty answer


async def test_passages_found_again_are_kept_once() -> None:
    retriever = corpus()
    llm = ScriptedProvider(
        replies=[HOP1, "Northwind Audio was created by Marta Lind [3].", "So the answer is: Marta Lind"]
    )
    events = await collect_events(Agent("ircot", llm=llm, kb=retriever), QUESTION)
    # the second search finds the first hop's passage again: it keeps its number and is shown once
    assert "aria" in {c.chunk_id for c in results(events)[1].citations}
    shown = llm.prompts[1][-1].content
    assert shown.count("(aria.md)") == 1 and shown.count("(northwind.md)") == 1
    notes = [e.message for e in events if isinstance(e, Progress)]
    assert "2 new passages (4 in all)" in notes  # Northwind and Shop are new; Aria and Cables were kept
    assert llm.prompts[2][-1].content.count("(aria.md)") == 1


async def test_the_passage_limit_stops_the_searches() -> None:
    retriever = corpus()
    llm = ScriptedProvider(replies=[HOP1, "So the answer is: Northwind Audio"])
    settings = {"max_passages": 1, "top_k": 1}
    events = await collect_events(Agent("ircot", llm=llm, kb=retriever, settings=settings), QUESTION)
    assert len(retriever.queries) == 1  # the chain is full: its sentences are not searched
    assert isinstance(events[-1], Answer) and events[-1].text == "Northwind Audio [1]"


async def test_a_capped_search_keeps_only_what_fits() -> None:
    retriever = corpus()
    llm = ScriptedProvider(replies=[HOP1, "So the answer is: Marta Lind"])
    settings = {"max_passages": 3, "top_k": 3}
    events = await collect_events(Agent("ircot", llm=llm, kb=retriever, settings=settings), QUESTION)
    # the question kept Aria and Cables; of Northwind and Shop, only Northwind fits
    assert "1 new passages (3 in all, 1 over the limit of 3)" in [e.message for e in events if isinstance(e, Progress)]
    assert "(shop.md)" not in llm.prompts[1][-1].content and "(northwind.md)" in llm.prompts[1][-1].content


class EveryPassage:
    """Returns every passage, whatever the query (the words of Chinese text are not space-separated)."""

    def __init__(self, hits: Sequence[Hit]) -> None:
        self.hits = list(hits)
        self.queries: list[str] = []

    async def search(self, query: str, top_k: int = 10, filters: Sequence[Filter] | None = None) -> list[Hit]:
        self.queries.append(query)
        return self.hits[:top_k]


async def test_the_chinese_answer_marker_ends_the_run() -> None:
    hits = [
        Hit(chunk_id="a", document_id="a", source="a.md", title="Aria 2", text="Aria 2 耳机由诺斯温德公司生产。"),
        Hit(
            chunk_id="n",
            document_id="n",
            source="n.md",
            title="诺斯温德",
            text="诺斯温德公司在奥斯陆。诺斯温德公司由林玛尔塔创立。",
        ),
    ]
    retriever = EveryPassage(hits)
    llm = ScriptedProvider(replies=["Aria 2 耳机由诺斯温德公司生产[1]。", "所以答案是：林玛尔塔[2]。"])
    events = await collect_events(Agent("ircot", llm=llm, kb=retriever), "谁创立了生产 Aria 2 耳机的公司？")
    assert retriever.queries[1] == "Aria 2 耳机由诺斯温德公司生产。"
    assert "所以答案是" in llm.prompts[0][0].content and "（暂无）" in llm.prompts[0][-1].content
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.text == "林玛尔塔[2]" and answer.stop_reason == "final"
    assert [(c.chunk_id, c.quote) for c in answer.citations] == [("n", "诺斯温德公司由林玛尔塔创立。")]


async def test_citations_quote_the_sentence_of_their_passage() -> None:
    llm = ScriptedProvider(
        replies=[HOP1, "Northwind Audio was created by Marta Lind [3].", "So the answer is: Marta Lind [3]"]
    )
    answer = (await collect_events(Agent("ircot", llm=llm, kb=corpus()), QUESTION))[-1]
    assert isinstance(answer, Answer)
    (cited,) = answer.citations
    assert cited.chunk_id == "northwind"
    # the sentence holding the answer, not the passage's first sentence
    assert cited.quote == "Northwind Audio was created by Marta Lind in a garage."
    assert NORTHWIND.text[cited.start : cited.end] == cited.quote


async def test_an_answer_without_markers_cites_the_passage_that_holds_it() -> None:
    llm = ScriptedProvider(replies=[HOP1, "Therefore, the answer is Marta Lind."])
    answer = (await collect_events(Agent("ircot", llm=llm, kb=corpus()), QUESTION))[-1]
    assert isinstance(answer, Answer) and answer.text == "Marta Lind [3]"
    assert [(c.chunk_id, c.quote) for c in answer.citations] == [
        ("northwind", "Northwind Audio was created by Marta Lind in a garage.")
    ]


async def test_a_yes_no_answer_cites_the_passages_the_reasoning_used() -> None:
    llm = ScriptedProvider(replies=[HOP1, "So the answer is: yes"])
    answer = (
        await collect_events(Agent("ircot", llm=llm, kb=corpus()), "Are the Aria 2 headphones made by Northwind Audio?")
    )[-1]
    assert isinstance(answer, Answer) and answer.text == "yes [1]"
    # the claim that cites the passage is the reasoning's sentence: its quote is that sentence
    assert [(c.chunk_id, c.quote) for c in answer.citations] == [
        ("aria", "The Aria 2 headphones are made by Northwind Audio.")
    ]


async def test_an_answer_no_passage_supports_cites_nothing() -> None:
    llm = ScriptedProvider(replies=[HOP1, "So the answer is: The passages do not say."])
    answer = (await collect_events(Agent("ircot", llm=llm, kb=corpus()), QUESTION))[-1]
    assert isinstance(answer, Answer) and answer.text == "The passages do not say" and answer.citations == []


async def test_nothing_found_is_dont_know_without_a_model_call() -> None:
    llm = ScriptedProvider(replies=[])
    result = await Agent("ircot", llm=llm, kb=corpus()).run("zzzz qqqq?")
    assert result.content.startswith("I don't know") and result.abstained and result.usage.llm_calls == 0


async def test_a_follow_up_is_condensed_before_it_is_searched() -> None:
    retriever = corpus()
    llm = ScriptedProvider(replies=["Who makes the Aria 2 headphones", "So the answer is: Northwind Audio [1]"])
    history = [Message.user("Tell me about the Aria 2 headphones."), Message.assistant("They are headphones.")]
    result = await Agent("ircot", llm=llm, kb=retriever).run("Who makes them?", history=history)
    assert retriever.queries == ["Who makes the Aria 2 headphones"]
    assert "They are headphones." in [m.content for m in llm.prompts[1]]  # the step sees the conversation
    assert result.content == "Northwind Audio [1]"


async def test_small_talk_needs_no_search() -> None:
    retriever = corpus()
    llm = ScriptedProvider(replies=["Hello! How can I help?"])
    result = await Agent("ircot", llm=llm, kb=retriever).run("hello")
    assert retriever.queries == [] and result.content.startswith("Hello!")


async def test_a_base_model_runs_the_evidence_answer_and_the_run_records_it() -> None:
    llm = ScriptedProvider(replies=[" Northwind Audio\nQuestion: more"], base_model=True, native_tools=False)
    events = await collect_events(Agent("ircot", llm=llm, kb=corpus()), "Who makes the Aria 2 headphones?")
    started = events[0]
    assert isinstance(started, RunStarted) and started.ran == "ircot → evidence answer: base model"
    assert not any(isinstance(e, Thought) for e in events)
