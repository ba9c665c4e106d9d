"""With a base model every strategy answers from retrieved evidence: quoting, a verbatim span, or a
yes/no and an either/or decided only by the model's calibrated likelihoods, never invented."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from reasonloop.agents.agent import Agent
from reasonloop.config import Settings
from reasonloop.events import Answer, Progress, RunStarted, Searched, ToolCall
from reasonloop.kb.knowledge_base import KnowledgeBase
from reasonloop.llm.base import Capabilities
from reasonloop.llm.local_provider import render_prompt
from reasonloop.llm.messages import Message
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.reasoning.evidence_answer.form import answer_form, is_open_question
from reasonloop.reasoning.steps.terms import negates, question_terms
from tests.kb.helpers import HashEmbedder

DOCS = [
    (
        "x200",
        "X200 handbook",
        "The X200 is a compact label printer. The X200 does not support Linux. "
        "It prints 40 labels a minute and weighs 1.2 kilograms.",
    ),
    (
        "warranty",
        "Warranty",
        "## Warranty\n\nDoes the warranty cover accidents?\n\n"
        "The warranty is not valid for water damage or for misuse. It covers manufacturing defects for two years.",
    ),
    (
        "returns",
        "Returns",
        "Opened items cannot be returned after 14 days. Unopened items can be returned within 60 days.",
    ),
    ("team", "Team", "The support team is led by Maria Okafor. The sales team is led by Tom Reyes."),
]


class Scorer(ScriptedProvider):
    """A scripted base model that also scores continuations: each continuation's log-probability
    is looked up in ``with_evidence`` (or ``without`` when the prompt's passage is N/A)."""

    def __init__(self, with_evidence: dict[str, float], without: dict[str, float] | None = None, **kw) -> None:
        super().__init__(replies=kw.pop("replies", []), base_model=True, native_tools=False, **kw)
        self.with_evidence, self.without = with_evidence, without or {}
        self.scored: list[str] = []

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(native_tools=False, parallel_tools=False, base_model=True, scores_continuations=True)

    async def score(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        self.scored.append(prompt)
        blank = prompt.rstrip().splitlines()[-3] in ("Passage: N/A", "文段：N/A")
        table = self.without if blank else self.with_evidence
        return [table.get(c.strip(), -5.0) for c in continuations]


async def _open(path, records):
    kb = KnowledgeBase.open(path, Settings(), embedder=HashEmbedder())
    await kb.ingest_records(records)
    return kb


@pytest.fixture
async def kb(tmp_path):
    kb = await _open(tmp_path / "kb", DOCS)
    yield kb
    await kb.close()


# -- the owner: what runs is decided once, and recorded --------------------------------------------
@pytest.mark.parametrize("strategy", ["qa", "decompose", "react", "toolcall", "rewoo", "ircot"])
async def test_every_strategy_runs_the_evidence_answer_and_records_it(kb, strategy) -> None:
    llm = ScriptedProvider(replies=[" 40 labels a minute\nQuestion: more"], base_model=True, native_tools=False)
    agent = Agent(reasoning=strategy, llm=llm, kb=kb)
    events = [e async for e in agent.stream("How many labels a minute does the X200 print?")]
    started = events[0]
    assert isinstance(started, RunStarted) and started.reasoning == strategy
    assert started.ran == f"{strategy} → evidence answer: base model"
    assert [e.query for e in events if isinstance(e, Searched)] == ["How many labels a minute does the X200 print?"]
    assert not [e for e in events if isinstance(e, ToolCall)]  # its search is no tool call
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.text == "40 labels a minute [1]"
    assert not answer.abstained
    (prompt,) = llm.prompts
    assert len(prompt) == 1 and prompt[0].is_completion
    result = await agent.run("How many labels a minute does the X200 print?")
    assert result.meta.reasoning == strategy and result.meta.ran == started.ran


async def test_an_instruction_model_keeps_its_strategy_and_records_no_swap(kb) -> None:
    llm = ScriptedProvider(replies=["It prints 40 labels a minute [1]."])
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run("How many labels a minute does the X200 print?")
    assert result.meta.ran == ""
    assert llm.prompts[0][0].role == "system"
    # the citation quotes the sentence the answer rests on, not the whole passage
    assert result.citations[0].quote == "It prints 40 labels a minute and weighs 1.2 kilograms."


def test_the_agent_reads_the_profile_once_per_profile(kb) -> None:
    agent = Agent(reasoning="react", llm=ScriptedProvider(replies=[], base_model=True), kb=kb)
    first = agent.plan(agent.llm)
    assert agent.plan(agent.llm) is first
    assert agent.plan(ScriptedProvider(replies=[])).ran == ""


# -- yes/no: decided only by calibrated scores, never against a negation ----------------------------
async def test_a_negated_sentence_never_gives_a_yes(kb) -> None:
    # the model likes "Yes" a lot more with the evidence than without: the guard still refuses it
    llm = Scorer({"Yes": -0.1, "No": -4.0}, {"Yes": -2.0, "No": -2.0})
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run("Is the warranty valid for water damage?")
    assert not result.content.startswith("Yes")
    assert result.abstained
    assert "The warranty is not valid for water damage or for misuse." in result.content
    assert "does not settle" in result.content


async def test_a_negated_sentence_and_a_model_that_says_no_give_a_quoted_no(kb) -> None:
    llm = Scorer({"Yes": -3.0, "No": -0.2}, {"Yes": -1.0, "No": -1.0})
    events = [e async for e in Agent(reasoning="react", llm=llm, kb=kb).stream("Does the X200 support Linux?")]
    answer = events[-1]
    assert answer.text == 'No. The documents say: "The X200 does not support Linux." [1]'
    assert not answer.abstained
    assert any(isinstance(e, Progress) and "calibrated" in e.message for e in events)
    assert answer.citations[0].quote == "The X200 does not support Linux."


async def test_calibration_removes_the_models_own_preference(kb) -> None:
    # "Yes" is likelier with the evidence, but even likelier without it: the evidence favours "No"
    llm = Scorer({"Yes": -0.5, "No": -1.5}, {"Yes": -0.1, "No": -3.5})
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run("Does the X200 support Linux?")
    assert result.content.startswith("No.")


async def test_below_the_margin_the_sentence_is_quoted_without_deciding(kb) -> None:
    llm = Scorer({"Yes": -1.0, "No": -1.2}, {"Yes": -1.0, "No": -1.0})
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run("Does the X200 support Linux?")
    assert result.abstained and result.content.startswith("The documents say:")


async def test_a_yes_needs_an_agreeing_sentence_and_the_margin(kb) -> None:
    llm = Scorer({"Yes": -0.1, "No": -3.0}, {"Yes": -1.0, "No": -1.0})
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run("Is the support team led by Maria Okafor?")
    assert result.content == 'Yes. The documents say: "The support team is led by Maria Okafor." [1]'


async def test_a_no_over_a_sentence_that_does_not_negate_needs_twice_the_margin(kb) -> None:
    llm = Scorer({"Yes": -1.2, "No": -0.4}, {"Yes": -1.0, "No": -1.0})  # lead 0.8: under twice 0.5
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run("Is the support team led by Maria Okafor?")
    assert result.abstained


async def test_a_model_that_cannot_score_decides_nothing(kb) -> None:
    llm = ScriptedProvider(replies=["Yes"], base_model=True)
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run("Can I return an opened item after a month?")
    assert result.abstained and not result.content.startswith("Yes")
    assert "Opened items cannot be returned after 14 days." in result.content
    assert not llm.prompts  # nothing was asked of the model


# -- choices ---------------------------------------------------------------------------------------
async def test_a_choice_is_decided_by_scores_and_quoted(kb) -> None:
    llm = Scorer({"Maria Okafor": -0.5, "Tom Reyes": -3.0}, {"Maria Okafor": -2.0, "Tom Reyes": -2.0})
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run("Who leads the support team, Maria Okafor or Tom Reyes?")
    assert result.content.startswith("Maria Okafor. The documents say:")


async def test_a_choice_the_scores_do_not_decide_is_not_answered(kb) -> None:
    llm = Scorer({"Maria Okafor": -1.0, "Tom Reyes": -1.1}, {})
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run("Who leads the support team, Maria Okafor or Tom Reyes?")
    assert result.abstained and "does not settle which of Maria Okafor and Tom Reyes" in result.content


# -- the documents don't say ----------------------------------------------------------------------
async def test_a_name_no_passage_holds_means_the_documents_do_not_say(kb) -> None:
    llm = Scorer({"Yes": 0.0, "No": -9.0}, replies=["40 labels"])
    result = await Agent(reasoning="react", llm=llm, kb=kb).run("Does the X300 support Linux?")
    assert result.abstained and result.content.startswith("The documents don't say.")
    assert "X300" in result.content and not result.citations
    assert not llm.prompts and not llm.scored


async def test_an_empty_knowledge_base_says_nothing_is_ingested(tmp_path) -> None:
    kb = KnowledgeBase.open(tmp_path / "empty", Settings(), embedder=HashEmbedder())
    try:
        result = await Agent(reasoning="qa", llm=ScriptedProvider(replies=[], base_model=True), kb=kb).run(
            "What does the X200 weigh?"
        )
    finally:
        await kb.close()
    assert result.abstained and "Nothing has been ingested yet" in result.content


@pytest.mark.parametrize("question", ["?!", "……？", "   "])
async def test_a_question_of_punctuation_only_is_not_searched(kb, question) -> None:
    llm = ScriptedProvider(replies=[], base_model=True)
    events = [e async for e in Agent(reasoning="qa", llm=llm, kb=kb).stream(question)]
    assert not [e for e in events if isinstance(e, (ToolCall, Searched))]
    assert events[-1].abstained and "no words" in events[-1].text


async def test_an_answer_in_chinese_says_so_in_chinese(kb) -> None:
    result = await Agent(reasoning="qa", llm=ScriptedProvider(replies=[], base_model=True), kb=kb).run(
        "X500打印机的价格是多少？"
    )
    assert result.abstained and result.content.startswith("文档中没有提到")


async def test_a_very_long_question_is_answered_within_the_context(kb) -> None:
    question = "Please tell me, " + "about the printer and its labels " * 400 + "what does the X200 weigh?"
    llm = ScriptedProvider(replies=["1.2 kilograms"], base_model=True)
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run(question)
    assert result.content == "1.2 kilograms [1]"
    assert len(llm.prompts[0][0].content) < 6000


# -- spans and quotes ------------------------------------------------------------------------------
async def test_a_span_not_in_the_sentences_gives_way_to_the_quoted_sentence(kb) -> None:
    llm = ScriptedProvider(replies=["about 2 kilos"], base_model=True)
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run("What does the X200 weigh?")
    assert "2 kilos" not in result.content
    (citation,) = result.citations
    assert result.content == f'The closest the documents say: "{citation.quote}" [{citation.marker}]'
    assert citation.document_id == "x200" and result.abstained


async def test_a_span_of_the_questions_own_words_is_no_answer(kb) -> None:
    llm = ScriptedProvider(replies=["the X200"], base_model=True)
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run("What is the X200?")
    assert result.content.startswith("The closest the documents say:") and result.abstained


async def test_a_faqs_own_question_is_never_the_answer(kb) -> None:
    llm = ScriptedProvider(replies=[], base_model=True)
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run("Why does the warranty not cover accidents?")
    assert "?" not in result.content
    assert result.citations and result.citations[0].document_id == "warranty"


async def test_every_citation_quote_is_the_page_text_at_its_offsets(kb) -> None:
    questions = [
        ("qa", "What does the X200 weigh?", ["1.2 kilograms"]),
        ("react", "How does the warranty treat water damage?", []),
        ("qa", "Who leads the sales team?", ["Tom Reyes"]),
    ]
    for strategy, question, replies in questions:
        result = await Agent(reasoning=strategy, llm=ScriptedProvider(replies=replies, base_model=True), kb=kb).run(
            question
        )
        assert result.citations, question
        for citation in result.citations:
            _, page_text, _ = await kb.page(citation.document_id, citation.page or 1)
            assert page_text[citation.start : citation.end] == citation.quote
            assert citation.chunk_start <= citation.start < citation.end <= citation.chunk_end
            assert "." in citation.quote and len(citation.quote) < len(page_text)


# -- follow-ups ------------------------------------------------------------------------------------
async def test_a_follow_up_is_searched_with_the_previous_question(kb) -> None:
    llm = ScriptedProvider(replies=["Tom Reyes"], base_model=True)
    history = [Message.user("Who leads the support team?"), Message.assistant("Maria Okafor [1]")]
    events = [e async for e in Agent(reasoning="qa", llm=llm, kb=kb).stream("And the sales team?", history=history)]
    (searched,) = [e for e in events if isinstance(e, Searched)]
    assert searched.query == "Who leads the support team? And the sales team?"
    assert events[-1].text == "Tom Reyes [1]"


async def test_a_greeting_is_answered_without_a_search(kb) -> None:
    llm = ScriptedProvider(replies=["Hello! How can I help?"], base_model=True)
    events = [e async for e in Agent(reasoning="react", llm=llm, kb=kb).stream("Hello!")]
    assert not [e for e in events if isinstance(e, (ToolCall, Searched))]
    assert events[-1].text == "Hello! How can I help?"


# -- pieces ----------------------------------------------------------------------------------------
def test_the_local_provider_sends_a_completion_prompt_as_it_is() -> None:
    rendered = render_prompt([Message.completion("Question: x\nAnswer:")], chat_template=None)
    assert rendered.text == "Question: x\nAnswer:" and rendered.stop == []


@pytest.mark.parametrize(
    ("question", "kind", "options"),
    [
        ("How does the printer feed labels?", "open", ()),
        ("为什么打印机不支持Linux？", "open", ()),
        ("How many labels a minute?", "span", ()),
        ("Does the X200 support Linux?", "yes_no", ()),
        ("Can't I return it?", "yes_no", ()),
        ("X200支持Linux吗？", "yes_no", ()),
        ("是否可以退货？", "yes_no", ()),
        ("Which is lighter, the X200 or the X300?", "choice", ("X200", "X300")),
        ("Should I pick a monthly or yearly plan?", "choice", ("monthly", "yearly")),
        ("支持团队由玛丽亚还是汤姆负责？", "choice", ("支持团队由玛丽亚", "汤姆负责")),
        ("Who leads sales?", "span", ()),
    ],
)
def test_answer_forms(question, kind, options) -> None:
    form = answer_form(question)
    assert form.kind == kind
    if options:
        assert form.options == options


def test_open_questions() -> None:
    assert is_open_question("Why is the sky blue?")
    assert not is_open_question("How many people live in Lyon?")


def test_question_terms() -> None:
    terms = question_terms("Does the X200 support Linux, Maria's laptop?")
    assert terms.names == ["X200", "Linux", "Maria"]
    assert terms.missing_names("the x200 supports windows; maria") == ["Linux"]
    assert terms.mentions("Support is limited.") and not terms.mentions("Printing is fast.")
    assert not question_terms("Who is the CEO?").names  # an abbreviation a document may spell out
    assert question_terms("?!").empty
    assert question_terms("保修期是多久？").mentions("本产品保修期为两年。")


@pytest.mark.parametrize(
    ("text", "negated"),
    [
        ("The X200 does not support Linux.", True),
        ("Opened items cannot be returned.", True),
        ("It isn't waterproof.", True),
        ("本产品不支持退货。", True),
        ("The X200 supports Linux.", False),
        ("Notebooks are included.", False),
    ],
)
def test_negation(text, negated) -> None:
    assert negates(text) is negated


async def test_with_any_model_qa_says_the_documents_do_not_say_before_asking_it(kb) -> None:
    llm = ScriptedProvider(replies=["The X300 costs 99 euros [1]."])
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run("How much does the X300 cost?")
    assert result.abstained and result.content.startswith("The documents don't say.")
    assert "X300" in result.content and not llm.prompts


async def test_a_yes_never_asserts_a_number_the_evidence_does_not_hold(kb) -> None:
    llm = Scorer({"Yes": -0.1, "No": -5.0}, {"Yes": -2.0, "No": -2.0})
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run("Does the X200 print 60 labels a minute?")
    assert result.abstained
    assert not result.content.startswith("Yes")


async def test_scoring_calls_count_in_the_runs_usage(kb) -> None:
    llm = Scorer({"Yes": -0.1, "No": -3.0}, {"Yes": -1.0, "No": -1.0})
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run("Is the support team led by Maria Okafor?")
    assert result.usage.llm_calls == 2 and result.usage.prompt_tokens > 0


class OrderBiased(Scorer):
    """A scorer that prefers whichever option the question names first."""

    async def score(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        lines = prompt.rstrip().splitlines()
        if lines[-3] == "Passage: N/A":
            return [-1.0 for _ in continuations]
        question = lines[-2]
        first = min(continuations, key=lambda c: question.find(c.strip()))
        return [-0.1 if c == first else -3.0 for c in continuations]


async def test_a_pick_that_follows_the_order_of_the_options_is_no_decision(kb) -> None:
    question = "Who leads the support team, Maria Okafor or Tom Reyes?"
    events = [e async for e in Agent(reasoning="qa", llm=OrderBiased({}), kb=kb).stream(question)]
    assert events[-1].abstained and "does not settle which" in events[-1].text
    assert any(isinstance(e, Progress) and "order of the options" in e.message for e in events)


def test_names_inside_chinese_text() -> None:
    terms = question_terms("X200打印机支持Linux吗？")
    assert terms.names == ["X200", "Linux"]
    assert terms.mentions("X200打印机不支持Linux系统。")


async def test_a_word_of_the_question_in_no_passage_is_said_beside_the_closest_sentence(kb) -> None:
    llm = ScriptedProvider(replies=["Maria Okafor"], base_model=True)
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run("Who leads the marketing team?")
    assert result.abstained and result.content.startswith("The documents don't mention marketing.")
    assert result.citations and result.citations[0].quote in result.content
    assert not llm.prompts


def test_a_name_with_a_number_is_checked_whole() -> None:
    terms = question_terms("How much does the Aria 3 cost?")
    assert terms.names == ["Aria 3"]
    assert terms.missing_names("The Aria 2 costs $329.") == ["Aria 3"]
    assert not terms.missing_names("The Aria\n3 costs $399.")  # wrapped over a line
    assert question_terms("Who leads support?").unmentioned_words("Support is led by Maria.") == []


def test_sentences_run_over_wrapped_lines_but_not_over_list_items() -> None:
    from reasonloop.reasoning.steps.sentences import sentence_units

    text = "## Leave\nUnused days must be used by\n31 March. Ask HR.\n\n- One item\n- Another\n  item.\n| a | b |"
    assert [text[a:b] for a, b in sentence_units(text)] == [
        "## Leave",
        "Unused days must be used by\n31 March.",
        "Ask HR.",
        "- One item",
        "- Another\n  item.",
        "| a | b |",
    ]


def test_a_name_inside_a_longer_name_is_another_thing() -> None:
    terms = question_terms("Can the Aria 2 stay connected to a laptop?")
    assert terms.names_elsewhere("The Aria 2 Pro can stay connected to two devices.") == ["Aria 2"]
    assert terms.names_elsewhere("The Aria 2 can stay connected. The Pro cannot.") == []


async def test_a_yes_about_a_longer_name_is_not_given(tmp_path) -> None:
    kb = await _open(tmp_path / "kb3", [("aria", "Aria", "The Aria 2 Pro can stay connected to two devices.")])
    try:
        llm = Scorer({"Yes": -0.1, "No": -5.0}, {"Yes": -2.0, "No": -2.0})
        result = await Agent(reasoning="qa", llm=llm, kb=kb).run("Can the Aria 2 stay connected to two devices?")
    finally:
        await kb.close()
    assert result.abstained and not result.content.startswith("Yes")


async def test_a_span_from_a_sentence_about_something_else_is_not_kept(kb) -> None:
    llm = ScriptedProvider(replies=["Tom Reyes"], base_model=True)
    result = await Agent(reasoning="qa", llm=llm, kb=kb).run("Who leads the support team?")
    assert not result.content.startswith("Tom Reyes") and result.abstained
    assert result.content.startswith("The closest the documents say:")


def test_names_apart_in_chinese_text_are_two_names() -> None:
    terms = question_terms("在中国大陆能不能从 Google Play 下载 Tessaro Connect 应用？")
    assert terms.names == ["Google", "Play", "Tessaro", "Connect"]
    assert question_terms("Is the Halo Mini Max, or the Aria 2 Pro, louder?").names == ["Halo Mini Max", "Aria 2 Pro"]


CAPS = [
    (
        "travel",
        "Travel policy",
        "## Hotels\n\nThe nightly hotel cap is 160 pounds. In Paris and Rome the cap is 240 pounds.",
    ),
    ("store", "Acme store", "Acme sells the Kettle 3. Kettle 3 firmware 1.4 was published on 2 May 2024."),
    ("offices", "Offices", "## Oslo\n\nThe Oslo office has 12 desks. The office manager is Ane Berg."),
]


@pytest.mark.parametrize(
    ("question", "span", "kept"),
    [
        ("What is the nightly hotel cap in Paris?", "160 pounds", False),  # the sentence naming Paris says 240
        ("When was the Kettle 3 launched?", "2 May 2024", False),  # a date of a firmware, not of a launch
        ("How many desks does the Bergen office have?", "12 desks", False),  # another office's desks
        ("What is the nightly hotel cap in Paris?", "240 pounds", True),
        ("Who is the office manager in Oslo?", "Ane Berg", True),  # Oslo is the heading above the sentence
    ],
)
async def test_a_span_needs_a_sentence_naming_what_is_asked_about(tmp_path, question, span, kept) -> None:
    kb = await _open(tmp_path / "kb", CAPS)
    try:
        llm = ScriptedProvider(replies=[span], base_model=True)
        result = await Agent(reasoning="qa", llm=llm, kb=kb).run(question)
    finally:
        await kb.close()
    assert result.content.startswith(span) is kept
    assert result.abstained is not kept


def test_a_name_followed_by_another_word_of_a_name_is_another_thing() -> None:
    terms = question_terms("Can the Halo charge a phone?")
    assert terms.names_elsewhere("A USB-C output lets the Halo Max charge a phone.") == ["Halo"]
    assert terms.names_elsewhere("The Halo cannot charge other devices.") == []
    # the next word being the question's own name is the same name, not a longer one
    assert question_terms("Does Maria Okafor lead support?").names_elsewhere("Maria Okafor leads support.") == []


async def test_a_span_under_the_heading_of_a_longer_name_is_not_kept(tmp_path) -> None:
    docs = [("kettles", "Kettles", "## Kettle\n\nWeight: 1.1 kg.\n\n## Kettle Max\n\nWeight: 2.4 kg.")]
    kb = await _open(tmp_path / "kb", docs)
    try:
        llm = ScriptedProvider(replies=["2.4 kg"], base_model=True)
        result = await Agent(reasoning="qa", llm=llm, kb=kb).run("How much does the Kettle weigh?")
    finally:
        await kb.close()
    assert not result.content.startswith("2.4 kg") and result.abstained
