"""OpenTelemetry export of runs and their LLM calls (the ``otel`` extra), only when configured.

When ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set, each recorded run is a
span (``pagemind.run``) and each of its LLM calls a child span with the GenAI semantic-convention attributes
(``gen_ai.operation.name``, ``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.usage.input_tokens``,
``gen_ai.usage.output_tokens``), exported over OTLP/HTTP by the SDK (its other ``OTEL_*`` variables apply:
headers, service name...). A call's span is made when its reply is recorded, with its real start and end times,
so calls made in worker threads nest under their run whatever thread they ran on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from .llm.usage import TraceEvent

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


class Telemetry:
    """Makes the spans of runs and LLM calls with one tracer (from :func:`from_environment` or a test's)."""

    def __init__(self, tracer: Any, model: str, provider: str) -> None:
        self.tracer = tracer
        self.model = model
        self.provider = provider

    def run_span(self, run_id: str, kind: str, method: str | None) -> Any:
        return self.tracer.start_span("pagemind.run", attributes={
            "pagemind.run.id": run_id, "pagemind.run.kind": kind, "pagemind.method": method or ""})

    def call_span(self, parent: Any, event: TraceEvent) -> None:
        """One finished LLM call as a child span of ``parent`` (its run's span)."""
        from opentelemetry import trace

        end = time.time_ns()
        start = end - int(max(0.0, event.seconds) * 1e9)
        span = self.tracer.start_span(
            f"chat {self.model}", context=trace.set_span_in_context(parent), start_time=start,
            kind=trace.SpanKind.CLIENT,
            attributes={"gen_ai.operation.name": "chat", "gen_ai.provider.name": self.provider,
                        "gen_ai.request.model": self.model, "gen_ai.usage.input_tokens": event.prompt_tokens,
                        "gen_ai.usage.output_tokens": event.completion_tokens, "pagemind.role": event.role,
                        "pagemind.cached": event.cached})
        span.end(end_time=end)

    @staticmethod
    def end(span: Any, status: str, error: str | None = None) -> None:
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute("pagemind.run.status", status)
        if error:
            span.set_status(Status(StatusCode.ERROR, error))
        span.end()


_PROVIDER: Any = None  # one SDK tracer provider per process (its exporter thread and connection)


def from_environment(model: str, provider: str, env: Mapping[str, str] | None = None) -> Telemetry | None:
    """A :class:`Telemetry` exporting over OTLP/HTTP when an endpoint variable is set, else None. A set endpoint
    without the ``otel`` extra installed is an error that says so."""
    env = os.environ if env is None else env
    if not any(env.get(name) for name in ENDPOINT_VARIABLES):
        return None
    global _PROVIDER
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as err:
        from .errors import ConfigError

        raise ConfigError(f"OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK is not installed ({err}); "
                          "pip install 'pagemind[otel]'") from None
    if _PROVIDER is None:
        _PROVIDER = TracerProvider(resource=Resource.create({"service.name": env.get("OTEL_SERVICE_NAME", "pagemind")}))
        _PROVIDER.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return Telemetry(_PROVIDER.get_tracer("pagemind"), model, provider)


def flush() -> None:
    """Export the spans still queued (the CLI calls it before it exits)."""
    if _PROVIDER is not None:
        _PROVIDER.force_flush()
