"""Peak memory of the API-capture and Codex readers (#43.4): a log's memory is its largest prompt plus a
bounded summary per call, not the whole log.

Two generated logs of ``--calls`` calls (5,000 by default):

1. **An OpenAI Chat Completions capture** (``chat``): what a proxy writes in a day, ``--per`` calls per
   conversation, one conversation after the other; each request body resends its conversation (a
   system prompt, the task, then a tool call and a 600-character result per call) with three tools
   and its ``usage``.
2. **A Codex rollout** (``codex``): one session, each call a reasoning item (encrypted, with a
   summary), a shell ``function_call``, its ``token_count`` and a 600-character output; a user turn
   every 25 calls, a compaction (with its replacement history) every ``--per`` calls.

Each is measured two ways, each in a fresh process of the tokprof under ``--root`` (this checkout by
default; pass another checkout to measure it before a change):

* **reader**: the format's reader alone (``open_log(LOG).calls()``, each call dropped), the peak of
  the memory Python allocates while reading (``tracemalloc``);
* **profile**: ``tokprof profile LOG -f json -o FILE --model qwen2.5``, the peak RSS of the process
  minus that of profiling a 3-call log of the same shape (the program and the tokenizer). The profile
  stage consumes calls one at a time only where the facade streams them.

Limit (#43): at most ``LIMIT_PROMPT`` times the largest prompt's text plus ``LIMIT_CALL_KB`` kB a call.
Everything comes from ``random.Random(--seed)``.

Usage: python benchmarks/bench_memory_formats.py [--shape chat,codex] [--calls 5000] [--per 25]
       [--root PATH] [--skip-profile] [--keep FOLDER]
Prints Markdown rows. No timed assertion.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_memory import WORDS  # noqa: E402

LIMIT_PROMPT = 20
LIMIT_CALL_KB = 5
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name}: " + " ".join(WORDS[i : i + 30]),
            "parameters": {"type": "object", "properties": {"arg": {"type": "string"}}, "required": ["arg"]},
        },
    }
    for i, name in enumerate(("shell", "read_file", "apply_patch"))
]


def text(rng: random.Random, size: int) -> str:
    words, length = [], 0
    while length < size:
        word = rng.choice(WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)


def generate_chat(path: Path, calls: int, per: int, seed: int) -> int:
    """A capture of ``calls`` requests, ``per`` per conversation; returns the largest prompt's text."""
    rng = random.Random(seed)
    largest = 0
    with path.open("w", encoding="utf-8") as f:
        made = 0
        while made < calls:
            messages: list[dict] = [
                {"role": "system", "content": text(rng, 2000)},
                {"role": "user", "content": text(rng, 300)},
            ]
            size = sum(len(m["content"]) for m in messages)
            for _ in range(min(per, calls - made)):
                largest = max(largest, size)
                record = {
                    "model": "gpt-4o-2024-08-06",
                    "messages": messages,
                    "tools": TOOLS,
                    "usage": {"prompt_tokens": size // 4, "completion_tokens": 40, "total_tokens": size // 4 + 40},
                }
                f.write(json.dumps(record) + "\n")
                made += 1
                arguments = json.dumps({"arg": text(rng, 60)})
                call_id = f"call_{made:06d}"
                result = text(rng, 600)
                messages.append(
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"id": call_id, "type": "function", "function": {"name": "shell", "arguments": arguments}}
                        ],
                    }
                )
                messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
                size += len(arguments) + len(result)
    return largest


