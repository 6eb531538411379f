"""Start-up: how long `tokprof --help`, `tokprof --version` and a one-call profile take, against
the interpreter's own start (`python -c pass`), in fresh processes.

Usage: python benchmarks/bench_startup.py [--repeat 9]

Prints a Markdown table: the median wall time of each command, what it adds to `python -c pass`,
and that as a ratio of the stated limit (help and version: 0.3 s added; a one-call profile: 0.5 s
added, issue #17). Ratios under 1 meet the limit. The tokenizer cache is warmed first (a first run
converts the vocabulary once, about 5 s, and is not start-up), and the commands run with Python's
bytecode cache as an installed package has it (``PYTHONDONTWRITEBYTECODE`` is left out of their
environment: without the cache every start compiles tokprof's modules again, about 0.1 s more).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: What each command may add to the interpreter's start, in seconds.
LIMITS = {"--help": 0.3, "--version": 0.3, "profile (1 call)": 0.5}


#: The commands' environment: with the bytecode cache.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def wall(args: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "one.json"
        log.write_text(json.dumps({"model": "Qwen/Qwen2.5-7B-Instruct", "messages": [
            {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]}))
        tokprof = [sys.executable, "-m", "tokprof"]
        commands = {
            "--help": tokprof + ["--help"],
            "--version": tokprof + ["--version"],
            "profile (1 call)": tokprof + ["profile", str(log), "--no-progress"],
        }
        for command in commands.values():  # warm the tokenizer and bytecode caches
            subprocess.run(command, check=True, capture_output=True, env=ENV)
        base = wall([sys.executable, "-c", "pass"], args.repeat)
        print(f"Machine: {platform.machine()}, Python {platform.python_version()}, median of {args.repeat} runs\n")
        print("| command | wall | added to `python -c pass` | limit | added / limit |")
        print("| --- | ---: | ---: | ---: | ---: |")
        print(f"| `python -c pass` | {base:.3f} s | | | |")
        for name, command in commands.items():
            took = wall(command, args.repeat)
            added = took - base
            print(f"| `tokprof {name}` | {took:.3f} s | {added:.3f} s | {LIMITS[name]} s | {added / LIMITS[name]:.2f} |")


if __name__ == "__main__":
    main()
