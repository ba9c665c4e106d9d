"""OpenTelemetry traces and metrics of runs, named per the GenAI semantic conventions. Off by default.

:data:`tracing` is the one hook the hot paths read: ``None`` while tracing is off, so a run pays a
module attribute read and a ``None`` check per step and nothing else (``benchmarks/overhead.py``).
:func:`configure` turns it on from ``[telemetry]`` or the standard ``OTEL_*`` environment variables
and needs the ``telemetry`` extra (the OpenTelemetry SDK and OTLP exporters)::

    from reasonloop import telemetry
    telemetry.configure(load_settings())     # a no-op while [telemetry] and OTEL_* leave it off
    ...
    telemetry.shutdown()                      # flushes what is still buffered

Spans: ``invoke_agent {strategy}`` per run, with ``chat {model}`` per model call and
``execute_tool {tool}`` per tool call (retrieval included) below it; an incoming W3C
``traceparent`` (see :func:`trace_headers`) makes the run a child of the caller's trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reasonloop.config import Settings
    from reasonloop.telemetry.otel import Tracing

__all__ = ["configure", "shutdown", "trace_headers", "tracing"]

tracing: Tracing | None = None
"""The active tracing, or ``None`` when it is off (read on every step: keep it a plain global)."""

_HEADERS = ("traceparent", "tracestate")


def trace_headers(headers: Mapping[str, str] | None) -> dict[str, str] | None:
    """The W3C trace-context headers among ``headers`` (``traceparent``, ``tracestate``), or None.

    Kept even while tracing is off: a run started now may be traced by another instance.
    """
    if not headers:
        return None
    found = {name: value for name in _HEADERS if (value := headers.get(name))}
    return found if "traceparent" in found else None


def configure(settings: Settings, **options: Any) -> Tracing | None:
    """Turn tracing on when ``[telemetry] enabled`` or ``OTEL_TRACES_EXPORTER`` asks for it.

    ``options`` go to :func:`reasonloop.telemetry.setup.build` (tests pass an in-memory
    ``span_exporter``). Returns the active tracing, or None when it stays off.

    Raises:
        ConfigError: tracing is asked for without the ``telemetry`` extra installed.
    """
    global tracing
    from reasonloop.telemetry.setup import build, wanted

    if not wanted(settings.telemetry) and not options:
        return None
    shutdown()
    tracing = build(settings.telemetry, **options)
    return tracing


def shutdown() -> None:
    """Flush and stop the active tracing (nothing when it is off)."""
    global tracing
    active, tracing = tracing, None
    if active is not None:
        active.shutdown()
