"""Parquet output at scale: generate N small Claude Code sessions, profile the folder with
``tokprof profile DIR -f parquet -o OUT/``, and report time, peak memory and output size, with the
extrapolation to 100,000 sessions a day (docs/scale.md).

The sessions are generated here, deterministically (``random.Random(seed)``): each a few user turns,
assistant calls with tool uses and results of a few hundred characters, usage with cache reads and
writes, per-line ``cwd``/``gitBranch`` (10 projects, 30 branches), timestamps over one day.

Usage: python benchmarks/bench_tables.py [--sessions 2000] [--calls 8] [--jobs 2] [--model qwen2.5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = (
    "request handler cache worker queue retry timeout config service module parser token buffer index "
    "schema column table migration deploy build test fixture error warning trace span metric"
).split()


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def session_lines(rng: random.Random, number: int, calls: int) -> list[dict]:
    sid = f"bench-{number:06d}"
    project = f"/home/dev/project-{number % 10}"
    branch = f"feature/{number % 30}"
    start = 1_764_547_200 + rng.randrange(86_400)  # 2025-12-01, UTC
    lines, parent, prompt = [], None, 2_000
    for i in range(calls):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(start + 20 * i))
        common = {"isSidechain": False, "sessionId": sid, "timestamp": stamp, "cwd": project, "gitBranch": branch}
        if i == 0 or i % 4 == 0:
            uuid = f"{sid}-u{i}"
            lines.append(
                {
                    **common,
                    "parentUuid": parent,
                    "type": "user",
                    "uuid": uuid,
                    "message": {"role": "user", "content": words(rng, 30)},
                }
            )
            parent = uuid
        elif lines[-1]["type"] == "assistant":
            uuid = f"{sid}-r{i}"
            call_id = lines[-1]["message"]["content"][0]["id"]
            lines.append(
                {
                    **common,
                    "parentUuid": parent,
                    "type": "user",
                    "uuid": uuid,
                    "message": {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": call_id, "content": words(rng, 80)}],
                    },
                }
            )
            parent = uuid
        uuid = f"{sid}-a{i}"
        grown = rng.randrange(100, 400)
        usage = {
            "input_tokens": 3,
            "cache_creation_input_tokens": grown,
            "cache_read_input_tokens": prompt,
            "output_tokens": rng.randrange(20, 200),
        }
        prompt += grown
        block = {"type": "tool_use", "id": f"toolu_{sid}_{i}", "name": "Read", "input": {"file_path": f"/src/{i}.py"}}
        message = {
            "model": "claude-sonnet-4-5-20250929",
            "id": f"msg_{sid}_{i}",
            "type": "message",
            "role": "assistant",
            "content": [block],
            "stop_reason": "tool_use",
            "usage": usage,
        }
        lines.append(
            {
                **common,
                "parentUuid": parent,
                "type": "assistant",
                "uuid": uuid,
                "message": message,
                "requestId": f"req_{sid}_{i}",
            }
        )
        parent = uuid
    return lines


def generate(folder: Path, sessions: int, calls: int, seed: int) -> int:
    rng = random.Random(seed)
    size = 0
    for number in range(sessions):
        path = folder / f"project-{number % 10}" / f"bench-{number:06d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps(line) + "\n" for line in session_lines(rng, number, calls))
        path.write_text(text)
        size += len(text)
    return size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--model", default="qwen2.5")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        logs, out = Path(tmp) / "logs", Path(tmp) / "out"
        out.mkdir()
        size = generate(logs, args.sessions, args.calls, args.seed)
        command = [
            sys.executable,
            "-m",
            "tokprof",
            "profile",
            str(logs),
            "-f",
            "parquet",
            "-o",
            str(out),
            "--model",
            args.model,
            "--jobs",
            str(args.jobs),
            "--no-progress",
            "--by",
            "project,branch",
        ]
        started = time.perf_counter()
        subprocess.run(command, check=True)
        seconds = time.perf_counter() - started
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        output = sum(f.stat().st_size for f in out.iterdir())
        import pyarrow.parquet as pq

        calls = pq.read_metadata(out / "calls.parquet").num_rows
    per_session = seconds / args.sessions
    day = 100_000
    print(
        json.dumps(
            {
                "sessions": args.sessions,
                "calls": calls,
                "input_mb": round(size / 1e6, 1),
                "jobs": args.jobs,
                "cores": os.cpu_count(),
                "seconds": round(seconds, 1),
                "sessions_per_second": round(1 / per_session, 1),
                "peak_rss_mb_largest_process": round(peak_kb / 1024),
                "output_mb": round(output / 1e6, 2),
                "output_bytes_per_call": round(output / max(calls, 1)),
                "extrapolated_100k_per_day": {
                    "core_hours": round(per_session * args.jobs * day / 3600, 1),
                    "hours_on_these_jobs": round(per_session * day / 3600, 1),
                    "output_mb": round(output / args.sessions * day / 1e6),
                    "calls_rows": calls // args.sessions * day,
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
