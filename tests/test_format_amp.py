"""Amp threads (#48.1): a thread written here by hand in the shape the readers of ccusage
(``adapter/amp``), agentsview (``parser/amp.go``) and casr (``providers/amp.rs``) read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tokprof
from tokprof.formats import read_trace
from tokprof.formats.discovery import local_session_files
from tokprof.frontends.cli import main

THREAD = "T-019b9d03-62e3-772f-9780-3e637f90eaec"


def usage(fresh: int, output: int, write: int, read: int) -> dict:
    return {
        "model": "claude-sonnet-4-5-20250929",
        "inputTokens": fresh,
        "outputTokens": output,
        "cacheCreationInputTokens": write,
        "cacheReadInputTokens": read,
        "totalInputTokens": fresh + write + read,
        "timestamp": "2026-01-19T11:42:10.652Z",
        "credits": 0.5,
    }


def thread() -> dict:
    return {
        "v": 12,
        "id": THREAD,
        "created": 1767865803494,
        "title": "List files",
        "env": {"initial": {"trees": [{"displayName": "app", "uri": "file:///src/app"}]}},
        "messages": [
            {"role": "user", "messageId": 0, "content": [{"type": "text", "text": "List the files."}]},
            {
                "role": "assistant",
                "messageId": 1,
                "content": [
                    {"type": "thinking", "thinking": "Use the shell."},
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"cmd": "ls"}, "complete": True},
                ],
                "state": {"type": "complete", "stopReason": "tool_use"},
                "usage": usage(10, 40, 986, 11372),
            },
            {
                "role": "user",
                "messageId": 2,
                "content": [
                    {
                        "type": "tool_result",
                        "toolUseID": "toolu_1",
                        "run": {"status": "done", "result": {"output": "a.py", "exitCode": 0}},
                    }
                ],
            },
            {
                "role": "assistant",
                "messageId": 3,
                "content": [{"type": "text", "text": "One file."}],
                "state": {"type": "complete", "stopReason": "end_turn"},
                "usage": usage(5, 12, 0, 12400),
            },
            {
                "role": "info",
                "messageId": 4,
                "content": [{"type": "summary", "summary": {"type": "message", "summary": "x"}}],
            },
            {
                "role": "assistant",
                "messageId": 5,
                "content": [{"type": "text", "text": "Stop"}],
                "state": {"type": "cancelled"},
            },
        ],
    }


def write(path: Path, value: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))
    return path


def test_thread_calls_and_usage(tmp_path):
    value = thread()
    path = write(tmp_path / f"{THREAD}.json", value)
    trace = read_trace(str(path))
    assert trace.format == "amp" and trace.session == THREAD and trace.model == "claude-sonnet-4-5-20250929"
    first, second, third = trace.calls
    assert [m["role"] for m in second.messages] == ["user", "assistant", "tool"]
    assert json.loads(second.messages[2]["content"]) == {"output": "a.py", "exitCode": 0}
    assert (first.reported.prompt, first.reported.cache_write, first.reported.cache_read) == (12368, 986, 11372)
    assert third.reported is None  # cancelled, no usage: not recorded, never 0
    assert first.cwd == "/src/app"
    assert {"info-message", "no-usage", "log-credits"} <= {n.code for n in trace.notes}
    # the billed input, summed from the thread's own fields: totalInputTokens of every assistant usage
    billed = sum(m["usage"]["totalInputTokens"] for m in value["messages"] if "usage" in m)
    profile = tokprof.profile(trace, model="qwen2.5")
    assert profile.summary().reported.billed_input == billed == 12368 + 12405
    assert profile.summary().reported.output == 52
    for row in profile.calls:
        assert row.total == sum(row.buckets.values()) and min(row.buckets.values()) >= 0


def test_usage_ledger_of_older_threads(tmp_path):
    value = thread()
    for message in value["messages"]:
        message.pop("usage", None)
    value["env"]["initial"]["tags"] = ["model:claude-opus-4-5-20251101"]
    value["usageLedger"] = {
        "events": [
            {
                "id": "e0",
                "model": "claude-haiku-4-5",
                "operationType": "title-generation",
                "tokens": {"input": 70, "output": 9},
                "toMessageId": 1,
            },
            {
                "id": "e1",
                "timestamp": "2026-01-02T00:00:00.000Z",
                "model": "gpt-5",
                "tokens": {"input": 100, "output": 20},
                "toMessageId": 3,
            },
        ]
    }
    trace = read_trace(str(write(tmp_path / "t.json", value)))
    assert [c.reported.prompt if c.reported else None for c in trace.calls] == [None, 100, None]
    assert trace.calls[1].model == "gpt-5"  # the title's call is not the first answer's usage
    assert trace.calls[0].model == "claude-opus-4-5-20251101"  # the thread's tagged model


def test_found_in_its_folders(tmp_path):
    home = tmp_path / "home"
    default = write(home / ".local/share/amp/threads" / f"{THREAD}.json", thread())
    legacy = write(home / ".config/Code/User/globalStorage/sourcegraph.amp/threads3/T-2.json", thread())
    found = local_session_files("amp", home=home, environ={})
    assert sorted(f.path for f in found) == sorted([default, legacy]) and {f.format for f in found} == {"amp"}
    moved = write(tmp_path / "a" / "threads" / "T-3.json", thread())
    found = local_session_files("amp", home=home, environ={"AMP_DATA_DIR": f"{tmp_path / 'a'},{tmp_path / 'b'}"})
    assert moved in [f.path for f in found]


@pytest.mark.parametrize(
    "change, named",
    [
        (lambda t: t["messages"][1]["usage"].update(inputTokens=-3), "messages[1].usage.inputTokens"),
        (lambda t: t["messages"][2]["content"][0].pop("toolUseID"), "messages[2].content[0].toolUseID"),
        (lambda t: t["messages"][1].update(role="robot"), "messages[1].role"),
    ],
)
def test_hostile_thread_is_one_line(tmp_path, capsys, change, named):
    value = thread()
    change(value)
    path = write(tmp_path / "t.json", value)
    out = tmp_path / "out.json"
    assert main(["profile", str(path), "-f", "json", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and named in err and not out.exists()
