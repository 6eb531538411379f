"""``tokprof collect``: the OpenTelemetry SDK's own OTLP/HTTP exporters (traces and logs, protobuf) and
OTLP/JSON bodies sent to a real collector on a free loopback port, rows written as Parquet read back
with DuckDB; Claude Code's ``api_request`` events, GenAI spans with and without content; restart
dedupe, SIGTERM flush in a real subprocess, hostile requests, the spool, S3 through moto's server,
two collectors on one prefix, and the docs' SQL on DuckDB and chdb (tests/test_collect_sql.py)."""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import ROOT
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


# -- batches, restarts, dedupe ------------------------------------------------------------------------
def test_a_retried_request_and_a_restart_double_no_row(tmp_path):
    out = tmp_path / "out"
    body = claude_logs(3)
    with collector(out, spool=tmp_path / "spool", collector="c1", max_rows=2) as (url, _):
        assert post(url + "/v1/logs", body)[0] == 200
        assert post(url + "/v1/logs", body)[0] == 200  # the exporter retried: nothing new
    assert len(calls_of(out)) == 3
    with collector(out, spool=tmp_path / "spool", collector="c1") as (url, _):  # restarted
        assert post(url + "/v1/logs", body)[0] == 200
        assert post(url + "/v1/logs", claude_logs(2, start=3))[0] == 200
    rows = calls_of(out)
    assert [r["call_index"] for r in rows] == [0, 1, 2, 3, 4]
    names = sorted(p.name for p in out.rglob("*.parquet"))
    assert names == ["c1-000000.parquet", "c1-000001.parquet"], names  # the batch numbers go on
    assert rows[0]["machine"] == "laptop-7" and rows[0]["user"] == "ana@example.com"
    assert rows[0]["reported_prompt"] == 1010 and rows[4]["reported_cache_read"] == 4000


def test_sigterm_writes_what_is_held_and_exits_0(tmp_path):
    """A real process, a real signal: the rows of a batch not yet due are written before it exits."""
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "tokprof", "collect", str(out), "--port", "0", "--collector-id", "c9"]
    args += ["--batch-seconds", "3600", "--spool", str(tmp_path / "spool")]
    process = subprocess.Popen(args, env=env, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        line = process.stderr.readline()
        url = re.search(r"http://[0-9.]+:\d+", line).group(0)
        assert post(url + "/v1/logs", claude_logs(2))[0] == 200
        assert not list(out.rglob("*.parquet"))  # held: the batch is not due
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        rest = process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert len(calls_of(out)) == 2, rest
    assert "stopped; 2 rows written" in rest and "Traceback" not in rest


# -- hostile requests ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path, body, content_type, status",
    [
        ("/v1/traces", b"\x0a\xff\xff\xff\xff\x0f garbage", "application/x-protobuf", 400),
        ("/v1/logs", b"\x12\x05", "application/x-protobuf", 400),
        ("/v1/traces", b'{"resourceSpans": 3}', "application/json", 400),
        ("/v1/traces", b'{"resourceLogs": []}', "application/json", 400),
        ("/v1/logs", b"[" * 4000, "application/json", 400),
        ("/v1/logs", b"\xff\xfe not utf-8", "application/json", 400),
        ("/v1/traces", b"{}", "text/plain", 415),
        ("/v1/traces", b"{}", "application/xml", 415),
        ("/v1/nothing", b"{}", "application/json", 404),
        ("/v1/traces", b"x" * 5000, "application/json", 413),
    ],
)
def test_a_bad_request_gets_a_4xx_one_line_and_no_row(tmp_path, path, body, content_type, status):
    out = tmp_path / "out"
    with collector(out, spool=tmp_path / "spool", max_body=4096) as (url, lines):
        before = len(lines)
        code, answer = post(url + path, body, content_type)
        assert code == status, answer
        assert json.loads(answer)["code"] == status
        logged = lines[before:]
        assert len(logged) == 1 and str(status) in logged[0] and "\n" not in logged[0]
        assert post(url + "/v1/logs", claude_logs(1))[0] == 200  # and it goes on serving
    assert len(calls_of(out)) == 1


