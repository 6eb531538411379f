"""Worst-case time per input byte and per message (#33): the inputs that once took time quadratic
in their size, at two sizes, as ratios.

* **bytes**: the nesting check on a tool call's ``arguments`` (``jsonfile.too_deep``) on its worst
  case (201 ``[``, then ``"``, then ``\\"`` repeated) of 64 KB and of 1 MB, and ``tokprof.profile``
  of a one-call log whose arguments are that text, 64 KB and 1 MB. Limit: 16 times the size in at
  most 32 times the time (it was 256 times: 256 KB took 83 s).
* **messages**: ``tokprof.profile`` of a one-call log of 1,000 and of 8,000 short messages, the model
  (``qwen2.5``) loaded beforehand. Limit: 8 times the messages in at most 16 times the time (it was
  about 45 times: 2,000/4,000/8,000 messages took 2.7/8.6/32.6 s).
* **past the markers**: the same of 8,000 and of 80,000 messages, more than the 65,533 content markers
  one render can hold (marked a chunk at a time). Limit: 10 times the messages in at most 20 times
  the time (before, such a prompt had no markers and rendered every message's prefix: 70,000 did not
  finish in 2 minutes).

CPU seconds in this process, median of ``--repeat``.

Usage: python benchmarks/bench_linear.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import tokprof  # noqa: E402
from bench_logs import cpu  # noqa: E402
from tokprof.formats.jsonfile import too_deep  # noqa: E402


def worst_arguments(size: int) -> str:
    """201 brackets, so that the check scans, but 200 deep (the log is valid), then an unterminated
    string of escaped quotes: the whole text is scanned."""
    return "[]" + "[" * 200 + '"' + '\\"' * ((size - 203) // 2)


def one_call(path: Path, messages: list[dict]) -> Path:
    record = {
        "request": {"model": "Qwen/Qwen2.5-7B-Instruct", "messages": messages},
        "response": {"choices": [{"message": {"role": "assistant", "content": "ok"}}]},
    }
    path.write_text(json.dumps(record) + "\n")
    return path


def with_arguments(path: Path, size: int) -> Path:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": worst_arguments(size)}}
    return one_call(
        path,
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
        ],
    )


def with_messages(path: Path, n: int) -> Path:
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(n)]
    return one_call(path, messages + [{"role": "user", "content": "q"}])


def report(name: str, unit: str, small: int, large: int, times: dict[int, float], limit: float) -> None:
    print(f"| {name} | {unit} | CPU s |\n| --- | ---: | ---: |")
    for size, took in times.items():
        print(f"| | {size:,} | {took:.4f} |")
    ratio = times[large] / max(times[small], 1e-9)
    print(f"\n{large // small}x the {unit}: {ratio:.1f}x the time (limit {limit:.0f}x)\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    model = tokprof.get_model("qwen2.5")
    sizes = (64 * 1024, 1024 * 1024)
    check = {size: cpu(lambda size=size: too_deep(worst_arguments(size)), repeat) for size in sizes}
    report("nesting check", "bytes", *sizes, check, 32)
    with tempfile.TemporaryDirectory() as folder:
        logs = {size: with_arguments(Path(folder) / f"a{size}.jsonl", size) for size in sizes}
        profiled = {size: cpu(lambda size=size: tokprof.profile(logs[size], model=model), repeat) for size in sizes}
        report("profile, worst arguments", "bytes", *sizes, profiled, 32)
        counts = (1000, 8000)
        logs = {n: with_messages(Path(folder) / f"m{n}.jsonl", n) for n in counts}
        profiled = {n: cpu(lambda n=n: tokprof.profile(logs[n], model=model), repeat) for n in counts}
        report("profile, one prompt", "messages", *counts, profiled, 16)
        counts = (8000, 80000)
        logs = {n: with_messages(Path(folder) / f"m{n}.jsonl", n) for n in counts}
        profiled = {n: cpu(lambda n=n: tokprof.profile(logs[n], model=model), repeat) for n in counts}
        report("profile, one prompt past the markers", "messages", *counts, profiled, 20)


if __name__ == "__main__":
    main()
