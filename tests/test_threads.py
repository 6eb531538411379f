"""Captures threaded by content (tokprof.transforms.threads), on hand-made interleaved captures."""

import json

import tokprof
from tokprof.transforms import thread_by_content

MAIN_SYSTEM = "You are the main agent."
TOOLS = [{"name": "Read", "description": "Read a file", "input_schema": {"type": "object", "properties": {}}}]


def _line(system, messages, tools=None, model="claude-sonnet-4-5"):
    body = {"model": model, "system": system, "messages": messages, "max_tokens": 100}
    if tools:
        body["tools"] = tools
    response = {
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 10, "output_tokens": 2},
    }
    return json.dumps(
        {
            "request": {
                "timestamp": 1.0,
                "method": "POST",
                "url": "https://api.anthropic.com/v1/messages",
                "headers": {},
                "body": body,
            },
            "response": {"timestamp": 2.0, "status_code": 200, "headers": {}, "body": response},
        }
    )


def _user(text):
    return {"role": "user", "content": text}


def _assistant(text):
    return {"role": "assistant", "content": text}


def _capture(tmp_path):
    m1 = [_user("fix the bug")]
    m2 = m1 + [_assistant("looking"), _user("go on")]
    m3 = m2 + [_assistant("done"), _user("thanks")]
    sub1 = [_user("search the code for X")]
    sub2 = sub1 + [_assistant("found"), _user("more")]
    lines = [
        _line(MAIN_SYSTEM, m1, TOOLS),
        _line("Write a title for this conversation.", [_user("fix the bug")], model="claude-haiku-4-5"),
        _line(MAIN_SYSTEM, m2, TOOLS),
        _line("You are a search subagent.", sub1, TOOLS),
        _line("You are a search subagent.", sub2, TOOLS),
        _line(MAIN_SYSTEM, m3, TOOLS),
    ]
    path = tmp_path / "capture.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_interleaved_calls_get_their_threads(tmp_path):
    trace = tokprof.read_log(_capture(tmp_path))
    assert [call.thread for call in trace.calls] == ["", "side-1", "", "subagent-1", "subagent-1", ""]


def test_profile_compares_each_call_with_its_thread(tmp_path):
    result = tokprof.profile(_capture(tmp_path), model="qwen2.5")
    rows = result.calls
    assert [row.thread for row in rows] == [None, "side-1", None, "subagent-1", "subagent-1", None]
    for row in rows:  # buckets are never negative and add up
        assert all(v >= 0 for v in row.buckets.values())
        assert sum(row.buckets.values()) == row.total


def test_a_compaction_continues_the_thread_with_the_same_setup(tmp_path):
    lines = [
        _line(MAIN_SYSTEM, [_user("a")], TOOLS),
        _line(MAIN_SYSTEM, [_user("a"), _assistant("b"), _user("c")], TOOLS),
        _line(MAIN_SYSTEM, [_user("summary of a, b, c")], TOOLS),  # shares no message: same set-up
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert [call.thread for call in tokprof.read_log(path).calls] == ["", "", ""]


def test_traces_with_threads_of_their_own_are_left_alone(tmp_path):
    trace = tokprof.read_log(_capture(tmp_path))
    trace.format = "claude-code"
    for call in trace.calls:
        call.thread = "x"
    assert [call.thread for call in thread_by_content(trace).calls] == ["x"] * 6
