"""Codebuff chats (#48.1): a chat-messages.json written here by hand in the shape ccusage's
(``adapter/codebuff``) and codeburn's (``providers/codebuff.ts``) readers read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tokprof
from tokprof.formats import read_trace
from tokprof.formats.discovery import local_session_files
from tokprof.frontends.cli import main

CHAT = "2025-12-20T12-00-00.000Z"


def chat() -> list[dict]:
    return [
        {"variant": "user", "content": "Where is main?", "timestamp": "2025-12-20T12:00:00.000Z"},
        {
            "variant": "ai",
            "id": "msg_1",
            "timestamp": "2025-12-20T12:00:05.000Z",
            "credits": 1.25,
            "blocks": [
                {"type": "text", "content": "Searching."},
                {"type": "tool", "toolName": "code_search", "input": {"pattern": "def main"}, "output": "app.py:3"},
                {"type": "text", "content": "In app.py."},
            ],
            "metadata": {
                "model": "claude-sonnet-4-20250514",
                "usage": {
                    "inputTokens": 500,
                    "outputTokens": 200,
                    "cacheCreationInputTokens": 300,
                    "cacheReadInputTokens": 100,
                },
            },
        },
        {"variant": "user", "content": "Thanks", "timestamp": "2025-12-20T12:00:10.000Z"},
        {
            "variant": "ai",
            "id": "msg_2",
            "timestamp": "2025-12-20T12:00:15.000Z",
            "blocks": [{"type": "text", "content": "You're welcome."}],
            "metadata": {
                "model": "openai/gpt-5",
                "codebuff": {
                    "usage": {
                        "prompt_tokens": 750,
                        "completion_tokens": 80,
                        "prompt_tokens_details": {"cached_tokens": 100},
                    }
                },
            },
        },
        {"variant": "ai", "id": "msg_3", "blocks": [{"type": "text", "content": "(no usage)"}]},
    ]


def write(path: Path, value) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1))
    return path


def test_chat_runs_and_usage(tmp_path):
    value = chat()
    path = write(tmp_path / "chat-messages.json", value)
    trace = read_trace(str(path))
    assert trace.format == "codebuff" and len(trace.calls) == 3
    first, second, third = trace.calls
    assert [m["role"] for m in second.messages] == ["user", "assistant", "tool", "user"]
    assert second.messages[2]["content"] == "app.py:3"
    assert (first.reported.prompt, first.reported.cache_write, first.reported.cache_read) == (900, 300, 100)
    assert (second.reported.prompt, second.reported.cache_read, second.model) == (750, 100, "openai/gpt-5")
    assert third.reported is None
    assert {"runs-not-calls", "no-usage", "log-credits"} <= {n.code for n in trace.notes}
    # the billed input summed from the file's own fields, by their providers' conventions
    anthropic = value[1]["metadata"]["usage"]
    billed = sum(anthropic[k] for k in ("inputTokens", "cacheCreationInputTokens", "cacheReadInputTokens"))
    billed += value[3]["metadata"]["codebuff"]["usage"]["prompt_tokens"]
    profile = tokprof.profile(trace, model="qwen2.5")
    assert profile.summary().reported.billed_input == billed == 1650
    for row in profile.calls:
        assert row.total == sum(row.buckets.values()) and min(row.buckets.values()) >= 0


def test_found_in_its_channels(tmp_path):
    home = tmp_path / "home"
    stable = write(home / ".config/manicode/projects/app/chats" / CHAT / "chat-messages.json", chat())
    dev = write(home / ".config/manicode-dev/projects/lib/chats" / CHAT / "chat-messages.json", chat())
    found = local_session_files("codebuff", home=home, environ={})
    assert sorted((f.path, f.project) for f in found) == sorted([(stable, "app"), (dev, "lib")])
    moved = write(tmp_path / "cb/projects/x/chats" / CHAT / "chat-messages.json", chat())
    found = local_session_files("codebuff", home=home, environ={"CODEBUFF_DATA_DIR": str(tmp_path / "cb")})
    assert moved in [f.path for f in found] and stable not in [f.path for f in found]


@pytest.mark.parametrize(
    "change, named",
    [
        (lambda c: c[1]["metadata"]["usage"].update(outputTokens=1.5), "[1].metadata.usage.outputTokens"),
        (lambda c: c[1]["blocks"][1].pop("toolName"), "[1].blocks[1].toolName"),
        (lambda c: c[0].update(variant="bot"), "[0].variant"),
    ],
)
def test_hostile_chat_is_one_line(tmp_path, capsys, change, named):
    value = chat()
    change(value)
    path = write(tmp_path / "chat-messages.json", value)
    out = tmp_path / "out.json"
    assert main(["profile", str(path), "-i", "codebuff", "-f", "json", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and named in err and not out.exists()
