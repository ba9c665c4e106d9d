"""Metrics as the run manager reports to them: counts by label, first answers once per run."""

from __future__ import annotations

import time

from prometheus_client.parser import text_string_to_metric_families

from reasonloop.events import Answer, AnswerDelta, Searched, ToolCall, Usage
from reasonloop.runs.models import RunRecord
from reasonloop.server.metrics import Metrics


def samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = metrics.render().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def record(run_id: str, status: str) -> RunRecord:
    now = time.time()
    return RunRecord(run_id=run_id, question="q", status=status, started_at=now - 1, ended_at=now)


def test_counts_by_label_and_first_answers_once_per_run():
    metrics = Metrics()
    for run_id, status, tool in (
        ("run_a", "completed", "search"),
        ("run_b", "failed", "search"),
        ("run_c", "completed", "fetch"),
    ):
        running = record(run_id, "running")
        metrics.observe("event", running, ToolCall(tool=tool, call_id="c1", input={}))
        metrics.observe("event", running, Searched(query="q"))  # a strategy's own search: no tool call
        for text in ("Hel", "lo"):
            metrics.observe("event", running, AnswerDelta(text=text))
        metrics.observe("event", running, Answer(text="Hello", usage=Usage(prompt_tokens=7, completion_tokens=2)))
        metrics.observe("status", record(run_id, status), None)
    got = samples(metrics)
    assert got[("reasonloop_runs_total", (("status", "completed"),))] == 2
    assert got[("reasonloop_runs_total", (("status", "failed"),))] == 1
    assert got[("reasonloop_tool_calls_total", (("tool", "search"),))] == 2
    assert got[("reasonloop_tool_calls_total", (("tool", "fetch"),))] == 1
    assert got[("reasonloop_searches_total", ())] == 3
    assert got[("reasonloop_llm_tokens_total", (("kind", "prompt"),))] == 21
    assert got[("reasonloop_llm_tokens_total", (("kind", "completion"),))] == 6
    assert got[("reasonloop_run_first_answer_seconds_count", ())] == 3  # one per run, not one per delta
    assert got[("reasonloop_run_duration_seconds_count", ())] == 3
    assert metrics._first_seen == set()  # ended runs are forgotten


def test_a_sub_agents_text_is_not_the_runs_first_answer():
    metrics = Metrics()
    running = record("run_a", "running")
    running.started_at = time.time() - 5
    metrics.observe("event", running, AnswerDelta(text="from a sub-agent", depth=1))
    assert samples(metrics)[("reasonloop_run_first_answer_seconds_count", ())] == 0
    metrics.observe("event", running, AnswerDelta(text="the run's own"))
    got = samples(metrics)
    assert got[("reasonloop_run_first_answer_seconds_count", ())] == 1
    assert got[("reasonloop_run_first_answer_seconds_sum", ())] >= 5
