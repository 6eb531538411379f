"""Spans per second that `tokprof collect` takes on loopback, and its memory while it does.

The collector runs as `python -m tokprof collect DIR --port 0` in a process of its own (its memory is
read from /proc). Clients (`--clients`, default 2) send OTLP/HTTP protobuf trace exports of
`--batch` GenAI chat spans each (default 512: the SDK's BatchSpanProcessor's export size; usage, no
content, as agents send by default), `--spans` spans in all (default 100,000), over kept-alive
connections. Each span is new (its own ids), so every one becomes a row; the collector writes a
batch every `--batch-rows` rows (default 10,000).

Prints the throughput and its ratio to the issue's target (5,000 spans per second on 2 cores), the
collector's CPU time (spans per CPU-second: what one idle core takes, whatever else the machine runs), the
collector's resident memory at each tenth of the run and its peak (bounded: the rows held are at
most a batch), and the rows found in the Parquet files afterwards (all of them, none twice).

Usage: python benchmarks/bench_collect.py [--spans 100000] [--batch 512] [--clients 2] [--batch-rows 10000]
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

TARGET = 5_000  # spans per second, on 2 cores (#50)


def export(start: int, count: int) -> bytes:
    """One ExportTraceServiceRequest of ``count`` chat spans, ids from ``start``."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    def kv(key: str, value: object) -> KeyValue:
        if isinstance(value, int):
            return KeyValue(key=key, value=AnyValue(int_value=value))
        return KeyValue(key=key, value=AnyValue(string_value=str(value)))

    request = ExportTraceServiceRequest()
    resource = request.resource_spans.add()
    resource.resource.attributes.extend([kv("service.name", "bench-agent"), kv("host.name", "bench")])
    scope = resource.scope_spans.add()
    now = time.time_ns()
    for n in range(start, start + count):
        span = scope.spans.add()
        span.trace_id = n.to_bytes(16, "big")
        span.span_id = (n + 1).to_bytes(8, "big")
        span.name = "chat claude-sonnet-4-5"
        span.start_time_unix_nano = now
        span.end_time_unix_nano = now + 1_000_000
        span.attributes.extend(
            [
                kv("gen_ai.operation.name", "chat"),
                kv("gen_ai.provider.name", "anthropic"),
                kv("gen_ai.request.model", "claude-sonnet-4-5-20250929"),
                kv("gen_ai.conversation.id", f"conv-{n // 50}"),
                kv("gen_ai.response.id", f"msg_{n}"),
                kv("gen_ai.usage.input_tokens", 20_000 + n % 1000),
                kv("gen_ai.usage.cache_read.input_tokens", 18_000),
                kv("gen_ai.usage.cache_creation.input_tokens", 1_500),
                kv("gen_ai.usage.output_tokens", 300),
                kv("user.email", f"dev{n % 40}@example.com"),
            ]
        )
    return request.SerializeToString()


def rss(pid: int) -> int:
    """Resident memory in KiB (VmRSS), 0 when /proc cannot say."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(r"VmRSS:\s+(\d+)", text)
    return int(found.group(1)) if found else 0


def cpu_seconds(pid: int) -> float:
    """The process's user and system CPU time so far (0 when /proc cannot say)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def peak(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(r"VmHWM:\s+(\d+)", text)
    return int(found.group(1)) if found else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--batch-rows", type=int, default=10_000)
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "tables"
        env = {**os.environ, "PYTHONPATH": str(root)}
        command = [sys.executable, "-m", "tokprof", "collect", str(out), "--port", "0", "--collector-id", "bench"]
        command += ["--batch-rows", str(args.batch_rows), "--spool", str(Path(folder) / "spool")]
        process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
        try:
            line = process.stderr.readline()
            match = re.search(r"http://([0-9.]+):(\d+)", line)
            if not match:
                print("the collector did not start:", line, process.stderr.read(), file=sys.stderr)
                return 1
            host, port = match.group(1), int(match.group(2))
            requests = args.spans // args.batch
            print(f"building {requests} requests of {args.batch} spans ...", file=sys.stderr)
            bodies = [export(i * args.batch, args.batch) for i in range(requests)]
            samples: list[tuple[float, int]] = []
            done = [0]
            lock = threading.Lock()
            failures: list[str] = []

            def client(mine: list[bytes]) -> None:
                connection = http.client.HTTPConnection(host, port, timeout=60)
                headers = {"Content-Type": "application/x-protobuf"}
                for body in mine:
                    connection.request("POST", "/v1/traces", body=body, headers=headers)
                    answer = connection.getresponse()
                    answer.read()
                    if answer.status != 200:
                        failures.append(str(answer.status))
                    with lock:
                        done[0] += 1
                connection.close()

            threads = [threading.Thread(target=client, args=(bodies[i :: args.clients],)) for i in range(args.clients)]
            busy = cpu_seconds(process.pid)
            start = time.perf_counter()
            for thread in threads:
                thread.start()
            next_sample = 0
            while any(t.is_alive() for t in threads):
                time.sleep(0.05)
                if done[0] * 10 >= next_sample * requests:
                    samples.append((time.perf_counter() - start, rss(process.pid)))
                    next_sample += 1
            elapsed = time.perf_counter() - start
            busy = cpu_seconds(process.pid) - busy
            high = peak(process.pid)
            process.send_signal(signal.SIGTERM)
            code = process.wait(120)
            rest = process.stderr.read()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        spans = requests * args.batch
        rate = spans / elapsed
        import pyarrow.dataset as ds

        rows = ds.dataset(str(out), format="parquet", partitioning="hive").count_rows()
        print("| measure | value |\n|---|---|")
        print(f"| spans sent | {spans:,} in {requests:,} requests of {args.batch} ({args.clients} clients) |")
        print(f"| time | {elapsed:.2f} s |")
        print(f"| spans per second | {rate:,.0f} |")
        print(
            f"| ratio to the target ({TARGET:,}/s) | {rate / TARGET:.2f} (load average {load()} on {os.cpu_count()} cores) |"
        )
        print(
            f"| collector CPU time | {busy:.2f} s: {spans / busy:,.0f} spans per CPU-second |"
            if busy
            else "| collector CPU time | ? |"
        )
        print(f"| ratio to the target per CPU-second of one process | {spans / busy / TARGET:.2f} |" if busy else "")
        print(f"| rows written | {rows:,} (of {spans:,} spans; failures {len(failures)}) |")
        print(f"| collector memory, at each tenth | {', '.join(f'{kib / 1024:.0f}' for _, kib in samples)} MiB |")
        print(f"| collector peak memory | {high / 1024:.0f} MiB |")
        print(f"| exit after SIGTERM | {code} |")
        print(f"| cores | {os.cpu_count()} |")
        if rows != spans or code != 0 or failures:
            print(rest[-2000:], file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
