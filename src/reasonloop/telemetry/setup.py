"""Turning tracing on: the OpenTelemetry SDK, OTLP exporters (HTTP or gRPC), ``OTEL_*`` variables.

``[telemetry]`` values win; what it leaves empty the SDK reads from the standard environment
(``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_PROTOCOL``, ``OTEL_EXPORTER_OTLP_HEADERS``,
``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``...); ``OTEL_TRACES_EXPORTER`` and
``OTEL_METRICS_EXPORTER`` may be ``console`` (or ``none`` for metrics). Spans leave in batches from a thread of
the SDK's, so an export never waits in a run; a collector that cannot be reached is logged once
(the exporters' own per-batch messages are silenced) and the runs go on.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from reasonloop.config import TelemetrySettings
from reasonloop.errors import ConfigError

__all__ = ["build", "wanted"]

log = logging.getLogger("reasonloop.telemetry")

_EXPORTER_LOGGERS = ("opentelemetry.exporter.otlp", "opentelemetry.sdk._shared_internal", "opentelemetry.sdk.metrics")


def wanted(settings: TelemetrySettings) -> bool:
    """Whether tracing is asked for: ``[telemetry] enabled``, or ``OTEL_TRACES_EXPORTER`` naming an
    exporter; ``OTEL_SDK_DISABLED=true`` wins over both."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return settings.enabled or os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() in ("otlp", "console")


def build(
    settings: TelemetrySettings,
    *,
    span_exporter: Any = None,
    metric_reader: Any = None,
    set_global: bool = True,
    batch: bool = False,
) -> Any:
    """A :class:`~reasonloop.telemetry.otel.Tracing` exporting as ``settings`` say.

    Args:
        span_exporter: Export spans here instead (tests: an in-memory exporter), as each ends
            unless ``batch``.
        batch: Hand ``span_exporter`` its spans in batches from the SDK's thread, as OTLP gets them.
        metric_reader: Read metrics with this instead of the periodic OTLP export.
        set_global: Also make its tracer provider the process's, so libraries that trace
            themselves (the MCP SDK) join the same traces (only when none is set yet).

    Raises:
        ConfigError: the ``telemetry`` extra is not installed.
    """
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError as exc:
        raise ConfigError(
            f"tracing needs the telemetry extra: pip install 'reasonloop[telemetry]' ({exc.name} is missing)"
        ) from None
    from reasonloop.telemetry.otel import Tracing

    resource = Resource.create({"service.name": settings.service_name} if settings.service_name else {})
    if not settings.service_name and "OTEL_SERVICE_NAME" not in os.environ:
        resource = resource.merge(Resource.create({"service.name": "reasonloop"}))
    provider = TracerProvider(resource=resource)
    if span_exporter is not None:
        provider.add_span_processor((BatchSpanProcessor if batch else SimpleSpanProcessor)(span_exporter))
    else:
        provider.add_span_processor(BatchSpanProcessor(_logged_once(_span_exporter(settings), "traces")))
    meter_provider = None
    if settings.metrics and os.environ.get("OTEL_METRICS_EXPORTER", "").strip().lower() != "none":
        reader = metric_reader or PeriodicExportingMetricReader(_logged_once(_metric_exporter(settings), "metrics"))
        meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    if set_global:
        from opentelemetry import trace

        if type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider":
            trace.set_tracer_provider(provider)
    return Tracing(provider, meter_provider, capture_content=_capture(settings))


def _capture(settings: TelemetrySettings) -> bool:
    env = os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "").strip().lower()
    return settings.capture_content or env == "true"


def _protocol(settings: TelemetrySettings) -> str:
    return settings.protocol or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "").strip() or "http/protobuf"


def _endpoint(settings: TelemetrySettings, signal: str) -> str | None:
    """``[telemetry] endpoint`` as each exporter takes it (None: the SDK reads the environment)."""
    if not settings.endpoint:
        return None
    if _protocol(settings) == "grpc":
        return settings.endpoint
    return settings.endpoint.rstrip("/") + f"/v1/{signal}"


def _span_exporter(settings: TelemetrySettings) -> Any:
    if os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "console" and not settings.enabled:
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    options = {"endpoint": _endpoint(settings, "traces"), "timeout": settings.export_timeout_s}
    try:
        if _protocol(settings) == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise ConfigError(f"the OTLP exporter is not installed: pip install 'reasonloop[telemetry]' ({exc})") from None
    return OTLPSpanExporter(**{k: v for k, v in options.items() if v is not None})


def _metric_exporter(settings: TelemetrySettings) -> Any:
    if os.environ.get("OTEL_METRICS_EXPORTER", "").strip().lower() == "console":
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

        return ConsoleMetricExporter()
    options = {"endpoint": _endpoint(settings, "metrics"), "timeout": settings.export_timeout_s}
    try:
        if _protocol(settings) == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    except ImportError as exc:
        raise ConfigError(f"the OTLP exporter is not installed: pip install 'reasonloop[telemetry]' ({exc})") from None
    return OTLPMetricExporter(**{k: v for k, v in options.items() if v is not None})


class _Silenced(logging.Filter):
    """Drops the exporters' per-batch messages: the first failure is logged once, by us."""

    def filter(self, record: logging.LogRecord) -> bool:
        return False


def _logged_once(exporter: Any, what: str) -> Any:
    """``exporter`` whose first failed export is logged (as a warning, once) and later ones not."""
    # A logger's filters do not see its children's records: each exporter module's own logger
    # (created when the exporter was imported, just before) gets the filter.
    names = [n for n in list(logging.root.manager.loggerDict) if n.startswith(_EXPORTER_LOGGERS)]
    for name in names:
        target = logging.getLogger(name)
        if not any(isinstance(f, _Silenced) for f in target.filters):
            target.addFilter(_Silenced())
    export = exporter.export
    warned = False

    def export_logging_once(batch: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            result = export(batch, *args, **kwargs)
        except Exception as exc:
            warn(f"{type(exc).__name__}: {exc}")
            raise
        if getattr(result, "name", "") == "FAILURE":
            warn("the collector refused them or could not be reached")
        return result

    def warn(reason: str) -> None:
        nonlocal warned
        if not warned:
            warned = True
            log.warning("cannot export %s (%s); runs go on, later failures are not logged", what, reason)

    exporter.export = export_logging_once
    return exporter
