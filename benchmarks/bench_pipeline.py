"""The pipeline's growth and memory, whole processes (#43 items 2 and 4), as ratios: no timed assertion.

* **growth**: ``tokprof profile LOG -m qwen2.5 -f json -o FILE`` (the default command: the profile,
  its analyses and the replays that prove its advice) on 300 and on 3,000 generated calls
  (benchmarks/generate_session.py), each in a fresh process, CPU seconds (user + system of the
  child), the least of ``--repeat`` runs. Limit: 3,000 calls in at most 11 times the CPU of 300
  (the prompts grow with the calls: every stage must cost what a call adds).
* **whatif memory** (``--whatif``): ``tokprof whatif LOG`` on a big Claude Code session
  (benchmarks/bench_memory.py's "big" shape, ``--size-mb``, compacted every
  ``--calls-per-compaction`` calls): its peak RSS beyond a 3-call session's, against 20 times the
  largest prompt's text plus 5 kB a call.

Usage: python benchmarks/bench_pipeline.py [--repeat 2] [--whatif] [--size-mb 1024]
Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

GROWTH_LIMIT = 11.0
PROMPT_TIMES = 20
CALL_KB = 5


def run(arguments: list[str]) -> tuple[float, float, int]:
    """CPU seconds (user + system), peak RSS (MB) and exit code of ``python -m tokprof ARGUMENTS``."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="100", NO_COLOR="1")
    process = subprocess.Popen(
        [sys.executable, "-m", "tokprof", *arguments], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    _, status, usage = os.wait4(process.pid, 0)
    if process.stderr is not None:
        sys.stderr.write(process.stderr.read().decode(errors="replace"))
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def growth(folder: Path, repeat: int) -> None:
    times: dict[int, float] = {}
    for calls in (300, 3000):
        log = folder / f"generated-{calls}.json"
        subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "generate_session.py"), "--calls", str(calls), "-o", str(log)],
            check=True,
        )
        runs = []
        for _ in range(repeat):
            cpu, _, code = run(
                ["profile", str(log), "-m", "qwen2.5", "--no-progress", "-f", "json", "-o", str(folder / "out.json")]
            )
            assert code == 0, f"tokprof profile failed on {log}"
            runs.append(cpu)
        times[calls] = min(runs)
    print(f"| generated calls | tokprof profile, CPU s (least of {repeat}) |\n| ---: | ---: |")
    for calls, cpu in times.items():
        print(f"| {calls:,} | {cpu:.2f} |")
    print(f"\n3,000 / 300 calls: {times[3000] / times[300]:.1f}x (limit {GROWTH_LIMIT:g}x)\n")


def whatif_memory(folder: Path, size_mb: float, per_segment: int) -> None:
    import bench_memory

    log = folder / f"{bench_memory.SESSION}.jsonl"
    session = bench_memory.generate(log, int(size_mb * 1e6), per_segment, 7)
    small = folder / "small" / f"{bench_memory.SESSION}.jsonl"
    small.parent.mkdir(exist_ok=True)
    bench_memory.generate_calls(small, 3, per_segment, 7)
    bench_memory._give_back()
    _, base, code = run(["whatif", str(small), "-m", "qwen2.5", "-f", "json", "-o", str(folder / "small.json")])
    assert code == 0, "whatif failed on the 3-call session"
    cpu, peak, code = run(["whatif", str(log), "-m", "qwen2.5", "-f", "json", "-o", str(folder / "whatif.json")])
    assert code == 0, "whatif failed on the big session"
    calls = json.loads((folder / "whatif.json").read_text(encoding="utf-8"))["policies"][0]["calls"]
    added = max(peak - base, 0.0)
    limit = (PROMPT_TIMES * session.largest_text + CALL_KB * 1000 * calls) / 1e6
    print("| log | calls | largest prompt (MB of text) | peak RSS (MB) | added (MB) | limit (MB) | added / limit |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| Claude Code session, {log.stat().st_size / 1e6:,.0f} MB | {calls:,} | {session.largest_text / 1e6:.2f} | "
        f"{peak:,.0f} | {added:,.0f} | {limit:,.1f} | {added / limit:.2f} |"
    )
    print(f"\nwhatif CPU: {cpu:.1f} s\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--whatif", action="store_true", help="also the peak memory of whatif on a big session")
    parser.add_argument("--size-mb", type=float, default=1024)
    parser.add_argument("--calls-per-compaction", type=int, default=120)
    parser.add_argument("--no-growth", action="store_true")
    args = parser.parse_args()
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}\n")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if not args.no_growth:
            growth(folder, args.repeat)
        if args.whatif:
            whatif_memory(folder, args.size_mb, args.calls_per_compaction)


if __name__ == "__main__":
    main()
