"""Peak memory and time of `tokprof profile` on four shapes of large Claude Code log (and request records), against the
size of the log and of its largest prompt.

1. **A big session** (``--size-mb``): what makes real Claude Code logs large is what is never sent to
   the model. Every edit's ``toolUseResult`` keeps the whole original file (``originalFile``), a
   command's ``progress`` lines repeat its output as it grows, its ``toolUseResult`` keeps the whole
   output, and reads keep the file's content twice; what goes to the model (the tool results, a few
   kilobytes, and the assistant's text and tool calls) is a small part. The conversation is
   compacted every ``--calls-per-compaction`` calls, so the prompts stay the size of a real context
   window. Limit: the memory the log adds is at most ``LIMIT_TEXT`` times the prompt text the trace
   keeps (the largest prompt of each stretch between compactions, added up).
2. **Many calls** (``--calls``): short calls (a sentence and a tool call, a 200-word result), compacted
   every ``--calls-per-compaction`` calls. What grows is what is kept per call: the call in the
   trace (its messages, and its prompt: a view of the list its stretch of the conversation
   shares), its row in the profile; the JSON is written as it is made. Limit: at most ``LIMIT_CALL_KB`` kB added per call.
3. **One huge tool result** (``--result-mb``): a command whose output is sent to the model whole.
   The prompt is rendered (with and without markers), tokenized and painted once or twice. Limit:
   at most ``LIMIT_PROMPT`` times the largest prompt's text.
4. **Request records** (``--record-calls``): what a proxy's capture or ``tokprof record`` writes, an
   OpenAI Chat Completions request body per line, each holding the whole conversation so far (a
   tool call and a 1,000-character result added per call, no compaction), so the file grows with
   the square of the calls; ``--record-sessions`` writes that many such conversations one after the
   other (a day of a proxy's capture). Limit: at most ``LIMIT_RECORDS`` times the largest prompt's text.
5. **Side transcripts** (``--calls``, shape ``sides``): the many-calls session as Claude Code 2.1
   writes it, each compaction's call in ``<session>/subagents/agent-acompact-*.jsonl`` and every 25
   calls a Task whose subagent (three calls) has its own transcript there, its lines also copied in
   the session's ``progress`` lines. Limit: at most ``LIMIT_CALL_KB`` kB added per call.

The memory a log adds is the peak RSS of `tokprof profile LOG -f json -o FILE` in a fresh process
minus that of profiling a 3-call log of the same shape (the program and the model's tokenizer).
Everything comes from ``random.Random(--seed)``.

Usage: python benchmarks/bench_memory.py [--shape big,calls,result,records,sides] [--size-mb 1024] [--calls 2000]
       [--result-mb 20] [--record-calls 600] [--record-sessions 1] [--calls-per-compaction 120] [--model qwen2.5] [--seed 7] [--keep FOLDER]
Prints Markdown table rows (with the machine) for docs/performance.md. No timed assertion.
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

LIMIT_TEXT = 40  # a big session: memory the log adds / the prompt text the trace keeps
LIMIT_CALL_KB = 24  # many calls: memory the log adds per call (kB)
LIMIT_PROMPT = 20  # one huge tool result: memory the log adds / the largest prompt's text
LIMIT_RECORDS = 60  # request records: memory the log adds / the largest prompt's text
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
        row = {
            "parentUuid": self.parent if chained else None,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/project",
            "sessionId": SESSION,
            "version": "2.1.39",
            "gitBranch": "main",
            "slug": "bench-memory",
            "type": kind,
            "uuid": uuid,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.clock)) + ".000Z",
            **fields,
        }
        self.f.write(json.dumps(row) + "\n")
        if chained:
            self.parent = uuid
        return uuid

    def sent(self, characters: int) -> None:
        self.segment_text += characters
        self.largest_text = max(self.largest_text, self.segment_text)

    def compact(self) -> None:
        self.kept_text += self.segment_text
        self.line(
            "system",
            subtype="compact_boundary",
            content="Conversation compacted",
            logicalParentUuid=self.parent,
            compactMetadata={"trigger": "auto", "preTokens": 150000},
        )
        self.segment_text = 0
        summary = "This session is being continued from a previous conversation. Summary: " + self.text(3000)
        self.line("user", message={"role": "user", "content": summary}, isCompactSummary=True)
        self.sent(len(summary))

    def response(self, blocks: list[dict], prompt: int) -> None:
        """One model call, each content block on its own line (as Claude Code writes them)."""
        self.calls += 1
        request = f"req_{self.calls:07d}"
        for i, block in enumerate(blocks):
            usage = {
                "input_tokens": 6,
                "cache_creation_input_tokens": 400,
                "cache_read_input_tokens": prompt,
                "output_tokens": 30 + 40 * i,
            }
            message = {
                "model": MODEL,
                "id": f"msg_{self.calls:07d}",
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": "tool_use" if i == len(blocks) - 1 else None,
                "usage": usage,
            }
            self.line("assistant", message=message, requestId=request)
            self.sent(len(json.dumps(block)))

    def result(self, call_id: str, content: str, metadata: dict) -> None:
        block = {"type": "tool_result", "tool_use_id": call_id, "content": content}
        self.line("user", message={"role": "user", "content": [block]}, toolUseResult=metadata)
        self.sent(len(content))

    def progress(self, call_id: str, output: str, steps: int = 6) -> None:
        for step in range(1, steps + 1):
            part = output[: len(output) * step // steps]
            data = {
                "type": "bash_progress",
                "output": part[-2000:],
                "fullOutput": part,
                "elapsedTimeSeconds": step,
                "totalLines": part.count("\n"),
            }
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
            edit = {
                "type": "tool_use",
                "id": f"toolu_e{turn}",
                "name": "Edit",
                "input": {"file_path": name, "old_string": w.text(120), "new_string": w.text(160)},
            }
            w.response([{"type": "text", "text": w.text(rng.randrange(100, 400))}, edit], prompt)
            snippet = w.code(800)
            w.result(
                f"toolu_e{turn}",
                f"The file {name} has been updated. Here's a snippet:\n{snippet}",
                {
                    "filePath": name,
                    "oldString": edit["input"]["old_string"],
                    "newString": edit["input"]["new_string"],
                    "originalFile": original,
                    "structuredPatch": [{"oldStart": 10, "lines": snippet.splitlines()}],
                    "userModified": False,
                    "replaceAll": False,
                },
            )
            run = {"type": "tool_use", "id": f"toolu_b{turn}", "name": "Bash", "input": {"command": "make test"}}
            w.response([run], prompt + 500)
            output = w.text(rng.randrange(30_000, 120_000))
            w.progress(run["id"], output)
            w.result(run["id"], output[-3000:], {"stdout": output, "stderr": "", "interrupted": False})
            read = {"type": "tool_use", "id": f"toolu_r{turn}", "name": "Read", "input": {"file_path": name}}
            w.response([read], prompt + 1500)
            content = w.code(rng.randrange(2000, 6000))
            w.result(
                read["id"],
                content,
                {"type": "text", "file": {"filePath": name, "content": content, "numLines": content.count("\n") + 1}},
            )
            w.line(
                "file-history-snapshot",
                chained=False,
                messageId=f"m{turn}",
                isSnapshotUpdate=False,
                snapshot={"trackedFileBackups": {name: {"backupFileName": f"{turn:x}@v2", "version": 2}}},
            )
            if w.calls % per_segment < 3 and turn > 1:
                w.compact()
        w.kept_text += w.segment_text
    return w


def generate_calls(path: Path, calls: int, per_segment: int, seed: int) -> Writer:
    """A session of many short calls: a sentence and a Read call each, a 200-word result."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        w = Writer(f, rng)
        w.line("user", message={"role": "user", "content": "Work through the backlog in TODO.md."})
        w.sent(40)
        for i in range(calls):
            use = {"type": "tool_use", "id": f"toolu_{i}", "name": "Read", "input": {"file_path": f"src/m{i % 40}.py"}}
            w.response([{"type": "text", "text": w.text(60)}, use], 2000 + w.segment_text // 4)
            w.result(use["id"], w.text(1200), {"type": "text", "file": {"filePath": f"src/m{i % 40}.py"}})
            if w.calls % per_segment == 0 and i + 1 < calls:
                w.compact()
        w.kept_text += w.segment_text
    return w


def generate_result(path: Path, size: int, seed: int) -> Writer:
    """Three calls, the second answered by one tool result of ``size`` characters (a table dump)."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        w = Writer(f, rng)
        w.line("user", message={"role": "user", "content": "Find the duplicated rows in the orders table."})
        w.sent(50)
        dump = {"type": "tool_use", "id": "toolu_dump", "name": "Bash", "input": {"command": "psql -c 'table orders'"}}
        w.response([{"type": "text", "text": "Dumping the table."}, dump], 2000)
        rows, length = [], 0
        while length < size:
            row = f"{rng.randrange(10**6):>7} | {w.text(rng.randrange(40, 90))} | {rng.randrange(10**4)}.{rng.randrange(100):02}"
            rows.append(row)
            length += len(row) + 1
        w.result("toolu_dump", "\n".join(rows)[:size], {"stdout": "", "interrupted": False})
        w.response([{"type": "text", "text": w.text(200)}], 2000 + size // 4)
        w.kept_text += w.segment_text
    return w


def _side_line(w: Writer, agent: str, kind: str, uuid: str, parent: str | None, **fields) -> dict:
    w.clock += 0.5
    return {
        "parentUuid": parent,
        "isSidechain": True,
        "cwd": "/home/dev/project",
        "sessionId": SESSION,
        "version": "2.1.39",
        "agentId": agent,
        "type": kind,
        "uuid": uuid,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(w.clock)) + ".000Z",
        **fields,
    }


def _write_side(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(row) + "\n" for row in rows)


def generate_sides(path: Path, calls: int, per_segment: int, seed: int, every: int = 25) -> Writer:
    """Many short calls as Claude Code 2.1 writes them: each compaction's call in its own transcript
    (``<session>/subagents/agent-acompact-*.jsonl``), and every ``every`` calls a Task whose subagent
    (three calls) has its transcript there too, its lines also copied into the session's progress lines."""
    rng = random.Random(seed)
    sides = path.with_suffix("") / "subagents"
    with open(path, "w", encoding="utf-8") as f:
        w = Writer(f, rng)
        w.line("user", message={"role": "user", "content": "Work through the backlog in TODO.md."})
        w.sent(40)
        for i in range(calls):
            if i and i % every == 0:
                task: dict = {
                    "type": "tool_use",
                    "id": f"toolu_task{i}",
                    "name": "Task",
                    "input": {"prompt": w.text(200)},
                }
                w.response([task], 2000 + w.segment_text // 4)
                agent, parent = f"s{i:06d}", None
                rows: list[dict] = []
                rows.append(
                    _side_line(
                        w,
                        agent,
                        "user",
                        f"{agent}-u",
                        None,
                        message={"role": "user", "content": task["input"]["prompt"]},
                    )
                )
                parent = f"{agent}-u"
                for k in range(3):
                    use: dict = {
                        "type": "tool_use",
                        "id": f"{agent}-t{k}",
                        "name": "Grep",
                        "input": {"pattern": w.text(20)},
                    }
                    message = {
                        "model": MODEL,
                        "id": f"msg_{agent}_{k}",
                        "role": "assistant",
                        "content": [use],
                        "stop_reason": "tool_use",
                        "usage": {
                            "input_tokens": 5,
                            "cache_creation_input_tokens": 300,
                            "cache_read_input_tokens": 1000 * k,
                            "output_tokens": 20,
                        },
                    }
                    rows.append(
                        _side_line(
                            w,
                            agent,
                            "assistant",
                            f"{agent}-a{k}",
                            parent,
                            message=message,
                            requestId=f"req_{agent}_{k}",
                        )
                    )
                    block = {"type": "tool_result", "tool_use_id": use["id"], "content": w.text(800)}
                    rows.append(
                        _side_line(
                            w,
                            agent,
                            "user",
                            f"{agent}-r{k}",
                            f"{agent}-a{k}",
                            message={"role": "user", "content": [block]},
                        )
                    )
                    parent = f"{agent}-r{k}"
                _write_side(sides / f"agent-{agent}.jsonl", rows)
                for row in rows:
                    data = {
                        "type": "agent_progress",
                        "agentId": agent,
                        "prompt": task["input"]["prompt"],
                        "message": row,
                    }
                    w.line(
                        "progress",
                        chained=False,
                        data=data,
                        toolUseID=f"agent_msg_{row['uuid']}",
                        parentToolUseID=task["id"],
                    )
                w.result(task["id"], w.text(400), {"status": "completed"})
            read: dict = {
                "type": "tool_use",
                "id": f"toolu_{i}",
                "name": "Read",
                "input": {"file_path": f"src/m{i % 40}.py"},
            }
            w.response([{"type": "text", "text": w.text(60)}, read], 2000 + w.segment_text // 4)
            w.result(read["id"], w.text(1200), {"type": "text", "file": {"filePath": f"src/m{i % 40}.py"}})
            if w.calls % per_segment == 0 and i + 1 < calls:
                agent, last = f"acompact-{w.calls:07d}", w.parent
                summary = {
                    "model": MODEL,
                    "id": f"msg_{agent}",
                    "role": "assistant",
                    "stop_reason": "end_turn",
                    "content": [{"type": "text", "text": "<summary>" + w.text(3000) + "</summary>"}],
                    "usage": {
                        "input_tokens": 5,
                        "cache_creation_input_tokens": 500,
                        "cache_read_input_tokens": 2000 + w.segment_text // 4,
                        "output_tokens": 900,
                    },
                }
                _write_side(
                    sides / f"agent-{agent}.jsonl",
                    [
                        _side_line(
                            w,
                            agent,
                            "user",
                            f"{agent}-m",
                            last,
                            isMeta=True,
                            message={"role": "user", "content": "<system-reminder>hook</system-reminder>"},
                        ),
                        _side_line(
                            w,
                            agent,
                            "user",
                            f"{agent}-u",
                            last,
                            message={
                                "role": "user",
                                "content": "Create a detailed summary of the conversation so far.",
                            },
                        ),
                        _side_line(
                            w, agent, "assistant", f"{agent}-a", f"{agent}-u", message=summary, requestId=f"req_{agent}"
                        ),
                    ],
                )
                w.compact()
        w.kept_text += w.segment_text
    return w


class Records:
    """Request records (one conversation, each line its whole prompt so far), counted as they are written."""

    def __init__(self, f, rng: random.Random):
        self.f, self.text = f, Writer(f, rng).text
        self.n = 0
        self.largest_text = self.kept_text = self.session_text = 0

    def session(self, calls: int, tool: dict, number: int) -> None:
        """One conversation of ``calls`` calls."""
        messages = [
            {"role": "system", "content": "You are a coding agent. " + self.text(2000)},
            {"role": "user", "content": f"Work through the backlog in TODO-{number}.md."},
        ]
        self.session_text = 0
        for i in range(calls):
            self.write(messages, [tool])
            call = {
                "id": f"call_{number}_{i}",
                "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": self.text(30)})},
            }
            messages = messages + [
                {"role": "assistant", "content": self.text(60), "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call["id"], "content": self.text(1000)},
            ]
        self.kept_text += self.session_text  # what a trace held whole keeps: each session's last prompt

    def write(self, messages: list[dict], tools: list[dict]) -> None:
        text = sum(len(m.get("content") or "") for m in messages)
        body = {"model": "qwen2.5-7b-instruct", "messages": messages, "tools": tools}
        body["usage"] = {"prompt_tokens": 700 + text // 4, "completion_tokens": 40}
        self.f.write(json.dumps(body) + "\n")
        self.n += 1
        self.largest_text = max(self.largest_text, text)
        self.session_text = text


def generate_records(path: Path, calls: int, seed: int, sessions: int = 1) -> Records:
    """``calls`` request records of each of ``sessions`` conversations, one after the other (a day of
    a proxy's capture): a tool call and a 1,000-character result a call."""
    rng = random.Random(seed)
    tool = {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
    with open(path, "w", encoding="utf-8") as f:
        w = Records(f, rng)
        for session in range(sessions):
            w.session(calls, tool, session)
    return w


SHAPES = {
    "big": "synthetic Claude Code session",
    "calls": "many short calls",
    "result": "one huge tool result",
    "records": "request records (OpenAI Chat Completions)",
    "sides": "many short calls, with Claude Code 2.1's subagent and compaction transcripts",
}


def generate_shape(shape: str, path: Path, args: argparse.Namespace, small: bool = False) -> Writer | Records:
    """The log of a shape (``small``: its 3-call version, for the baseline)."""
    if shape == "records":
        return generate_records(
            path, 3 if small else args.record_calls, args.seed, 1 if small else args.record_sessions
        )
    if shape == "big":
        return generate(path, 1 if small else int(args.size_mb * 1024 * 1024), args.calls_per_compaction, args.seed)
    if shape == "calls":
        return generate_calls(path, 3 if small else args.calls, args.calls_per_compaction, args.seed)
    if shape == "sides":
        return generate_sides(path, 3 if small else args.calls, args.calls_per_compaction, args.seed)
    return generate_result(path, 1000 if small else int(args.result_mb * 1024 * 1024), args.seed)


#: How the baseline runs tokprof: with tiktoken's encoder built as a long log builds it (a short log
#: is counted without it, :mod:`tokprof.models.smallbpe`, and the encoder's memory would count as the log's).
_BUILT = "import sys, tokprof.models.smallbpe as s; s.BUDGET = 0; sys.argv[0] = 'tokprof'; from tokprof.frontends.launch import entry; entry()"


def run_profile(log: Path, model: str, output: Path, baseline: bool = False) -> tuple[float, float, int]:
    """Wall time (s), peak RSS (MB) and exit code of `tokprof profile LOG -f json -o OUTPUT`
    (``baseline``: with the tokenizer's encoder built however short the log)."""
    command = [
        sys.executable,
        *(["-c", _BUILT] if baseline else ["-m", "tokprof"]),
        "profile",
        str(log),
        "--model",
        model,
        "--no-progress",
        "-f",
        "json",
        "-o",
        str(output),
    ]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    if process.stderr is not None:
        sys.stderr.write(process.stderr.read().decode(errors="replace"))
    return elapsed, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def _give_back() -> None:
    """Reset this process's peak RSS: a child's ``ru_maxrss`` starts from the peak of the process it
    was forked from (writing a 100 MB tool result peaks at 500 MB here, which the 3-call log's run
    then reported as its own). Linux resets it on writing 5 to ``/proc/self/clear_refs``."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:  # not Linux: the figures may then include this process's peak
        pass


def measure(shape: str, args: argparse.Namespace, folder: Path) -> str:
    """One table row: the shape's log, profiled beside its 3-call version."""
    keep = Path(args.keep) if args.keep else folder
    keep.mkdir(parents=True, exist_ok=True)
    log = keep / f"{SESSION}-{shape}.jsonl"
    start = time.perf_counter()
    session = generate_shape(shape, log, args)
    generated = time.perf_counter() - start
    _give_back()  # a child's peak RSS starts from this process's
    small = folder / "small" / f"{SESSION}-{shape}.jsonl"
    small.parent.mkdir(exist_ok=True)
    generate_shape(shape, small, args, small=True)
    _, base_rss, code = run_profile(small, args.model, folder / "small.json", baseline=True)
    assert code == 0, "the 3-call log did not profile"
    elapsed, rss, code = run_profile(log, args.model, folder / "profile.json")
    assert code == 0, "the log did not profile"
    summary = json.loads((folder / "profile.json").read_text(encoding="utf-8"))["summary"]
    size = log.stat().st_size / 1e6
    added = max(rss - base_rss, 0.0)
    if shape == "big":
        against, limit = added / (session.kept_text / 1e6), f"{LIMIT_TEXT}x text kept"
        ratio = f"{against:.1f}x text kept"
    elif shape in ("calls", "sides"):
        against, limit = added * 1000 / summary["calls"], f"{LIMIT_CALL_KB} kB / call"
        ratio = f"{against:.1f} kB / call"
    else:
        times = LIMIT_RECORDS if shape == "records" else LIMIT_PROMPT
        against, limit = added / (session.largest_text / 1e6), f"{times}x prompt"
        ratio = f"{against:.1f}x prompt"
    return (
        f"| {SHAPES[shape]}, {size:,.1f} MB, {session.n:,} lines | {summary['calls']:,} | "
        f"{summary['compactions'] if 'compactions' in summary else 0} | "
        f"{summary['largest_prompt']:,} / {session.largest_text / 1e6:.2f} | {session.kept_text / 1e6:.1f} | "
        f"{rss:,.0f} | {base_rss:,.0f} | {added:,.0f} | {added / size:.2f} | {ratio} | {limit} | "
        f"{elapsed:.0f} (+{generated:.0f} generating) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--shape", default="big,calls,result,records,sides", help="comma-separated: big, calls, result, records, sides"
    )
    parser.add_argument("--size-mb", type=float, default=1024, help="the big session's size")
    parser.add_argument("--calls", type=int, default=2000, help="the calls of the many-calls log")
    parser.add_argument("--result-mb", type=float, default=20, help="the huge tool result's size")
    parser.add_argument(
        "--record-calls", type=int, default=600, help="the calls of each session of the request-records log"
    )
    parser.add_argument(
        "--record-sessions", type=int, default=1, help="the sessions of the request-records log, one after the other"
    )
    parser.add_argument("--calls-per-compaction", type=int, default=120)
    parser.add_argument("--model", default="qwen2.5")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", help="write the logs in this folder (and keep them), not in a temporary one")
    args = parser.parse_args()
    shapes = [s.strip() for s in args.shape.split(",") if s.strip()]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        parser.error(f"unknown shape {unknown[0]!r} (expected {', '.join(SHAPES)})")
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} "
        f"{platform.python_version()}, model {args.model}"
    )
    print(
        "| log | calls | compactions | largest prompt (tokens / MB of text) | prompt text kept (MB) | peak RSS (MB) "
        "| 3-call log (MB) | added (MB) | added / MB of log | added against | limit | time (s) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as folder:
        for shape in shapes:
            print(measure(shape, args, Path(folder)), flush=True)


if __name__ == "__main__":
    main()