def generate_codex(path: Path, calls: int, per: int, seed: int) -> int:
    """A rollout of ``calls`` calls, compacted every ``per``; returns the largest prompt's text."""
    rng = random.Random(seed)
    clock = [0]

    def line(kind: str, payload: dict) -> str:
        clock[0] += 1
        stamp = f"2025-11-17T{clock[0] // 3600 % 24:02d}:{clock[0] // 60 % 60:02d}:{clock[0] % 60:02d}.000Z"
        return json.dumps({"timestamp": stamp, "type": kind, "payload": payload}) + "\n"

    def message(role: str, content: str) -> dict:
        part = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": part, "text": content}]}

    base = text(rng, 3000)
    context = message("user", "<environment_context>\n  <cwd>/home/dev/project</cwd>\n</environment_context>")
    largest = size = len(base) + len(context["content"][0]["text"])
    total = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0}
    with path.open("w", encoding="utf-8") as f:
        f.write(
            line(
                "session_meta",
                {
                    "id": "019a93b9-f380-7600-98ff-940e6b99603c",
                    "timestamp": "2025-11-17T00:00:00.000Z",
                    "cwd": "/home/dev/project",
                    "cli_version": "0.58.0",
                    "base_instructions": {"text": base},
                },
            )
        )
        f.write(line("turn_context", {"model": "gpt-5.1-codex", "cwd": "/home/dev/project"}))
        f.write(line("response_item", context))
        for n in range(calls):
            if n and n % per == 0:
                summary = "Summary of the work so far: " + text(rng, 1500)
                f.write(
                    line("compacted", {"message": summary, "replacement_history": [context, message("user", summary)]})
                )
                size = len(base) + len(context["content"][0]["text"]) + len(summary)
            if n % 25 == 0:
                task = text(rng, 300)
                f.write(line("response_item", message("user", task)))
                size += len(task)
            reasoning = text(rng, 100)
            f.write(
                line(
                    "response_item",
                    {
                        "type": "reasoning",
                        "summary": [{"type": "summary_text", "text": reasoning}],
                        "encrypted_content": "gAAAA" + "".join(rng.choice("abcdefgh0123") for _ in range(200)),
                    },
                )
            )
            arguments = json.dumps({"command": ["bash", "-lc", text(rng, 60)]})
            call_id = f"call_{n:06d}"
            f.write(
                line(
                    "response_item",
                    {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": call_id},
                )
            )
            last = {
                "input_tokens": size // 4,
                "cached_input_tokens": size // 5,
                "output_tokens": 60,
                "reasoning_output_tokens": 30,
            }
            total = {key: total[key] + last[key] for key in total}
            largest = max(largest, size)
            f.write(
                line(
                    "event_msg",
                    {"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": last}},
                )
            )
            output = text(rng, 600)
            f.write(line("response_item", {"type": "function_call_output", "call_id": call_id, "output": output}))
            size += len(reasoning) + len(arguments) + len(output)
    return largest


GENERATORS = {"chat": generate_chat, "codex": generate_codex}

READER = """
import sys, tracemalloc
from tokprof.formats import open_log
path = sys.argv[1]
with open_log(path) as warm:  # the reader's modules imported before measuring
    pass
tracemalloc.start()
n = 0
for call in open_log(path).calls():
    n += 1
del call
print(n, tracemalloc.get_traced_memory()[1])
"""


def env(root: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(root)}


def reader_peak(root: Path, path: Path) -> tuple[int, int]:
    """The calls read and the peak of memory allocated while reading them."""
    out = subprocess.run(
        [sys.executable, "-c", READER, str(path)], env=env(root), cwd=root, capture_output=True, text=True, check=True
    )
    calls, peak = out.stdout.split()
    return int(calls), int(peak)


def profile_rss(root: Path, path: Path, folder: Path) -> int:
    """Peak RSS (bytes) of ``tokprof profile`` on a log, in a fresh process."""
    script = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    command = [sys.executable, "-m", "tokprof", "profile", str(path), "-f", "json", "-o", str(folder / "out.json")]
    command += ["--model", "qwen2.5"]
    out = subprocess.run(
        [sys.executable, "-c", script, *command], env=env(root), cwd=root, capture_output=True, text=True
    )
    if out.returncode != 0:
        raise SystemExit(f"tokprof profile failed on {path}: {out.stderr.strip()[-500:]}")
    return int(out.stdout.split()[-1]) * 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="chat,codex")
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--per", type=int, default=25, help="calls per conversation (chat) or per compaction (codex)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the tokprof checkout to measure")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-profile", action="store_true")
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args(argv)
    print(f"tokprof at {args.root}; limit {LIMIT_PROMPT}x the largest prompt's text + {LIMIT_CALL_KB} kB a call")
    print("| log | calls | file MB | largest prompt kB | limit MB | reader peak MB | profile added MB | within |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for shape in [s for s in args.shape.split(",") if s]:
            log = folder / f"{shape}-{args.calls}.jsonl"
            small = folder / f"{shape}-3.jsonl"
            largest = GENERATORS[shape](log, args.calls, args.per, args.seed)
            GENERATORS[shape](small, 3, args.per, args.seed)
            limit = LIMIT_PROMPT * largest + LIMIT_CALL_KB * 1000 * args.calls
            calls, peak = reader_peak(args.root, log)
            added = None
            if not args.skip_profile:
                added = max(0, profile_rss(args.root, log, folder) - profile_rss(args.root, small, folder))
            measured = max(peak, added or 0)
            worst = max(worst, measured / limit)
            shown = f"{added / 1e6:.1f}" if added is not None else "-"
            print(
                f"| {shape} | {calls:,} | {log.stat().st_size / 1e6:.1f} | {largest / 1e3:.1f} | {limit / 1e6:.1f} "
                f"| {peak / 1e6:.1f} | {shown} | {'yes' if measured <= limit else 'NO'} |"
            )
    print(f"\nworst: {worst:.2f} of the limit")
    return 0 if worst <= 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
