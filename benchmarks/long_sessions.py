"""Long sessions of the agent readers' formats, of any length, for the readers' linear-cost benchmark
(``bench_readers.py``) and the fuzzer's "long session" mutator (``tests/test_fuzz.py``).

Each writer makes a session of ``n`` model calls in the record shapes its reader reads: a user turn,
then calls that each make a tool call answered by a short result, every call with usage. Everything
is deterministic. ``WRITERS`` maps a format name to its writer ``(folder, n) -> path``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path


def _jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def pi(folder: Path, n: int) -> Path:
    """A pi v3 tree session: one chain of user, assistant (a tool call) and tool result entries."""
    rows: list[dict] = [{"type": "session", "version": 3, "id": "s1", "timestamp": "2026-06-05T10:00:00Z", "cwd": "/w"}]
    parent = None

    def add(kind: str, body: dict) -> None:
        nonlocal parent
        entry_id = f"e{len(rows)}"
        rows.append({"type": kind, "id": entry_id, "parentId": parent, "timestamp": "2026-06-05T10:00:01Z", **body})
        parent = entry_id

    add("message", {"message": {"role": "user", "content": "fix the build"}})
    for k in range(n):
        call = {"type": "toolCall", "id": f"c{k}", "name": "read", "arguments": {"path": f"f{k}.py"}}
        usage = {"input": 10, "output": 5, "cacheRead": 100 + k, "cacheWrite": 7}
        message = {"role": "assistant", "content": [{"type": "text", "text": f"step {k}"}, call]}
        add("message", {"message": {**message, "model": "claude-sonnet-4-5", "usage": usage, "stopReason": "toolUse"}})
        result = {"role": "toolResult", "toolCallId": f"c{k}", "content": [{"type": "text", "text": f"line {k}"}]}
        add("message", {"message": result})
    return _jsonl(folder / "pi.jsonl", rows)


def qwen_code(folder: Path, n: int) -> Path:
    """A Qwen Code chat: user, then assistant records (a function call) each answered by a tool result."""

    def record(uuid: str, parent: str | None, kind: str, message: dict, **extra) -> dict:
        return {
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": "qs",
            "timestamp": "2026-06-05T10:00:00Z",
            "type": kind,
            "cwd": "/w",
            "message": message,
            **extra,
        }

    rows = [record("u0", None, "user", {"role": "user", "parts": [{"text": "fix the build"}]})]
    parent = "u0"
    for k in range(n):
        call = {"functionCall": {"id": f"c{k}", "name": "read_file", "args": {"path": f"f{k}.py"}}}
        usage = {"promptTokenCount": 100 + k, "candidatesTokenCount": 5, "cachedContentTokenCount": 50}
        message = {"role": "model", "parts": [{"text": f"step {k}"}, call]}
        rows.append(record(f"a{k}", parent, "assistant", message, model="qwen3-coder-plus", usageMetadata=usage))
        response = {"functionResponse": {"id": f"c{k}", "name": "read_file", "response": {"output": f"line {k}"}}}
        rows.append(record(f"t{k}", f"a{k}", "tool_result", {"role": "user", "parts": [response]}))
        parent = f"t{k}"
    return _jsonl(folder / "qwen.jsonl", rows)


def cline(folder: Path, n: int) -> Path:
    """A Cline task folder: its history (native tool_use and tool_result blocks) and ui_messages.json."""
    task = folder / "tasks" / "task-1"
    task.mkdir(parents=True, exist_ok=True)
    history: list[dict] = [
        {"role": "user", "ts": 1000, "content": [{"type": "text", "text": "<task>fix the build</task>"}]}
    ]
    ui: list[dict] = []
    for k in range(n):
        ts = 2000 + 10 * k
        info = {
            "request": "...",
            "tokensIn": 10,
            "tokensOut": 5,
            "cacheWrites": 7,
            "cacheReads": 100 + k,
            "cost": 0.001,
        }
        ui.append({"ts": ts, "type": "say", "say": "api_req_started", "text": json.dumps(info)})
        use = {"type": "tool_use", "id": f"c{k}", "name": "read_file", "input": {"path": f"f{k}.py"}}
        history.append({"role": "assistant", "ts": ts + 1, "content": [{"type": "text", "text": f"step {k}"}, use]})
        result = {"type": "tool_result", "tool_use_id": f"c{k}", "content": [{"type": "text", "text": f"line {k}"}]}
        history.append({"role": "user", "ts": ts + 2, "content": [result]})
    (task / "ui_messages.json").write_text(json.dumps(ui))
    path = task / "api_conversation_history.json"
    path.write_text(json.dumps(history))
    return path


def gemini_cli(folder: Path, n: int) -> Path:
    """A Gemini CLI ``.jsonl`` session: metadata, a user message, gemini messages with tool calls."""
    rows: list[dict] = [{"sessionId": "gs", "projectHash": "p", "startTime": "2026-03-26T04:33:40.000Z"}]
    rows.append({"id": "u0", "type": "user", "timestamp": "2026-03-26T04:33:40.000Z", "content": "fix the build"})
    for k in range(n):
        result = [{"functionResponse": {"id": f"c{k}", "name": "read_file", "response": {"output": f"line {k}"}}}]
        call = {"id": f"c{k}", "name": "read_file", "args": {"path": f"f{k}.py"}, "result": result, "status": "success"}
        tokens = {"input": 100 + k, "output": 5, "cached": 50, "thoughts": 0, "tool": 0, "total": 105 + k}
        rows.append(
            {
                "id": f"g{k}",
                "type": "gemini",
                "timestamp": "2026-03-26T04:33:41.000Z",
                "content": f"step {k}",
                "toolCalls": [call],
                "tokens": tokens,
                "model": "gemini-2.5-pro",
            }
        )
    return _jsonl(folder / "chats" / "session-2026-03-26T04-33-gs.jsonl", rows)


def opencode(folder: Path, n: int) -> Path:
    """An ``opencode run --format json`` stream: per step a start, a text, a tool use and a finish."""
    rows: list[dict] = []
    for k in range(n):
        message = f"msg_{k:06d}"

        def event(kind: str, part: dict) -> dict:
            return {"type": kind, "timestamp": 1_700_000_000_000 + k, "sessionID": "ses_1", "part": part}

        rows.append(event("step_start", {"type": "step-start", "messageID": message}))
        rows.append(event("text", {"type": "text", "messageID": message, "text": f"step {k}"}))
        state = {"status": "completed", "input": {"path": f"f{k}.py"}, "output": f"line {k}"}
        tool = {"type": "tool", "messageID": message, "tool": "read", "callID": f"c{k}", "state": state}
        rows.append(event("tool_use", tool))
        tokens = {"input": 10, "output": 5, "reasoning": 0, "cache": {"read": 100 + k, "write": 7}}
        rows.append(event("step_finish", {"type": "step-finish", "messageID": message, "tokens": tokens, "cost": 0}))
    return _jsonl(folder / "run.jsonl", rows)


def claude_code(folder: Path, n: int) -> Path:
    """A Claude Code transcript: user, then assistant lines (a tool_use) each answered by a tool result."""
    rows: list[dict] = []
    parent = None

    def line(kind: str, message: dict, **extra) -> dict:
        nonlocal parent
        uuid = f"00000000-0000-4000-8000-{len(rows):012d}"
        row = {
            "type": kind,
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": "cs",
            "timestamp": "2026-06-05T10:00:00.000Z",
            "cwd": "/w",
            "isSidechain": False,
            "message": message,
            **extra,
        }
        parent = uuid
        rows.append(row)
        return row

    line("user", {"role": "user", "content": "fix the build"})
    for k in range(n):
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100 + k}
        use = {"type": "tool_use", "id": f"toolu_{k}", "name": "Read", "input": {"file_path": f"f{k}.py"}}
        message = {
            "id": f"msg_{k}",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": f"step {k}"}, use],
            "usage": usage,
        }
        line("assistant", message, requestId=f"req_{k}")
        result = {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": f"line {k}"}
        line("user", {"role": "user", "content": [result]})
    return _jsonl(folder / "session.jsonl", rows)


def aider(folder: Path, n: int) -> Path:
    """An aider chat history of two sessions (a reader holds the first session's calls until a second one
    makes a call: their thread names the session only when there are several), a Tokens line a reply."""
    lines = []
    for k in range(n):
        if k in (0, 1):
            lines += [f"# aider chat started at 2025-10-2{3 + k} 17:04:56", "", "> Main model: gpt-4o  ", ""]
        lines += [f"#### step {k}  ", "", f"Done {k}.", "", f"> Tokens: {100 + k} sent, 5 received.  ", ""]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ".aider.chat.history.md"
    path.write_text("\n".join(lines))
    return path


def copilot_cli(folder: Path, n: int) -> Path:
    """A Copilot CLI events.jsonl: a user message, then assistant messages each answered by a tool result."""
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def event(k: int, kind: str, data: dict) -> dict:
        time = (start + timedelta(seconds=k)).isoformat().replace("+00:00", "Z")
        return {"type": kind, "data": data, "id": f"e{k}", "timestamp": time, "parentId": None}

    rows = [event(0, "session.start", {"sessionId": "s", "selectedModel": "gpt-5"})]
    rows.append(event(1, "user.message", {"content": "fix the build"}))
    for k in range(n):
        request = {"toolCallId": f"c{k}", "name": "bash", "arguments": {"command": "ls"}}
        rows.append(event(2 + 2 * k, "assistant.message", {"messageId": f"m{k}", "toolRequests": [request]}))
        rows.append(event(3 + 2 * k, "tool.execution_complete", {"toolCallId": f"c{k}", "result": {"content": "a"}}))
    return _jsonl(folder / "events.jsonl", rows)


def kimi_cli(folder: Path, n: int) -> Path:
    """A Kimi CLI wire.jsonl: one turn of steps, each with its usage."""

    def line(t: float, kind: str, payload: dict) -> dict:
        return {"timestamp": 1770983400.0 + t, "message": {"type": kind, "payload": payload}}

    rows: list[dict] = [{"type": "metadata", "protocol_version": "1.0"}, line(0, "TurnBegin", {"user_input": "go"})]
    for k in range(n):
        rows.append(line(1 + k, "StepBegin", {"n": k}))
        rows.append(line(1 + k, "ContentPart", {"type": "text", "text": f"step {k}"}))
        usage = {"input_other": 10, "output": 2, "input_cache_read": k, "input_cache_creation": 0}
        rows.append(line(1 + k, "StatusUpdate", {"token_usage": usage, "message_id": f"m{k}"}))
    rows.append(line(n + 1, "TurnEnd", {}))
    return _jsonl(folder / "wire.jsonl", rows)


#: format name -> a writer of a session of that many calls.
WRITERS: dict[str, Callable[[Path, int], Path]] = {
    "pi": pi,
    "qwen-code": qwen_code,
    "cline": cline,
    "gemini-cli": gemini_cli,
    "opencode": opencode,
    "claude-code": claude_code,
}

#: More agents' sessions, for the readers' benchmarks and ``tests/test_reader_folds.py`` (not the fuzzer's).
MORE: dict[str, Callable[[Path, int], Path]] = {"aider": aider, "copilot-cli": copilot_cli, "kimi-cli": kimi_cli}
