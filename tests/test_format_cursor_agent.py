"""Cursor's agent transcripts (#48.1): JSON lines written here by hand in the shape codeburn's
(``providers/cursor-agent.ts``) and cli-continues' (``parsers/cursor.ts``) readers read."""

from __future__ import annotations

import json
from pathlib import Path

import tokprof
from tokprof.formats import read_trace
from tokprof.formats.discovery import local_session_files
from tokprof.frontends.cli import main

ID = "1031d227-0c67-4e17-8954-0b6e2b3322f0"


def lines() -> list[dict]:
    def line(role: str, *content: dict) -> dict:
        return {"role": role, "message": {"content": list(content)}}

    return [
        line("user", {"type": "text", "text": "<user_query>\nRun the tests\n</user_query>"}),
        line(
            "assistant",
            {"type": "thinking", "thinking": "Use the shell."},
            {"type": "tool_use", "id": "tu1", "name": "Shell", "input": {"command": "pytest -q"}},
        ),
        line("user", {"type": "tool_result", "tool_use_id": "tu1", "content": [{"type": "text", "text": "3 passed"}]}),
        line("assistant", {"type": "text", "text": "All 3 pass."}),
    ]


def write(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_transcript_calls_without_usage(tmp_path):
    trace = read_trace(str(write(tmp_path / f"{ID}.jsonl", lines())))
    assert trace.format == "cursor-agent" and len(trace.calls) == 2
    second = trace.calls[1]
    assert [m["role"] for m in second.messages] == ["user", "assistant", "tool"] and second.messages[2][
        "content"
    ] == "3 passed"
    assert all(call.reported is None for call in trace.calls) and "no-usage" in {n.code for n in trace.notes}
    profile = tokprof.profile(trace, model="qwen2.5")
    assert profile.summary().reported is None
    for row in profile.calls:
        assert row.total == sum(row.buckets.values()) and min(row.buckets.values()) >= 0


def test_found_with_cursors_store(tmp_path):
    home = tmp_path / "home"
    path = write(home / ".cursor/projects/home-me-app/agent-transcripts" / ID / f"{ID}.jsonl", lines())
    found = local_session_files("cursor", home=home, environ={})
    assert [(f.format, f.path, f.project) for f in found] == [("cursor-agent", path, "home-me-app")]


def test_hostile_line_is_one_line(tmp_path, capsys):
    records = lines()
    records[1]["message"]["content"][1]["name"] = ["x"]
    path = write(tmp_path / "t.jsonl", records)
    out = tmp_path / "out.json"
    assert main(["profile", str(path), "-i", "cursor-agent", "-f", "json", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        len(err.splitlines()) == 1
        and str(path) in err
        and "line 2: message.content[1].name" in err
        and not out.exists()
    )