def test_a_request_with_one_bad_record_keeps_none_of_its_rows(tmp_path):
    out = tmp_path / "out"
    export = json.loads(claude_logs(3))
    records = export["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    records[2]["attributes"].append(kv("output_tokens", "lots"))  # the last value of a key is the one read
    with collector(out, spool=tmp_path / "spool") as (url, lines):
        code, answer = post(url + "/v1/logs", json.dumps(export).encode())
        assert code == 400 and b"logRecords[2]" in answer and b"output_tokens" in answer
    assert not list(out.rglob("*.parquet"))


def test_gzip_bodies_are_taken_and_a_gzip_bomb_is_413(tmp_path):
    out = tmp_path / "out"
    with collector(out, spool=tmp_path / "spool", max_body=64 * 1024) as (url, _):
        assert post(url + "/v1/logs", gzip.compress(claude_logs(2)), headers={"Content-Encoding": "gzip"})[0] == 200
        bomb = gzip.compress(b" " * (8 * 1024 * 1024))  # 8 KiB that inflate to 8 MiB
        code, _ = post(url + "/v1/logs", bomb, headers={"Content-Encoding": "gzip"})
        assert code == 413
        assert post(url + "/v1/logs", b"not gzip", headers={"Content-Encoding": "gzip"})[0] == 400
        assert post(url + "/v1/logs", b"{}", headers={"Content-Encoding": "br"})[0] == 415
    assert len(calls_of(out)) == 2


def test_beyond_loopback_a_token_is_required(tmp_path):
    from tokprof.base.errors import TokprofError

    with pytest.raises(TokprofError, match="needs a token"):
        run(CollectOptions(destination=str(tmp_path), host="0.0.0.0", port=0))
    with collector(tmp_path / "out", spool=tmp_path / "spool", token="s3cret") as (url, lines):
        assert post(url + "/v1/logs", claude_logs(1))[0] == 401
        assert post(url + "/v1/logs", claude_logs(1), headers={"Authorization": "Bearer nope"})[0] == 401
        assert post(url + "/v1/logs", claude_logs(1), headers={"Authorization": "Bearer s3cret"})[0] == 200
    with collector(tmp_path / "out2", spool=tmp_path / "spool2") as (url, lines):
        assert post(url + "/v1/logs", claude_logs(1), headers={"Host": "evil.example"})[0] == 403


# -- the spool -----------------------------------------------------------------------------------------
def test_an_unwritable_destination_spools_bounded_and_says_so(tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the folder should be")  # every write under it fails
    spool = tmp_path / "spool"
    with collector(blocked, spool=spool, collector="c1", max_rows=1) as (url, lines):
        assert post(url + "/v1/logs", claude_logs(1))[0] == 200
        deadline = time.monotonic() + 10
        while not list(spool.rglob("*.parquet")) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert list(spool.rglob("*.parquet")) and list(spool.rglob("*.ids"))
    assert any("cannot write to" in line and "spool" in line for line in lines), lines
    # the destination is writable again: the next collector moves the spool first, and dedupes against it
    blocked.unlink()
    with collector(blocked, spool=spool, collector="c1") as (url, lines):
        assert post(url + "/v1/logs", claude_logs(1))[0] == 200  # the same event: already kept
        assert post(url + "/v1/logs", claude_logs(1, start=1))[0] == 200
    assert [r["call_index"] for r in calls_of(blocked)] == [0, 1]
    assert not list(spool.rglob("*.parquet"))


def test_a_full_spool_answers_503_and_holds_the_batch(tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("not a folder")
    with collector(blocked, spool=tmp_path / "spool", max_rows=1, spool_bytes=100) as (url, lines):
        assert post(url + "/v1/logs", claude_logs(1))[0] == 200
        deadline = time.monotonic() + 10
        while not any("spool" in line and "is full (" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.05)
        code, answer = post(url + "/v1/logs", claude_logs(1, start=1))
        assert code == 503 and b"spool is full" in answer
    assert any("held in memory" in line for line in lines)


# -- keep, content capture ------------------------------------------------------------------------------
def test_keep_aggregates_writes_sums_by_day_agent_user_project_and_model(tmp_path):
    out = tmp_path / "out"
    with collector(out, spool=tmp_path / "spool", keep="aggregates") as (url, _):
        assert post(url + "/v1/logs", claude_logs(3))[0] == 200
        assert post(url + "/v1/logs", claude_logs(2, session="s2", user="bo@example.com"))[0] == 200
    rows = duckdb.sql(f"select * from read_parquet('{out}/**/*.parquet') order by user").fetchall()
    columns = duckdb.sql(f"select * from read_parquet('{out}/**/*.parquet')").columns
    found = [dict(zip(columns, r)) for r in rows]
    assert [(r["user"], r["calls"], r["reported_prompt"]) for r in found] == [
        ("ana@example.com", 3, 1010 + 2010 + 3010),
        ("bo@example.com", 2, 1010 + 2010),
    ]
    assert "session" not in columns and "text" not in columns


def test_spans_with_content_get_their_buckets_and_text_only_with_keep_text(tmp_path, model_dir):
    messages = [
        {"role": "system", "parts": [{"type": "text", "content": "You are terse."}]},
        {"role": "user", "parts": [{"type": "text", "content": "hello there"}]},
    ]
    span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "name": "chat local",
        "startTimeUnixNano": str(T0 * 10**9),
        "attributes": [
            kv("gen_ai.operation.name", "chat"),
            kv("gen_ai.request.model", "tiny"),
            kv("gen_ai.input.messages", json.dumps(messages)),
        ],
    }
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
    for keep in ("calls", "text"):
        out = tmp_path / keep
        with collector(out, spool=tmp_path / "spool", keep=keep, model=str(model_dir)) as (url, _):
            code, answer = post(url + "/v1/traces", body)
            assert code == 200, answer
        (row,) = calls_of(out)
        assert row["system"] > 0 and row["conversation"] > 0 and row["tool_results"] == 0
        assert row["total"] == sum(row[b] for b in ("system", "tool_results", "conversation", "unrecorded"))
        assert row["reported_prompt"] is None and row["profiled_with"] != "telemetry"
        assert (row.get("text") is not None) == (keep == "text")
        if keep == "text":
            assert "hello there" in row["text"]


# -- beyond one machine: S3, two collectors on one prefix ------------------------------------------------
@pytest.fixture
def s3(monkeypatch):
    """moto's S3 server on a free loopback port (a real local S3 over HTTP), as tests/test_remote.py."""
    pytest.importorskip("s3fs")
    moto_server = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "FSSPEC_S3_ENDPOINT_URL": endpoint,
        "AWS_ENDPOINT_URL": endpoint,
    }.items():
        monkeypatch.setenv(key, value)
    import fsspec.config

    fsspec.config.conf.clear()
    fsspec.config.set_conf_env(fsspec.config.conf)
    try:
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        client.create_bucket(Bucket="telemetry")
        yield client
    finally:
        server.stop()
        fsspec.config.conf.clear()


def download(client, bucket: str, into: Path) -> list[str]:
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket).get("Contents", [])]
    for key in keys:
        (into / key).parent.mkdir(parents=True, exist_ok=True)
        (into / key).write_bytes(client.get_object(Bucket=bucket, Key=key)["Body"].read())
    return sorted(keys)


