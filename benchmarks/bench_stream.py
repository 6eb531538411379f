"""Memory of profiling a stream of calls (``tokprof.profiling.profile_calls``) against a trace held whole
(``profile_trace``), on calls whose prompts are separate lists (#33 item 7).

A synthetic log of ``--calls`` calls: a conversation that grows by an assistant turn with a tool call,
its result (``--result-words`` words) and a user message per call, compacted every
``--calls-per-compaction`` calls (so the prompts stay the size of a context window), with a subagent
beside it every fourth call. Each call's prompt is a fresh copy of the conversation (through JSON, new
strings too: what a capture log's reader gives), made when the call is asked for.

* **streamed**: a generator yields each call once to ``profile_calls``; the analyses
  (``attach_analyses``) then run on its light calls.
* **batch**: the same calls built into a list first, then ``profile_trace`` and the analyses.

Figures from ``tracemalloc`` (Python's allocations): the peak during each (the model and its tokenizer
loaded beforehand, outside the count), and what the streamed path keeps when done (the profile and its
light trace; the caches the work warmed are not counted), per call: the difference between ``--calls`` and twice as many, over ``--calls``.

Usage: python benchmarks/bench_stream.py [--calls 1000] [--calls-per-compaction 100] [--result-words 60]
       [--model qwen2.5] [--seed 7]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
import tracemalloc
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tokprof.analyses.standard import attach_analyses  # noqa: E402
from tokprof.models import resolve_model  # noqa: E402
from tokprof.profiling import profile_calls, profile_trace  # noqa: E402
from tokprof.trace import Call, Trace, Usage  # noqa: E402

MODEL = "claude-sonnet-4-5-20250929"
WORDS = (
    "request handler cache worker queue retry timeout config service module parser token buffer index "
    "schema column table migration deploy build test fixture coverage lint format error warning trace span "
    "the a an of to in for on with by from and or not is was will should could returns raises uses when if"
).split()
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool: it does one thing, and says what it found.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
    for name in ("read_file", "run_command", "search", "edit_file")
]


def calls(n: int, per_compaction: int, result_words: int, seed: int):
    """The log's calls, each made when asked for, its prompt a fresh copy (new lists, dicts, strings)."""
    rng = random.Random(seed)
    system = {"role": "system", "content": "You are a coding agent. " + " ".join(rng.choices(WORDS, k=200))}
    main: list[dict] = [system, {"role": "user", "content": "fix the failing test"}]
    sub: list[dict] = [{"role": "user", "content": "find where the cache is built"}]
    moment = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
    tools_text = json.dumps(TOOLS)
    for i in range(n):
        moment += timedelta(seconds=15)
        thread = "agent-1" if i % 4 == 3 else ""
        conversation = sub if thread else main
        kind = "call"
        if not thread and i and i % per_compaction == 0:
            summary = {"role": "user", "content": "Summary: " + " ".join(rng.choices(WORDS, k=150))}
            main[:] = [system, summary]
            conversation, kind = main, "compaction"
        prompt = 3000 + 120 * len(conversation)
        yield Call(
            index=i,
            messages=json.loads(json.dumps(conversation)),
            tools=json.loads(tools_text),
            model=MODEL,
            reported=Usage(prompt=prompt, cache_read=prompt - 200, cache_write=200, output=80),
            day=moment.date(),
            where=f"line {i + 1}",
            response=None,
            kind=kind,
            thread=thread,
            time=moment,
        )
        ident = f"toolu_{i:06d}"
        call = {"id": ident, "type": "function", "function": {"name": rng.choice(TOOLS)["function"]["name"]}}
        call["function"]["arguments"] = json.dumps({"path": f"src/{rng.choice(WORDS)}.py"})
        conversation.append({"role": "assistant", "content": " ".join(rng.choices(WORDS, k=20)), "tool_calls": [call]})
        conversation.append(
            {"role": "tool", "tool_call_id": ident, "content": " ".join(rng.choices(WORDS, k=result_words))}
        )
        conversation.append({"role": "user", "content": " ".join(rng.choices(WORDS, k=8))})


def header() -> Trace:
    return Trace(path="synthetic.jsonl", format="capture", model=MODEL)


def measure(run) -> tuple[int, int, float]:
    """The peak of Python's allocations during ``run()``, what its result holds (allocated with it
    alive, less after it is let go: the caches the work warmed are not counted), and its time."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - start
    gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    del result
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return peak - base, current - after, seconds


def streamed(chat, n: int, options: argparse.Namespace):
    profile, light = profile_calls(
        calls(n, options.calls_per_compaction, options.result_words, options.seed), header(), chat
    )
    return attach_analyses(profile, light, chat, {}), light


def batch(chat, n: int, options: argparse.Namespace):
    trace = header()
    trace.calls = list(calls(n, options.calls_per_compaction, options.result_words, options.seed))
    return attach_analyses(profile_trace(trace, chat), trace, chat, {}), trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--calls-per-compaction", type=int, default=100)
    parser.add_argument("--result-words", type=int, default=60)
    parser.add_argument("--model", default="qwen2.5")
    parser.add_argument("--seed", type=int, default=7)
    options = parser.parse_args()
    chat = resolve_model(options.model)
    n = options.calls
    list(calls(3, options.calls_per_compaction, options.result_words, options.seed))  # warm what imports on first use
    streamed(chat, 30, options)  # and what the first profile sets up
    rows = []
    kept = {}
    for size in (n, 2 * n):
        peak_s, kept_s, time_s = measure(lambda: streamed(chat, size, options))
        peak_b, kept_b, time_b = measure(lambda: batch(chat, size, options))
        kept[size] = kept_s
        rows.append((size, peak_s, kept_s, time_s, peak_b, kept_b, time_b))
    print("| calls | streamed peak | streamed kept | streamed s | batch peak | batch kept | batch s |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for size, peak_s, kept_s, time_s, peak_b, kept_b, time_b in rows:
        print(
            f"| {size:,} | {peak_s / 1e6:,.1f} MB | {kept_s / 1e6:,.1f} MB | {time_s:,.1f} | "
            f"{peak_b / 1e6:,.1f} MB | {kept_b / 1e6:,.1f} MB | {time_b:,.1f} |"
        )
    per_call = (kept[2 * n] - kept[n]) / n
    print(f"\nstreamed: {per_call:,.0f} bytes kept per call (the profile's row and the light call, with their facts)")


if __name__ == "__main__":
    main()
