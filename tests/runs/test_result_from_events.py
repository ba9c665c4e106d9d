"""A stored run's result is rebuilt from its events: its steps include the searches it made itself."""

from __future__ import annotations

from reasonloop.events import (
    Answer,
    Plan,
    PlannedStep,
    RunStarted,
    Searched,
    ToolCall,
    ToolResult,
    Usage,
)
from reasonloop.runs.models import RunRecord, result_from_events


def test_a_search_is_a_step_of_the_result_and_a_plan_is_none() -> None:
    events = [
        RunStarted(reasoning="decompose", question="q"),
        Plan(steps=[PlannedStep(id="1", tool="search", input="Who?")]),
        Searched(query="Who?", step="1", top_k=4, queries=["who is it"], evidence="[1] Ann", hits=1, hit_ids=["c1"]),
        ToolCall(call_id="c", tool="lookup", input={"key": "x"}, step="E1"),
        ToolResult(call_id="c", tool="lookup", output="x is 1"),
        Answer(text="Ann [1].", usage=Usage(llm_calls=2, searches=1)),
    ]
    result = result_from_events(RunRecord(run_id="r", reasoning="decompose", started_at=1.0), events)
    assert [(s.action, s.action_input, s.observation) for s in result.steps] == [
        ("docsearch", {"query": "Who?", "top_k": 4, "queries": ["who is it"]}, "[1] Ann"),
        ("lookup", {"key": "x"}, "x is 1"),
    ]
    assert (result.usage.searches, result.usage.tool_calls) == (1, 0)


async def test_a_run_stored_before_events_said_final_is_read_with_its_end_marked(tmp_path) -> None:
    import json

    from reasonloop.config import RunsSettings
    from reasonloop.events import AnswerDelta, number
    from reasonloop.runs.reading import RunFeed
    from reasonloop.runs.stores.sqlite.store import SQLiteRunStore

    store = SQLiteRunStore(RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite")))
    await store.open()
    try:
        await store.create_run(RunRecord(run_id="r", status="completed"))
        for seq, event in enumerate(
            [RunStarted(reasoning="qa", question="q"), AnswerDelta(text="a"), Answer(text="a")], 1
        ):
            old = json.loads(number(event, seq).to_json())
            del old["final"]  # written by an earlier version
            await store.append_event("r", event, json.dumps(old))
        deliveries = [d async for d in RunFeed(0, stored=store.follow("r"))]
    finally:
        await store.close()
    assert [json.loads(d.payload)["final"] for d in deliveries] == [False, False, True]
    assert [d.terminal for d in deliveries] == [False, False, True]
