"""Usage counts what happened, in every ending: searches the strategy makes itself, calls cut off
before the provider reported usage, runs that fail or are stopped."""

from __future__ import annotations

import asyncio

from reasonloop.agents import Agent
from reasonloop.agents.runner import AgentRunner
from reasonloop.config import LLMSettings, RunsSettings, Settings
from reasonloop.events import AnswerDelta, ErrorEvent
from reasonloop.llm.base import TextDelta
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.runs.manager import RunManager
from reasonloop.runs.models import RunRequest
from reasonloop.runs.stores.sqlite.store import SQLiteRunStore
from tests.reasoning.helpers import FakeRetriever, collect_events
from tests.reasoning.test_decompose import reply as decompose_reply


async def test_qa_counts_its_search_as_a_search_not_a_tool_call(retriever: FakeRetriever) -> None:
    llm = ScriptedProvider(replies=["The tower is 330 metres tall [1]."])
    result = await Agent("qa", llm=llm, kb=retriever).run("How tall is the Eiffel Tower?")
    assert (result.usage.searches, result.usage.tool_calls, result.usage.llm_calls) == (1, 0, 1)


async def test_qa_without_a_knowledge_base_made_no_tool_call() -> None:
    result = await Agent("qa", llm=ScriptedProvider(replies=["unused"])).run("How tall is the tower?")
    assert result.usage.tool_calls == result.usage.searches == 0


async def test_decompose_counts_one_search_per_sub_question() -> None:
    llm = ScriptedProvider(replies=decompose_reply)
    result = await Agent("decompose", llm=llm, kb=FakeRetriever()).run("Compare France and Germany")
    assert result.usage.searches == 3 and result.usage.tool_calls == 0  # the three sub-questions' searches


class _Stalls(ScriptedProvider):
    """Streams a few words, then goes silent without ever reporting usage."""

    async def _stream(self, request):  # type: ignore[no-untyped-def]
        for word in ("The ", "tower ", "is "):
            yield TextDelta(word)
        await asyncio.sleep(30)
        yield TextDelta("never")


def _stalling() -> _Stalls:
    return _Stalls(LLMSettings(provider="scripted", idle_timeout_s=0.1, max_retries=0), replies=["unused"])


async def test_a_call_cut_off_by_a_stall_still_counts_its_tokens(retriever: FakeRetriever) -> None:
    events = await collect_events(Agent("qa", llm=_stalling(), kb=retriever), "How tall is the Eiffel Tower?")
    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.code == "llm.timeout"
    assert "".join(e.text for e in events if isinstance(e, AnswerDelta)) == "The tower is "
    usage = error.usage
    assert usage.llm_calls == 1 and usage.searches == 1 and usage.tool_calls == 0
    assert usage.prompt_tokens > 20  # the evidence and the question were read
    assert usage.completion_tokens == 3


async def test_the_python_result_of_a_failed_run_has_its_usage(retriever: FakeRetriever) -> None:
    result = await Agent("qa", llm=_stalling(), kb=retriever).run("How tall is the Eiffel Tower?")
    assert result.stop_reason == "error" and result.usage.completion_tokens == 3


async def _manager(tmp_path, llm) -> tuple[RunManager, SQLiteRunStore]:
    store = SQLiteRunStore(RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite")))
    await store.open()
    manager = RunManager(store, AgentRunner(Settings(), kb=None, llm=llm))
    await manager.open()
    return manager, store


async def test_a_stopped_run_reports_what_it_consumed(tmp_path) -> None:
    llm = ScriptedProvider(replies=["one two three four five six seven eight nine ten"], chunk_size=4, delay_s=0.2)
    manager, store = await _manager(tmp_path, llm)
    try:
        record = await manager.start(RunRequest(question="Hello!", reasoning="qa"))
        feed = await manager.read(record.run_id)
        async for event in feed.events():
            if isinstance(event, AnswerDelta):
                break
        await manager.stop(record.run_id)
        _, result = await manager.result(record.run_id)
        assert result.stop_reason == "stopped" and result.content
        assert result.usage.llm_calls == 1
        assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
    finally:
        await manager.close()
        await store.close()


async def test_a_failed_run_through_the_run_manager_reports_its_usage(tmp_path) -> None:
    manager, store = await _manager(tmp_path, _stalling())
    try:
        record = await manager.start(RunRequest(question="Hello!", reasoning="qa"))
        async for _ in (await manager.read(record.run_id)).events():
            pass
        record, result = await manager.result(record.run_id)
        assert record.status == "failed" and result.error and result.error["code"] == "llm.timeout"
        assert result.usage.llm_calls == 1 and result.usage.completion_tokens == 3
    finally:
        await manager.close()
        await store.close()
