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
