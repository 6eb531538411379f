"""Claude Code stream-json output (claude -p --output-format stream-json --verbose): calls per message
id, threads per parent_tool_use_id, the result line's totals reconciled with the calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import profile_json
from tokprof.base.errors import InputError
from tokprof.formats import claude_code, claude_print, read_trace
from tokprof.formats.jsonfile import load

SESSION = "5e55-stream"
MODEL = "claude-sonnet-4-5-20250929"
SUB_MODEL = "claude-haiku-4-5-20251001"


def init() -> dict:
    return {
        "type": "system",
        "subtype": "init",
        "cwd": "/w",
        "session_id": SESSION,
        "tools": ["Task", "Bash"],
        "mcp_servers": [],
        "model": MODEL,
        "permissionMode": "default",
        "apiKeySource": "none",
    }


def usage(fresh: int, write: int, read: int, out: int) -> dict:
    return {
        "input_tokens": fresh,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "output_tokens": out,
        "service_tier": "standard",
    }


def assistant(
    message_id: str, blocks: list, use: dict, parent: str | None = None, model: str = MODEL, stop: str | None = None
) -> dict:
    message = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": use,
    }
    return {
        "type": "assistant",
        "message": message,
        "parent_tool_use_id": parent,
        "session_id": SESSION,
        "uuid": f"u-{message_id}-{len(blocks)}",
    }


def user(content, parent: str | None = None) -> dict:
    return {
        "type": "user",
        "message": {"role": "user", "content": content},
        "parent_tool_use_id": parent,
        "session_id": SESSION,
    }


def text(value: str) -> dict:
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str, **arguments) -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def tool_result(call_id: str, content: str) -> dict:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


def result(fresh: int, write: int, read: int, out: int, turns: int = 2, cost: float = 0.0123) -> dict:
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 5000,
        "duration_api_ms": 4000,
        "num_turns": turns,
        "result": "Two files.",
        "session_id": SESSION,
        "total_cost_usd": cost,
        "usage": usage(fresh, write, read, out),
        "modelUsage": {},
        "permission_denials": [],
    }


def run_lines() -> list[dict]:
    """A CI run: a response written as two lines (text, then a tool call), its result, the answer."""
    first = usage(4, 2000, 10000, 2)
    return [
        init(),
        assistant("msg_1", [text("Looking.")], first),
        assistant("msg_1", [tool_use("tu1", "Bash", command="ls")], first),
        user([tool_result("tu1", "a.py b.py")]),
        {"type": "stream_event", "event": {"type": "message_start"}, "session_id": SESSION},
        assistant("msg_2", [text("Two files.")], usage(6, 30, 12000, 9), stop="end_turn"),
        result(10, 2030, 22000, 40),
    ]


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def read(path: Path):
    return read_trace(str(path), "claude-stream-json")


def notes(trace) -> dict[str, list[str]]:
    return {note.code: note.places for note in trace.notes}


def test_one_call_per_message_id_and_the_result_reconciled(tmp_path):
    trace = read(write_jsonl(tmp_path / "run.jsonl", run_lines()))
    assert trace.format == "claude-stream-json" and trace.session == SESSION and trace.model == MODEL
    assert trace.unrecorded == ("system", "tools")
    first, second = trace.calls
    assert [c.where for c in trace.calls] == ["line 2", "line 6"] and [c.index for c in trace.calls] == [0, 1]
    assert first.messages == [{"role": "user", "content": ""}]  # the -p prompt is not in the stream
    assert first.response["content"] == "Looking." and first.response["tool_calls"][0]["id"] == "tu1"
    assert second.messages[0] is first.messages[0]
    assert second.messages[2] == {"role": "tool", "tool_call_id": "tu1", "content": "a.py b.py"}
    assert [c.reported.prompt for c in trace.calls] == [12004, 12036] and first.request_id == "msg_1"
    found = notes(trace)
    assert found["prompt-not-recorded"] == ["line 2"]
    assert found["usage-at-stream-start"] == ["line 2"]
    assert found["result-totals"] == [
        "line 7: success, 2 turns, input 10, cache writes 2,030, cache reads 22,000, output 40, total_cost_usd 0.0123"
    ]
    assert found["result-differs"] == ["line 7: output 40 vs 11 in the calls"]  # placeholders of stream start


def test_a_result_that_matches_the_calls_is_no_warning(tmp_path):
    rows = run_lines()
    rows[-1] = result(10, 2030, 22000, 11)
    rows.insert(1, user("List the files."))  # a replayed prompt: in the prompt, and no warning
    trace = read(write_jsonl(tmp_path / "run.jsonl", rows))
    assert "result-differs" not in notes(trace) and "prompt-not-recorded" not in notes(trace)
    assert trace.calls[0].messages == [{"role": "user", "content": "List the files."}]


def test_a_subagent_is_a_thread_of_its_own(tmp_path):
    rows = [
        init(),
        assistant(
            "msg_1",
            [tool_use("task1", "Task", description="find", prompt="Find the config")],
            usage(4, 2000, 10000, 20),
        ),
        assistant(
            "msg_s1", [tool_use("st1", "Glob", pattern="*.toml")], usage(4, 300, 0, 5), parent="task1", model=SUB_MODEL
        ),
        user([tool_result("st1", "pyproject.toml")], parent="task1"),
        assistant("msg_s2", [text("pyproject.toml")], usage(5, 20, 300, 9), parent="task1", model=SUB_MODEL),
        user([tool_result("task1", "pyproject.toml")]),
        assistant("msg_2", [text("In pyproject.toml.")], usage(6, 50, 12000, 9), stop="end_turn"),
    ]
    trace = read(write_jsonl(tmp_path / "run.jsonl", rows))
    assert [c.where for c in trace.calls] == ["line 2", "line 3 (subagent)", "line 5 (subagent)", "line 7"]
    subs = trace.calls[1:3]
    assert all(c.thread == "task1" and c.model == SUB_MODEL for c in subs)
    assert subs[0].messages == [{"role": "user", "content": "Find the config"}]
    assert [m["role"] for m in subs[1].messages] == ["user", "assistant", "tool"]
    main = trace.calls[3]
    assert "Glob" not in json.dumps(list(main.messages)) and main.thread == ""
    assert main.messages[-1] == {"role": "tool", "tool_call_id": "task1", "content": "pyproject.toml"}
    assert trace.model == MODEL and "result-totals" not in notes(trace)


def test_detected_and_told_from_a_transcript(tmp_path):
    path = write_jsonl(tmp_path / "run.jsonl", run_lines())
    assert read_trace(str(path)).format == "claude-stream-json"
    assert claude_print.sniff(load(str(path)))
    transcript = [
        {
            "type": "user",
            "sessionId": "x",
            "uuid": "u1",
            "parentUuid": None,
            "message": {"role": "user", "content": "hi"},
        }
    ]
    assert not claude_print.sniff(load(str(write_jsonl(tmp_path / "t.jsonl", transcript))))
    without_init = write_jsonl(tmp_path / "no-init.jsonl", run_lines()[1:])
    assert read_trace(str(without_init)).format == "claude-stream-json"
    assert not claude_print.sniff(load(str(write_jsonl(tmp_path / "other.jsonl", [{"type": "x"}, [1], None]))))


def test_the_verbose_json_list_is_read_too(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run_lines()))
    trace = read_trace(str(path))
    assert trace.format == "claude-stream-json" and [c.where for c in trace.calls] == ["item 1", "item 5"]
    assert notes(trace)["result-totals"][0].startswith("item 6: success")


@pytest.mark.parametrize(
    "row, where, what",
    [
        ([1], "line 2", "expected a stream-json message object, found a list"),
        ({"session_id": SESSION}, "line 2: type", "missing: expected a string"),
        (
            {"type": "assistant", "parent_tool_use_id": 5, "message": {}},
            "line 2: parent_tool_use_id",
            "expected a string or null",
        ),
        (
            {"type": "assistant", "parent_tool_use_id": None, "message": {"content": [{"type": "text", "text": 4}]}},
            "line 2: message.content[0].text",
            "expected a string",
        ),
        ({"type": "result", "session_id": SESSION, "usage": [1]}, "line 2: usage", "expected an object"),
        (
            {"type": "result", "session_id": SESSION, "usage": {"input_tokens": -3}},
            "line 2: usage.input_tokens",
            "non-negative integer",
        ),
        (
            {"type": "result", "session_id": SESSION, "total_cost_usd": "free"},
            "line 2: total_cost_usd",
            "expected a number",
        ),
    ],
)
def test_odd_input_is_one_line_error(tmp_path, row, where, what):
    path = write_jsonl(tmp_path / "run.jsonl", [init(), row, *run_lines()[1:3]])
    with pytest.raises(InputError) as info:
        read(path)
    assert str(info.value.where) == where and what in info.value.what and "\n" not in str(info.value)


def test_a_stream_without_a_response_says_so(tmp_path):
    with pytest.raises(InputError, match="no model call in the stream"):
        read(write_jsonl(tmp_path / "run.jsonl", [init(), result(0, 0, 0, 0)]))


def test_end_to_end(tmp_path, model_dir, capsys):
    path = write_jsonl(tmp_path / "run.jsonl", run_lines())
    doc = profile_json([str(path), "--model", str(model_dir)], capsys)
    assert doc["source"]["format"] == "claude-stream-json" and doc["source"]["session"] == SESSION
    assert len(doc["calls"]) == 2 and doc["summary"]["billed_input_reported"] == 12004 + 12036
    assert {"result-totals", "result-differs"} <= {w["code"] for w in doc["warnings"]}
    doc = profile_json([str(path), "--model", str(model_dir), "-i", "claude-stream-json"], capsys)
    assert len(doc["calls"]) == 2
    assert claude_code.sniff(load(str(path)))  # a transcript reader would take it: detection tries this one first
