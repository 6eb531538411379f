"""How two kinds of work grow: a tool catalogue's per-tool costs with its size, and a directory of
sessions with the number of jobs.

* **tools**: ``tokprof.tools_report(tools=...)`` (the static catalogue, every tool's marginal cost)
  on generated catalogues of 12 and of 200 tools, CPU seconds in this process with the model loaded
  beforehand, median of ``--repeat``; the limit (issue #17): 200 tools in at most 20 times the time
  of 12.
* **jobs**: ``tokprof profile DIR --jobs 1`` and ``--jobs 2`` in fresh processes, wall time, median
  of ``--repeat``, on a directory of real sessions (the Claude Code and Codex logs of
  ``--corpus``, each copied ``--copies`` times under its own session id, so that no call is a
  copy of another); the limit: at least 1.6 times faster with 2 jobs than with 1, on an idle
  2-core machine, and the same report.

Usage: python benchmarks/bench_scaling.py [--repeat 3] [--copies 4] [--corpus ../shared/corpus]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import tokprof  # noqa: E402
from bench_logs import cpu  # noqa: E402
from generate_session import make_tools  # noqa: E402


def tools(repeat: int) -> None:
    model = tokprof.get_model("qwen2.5")
    times = {}
    for size in (12, 200):
        catalogue = make_tools(random.Random(7), size)
        times[size] = cpu(lambda: tokprof.tools_report(tools=catalogue, model=model), repeat)
    print("| catalogue | tools (CPU s) |\n| --- | ---: |")
    for size, took in times.items():
        print(f"| {size} tools | {took:.3f} |")
    print(f"\n200 tools / 12 tools: {times[200] / times[12]:.1f}x (limit 20x)\n")


def directory(corpus: Path, copies: int, repeat: int, folder: Path) -> None:
    sources = [
        corpus / "claude_code_2.1_compacted" / "8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
        corpus / "claude_code_medium_full-session-four.jsonl",
        corpus / "codex_rollout-2025-09-25T09-49-46-01998190-fba6-7f40-9309-dc4e48c5844a.jsonl",
        corpus / "codex_0.58_rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
    ]
    sources = [s for s in sources if s.is_file()]
    if not sources:
        print(f"jobs: no corpus at {corpus}: skipped")
        return
    sessions = folder / "sessions"
    sessions.mkdir()
    rng = random.Random(7)
    for source in sources:
        text = source.read_text(encoding="utf-8")
        for n in range(copies):
            # a copy under new session and request ids: its calls are its own, not copies of the original's
            copy = text
            for line in text.splitlines()[:50]:
                record = json.loads(line)
                old = record.get("sessionId") or (record.get("payload") or {}).get("id")
                if old:
                    copy = copy.replace(old, str(uuid.UUID(int=rng.getrandbits(128))))
                    break
            copy = copy.replace('"requestId":"req_', f'"requestId":"req_{n}x').replace(
                '"requestId": "req_', f'"requestId": "req_{n}x'
            )
            (sessions / f"{n}-{source.name}").write_text(copy, encoding="utf-8")
    command = [sys.executable, "-m", "tokprof", "profile", str(sessions), "-f", "json", "--no-progress"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(command + ["--jobs", "1"], check=True, capture_output=True, env=env)  # warm the caches
    walls, outputs = {}, {}
    for jobs in (1, 2):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            done = subprocess.run(command + ["--jobs", str(jobs)], check=True, capture_output=True, env=env)
            times.append(time.perf_counter() - start)
        walls[jobs], outputs[jobs] = statistics.median(times), done.stdout
    report = json.loads(outputs[1])
    print(
        f"| directory | sessions | jobs 1 (s) | jobs 2 (s) | speed-up | same report |\n"
        f"| --- | ---: | ---: | ---: | ---: | --- |\n"
        f"| {len(sources)} corpus logs x {copies} | {len(report.get('sessions', []))} | {walls[1]:.1f} | "
        f"{walls[2]:.1f} | {walls[1] / walls[2]:.2f}x | {'yes' if outputs[1] == outputs[2] else 'NO'} |"
    )
    print(f"\n(limit: at least 1.6x with 2 jobs; {os.cpu_count()} cores here)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    args = parser.parse_args()
    print(f"Machine: {platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} cores\n")
    tools(args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        directory(Path(args.corpus), args.copies, args.repeat, Path(tmp))


if __name__ == "__main__":
    main()