def test_two_collectors_behind_round_robin_write_one_s3_prefix(tmp_path, s3):
    prefix = "s3://telemetry/agents/"
    bodies = [claude_logs(2, session=f"s{i}", user=f"u{i}@example.com") for i in range(6)]
    with collector(prefix, spool=tmp_path / "spool1", collector="collect-1") as (url1, lines1):
        with collector(prefix, spool=tmp_path / "spool2", collector="collect-2") as (url2, lines2):
            for i, body in enumerate(bodies):  # plain round robin, as a load balancer without affinity
                assert post((url1, url2)[i % 2] + "/v1/logs", body)[0] == 200
    keys = download(s3, "telemetry", tmp_path / "copy")
    parquet = [k for k in keys if k.endswith(".parquet")]
    assert parquet == [
        "agents/day=2026-11-30/agent=claude-code/collect-1-000000.parquet",
        "agents/day=2026-11-30/agent=claude-code/collect-2-000000.parquet",
    ]
    assert "agents/_tokprof/ids/collect-1-000000.ids" in keys and "agents/_tokprof/ids/collect-2-000000.ids" in keys
    rows = calls_of(tmp_path / "copy" / "agents")
    assert len(rows) == 12 and len({(r["session"], r["call_index"]) for r in rows}) == 12
    # a restarted collector knows what both wrote: a retry of any request to it doubles nothing
    with collector(prefix, spool=tmp_path / "spool1", collector="collect-1") as (url, _):
        for body in bodies:
            assert post(url + "/v1/logs", body)[0] == 200
    assert [k for k in download(s3, "telemetry", tmp_path / "again") if k.endswith(".parquet")] == parquet


