"""The spans and metrics of runs, per the OpenTelemetry GenAI semantic conventions.

A :class:`Tracing` holds a tracer provider (and a meter provider) of its own; the hooks call it
only while it is active (:data:`reasonloop.telemetry.tracing`):

- :meth:`Tracing.run` wraps a run's event stream in an ``invoke_agent`` span, current while the
  strategy works, so the model and tool calls it makes (in concurrent tasks too) are its children;
- :meth:`Tracing.chat` opens a ``chat`` span per model call, with the token usage and the
  ``gen_ai.client.*`` metrics at its end;
- :meth:`Tracing.tool` runs one tool call inside an ``execute_tool`` span (current while it runs,
  so a sub-agent's spans nest below it).

Prompt and completion text, tool arguments and results are recorded only with
``capture_content`` (they can hold private data).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.propagate import extract
from opentelemetry.trace import SpanKind, Status, StatusCode

from reasonloop.events import Answer, ErrorEvent, Event

__all__ = ["ChatCall", "GenAIObserver", "Tracing"]

_T = TypeVar("_T")

GenAIObserver = Callable[[str, str, str, int, int, float], None]
"""``(operation, provider, model, input_tokens, output_tokens, seconds)`` after each model call
(the server's ``/metrics`` listens)."""

_CONTENT_CHARS = 8000
"""Text kept per recorded message or tool result when content is captured."""


class Tracing:
    """Active tracing: where spans and metrics go.

    Args:
        tracer_provider: An SDK tracer provider with its processors set.
        meter_provider: Where the GenAI metrics go (None: no OTLP metrics).
        capture_content: Record prompts, completions, tool arguments and results.
    """

    def __init__(self, tracer_provider: Any, meter_provider: Any = None, *, capture_content: bool = False) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.tracer = tracer_provider.get_tracer("reasonloop")
        self.capture_content = capture_content
        self.observers: list[GenAIObserver] = []
        self._tokens = self._duration = None
        if meter_provider is not None:
            meter = meter_provider.get_meter("reasonloop")
            self._tokens = meter.create_histogram(
                "gen_ai.client.token.usage", unit="{token}", description="Tokens used by each model call"
            )
            self._duration = meter.create_histogram(
                "gen_ai.client.operation.duration", unit="s", description="Duration of each model call"
            )

    # -- runs ------------------------------------------------------------------------------------
    async def run(
        self,
        events: AsyncIterator[Event],
        *,
        run_id: str,
        strategy: str,
        agent: str = "",
        conversation_id: str | None = None,
        tenant: str | None = None,
        parent: Mapping[str, str] | None = None,
    ) -> AsyncIterator[Event]:
        """``events`` inside the run's ``invoke_agent`` span; ``parent``: the caller's trace headers."""
        parent_context = extract(parent) if parent else None
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent or strategy,
            "reasonloop.run.id": run_id,
            "reasonloop.strategy": strategy,
        }
        if conversation_id:
            attributes["gen_ai.conversation.id"] = conversation_id
        if tenant:
            attributes["reasonloop.tenant"] = tenant
        span = self.tracer.start_span(
            f"invoke_agent {agent or strategy}", context=parent_context, kind=SpanKind.INTERNAL, attributes=attributes
        )
        current = trace.set_span_in_context(span, parent_context)
        ended = False
        try:
            while True:
                token = otel_context.attach(current)
                try:
                    event = await events.__anext__()
                except StopAsyncIteration:
                    break
                finally:
                    otel_context.detach(token)
                if event.depth == 0 and isinstance(event, Answer):
                    ended = True
                    span.set_attributes(
                        {
                            "reasonloop.stop_reason": event.stop_reason,
                            "gen_ai.usage.input_tokens": event.usage.prompt_tokens,
                            "gen_ai.usage.output_tokens": event.usage.completion_tokens,
                        }
                    )
                    if self.capture_content:
                        span.set_attribute("gen_ai.output.messages", _messages([("assistant", event.text)]))
                elif event.depth == 0 and isinstance(event, ErrorEvent):
                    ended = True
                    span.set_attributes({"error.type": event.code, "reasonloop.stop_reason": "error"})
                    span.set_status(Status(StatusCode.ERROR, event.message))
                yield event
        finally:
            if not ended:  # stopped (cancelled or closed) before its end
                span.set_attribute("reasonloop.stop_reason", "stopped")
            aclose = getattr(events, "aclose", None)
            try:
                if aclose is not None:
                    await aclose()
            finally:
                span.end()

    # -- model calls -----------------------------------------------------------------------------
    def chat(self, llm: Any, messages: Sequence[Any], tools: Sequence[Any] | None) -> ChatCall:
        """A ``chat`` span for one model call, started now (end it with :meth:`ChatCall.end`)."""
        return ChatCall(self, llm, messages, tools)

    # -- tool calls ------------------------------------------------------------------------------
    async def tool(self, name: str, call_id: str, arguments: Any, work: Awaitable[_T], *, kind: str = "function") -> _T:
        """Await ``work`` (the tool call) inside its ``execute_tool`` span."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": kind,
        }
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = _json(arguments)
        span = self.tracer.start_span(f"execute_tool {name}", kind=SpanKind.INTERNAL, attributes=attributes)
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            result = await work
        except BaseException as exc:
            if isinstance(exc, Exception):
                span.set_attribute("error.type", type(exc).__qualname__)
                span.set_status(Status(StatusCode.ERROR, str(exc)))
            raise
        else:
            error = getattr(result, "error", None)
            if isinstance(error, Mapping):
                span.set_attribute("error.type", str(error.get("code") or error.get("type") or "tool.error"))
                span.set_status(Status(StatusCode.ERROR, str(error.get("error", ""))))
            if self.capture_content and isinstance(getattr(result, "text", None), str):
                span.set_attribute("gen_ai.tool.call.result", result.text[:_CONTENT_CHARS])  # type: ignore[attr-defined]
            return result
        finally:
            otel_context.detach(token)
            span.end()

    def approval(self, decided: Any) -> None:
        """Record a decision on a tool call that waited for approval (an
        :class:`~reasonloop.events.ApprovalDecided`) on the current span (the call's
        ``execute_tool``), as attributes and as a ``reasonloop.approval`` span event: who (key,
        tenant, principal, surface), when, the decision, and the arguments asked and run (their
        SHA-256, which the run's events let an auditor check; the arguments themselves only when
        content is captured)."""
        span = trace.get_current_span()
        if not span.is_recording():
            return
        by = decided.by or {}
        attributes: dict[str, Any] = {
            "reasonloop.approval.id": decided.approval_id,
            "reasonloop.approval.decision": decided.decision,
            "reasonloop.approval.decided_at": decided.decided_at,
            "reasonloop.approval.by.via": str(by.get("via") or ""),
            "reasonloop.approval.arguments_asked.sha256": _digest(decided.arguments_asked),
        }
        for name in ("key", "tenant", "principal"):
            if by.get(name) is not None:
                attributes[f"reasonloop.approval.by.{name}"] = str(by[name])
        if decided.arguments_run is not None:
            attributes["reasonloop.approval.arguments_run.sha256"] = _digest(decided.arguments_run)
        if decided.reason:
            attributes["reasonloop.approval.reason"] = decided.reason[:_CONTENT_CHARS]
        if self.capture_content:
            attributes["reasonloop.approval.arguments_asked"] = _json(decided.arguments_asked)
            if decided.arguments_run is not None:
                attributes["reasonloop.approval.arguments_run"] = _json(decided.arguments_run)
        span.set_attributes(attributes)
        span.add_event("reasonloop.approval", attributes)

    def shutdown(self) -> None:
        """Flush what is buffered and stop exporting."""
        try:
            self.tracer_provider.shutdown()
        finally:
            if self.meter_provider is not None:
                self.meter_provider.shutdown()


class ChatCall:
    """One model call's ``chat`` span and metrics."""

    __slots__ = ("model", "provider", "span", "started", "tracing")

    def __init__(self, tracing: Tracing, llm: Any, messages: Sequence[Any], tools: Sequence[Any] | None) -> None:
        self.tracing = tracing
        settings = getattr(llm, "settings", None)
        self.model = str(getattr(settings, "model", "") or getattr(llm, "model", "") or "unknown")
        self.provider = str(getattr(llm, "id", "") or getattr(settings, "provider", "") or "unknown")
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self.provider,
            "gen_ai.request.model": self.model,
        }
        if tools:
            attributes["reasonloop.tools.offered"] = len(tools)
        if tracing.capture_content:
            attributes["gen_ai.input.messages"] = _messages(
                [(str(getattr(m, "role", "")), str(getattr(m, "content", "") or "")) for m in messages]
            )
        self.span = tracing.tracer.start_span(f"chat {self.model}", kind=SpanKind.CLIENT, attributes=attributes)
        self.started = time.perf_counter()

    def end(
        self, input_tokens: int, output_tokens: int, finish_reason: str, text: str, error: BaseException | None
    ) -> None:
        seconds = time.perf_counter() - self.started
        span = self.span
        span.set_attributes(
            {
                "gen_ai.usage.input_tokens": input_tokens,
                "gen_ai.usage.output_tokens": output_tokens,
                "gen_ai.response.finish_reasons": [finish_reason],
            }
        )
        if self.tracing.capture_content and text:
            span.set_attribute("gen_ai.output.messages", _messages([("assistant", text)]))
        if isinstance(error, Exception):
            code = getattr(error, "code", None)
            span.set_attribute("error.type", str(code or type(error).__qualname__))
            span.set_status(Status(StatusCode.ERROR, str(error)))
        span.end()
        tracing = self.tracing
        base = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self.provider,
            "gen_ai.request.model": self.model,
        }
        if tracing._tokens is not None and tracing._duration is not None:
            tracing._tokens.record(input_tokens, {**base, "gen_ai.token.type": "input"})
            tracing._tokens.record(output_tokens, {**base, "gen_ai.token.type": "output"})
            timed = base if not isinstance(error, Exception) else {**base, "error.type": type(error).__qualname__}
            tracing._duration.record(seconds, timed)
        for observe in tracing.observers:
            observe("chat", self.provider, self.model, input_tokens, output_tokens, seconds)


def _messages(items: Sequence[tuple[str, str]]) -> str:
    """Messages as the GenAI conventions record them: JSON, each with its role and text parts."""
    return json.dumps(
        [{"role": role, "parts": [{"type": "text", "content": text[:_CONTENT_CHARS]}]} for role, text in items],
        ensure_ascii=False,
    )


def _digest(value: Any) -> str:
    """SHA-256 of ``value`` as canonical JSON (keys sorted, no spaces)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)[:_CONTENT_CHARS]
    except (TypeError, ValueError):
        return str(value)[:_CONTENT_CHARS]
