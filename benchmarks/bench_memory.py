"""Peak memory and time of `tokprof profile` on a large synthetic Claude Code session, against the
size of its largest prompt.

The session is what makes real Claude Code logs large: most of a line is never sent to the model.
Every edit's ``toolUseResult`` keeps the whole original file (``originalFile``), a command's
``progress`` lines repeat its output as it grows, its ``toolUseResult`` keeps the whole output, and
reads keep the file's content twice; what goes to the model (the tool results, a few kilobytes, and
the assistant's text and tool calls) is a small part. The conversation is compacted every
``--calls-per-compaction`` calls (a ``compact_boundary`` and its summary), so the prompts stay the
size of a real context window. Everything comes from ``random.Random(--seed)``.

tokprof reads a JSONL log as a stream and keeps of each line only what later lines and the calls
need, so memory should follow the prompts, not the file: the trace keeps every call's prompt (the
messages of each compaction segment, shared between its calls), and profiling needs the largest
one rendered and tokenized. The limit stated here: the memory the log adds (peak RSS minus that of
profiling a 3-call log of the same shape) is at most ``LIMIT`` times the prompt text the trace
keeps (the largest prompt of each segment, added up), and far below the file's size.

Usage: python benchmarks/bench_memory.py [--size-mb 1024] [--calls-per-compaction 120] [--model qwen2.5]
       [--seed 7] [--keep PATH]
Prints a Markdown table row (with the machine) for docs/performance.md. No timed assertion.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LIMIT = 40  # memory the log adds / the prompt text the trace keeps
SESSION = "bench-memory-0001"
MODEL = "claude-sonnet-4-5-20250929"
WORDS = (
    "request handler cache worker queue retry timeout config service module parser token buffer index "
    "schema column table migration deploy build test fixture coverage lint format error warning trace span "
    "metric latency throughput thread lock pool connection socket client server route endpoint payload header "
    "the a an of to in for on with by from and or not is was will should could returns raises uses when if"
).split()


class Writer:
    """Writes the session line by line, keeping count of what is sent to the model."""

    def __init__(self, f, rng: random.Random):
        self.f = f
        self.rng = rng
        self.n = 0
        self.parent: str | None = None
        self.clock = 1_760_000_000.0
        self.calls = 0
        self.segment_text = 0  # characters of message text in the current segment (its last prompt)
        self.kept_text = 0  # the largest prompt of each finished segment, added up
        self.largest_text = 0

    def text(self, size: int) -> str:
        words, length = [], 0
        choice = self.rng.choice
        while length < size:
            word = choice(WORDS)
            words.append(word)
            length += len(word) + 1
        return " ".join(words)

    def code(self, size: int) -> str:
        lines, length = [], 0
        while length < size:
            line = f"    {self.rng.choice(WORDS)}_{self.rng.randrange(100)} = {self.text(self.rng.randrange(20, 70))!r}"
            lines.append(line)
            length += len(line) + 1
        return "\n".join(lines)

    def line(self, kind: str, chained: bool = True, **fields) -> str:
        self.n += 1
        self.clock += 1.5
        uuid = f"u{self.n:08d}"
        row = {"parentUuid": self.parent if chained else None, "isSidechain": False, "userType": "external",
               "cwd": "/home/dev/project", "sessionId": SESSION, "version": "2.1.39", "gitBranch": "main",
               "slug": "bench-memory", "type": kind, "uuid": uuid,
               "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.clock)) + ".000Z", **fields}
        self.f.write(json.dumps(row) + "\n")
        if chained:
            self.parent = uuid
        return uuid

    def sent(self, characters: int) -> None:
        self.segment_text += characters
        self.largest_text = max(self.largest_text, self.segment_text)

    def compact(self) -> None:
        self.kept_text += self.segment_text
        self.line("system", subtype="compact_boundary", content="Conversation compacted",
                  logicalParentUuid=self.parent, compactMetadata={"trigger": "auto", "preTokens": 150000})
        self.segment_text = 0
        summary = "This session is being continued from a previous conversation. Summary: " + self.text(3000)
        self.line("user", message={"role": "user", "content": summary}, isCompactSummary=True)
        self.sent(len(summary))

    def response(self, blocks: list[dict], prompt: int) -> None:
        """One model call, each content block on its own line (as Claude Code writes them)."""
        self.calls += 1
        request = f"req_{self.calls:07d}"
        for i, block in enumerate(blocks):
            usage = {"input_tokens": 6, "cache_creation_input_tokens": 400, "cache_read_input_tokens": prompt,
                     "output_tokens": 30 + 40 * i}
            message = {"model": MODEL, "id": f"msg_{self.calls:07d}", "type": "message", "role": "assistant",
                       "content": [block], "stop_reason": "tool_use" if i == len(blocks) - 1 else None,
                       "usage": usage}
            self.line("assistant", message=message, requestId=request)
            self.sent(len(json.dumps(block)))

    def result(self, call_id: str, content: str, metadata: dict) -> None:
        block = {"type": "tool_result", "tool_use_id": call_id, "content": content}
        self.line("user", message={"role": "user", "content": [block]}, toolUseResult=metadata)
        self.sent(len(content))

    def progress(self, call_id: str, output: str, steps: int = 6) -> None:
        for step in range(1, steps + 1):
            part = output[: len(output) * step // steps]
            data = {"type": "bash_progress", "output": part[-2000:], "fullOutput": part,
                    "elapsedTimeSeconds": step, "totalLines": part.count("\n")}
            self.line("progress", chained=False, data=data, toolUseID=call_id, parentToolUseID=call_id)


def generate(path: Path, size: int, per_segment: int, seed: int) -> Writer:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        w = Writer(f, rng)
        w.line("user", message={"role": "user", "content": "Work through the backlog in TODO.md."})
        w.sent(40)
        turn = 0
        while turn == 0 or f.tell() < size:
            turn += 1
            prompt = 2000 + w.segment_text // 4
            name = f"src/app/module_{rng.randrange(40)}.py"
            original = w.code(rng.randrange(150_000, 900_000))  # the file being edited
            edit = {"type": "tool_use", "id": f"toolu_e{turn}", "name": "Edit",
                    "input": {"file_path": name, "old_string": w.text(120), "new_string": w.text(160)}}
            w.response([{"type": "text", "text": w.text(rng.randrange(100, 400))}, edit], prompt)
            snippet = w.code(800)
            w.result(f"toolu_e{turn}", f"The file {name} has been updated. Here's a snippet:\n{snippet}", {
                "filePath": name, "oldString": edit["input"]["old_string"], "newString": edit["input"]["new_string"],
                "originalFile": original, "structuredPatch": [{"oldStart": 10, "lines": snippet.splitlines()}],
                "userModified": False, "replaceAll": False})
            run = {"type": "tool_use", "id": f"toolu_b{turn}", "name": "Bash", "input": {"command": "make test"}}
            w.response([run], prompt + 500)
            output = w.text(rng.randrange(30_000, 120_000))
            w.progress(run["id"], output)
            w.result(run["id"], output[-3000:], {"stdout": output, "stderr": "", "interrupted": False})
            read = {"type": "tool_use", "id": f"toolu_r{turn}", "name": "Read", "input": {"file_path": name}}
            w.response([read], prompt + 1500)
            content = w.code(rng.randrange(2000, 6000))
            w.result(read["id"], content, {"type": "text", "file": {"filePath": name, "content": content,
                                                                      "numLines": content.count("\n") + 1}})
            w.line("file-history-snapshot", chained=False, messageId=f"m{turn}", isSnapshotUpdate=False,
                   snapshot={"trackedFileBackups": {name: {"backupFileName": f"{turn:x}@v2", "version": 2}}})
            if w.calls % per_segment < 3 and turn > 1:
                w.compact()
        w.kept_text += w.segment_text
    return w


def run_profile(log: Path, model: str, output: Path) -> tuple[float, float, int]:
    """Wall time (s), peak RSS (MB) and exit code of `tokprof profile LOG -f json -o OUTPUT`."""
    command = [sys.executable, "-m", "tokprof", "profile", str(log), "--model", model, "--no-progress",
               "-f", "json", "-o", str(output)]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    if process.stderr is not None:
        sys.stderr.write(process.stderr.read().decode(errors="replace"))
    return elapsed, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=1024)
    parser.add_argument("--calls-per-compaction", type=int, default=120)
    parser.add_argument("--model", default="qwen2.5")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", help="write the session here (and keep it), not in a temporary folder")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        log = Path(args.keep) if args.keep else Path(folder) / f"{SESSION}.jsonl"
        start = time.perf_counter()
        session = generate(log, int(args.size_mb * 1024 * 1024), args.calls_per_compaction, args.seed)
        generated = time.perf_counter() - start
        small = Path(folder) / "small" / f"{SESSION}.jsonl"
        small.parent.mkdir()
        generate(small, 1, args.calls_per_compaction, args.seed)  # one turn: three calls
        base_time, base_rss, code = run_profile(small, args.model, Path(folder) / "small.json")
        assert code == 0, "the 3-call log did not profile"
        elapsed, rss, code = run_profile(log, args.model, Path(folder) / "profile.json")
        assert code == 0, "the log did not profile"
        summary = json.loads((Path(folder) / "profile.json").read_text())["summary"]

    size = log.stat().st_size if args.keep else int(args.size_mb * 1024 * 1024)
    added = rss - base_rss
    kept = session.kept_text / 1e6
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} "
          f"{platform.python_version()}, model {args.model}; generated in {generated:.0f} s")
    print("| log | calls | compactions | largest prompt (tokens / MB of text) | prompt text kept (MB) | peak RSS (MB) "
          "| 3-call log (MB) | added (MB) | added / text kept | limit | added / file | time (s) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print(f"| synthetic Claude Code, {size / 1024**3:.2f} GiB, {session.n:,} lines | {summary['calls']:,} | "
          f"{summary['compactions']} | {summary['largest_prompt']:,} / {session.largest_text / 1e6:.2f} | {kept:.1f} | "
          f"{rss:,.0f} | {base_rss:,.0f} | {added:,.0f} | {added / kept:.1f}x | {LIMIT}x | "
          f"{added / (size / 1e6):.3f} | {elapsed:.0f} |")


if __name__ == "__main__":
    main()
