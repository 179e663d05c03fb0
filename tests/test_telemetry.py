"""OpenTelemetry export: with OTEL_EXPORTER_OTLP_ENDPOINT set, a run and its LLM calls reach a real OTLP/HTTP
receiver on loopback as nested spans with the GenAI attributes; unset, nothing is exported."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pagemind import ScriptedLLM
from pagemind.api import Pagemind

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (scripts/install.sh installs it)")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from pagemind import telemetry


@pytest.fixture
def receiver():
    """A minimal OTLP/HTTP traces endpoint on 127.0.0.1 keeping every span it is sent."""
    spans: list = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # the http.server hook name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    spans.extend(scope.spans)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", spans
    server.shutdown()


def _attributes(span) -> dict:
    out = {}
    for kv in span.attributes:
        value = kv.value
        out[kv.key] = value.string_value or value.int_value or value.bool_value
    return out


def test_a_run_and_its_calls_are_exported_as_nested_genai_spans(tmp_path, monkeypatch, receiver):
    url, spans = receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setattr(telemetry, "_PROVIDER", None)
    doc = tmp_path / "keeper.txt"
    doc.write_text("The lighthouse keeper was Ann.\n\nShe kept the light for forty years.")
    with Pagemind(ScriptedLLM(default="Answer: (B)"), store=tmp_path / "s.db") as pm:
        answer = pm.ask(doc, "Who kept the light?", options=["Bob", "Ann"], method="full")
    telemetry.flush()
    runs = [s for s in spans if s.name == "pagemind.run"]
    calls = [s for s in spans if s.name.startswith("chat ")]
    assert len(runs) == 1 and len(calls) == answer.usage.calls == 1
    assert _attributes(runs[0])["pagemind.run.id"] == answer.run_id
    assert _attributes(runs[0])["pagemind.citations"] == len(answer.citations)  # the ask span counts its citations
    assert _attributes(runs[0])["pagemind.answering.support"] == answer.support.label == "supported"  # "Ann" is in [1]
    call = _attributes(calls[0])
    assert call["gen_ai.operation.name"] == "chat" and call["gen_ai.provider.name"] == "scripted"
    assert call["gen_ai.request.model"] == "scripted" and call["pagemind.role"] == "answer"
    assert call["gen_ai.usage.input_tokens"] == answer.usage.prompt_tokens
    assert call["gen_ai.usage.output_tokens"] == answer.usage.completion_tokens
    assert calls[0].parent_span_id == runs[0].span_id and calls[0].trace_id == runs[0].trace_id


def test_nothing_is_exported_without_an_endpoint(tmp_path, monkeypatch):
    for name in telemetry.ENDPOINT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(telemetry, "_PROVIDER", None)
    with Pagemind(ScriptedLLM(default="Ann"), store=tmp_path / "s.db") as pm:
        assert pm.telemetry is None
        pm.ask(pm.document(_doc(tmp_path)), "Who?", method="full")
    assert telemetry._PROVIDER is None


def _doc(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("Ann kept the light.")
    return path
