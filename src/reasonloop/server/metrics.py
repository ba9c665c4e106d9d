"""Prometheus metrics: runs by status, run latency, LLM tokens, tool calls.

Each app has its own collector registry, so several apps in one process (tests, workers)
never collide. The run manager reports through an observer, which does a dictionary lookup
and a counter increment per event at most.
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from reasonloop.events import Answer, AnswerDelta, Event, Searched, ToolCall
from reasonloop.runs.manager import RunManager
from reasonloop.runs.models import TERMINAL, RunRecord

__all__ = ["CONTENT_TYPE_LATEST", "Metrics"]

_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
# The bucket boundaries the GenAI semantic conventions advise for these two histograms.
_TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
_GENAI_SECONDS_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)


class Metrics:
    """The server's metrics; :meth:`attach` subscribes them to a run manager."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.runs_finished = Counter("reasonloop_runs", "Runs that ended, by final status", ["status"], registry=r)
        self.runs_active = Gauge("reasonloop_runs_active", "Runs of this process by status", ["status"], registry=r)
        self.run_seconds = Histogram(
            "reasonloop_run_duration_seconds", "Run wall time, start to end", buckets=_LATENCY_BUCKETS, registry=r
        )
        self.first_token_seconds = Histogram(
            "reasonloop_run_first_answer_seconds",
            "Time from start to the first answer text",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.tokens = Counter("reasonloop_llm_tokens", "LLM tokens used by runs", ["kind"], registry=r)
        self.tool_calls = Counter("reasonloop_tool_calls", "Tool calls made by runs", ["tool"], registry=r)
        self.searches = Counter(
            "reasonloop_searches", "Searches runs made themselves, outside a tool round (no tool calls)", registry=r
        )
        # The OpenTelemetry GenAI client metrics, fed while tracing is on (observe_genai), as they go to OTLP.
        genai = ["gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model"]
        self.genai_tokens = Histogram(
            "gen_ai_client_token_usage",
            "Tokens used by each model call (gen_ai.client.token.usage)",
            [*genai, "gen_ai_token_type"],
            buckets=_TOKEN_BUCKETS,
            registry=r,
        )
        self.genai_seconds = Histogram(
            "gen_ai_client_operation_duration_seconds",
            "Duration of each model call (gen_ai.client.operation.duration)",
            genai,
            buckets=_GENAI_SECONDS_BUCKETS,
            registry=r,
        )
        # Each label's child, looked up once: ``labels()`` checks and converts its values and takes
        # a lock each time, some twenty calls, and a run reports several counts.
        self._prompt_tokens = self.tokens.labels("prompt")
        self._completion_tokens = self.tokens.labels("completion")
        self._finished: dict[str, Any] = {}
        self._tools: dict[str, Any] = {}
        self._first_seen: set[str] = set()
        self._manager: RunManager | None = None

    def attach(self, manager: RunManager) -> None:
        self._manager = manager
        manager.observers.append(self.observe)

    def observe(self, kind: str, record: RunRecord, event: Event | None) -> None:
        if kind == "event":
            if isinstance(event, AnswerDelta) and event.depth == 0 and record.run_id not in self._first_seen:
                self._first_seen.add(record.run_id)
                self.first_token_seconds.observe(time.time() - (record.started_at or record.created_at))
            elif isinstance(event, ToolCall):
                _child(self._tools, self.tool_calls, event.tool).inc()
            elif isinstance(event, Searched):
                self.searches.inc()
            elif isinstance(event, Answer) and event.depth == 0:
                self._prompt_tokens.inc(event.usage.prompt_tokens)
                self._completion_tokens.inc(event.usage.completion_tokens)
            return
        if record.status in TERMINAL:
            self._first_seen.discard(record.run_id)
            _child(self._finished, self.runs_finished, record.status).inc()
            if record.started_at:
                self.run_seconds.observe((record.ended_at or time.time()) - record.started_at)

    def observe_genai(
        self, operation: str, provider: str, model: str, input_tokens: int, output_tokens: int, seconds: float
    ) -> None:
        """One model call, as :class:`reasonloop.telemetry.otel.Tracing` reports it."""
        self.genai_tokens.labels(operation, provider, model, "input").observe(input_tokens)
        self.genai_tokens.labels(operation, provider, model, "output").observe(output_tokens)
        self.genai_seconds.labels(operation, provider, model).observe(seconds)

    def render(self) -> bytes:
        if self._manager is not None:
            for status, n in self._manager.active_counts().items():
                self.runs_active.labels(status).set(n)
        return generate_latest(self.registry)


def _child(children: dict[str, Any], metric: Counter, label: str) -> Any:
    """``metric.labels(label)``, kept in ``children`` after the first time."""
    child = children.get(label)
    if child is None:
        child = children[label] = metric.labels(label)
    return child