def test_the_tables_are_those_of_profile_incremental_and_of_dask(tmp_path, model_dir, capsys):
    """The collector's prefix and a folder written by `profile DIR -f parquet --incremental` (the Dask
    path writes the same records) are one table: same columns, same types, read together."""
    from test_tables import folder

    from tokprof.frontends.cli import main

    logs, profiled = folder(tmp_path / "logs"), tmp_path / "profiled"
    args = ["profile", str(logs), "--model", str(model_dir), "-f", "parquet", "-o", f"{profiled}/", "--incremental"]
    assert main([*args, "--no-progress", "-j", "1"]) == 0, capsys.readouterr().err
    collected = tmp_path / "collected"
    with collector(collected, spool=tmp_path / "spool") as (url, _):
        assert post(url + "/v1/logs", claude_logs(2))[0] == 200
    files = f"read_parquet('{collected}/**/*.parquet', hive_partitioning = false)"  # the files' own columns
    schema = duckdb.sql(f"describe select * from {files}").fetchall()
    theirs = duckdb.sql(f"describe select * from read_parquet('{profiled}/calls.parquet')").fetchall()
    assert [(c[0], c[1]) for c in schema] == [(c[0], c[1]) for c in theirs]
    both = duckdb.sql(
        f"select agent, count(*) from read_parquet(['{profiled}/calls.parquet', '{collected}/**/*.parquet'], "
        "hive_partitioning = false) group by agent order by agent"
    ).fetchall()
    ((alone,),) = duckdb.sql(f"select count(*) from read_parquet('{profiled}/calls.parquet')").fetchall()
    assert sum(n for _, n in both) == alone + 2 and alone > 0


