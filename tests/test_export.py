"""tokprof export: per-call spans received by a local OTLP HTTP receiver (a small http.server on
127.0.0.1 that decodes the protobuf with opentelemetry-proto), and Prometheus text exposition
parsed with prometheus_client's parser. Fixtures: test_tables' hand-written sessions."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from test_tables import folder, run

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
trace_pb = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
parser = pytest.importorskip("prometheus_client.parser")


class Receiver(BaseHTTPRequestHandler):
    spans: list = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        request = trace_pb.ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                type(self).spans.extend(scope.spans)
        reply = trace_pb.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver():
    Receiver.spans = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _value(attribute):
    v = attribute.value
    return getattr(v, v.WhichOneof("value"))


def test_spans_reach_an_otlp_receiver(tmp_path, model_dir, capsys, receiver):
    import json

    logs = folder(tmp_path / "logs")
    code, _, err = run(
        ["export", str(logs), "--model", str(model_dir), "--endpoint", receiver, "--no-progress", "--price", "1/2"],
        capsys,
    )
    assert code == 0, err
    code, text, _ = run(["profile", str(logs), "--model", str(model_dir), "-f", "json", "--no-progress"], capsys)
    doc = json.loads(text)
    spans = Receiver.spans
    assert len(spans) == doc["totals"]["calls"]
    attrs = [{a.key: _value(a) for a in span.attributes} for span in spans]
    assert sum(a["tokprof.prompt_tokens"] for a in attrs) == doc["totals"]["billed_input"]
    for a in attrs:
        assert a["gen_ai.operation.name"] == "chat"
        assert (
            sum(
                a.get(f"tokprof.bucket.{b}", 0)  # absent: not recorded (a Claude Code log's system prompt)
                for b in ("system", "tool_definitions", "tool_results", "conversation", "unrecorded")
            )
            == a["tokprof.prompt_tokens"]
        )
        assert "tokprof.cost.total_usd" in a
    assert any(a.get("vcs.ref.head.name") == "feat/x" for a in attrs)
    assert not any("vcs.ref.head.revision" in a for a in attrs)  # not recorded: left out, never 0
    assert any("gen_ai.usage.input_tokens" in a for a in attrs)


def test_an_endpoint_that_refuses_is_an_error(tmp_path, model_dir, capsys):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the with ends: nothing listens there
    logs = folder(tmp_path / "logs")
    code, _, err = run(
        [
            "export",
            str(logs),
            "--model",
            str(model_dir),
            "--no-progress",
            "--endpoint",
            f"http://127.0.0.1:{port}/v1/traces",
        ],
        capsys,
    )
    assert code == 2 and "did not take the spans" in err
    code, _, err = run(
        ["export", str(logs), "--model", str(model_dir), "--no-progress", "--endpoint", "ftp://x"], capsys
    )
    assert code == 2 and err.startswith("tokprof: error: --endpoint ftp://x: expected an http") and err.count("\n") == 1


def test_a_refused_export_is_one_line_in_a_real_process(tmp_path, model_dir):
    """The OpenTelemetry SDK logs its own "Failed to export spans batch" line to stderr (pytest's log
    capture hides it in process): the command's stderr is tokprof's one error line alone."""
    import os
    import socket
    import subprocess
    import sys

    from conftest import ROOT

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    logs = folder(tmp_path / "logs")
    env = dict(os.environ, PYTHONPATH=str(ROOT), HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tokprof",
            "export",
            str(logs),
            "--model",
            str(model_dir),
            "--no-progress",
            "--endpoint",
            f"http://127.0.0.1:{port}/v1/traces",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.startswith("tokprof: error: "), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr


def test_prometheus_exposition_parses(tmp_path, model_dir, capsys):
    logs = folder(tmp_path / "logs")
    target = tmp_path / "tokprof.prom"
    code, _, err = run(
        [
            "export",
            str(logs),
            "--model",
            str(model_dir),
            "--prometheus",
            str(target),
            "--machine",
            'box "1"',
            "--no-progress",
        ],
        capsys,
    )
    assert code == 0, err
    families = {f.name: f for f in parser.text_string_to_metric_families(target.read_text())}
    calls = families["tokprof_calls"]
    assert sum(s.value for s in calls.samples) > 0
    branches = {s.labels["branch"] for s in calls.samples}
    assert branches == {"feat/x", "unknown"}
    assert {s.labels["machine"] for s in calls.samples} == {'box "1"'}
    prompt = families["tokprof_prompt_tokens"]
    assert {s.labels["bucket"] for s in prompt.samples} >= {"tool_results", "conversation"}
    assert "system" not in {s.labels["bucket"] for s in prompt.samples}  # not recorded: no series, not a 0
