"""``tokprof collect``: the OpenTelemetry SDK's own OTLP/HTTP exporters (traces and logs, protobuf) and
OTLP/JSON bodies sent to a real collector on a free loopback port, rows written as Parquet read back
with DuckDB; Claude Code's ``api_request`` events, GenAI spans with and without content; restart
dedupe, SIGTERM flush in a real subprocess, hostile requests, the spool, S3 through moto's server,
two collectors on one prefix, and the docs' SQL on DuckDB and chdb (tests/test_collect_sql.py)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from tokprof.frontends.collect.server import CollectOptions, run

pytest.importorskip("pyarrow")
duckdb = pytest.importorskip("duckdb")

T0 = 1_796_000_000  # 2026-11-30T02:13:20Z, the calls' time


@contextmanager
def collector(destination: Path | str, **options):
    """A collector on a free loopback port, in this process; stopped (and flushed) on leaving."""
    lines: list[str] = []
    address: dict = {}
    started = threading.Event()
    stop = threading.Event()

    def ready(host: str, port: int) -> None:
        address["url"] = f"http://{host}:{port}"
        started.set()

    opts = CollectOptions(destination=str(destination), port=0, spool=str(options.pop("spool", "spool")), **options)
    thread = threading.Thread(target=run, args=(opts, lines.append, ready, stop))
    thread.start()
    assert started.wait(20), lines
    try:
        yield address["url"], lines
    finally:
        stop.set()
        thread.join(30)
        assert not thread.is_alive()


def post(
    url: str, body: bytes, content_type: str = "application/json", headers: dict | None = None
) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": content_type, **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def kv(key: str, value) -> dict:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def claude_logs(n: int, session: str = "sess-1", user: str = "ana@example.com", start: int = 0) -> bytes:
    """An OTLP/JSON logs export as Claude Code sends it: ``api_request`` events, and a prompt event."""
    records = []
    for i in range(start, start + n):
        attrs = {
            "event.name": "api_request",
            "session.id": session,
            "user.email": user,
            "user.account_uuid": "acct-" + user,
            "organization.id": "org-1",
            "prompt.id": f"p-{i}",
            "event.sequence": i,
            "model": "claude-sonnet-4-5-20250929",
            "input_tokens": 10,
            "cache_read_tokens": 1000 * i,
            "cache_creation_tokens": 1000,
            "output_tokens": 50,
            "cost_usd": 0.01,
            "duration_ms": 1200,
        }
        records.append(
            {
                "timeUnixNano": str((T0 + 60 * i) * 10**9),
                "body": {"stringValue": "claude_code.api_request"},
                "attributes": [kv(k, v) for k, v in attrs.items()],
            }
        )
    records.append(
        {
            "timeUnixNano": str(T0 * 10**9),
            "body": {"stringValue": "claude_code.user_prompt"},
            "attributes": [kv("event.name", "user_prompt"), kv("session.id", session), kv("prompt_length", 12)],
        }
    )
    resource = {"attributes": [kv("service.name", "claude-code"), kv("host.name", "laptop-7")]}
    return json.dumps({"resourceLogs": [{"resource": resource, "scopeLogs": [{"logRecords": records}]}]}).encode()


def calls_of(folder: Path | str, where: str = "") -> list[dict]:
    pattern = f"{folder}/**/*.parquet"
    rows = duckdb.sql(f"select * from read_parquet('{pattern}', hive_partitioning = true) order by session, call_index")
    return [dict(zip(rows.columns, r)) for r in rows.fetchall()]


# -- the OpenTelemetry SDK's exporters -------------------------------------------------------------------
def test_sdk_span_exporter_sends_genai_spans_that_become_rows(tmp_path):
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    out = tmp_path / "out"
    with collector(out, spool=tmp_path / "spool", collector="c1") as (url, lines):
        provider = TracerProvider(resource=Resource.create({"service.name": "my-agent", "host.name": "ci-3"}))
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=url + "/v1/traces", timeout=10)))
        tracer = provider.get_tracer("test")
        with tracer.start_as_current_span("invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}):
            for i in range(3):
                attributes = {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o-2024-08-06",
                    "gen_ai.conversation.id": "conv-9",
                    "gen_ai.response.id": f"resp-{i}",
                    "gen_ai.usage.input_tokens": 2000 + 100 * i,
                    "gen_ai.usage.cache_read.input_tokens": 1024 if i else 0,
                    "gen_ai.usage.output_tokens": 40,
                    "user.id": "u-42",
                }
                span = tracer.start_span("chat gpt-4o", attributes=attributes, start_time=(T0 + i) * 10**9)
                span.end(end_time=(T0 + i) * 10**9 + 10**6)
        provider.shutdown()
    rows = calls_of(out)
    assert [r["request_id"] for r in rows] == ["resp-0", "resp-1", "resp-2"]  # the agent span is not a call
    first = rows[0]
    assert first["agent"] == "my-agent" and first["machine"] == "ci-3" and first["user"] == "u-42"
    assert first["session"] == "conv-9" and first["model"] == "gpt-4o-2024-08-06"
    assert first["reported_prompt"] == 2000 and first["total"] == 2000 and first["reported_output"] == 40
    # no content: the buckets are not recorded (null), never 0
    assert all(first[b] is None for b in ("system", "tool_definitions", "tool_results", "conversation", "unrecorded"))
    assert first["profiled_with"] == "telemetry" and first["priced"] and first["provider"] == "openai"
    assert first["cost_total"] == pytest.approx(
        sum(first[f"cost_{p}"] for p in ("input", "cache_read", "output", "other"))
    )
    assert first["cache_miss"] == "first-call" and rows[1]["cache_miss"] == "prefix-changed"
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet"))
    assert files == ["day=2026-11-30/agent=my-agent/c1-000000.parquet"], files
    import pyarrow.parquet as pq

    from tokprof.analyses.calls import FIELDS, SCHEMA_VERSION

    table = pq.read_table(out / files[0])
    assert table.schema.metadata[b"tokprof.schema_version"] == str(SCHEMA_VERSION).encode()
    assert tuple(table.column_names) == tuple(f for f in FIELDS if f != "text")  # profile's calls.parquet


def test_sdk_log_exporter_claude_code_events_become_rows(tmp_path):
    """Claude Code sends ``api_request`` log events (OTLP logs): the SDK's log exporter, protobuf."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    out = tmp_path / "out"
    with collector(out, spool=tmp_path / "spool", collector="c1", hash_users=True, salt="pepper") as (url, lines):
        provider = LoggerProvider(resource=Resource.create({"service.name": "claude-code"}))
        provider.add_log_record_processor(
            SimpleLogRecordProcessor(OTLPLogExporter(endpoint=url + "/v1/logs", timeout=10))
        )
        logger = provider.get_logger("com.anthropic.claude_code.events")
        for i, (read, write) in enumerate([(0, 12000), (12000, 800)]):
            emit(
                logger,
                "claude_code.api_request",
                (T0 + 30 * i) * 10**9,
                {
                    "event.name": "api_request",
                    "session.id": "s-1",
                    "user.email": "ana@example.com",
                    "model": "claude-sonnet-4-5-20250929",
                    "input_tokens": 7,
                    "cache_read_tokens": read,
                    "cache_creation_tokens": write,
                    "output_tokens": 300,
                    "cost_usd": 0.05,
                },
            )
        emit(logger, "claude_code.tool_result", T0 * 10**9, {"event.name": "tool_result", "tool_name": "Bash"})
        provider.shutdown()
    rows = calls_of(out)
    assert len(rows) == 2
    assert rows[0]["reported_prompt"] == 12007 and rows[0]["reported_cache_write"] == 12000
    assert rows[1]["reported_prompt"] == 12807 and rows[1]["reported_cache_read"] == 12000
    assert rows[0]["agent"] == "claude-code" and rows[0]["session"] == "s-1" and rows[0]["provider"] == "anthropic"
    assert rows[0]["user"] != "ana@example.com" and len(rows[0]["user"]) == 32  # --hash-users
    assert rows[1]["cache_miss"] is None  # read the whole previous prompt


def emit(logger, body: str, when: int, attributes: dict) -> None:
    """One log record through the SDK's logger (keyword arguments since SDK 1.39; a LogRecord before)."""
    try:
        logger.emit(timestamp=when, body=body, attributes=attributes)
    except TypeError:
        from opentelemetry.sdk._logs import LogRecord  # type: ignore[attr-defined]

        logger.emit(LogRecord(timestamp=when, body=body, attributes=attributes))
