"""What keeps memory down on big logs (#33 item 7) keeps every output the same: the JSON text joined
as it is encoded is json.dumps's, byte for byte; the Claude Code reader's calls share message
objects but never a prompt list; repeated line fields are held once. Transcripts written here by
hand (the shape of Claude Code's lines, as in test_format_claude_code.py)."""

from __future__ import annotations

import json
import math

import pytest

from tokprof.formats import claude_code
from tokprof.formats.claude_blocks import Text, Thinking, ToolResult, ToolUse, assistant
from tokprof.formats.claude_lines import kept
from tokprof.formats.jsonfile import load
from tokprof.base.jsontext import BATCH, dumps

SESSION = "mem-1"
MODEL = "claude-sonnet-4-5-20250929"


@pytest.mark.parametrize(
    "value",
    [
        {},
        [],
        "",
        0,
        None,
        True,
        -1.5,
        1e300,
        'é \u2028 \U0001f600 "quoted" \\ \n\t',
        {"a": [], "b": {}, "c": [1, [2, [3, {}]]], "d": {"e": None, "f": False}},
        [{"index": i, "buckets": {"system": i, "conversation": 2 * i}, "where": f"line {i}"} for i in range(BATCH)],
    ],
)
def test_dumps_is_json_dumps_with_indent_byte_for_byte(value):
    assert dumps(value) == json.dumps(value, indent=2, ensure_ascii=False)
    assert dumps(value, indent=None) == json.dumps(value, ensure_ascii=False)


def test_dumps_refuses_nan_rather_than_writing_invalid_json():
    import pytest

    from tokprof.base.errors import TokprofError

    for value in (math.nan, math.inf):
        with pytest.raises(TokprofError, match="NaN or infinity"):
            dumps({"x": value})


def _line(kind: str, uuid: str, parent: str | None, **extra) -> dict:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": SESSION,
        "type": kind,
        "uuid": uuid,
        "cwd": "/home/dev/project",
        "gitBranch": "main",
        "timestamp": "2025-10-26T10:38:30.633Z",
        **extra,
    }


def _session(calls: int) -> list[dict]:
    rows = [_line("user", "u0", None, message={"role": "user", "content": "Read the files."})]
    parent = "u0"
    for i in range(calls):
        message = {
            "model": MODEL,
            "id": f"msg_{i}",
            "type": "message",
            "role": "assistant",
            "stop_reason": "tool_use",
            "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"file_path": f"/{i}.py"}}],
            "usage": {
                "input_tokens": 3,
                "cache_creation_input_tokens": 10,
                "cache_read_input_tokens": 100 + i,
                "output_tokens": 5,
            },
        }
        rows.append(_line("assistant", f"a{i}", parent, message=message, requestId=f"req_{i}"))
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"text of {i}.py"}
        rows.append(_line("user", f"r{i}", f"a{i}", message={"role": "user", "content": [result]}))
        parent = f"r{i}"
    return rows


def _read(tmp_path, rows):
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return claude_code.read(str(path), load(str(path)))


def test_calls_share_messages_but_never_a_prompt_list(tmp_path):
    trace = _read(tmp_path, _session(6))
    lists = [call.messages for call in trace.calls]
    assert len({id(messages) for messages in lists}) == len(lists)
    for before, after in zip(lists, lists[1:]):
        assert after[: len(before)] == before
        assert all(a is b for a, b in zip(after, before))  # one object per message, shared
    assert [len(m) for m in lists] == [1, 3, 5, 7, 9, 11]
    assert lists[-1][-1] == {"role": "tool", "tool_call_id": "t4", "content": "text of 4.py"}


def test_a_prompt_list_changed_after_reading_changes_no_other_call(tmp_path):
    trace = _read(tmp_path, _session(3))
    trace.calls[1].messages.append({"role": "user", "content": "added"})
    assert [len(call.messages) for call in trace.calls] == [1, 4, 5]
    assert trace.calls[2].messages[-1]["role"] == "tool"


def test_repeated_line_fields_are_one_string(tmp_path):
    one = kept(json.loads(json.dumps(_line("user", "u1", None))), "user")
    two = kept(json.loads(json.dumps(_line("user", "u2", "u1"))), "user")
    for key in ("sessionId", "cwd", "gitBranch", "type"):
        assert one[key] is two[key]
    assert one["uuid"] == "u1" and two["parentUuid"] == "u1"


def test_parts_are_frozen_dataclasses_with_the_assistant_message_of_before():
    call = {"id": "t1", "type": "function", "function": {"name": "Read", "arguments": "{}"}}
    parts = (Text("a"), Thinking("hmm"), ToolUse(call), Text("b"))
    message = assistant(parts)
    assert message == {"role": "assistant", "content": "a\nb", "reasoning_content": "hmm", "tool_calls": [call]}
    with pytest.raises(AttributeError):
        ToolResult("t1", "x").text = "y"  # type: ignore[misc]
