"""The agent readers' cost in session length (#45.4): reading a session of 8x the calls takes at most
about 8x the CPU and holds about 8x the memory, not 64x.

For each reader of ``long_sessions.WRITERS`` (pi, Qwen Code, Cline, Gemini CLI, OpenCode, Claude
Code), a session of ``--calls`` calls and one of 8 times as many are read whole
(``tokprof.formats.read_trace``: the reader only, no tokenizer), and the CPU time (median of
``--repeat``) and the peak of memory allocated while reading (``tracemalloc``, one run) are printed
with their ratios. Limit: a CPU ratio of at most 10 (8 plus noise); before #45.4 pi, Qwen Code and
Cline held a list of the whole history per entry or request (quadratic: pi 16,000 entries 63 s and
1.64 GB).

Then the memory of the reader alone (#43.4): each session's calls are iterated and dropped one by one
(``tokprof.formats.open_log(...).calls()``, as a streamed caller takes them) under ``tracemalloc``, and
the peak is set against the target (these readers, and those of ``long_sessions.MORE``: aider, Copilot CLI,
Kimi CLI): at most 20 times the largest prompt's text (its messages' content,
reasoning, tool names and arguments, in characters) plus 5 kB a call.

Usage: python benchmarks/bench_readers.py [--calls 1000] [--repeat 3] [--only pi,cline]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_logs import cpu  # noqa: E402
from long_sessions import MORE, WRITERS  # noqa: E402
from tokprof.formats import open_log, read_trace  # noqa: E402

LIMIT = 10.0
#: The reader's memory target (#43.4): this many times the largest prompt's text, plus this much a call.
PROMPT_TIMES = 20
PER_CALL = 5_000


def peak(path: Path) -> int:
    tracemalloc.start()
    try:
        read_trace(str(path))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def message_text(message: dict) -> int:
    """A message's text in characters: its content, reasoning, tool names and arguments."""
    size = sum(len(message.get(key) or "") for key in ("content", "reasoning_content"))
    for call in message.get("tool_calls") or ():
        size += len(call["function"]["name"]) + len(call["function"]["arguments"])
    return size


def largest_prompt(path: Path) -> tuple[int, int]:
    """The log's calls and its largest prompt's text (characters), read untraced."""
    sizes: dict[int, tuple[dict, int]] = {}  # id -> (message, size): messages shared between prompts sized once
    calls = largest = 0
    for call in open_log(str(path)).calls():
        calls += 1
        text = 0
        for message in call.messages:
            held = sizes.get(id(message))
            if held is None or held[0] is not message:
                held = sizes[id(message)] = (message, message_text(message))
            text += held[1]
        largest = max(largest, text)
    return calls, largest


def reader_peak(path: Path) -> int:
    """The peak of memory allocated while the log's calls are iterated and each dropped."""
    tracemalloc.start()
    try:
        for _ in open_log(str(path)).calls():
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def memory_rows(names: list[str], sizes: list[int], tmp: Path) -> bool:
    """The reader-alone memory table; whether every row is within the target."""
    print("\n| reader | calls | largest prompt (chars) | peak MB (reader alone) | B a call | target MB | within |")
    print("|---|---:|---:|---:|---:|---:|---|")
    ok = True
    for name in names:
        for n in sizes:
            path = {**WRITERS, **MORE}[name](tmp / f"{name}-mem-{n}", n)
            calls, largest = largest_prompt(path)
            held = reader_peak(path)
            target = PROMPT_TIMES * largest + PER_CALL * calls
            ok = ok and held <= target
            print(
                f"| {name} | {calls:,} | {largest:,} | {held / 1e6:.2f} | {held // max(calls, 1):,} | {target / 1e6:.2f} "
                f"| {'yes' if held <= target else 'NO'} |"
            )
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated format names")
    parser.add_argument("--memory-only", action="store_true", help="only the reader-alone memory table")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(WRITERS)
    memory_names = [n for n in args.only.split(",") if n] or [*WRITERS, *MORE]
    print("| reader | calls | CPU s | 8x calls | CPU s | CPU ratio | peak MB | peak MB 8x | memory ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name in [] if args.memory_only else [n for n in names if n in WRITERS]:
            small = WRITERS[name](Path(tmp) / f"{name}-1", args.calls)
            large = WRITERS[name](Path(tmp) / f"{name}-8", 8 * args.calls)
            t1 = cpu(lambda: read_trace(str(small)), args.repeat)
            t8 = cpu(lambda: read_trace(str(large)), args.repeat)
            m1, m8 = peak(small), peak(large)
            ratio = t8 / t1 if t1 else float("inf")
            worst = max(worst, ratio)
            print(
                f"| {name} | {args.calls:,} | {t1:.3f} | {8 * args.calls:,} | {t8:.3f} | {ratio:.1f} "
                f"| {m1 / 1e6:.1f} | {m8 / 1e6:.1f} | {m8 / m1:.1f} |"
            )
        within = memory_rows(memory_names, [args.calls, 8 * args.calls], Path(tmp))
    verdict = "within" if worst <= LIMIT else "OVER"
    print(f"\nworst CPU ratio {worst:.1f}: {verdict} the limit of {LIMIT:g}")
    print(f"reader memory: {'within' if within else 'OVER'} {PROMPT_TIMES}x the largest prompt + {PER_CALL:,} B a call")
    return 0 if worst <= LIMIT and within else 1


if __name__ == "__main__":
    raise SystemExit(main())