def test_the_file_reader_reads_the_same_export_as_the_collector(tmp_path, capsys):
    """One path: an OTLP/JSON logs export saved to a file (a collector's file exporter) is read by
    `tokprof profile` with the same fold; its calls' reported usage is the collector's rows'."""
    from tokprof.frontends.cli import main

    log = tmp_path / "claude-otel.json"
    log.write_bytes(claude_logs(3))
    assert main(["profile", str(log), "-f", "json", "--no-progress"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["source"]["format"].startswith("otel")
    assert [c["reported"]["prompt"] for c in found["calls"]] == [1010, 2010, 3010]
    assert [c["reported"]["cache_read"] for c in found["calls"]] == [0, 1000, 2000]
    out = tmp_path / "out"
    with collector(out, spool=tmp_path / "spool") as (url, _):
        assert post(url + "/v1/logs", log.read_bytes())[0] == 200
    assert [r["reported_prompt"] for r in calls_of(out)] == [1010, 2010, 3010]


@pytest.mark.parametrize(
    "service, body, attrs, prompt, read, output",
    [
        (
            "codex",
            "codex.sse_event",
            {
                "event.kind": "response.completed",
                "conversation.id": "c-1",
                "model": "gpt-5-codex",
                "input_token_count": 9000,
                "cached_token_count": 8000,
                "output_token_count": 120,
            },
            9000,
            8000,
            120,
        ),
        (
            "gemini-cli",
            "gemini_cli.api_response",
            {
                "session.id": "g-1",
                "model": "gemini-2.5-pro",
                "input_token_count": 5000,
                "cached_content_token_count": 4096,
                "output_token_count": 77,
                "thoughts_token_count": 30,
            },
            5000,
            4096,
            77,
        ),
    ],
)
def test_codex_and_gemini_cli_events(tmp_path, service, body, attrs, prompt, read, output):
    records = [
        {
            "timeUnixNano": str(T0 * 10**9),
            "body": {"stringValue": body},
            "attributes": [kv(k, v) for k, v in attrs.items()],
        },
        {
            "timeUnixNano": str(T0 * 10**9),
            "body": {"stringValue": body if service == "codex" else "gemini_cli.api_request"},
            "attributes": [kv("event.kind", "response.output_text.delta"), kv("model", "x")],
        },  # not a call
    ]
    export = {
        "resourceLogs": [
            {"resource": {"attributes": [kv("service.name", service)]}, "scopeLogs": [{"logRecords": records}]}
        ]
    }
    out = tmp_path / "out"
    with collector(out, spool=tmp_path / "spool") as (url, _):
        assert post(url + "/v1/logs", json.dumps(export).encode())[0] == 200
    (row,) = calls_of(out)
    assert (row["reported_prompt"], row["reported_cache_read"], row["reported_output"]) == (prompt, read, output)
    assert row["agent"] == service and row["session"] in ("c-1", "g-1") and row["model"] == attrs["model"]


def test_a_slow_client_is_dropped_with_one_line(tmp_path):
    import socket

    out = tmp_path / "out"
    with collector(out, spool=tmp_path / "spool", read_timeout=0.5) as (url, lines):
        host, port = url[len("http://") :].split(":")
        with socket.create_connection((host, int(port))) as slow:
            slow.sendall(b"POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
            slow.sendall(b"Content-Length: 1000\r\n\r\n{")  # and then nothing
            deadline = time.monotonic() + 10
            while not any("timed out" in line for line in lines) and time.monotonic() < deadline:
                time.sleep(0.05)
        assert post(url + "/v1/logs", claude_logs(1))[0] == 200
        with socket.create_connection((host, int(port))) as bad:  # not HTTP: http.server's 400, one line
            bad.sendall(b"\x00\x01 garbage\r\n\r\n")
            assert b" 400 " in bad.recv(1000)
    dropped = [line for line in lines if "timed out" in line]
    assert len(dropped) == 1 and "\n" not in dropped[0]
    assert any("Bad request" in line or "400" in line for line in lines)
    assert len(calls_of(out)) == 1


def test_metrics_are_taken_and_make_no_rows(tmp_path):
    """Claude Code sends metrics beside its events: the SDK's metric exporter gets 200, and no row."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricExportResult, PeriodicExportingMetricReader

    out = tmp_path / "out"
    results = []
    with collector(out, spool=tmp_path / "spool") as (url, lines):
        exporter = OTLPMetricExporter(endpoint=url + "/v1/metrics", timeout=10)
        export = exporter.export
        exporter.export = lambda *a, **k: results.append(export(*a, **k)) or results[-1]  # type: ignore[method-assign]
        reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
        provider = MeterProvider(metric_readers=[reader])
        counter = provider.get_meter("claude-code").create_counter("claude_code.token.usage")
        counter.add(1200, {"type": "input", "model": "claude-sonnet-4-5"})
        provider.shutdown()
        assert post(url + "/v1/metrics", b'{"resourceMetrics": [{"scopeMetrics": [{}]}]}')[0] == 200
        assert post(url + "/v1/metrics", b'{"resourceMetrics": [{"scopeMetrics": [3]}]}')[0] == 400
    assert results and all(r == MetricExportResult.SUCCESS for r in results)
    assert not list(out.rglob("*.parquet"))


def test_an_unreachable_s3_endpoint_at_start_spools_and_says_so(tmp_path, monkeypatch):
    """S3 that does not answer: the collector starts, says it, keeps the batch in the spool."""
    pytest.importorskip("s3fs")
    import socket

    import fsspec.config

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "FSSPEC_S3_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_MAX_ATTEMPTS": "1",
    }.items():
        monkeypatch.setenv(key, value)
    fsspec.config.conf.clear()
    fsspec.config.set_conf_env(fsspec.config.conf)
    spool = tmp_path / "spool"
    try:
        with collector("s3://nowhere/agents/", spool=spool, max_rows=1) as (url, lines):
            assert post(url + "/v1/logs", claude_logs(1))[0] == 200
            deadline = time.monotonic() + 60
            while not list(spool.rglob("*.parquet")) and time.monotonic() < deadline:
                time.sleep(0.1)
    finally:
        fsspec.config.conf.clear()
    assert list(spool.rglob("*.parquet"))
    assert any("cannot read the keys" in line for line in lines)
    assert any("cannot write to s3://nowhere/agents/" in line and "spool" in line for line in lines)
