"""Events: the one wire format every surface shares."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import pytest
from pydantic import ValidationError

from reasonloop.events import (
    EVENT_SCHEMA,
    Answer,
    AnswerDelta,
    Citation,
    ErrorEvent,
    Event,
    EventStamper,
    Plan,
    PlannedStep,
    Progress,
    RunMeta,
    RunResult,
    RunStarted,
    Searched,
    Step,
    Thought,
    ToolCall,
    ToolResult,
    Usage,
    event_adapter,
    event_list_adapter,
    number,
)

CITATION = Citation(marker=1, chunk_id="c1", document_id="d1", source="docs/a.md", page=2, start=10, end=40, quote="q")

EVERY_EVENT = [
    RunStarted(reasoning="react", question="why?"),
    Progress(message="retrieving"),
    Thought(text="look it up"),
    Plan(
        steps=[
            PlannedStep(id="E1", tool="web", input="x", reason="find x"),
            PlannedStep(id="E2", tool="web", input="#E1 y", depends_on=["E1"]),
        ],
        attempt=2,
    ),
    ToolCall(call_id="call_1", tool="docsearch", input={"query": "x", "top_k": 3}, step="E1"),
    ToolResult(call_id="call_1", tool="docsearch", output="found", citations=[CITATION]),
    ToolResult(call_id="call_2", error={"tool": "web", "error": "boom", "type": "RuntimeError"}),
    Searched(query="x", step="1", top_k=4, hits=1, hit_ids=["c1"], evidence="[1] a", citations=[CITATION]),
    AnswerDelta(text="Par"),
    Answer(text="Paris [1]", citations=[CITATION], usage=Usage(llm_calls=2, prompt_tokens=5), stop_reason="max_rounds"),
    ErrorEvent(code="llm.timeout", message="no answer", depth=1, parent_call_id="call_9"),
]


@pytest.mark.parametrize("event", EVERY_EVENT, ids=lambda e: e.type)
def test_every_event_round_trips_through_json(event):
    stamped = EventStamper("run-1")(event)
    text = event_adapter.dump_json(stamped)
    back = event_adapter.validate_json(text)
    assert type(back) is type(event)
    assert back == stamped
    data = json.loads(text)
    assert data["type"] == event.type
    assert data["run_id"] == "run-1"
    assert data["seq"] == 1
    assert isinstance(data["ts"], float)


def test_event_types_are_distinct():
    assert len({e.type for e in EVERY_EVENT}) == len({type(e) for e in EVERY_EVENT})


def test_unknown_type_and_unknown_field_are_rejected():
    with pytest.raises(ValidationError):
        event_adapter.validate_python({"type": "nope", "text": "x"})
    with pytest.raises(ValidationError):
        event_adapter.validate_python({"type": "thought", "text": "x", "surprise": 1})


def test_missing_required_field_is_rejected():
    with pytest.raises(ValidationError):
        event_adapter.validate_python({"type": "tool_call", "tool": "x"})


def test_stamper_numbers_events_from_one_without_gaps():
    stamp = EventStamper("run-7")
    events = [stamp(Thought(text=str(i))) for i in range(5)]
    assert [e.seq for e in events] == [1, 2, 3, 4, 5]
    assert {e.run_id for e in events} == {"run-7"}


def test_stamper_resumes_after_start_and_keeps_nested_run_ids():
    stamp = EventStamper("parent", start=10)
    own = stamp(Progress(message="a"))
    nested = stamp(Thought(text="b", run_id="child", depth=1, parent_call_id="call_1"))
    assert (own.seq, own.run_id) == (11, "parent")
    assert (nested.seq, nested.run_id, nested.depth) == (12, "child", 1)


def test_usage_accumulates_and_totals():
    total = Usage()
    total.add(Usage(llm_calls=1, prompt_tokens=10, completion_tokens=3, tool_calls=1))
    total.add(Usage(llm_calls=2, prompt_tokens=5, completion_tokens=4))
    assert total == Usage(llm_calls=3, prompt_tokens=15, completion_tokens=7, tool_calls=1)
    assert total.total_tokens == 22


def test_run_result_round_trips_and_defaults():
    result = RunResult(
        content="Paris",
        citations=[CITATION],
        steps=[Step(action="docsearch", action_input={"query": "capital"}, observation="Paris is...")],
        usage=Usage(llm_calls=1),
        stop_reason="max_tool_calls",
        meta=RunMeta(run_id="r", reasoning="react", started_at=1.0, ended_at=2.5),
    )
    assert RunResult.model_validate_json(result.model_dump_json()) == result
    bare = RunResult(content="", meta=RunMeta(run_id="r", reasoning="qa", started_at=0.0))
    assert (bare.stop_reason, bare.citations, bare.steps, bare.error) == ("final", [], [], None)


def test_run_result_rejects_unknown_stop_reason():
    with pytest.raises(ValidationError):
        RunResult(content="x", stop_reason="bored", meta=RunMeta(run_id="r", reasoning="qa", started_at=0.0))


@pytest.mark.parametrize("event", EVERY_EVENT, ids=lambda e: e.type)
def test_to_json_and_to_dict_are_the_wire_format(event):
    assert json.loads(event.to_json()) == event.to_dict() == json.loads(event_adapter.dump_json(event))
    assert event_adapter.validate_python(event.to_dict()) == event


def test_events_are_keyword_only():
    with pytest.raises(TypeError):
        Thought("positional text")  # type: ignore[misc]


def test_the_wire_format_is_stable():
    # Stores and clients keep this JSON: a change here is a breaking change, not a refactor.
    event = ToolResult(
        call_id="call_1", tool="docsearch", output="found", citations=[CITATION], run_id="r", seq=3, ts=1.5
    )
    assert event.to_json() == (
        '{"run_id":"r","seq":3,"ts":1.5,"depth":0,"parent_call_id":null,"final":false,"type":"tool_result",'
        '"call_id":"call_1","tool":"docsearch","output":"found","error":null,"citations":[{"marker":1,'
        '"chunk_id":"c1","document_id":"d1","source":"docs/a.md","title":null,"page":2,"start":10,"end":40,'
        '"quote":"q","chunk_start":null,"chunk_end":null,"score":null}]}'
    )
    answer = Answer(text="x", usage=Usage(llm_calls=1), run_id="r", seq=4, ts=2.0)
    assert json.loads(answer.to_json())["usage"] == {
        "llm_calls": 1,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "tool_calls": 0,
        "searches": 0,
    }


def test_a_plan_and_a_search_are_data_on_the_wire():
    plan = Plan(
        steps=[
            PlannedStep(id="1", tool="search", input="Who wrote it?"),
            PlannedStep(id="2", tool="search", input="Where does #1 work?", depends_on=["1"]),
        ]
    )
    data = json.loads(plan.to_json())
    assert data["type"] == "plan" and data["attempt"] == 1
    assert [(s["id"], s["tool"], s["input"], s["depends_on"]) for s in data["steps"]] == [
        ("1", "search", "Who wrote it?", []),
        ("2", "search", "Where does #1 work?", ["1"]),
    ]
    searched = json.loads(Searched(query="q", hits=2, hit_ids=["a", "b"]).to_json())
    assert (searched["type"], searched["hits"], searched["hit_ids"]) == ("searched", 2, ["a", "b"])


def test_only_the_run_s_own_end_is_final():
    stamp = EventStamper("run-1")
    events = [
        stamp(RunStarted(reasoning="qa", question="q")),
        stamp(Answer(text="sub", depth=1, parent_call_id="call_1")),  # a sub-agent's answer ends only its sub-run
        stamp(ErrorEvent(code="x", message="y", depth=1)),
        stamp(AnswerDelta(text="a")),
        stamp(Answer(text="a")),
    ]
    assert [e.final for e in events] == [False, False, False, False, True]
    assert json.loads(events[-1].to_json())["final"] is True
    assert number(ErrorEvent(code="run.error", message="m"), 9).final is True
    assert number(Thought(text="t"), 9).final is False


def test_run_started_says_the_event_schema():
    assert json.loads(RunStarted(reasoning="qa", question="q").to_json())["event_schema"] == EVENT_SCHEMA == 3


def test_searches_are_counted_apart_from_tool_calls():
    total = Usage(tool_calls=1)
    total.add(Usage(searches=2, tool_calls=1))
    assert (total.tool_calls, total.searches) == (2, 2)
    total.add(Usage(searches=5, tool_calls=5, llm_calls=1), tool_calls=False)  # a sub-agent's are its own
    assert (total.tool_calls, total.searches, total.llm_calls) == (2, 2, 1)
    assert total.copy() == total


def _events_section() -> str:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "server.md").read_text(encoding="utf-8")
    return text.split("\n## Events\n", 1)[1].split("\n## ", 1)[0]


def test_every_event_type_and_field_is_documented_with_the_schema_version():
    import dataclasses
    import re
    from typing import get_args

    from reasonloop.events import Event, Usage, _EventBase

    section = _events_section()
    assert f"`event_schema: {EVENT_SCHEMA}`" in section
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `(\w+)` \|.*$", section, re.MULTILINE)}
    base = {f.name for f in dataclasses.fields(_EventBase)}
    for name in base | {"type"}:
        assert name in rows, f"common field {name!r} is not documented"
    classes = get_args(get_args(Event)[0])
    for cls in classes:
        kind = cls.__dataclass_fields__["type"].default
        assert kind in rows, f"event type {kind!r} is not documented"
        for field in {f.name for f in dataclasses.fields(cls)} - base - {"type"}:
            assert f"`{field}`" in rows[kind], f"field {field!r} of {kind!r} is not documented"
    documented = set(rows) - base - {"type", "field"}
    assert documented == {cls.__dataclass_fields__["type"].default for cls in classes}  # nothing that is not sent
    for field in [f.name for f in dataclasses.fields(PlannedStep)] + [f.name for f in dataclasses.fields(Usage)]:
        assert f"`{field}`" in section, f"{field!r} is not documented"


STORED = Path(__file__).parent / "data" / "events_schema3.jsonl"
"""One event of every kind as event schema 3 writes it (with every field set), kept as run stores keep them."""


def test_events_stored_in_schema_3_read_back_as_they_were_written():
    # Run stores (SQLite, Redis) keep these lines for as long as a run is kept: later code reads them.
    lines = STORED.read_text(encoding="utf-8").splitlines()
    events = [event_adapter.validate_json(line) for line in lines]
    kinds = {cls.__dataclass_fields__["type"].default for cls in get_args(get_args(Event)[0])}
    assert sorted(e.type for e in events) == sorted(kinds)  # every kind, once
    for line, event in zip(lines, events, strict=True):
        stored = json.loads(line)
        assert {name: value for name, value in event.to_dict().items() if name in stored} == stored, event.type
    assert event_list_adapter.validate_json(f"[{','.join(lines)}]") == events
