"""Cursor's state.vscdb (#48.1): a store written here by hand with the ``cursorDiskKV`` rows codeburn's
(``providers/cursor.ts``) and agentsview's (``parser/cursor.go``) Cursor readers read: ``composerData:<id>``
and ``bubbleId:<id>:<bubble>``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import tokprof
from tokprof.formats import read_trace
from tokprof.formats.discovery import local_session_files
from tokprof.frontends.cli import main

COMPOSER = "c0ffee00-0000-4000-8000-000000000001"


def bubbles() -> list[tuple[str, dict]]:
    return [
        ("b1", {"type": 1, "text": "Rename foo to bar.", "createdAt": "2025-06-01T10:00:00Z"}),
        (
            "b2",
            {
                "type": 2,
                "text": "",
                "createdAt": "2025-06-01T10:00:02Z",
                "tokenCount": {"inputTokens": 4200, "outputTokens": 90},
                "modelInfo": {"modelName": "claude-4-sonnet"},
                "thinking": {"text": "Search first."},
                "toolFormerData": {
                    "toolCallId": "tool_1",
                    "name": "grep_search",
                    "rawArgs": '{"query": "foo"}',
                    "result": '{"matches": 2}',
                },
                "requestId": "req-1",
            },
        ),
        (
            "b3",
            {
                "type": 2,
                "text": "Done: two places.",
                "createdAt": "2025-06-01T10:00:05Z",
                "tokenCount": {"inputTokens": 0, "outputTokens": 0},
                "modelInfo": {"modelName": "claude-4-sonnet"},
            },
        ),
    ]


def write_store(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    db.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    headers = [{"bubbleId": b, "type": v["type"]} for b, v in bubbles()]
    composer = {
        "composerId": COMPOSER,
        "name": "Rename",
        "createdAt": 1748772000000,
        "lastUpdatedAt": 1748772005000,
        "fullConversationHeadersOnly": headers,
    }
    db.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"composerData:{COMPOSER}", json.dumps(composer)))
    db.execute(
        "INSERT INTO cursorDiskKV VALUES ('composerData:old', ?)",
        (
            json.dumps(
                {
                    "composerId": "old",
                    "createdAt": 1,
                    "conversation": [{"type": 1, "text": "hi"}, {"type": 2, "text": "hello"}],
                }
            ),
        ),
    )
    db.execute(
        "INSERT INTO cursorDiskKV VALUES ('composerData:empty', ?)",
        (json.dumps({"composerId": "empty", "createdAt": 2, "fullConversationHeadersOnly": []}),),
    )
    for bubble_id, value in bubbles():
        db.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"bubbleId:{COMPOSER}:{bubble_id}", json.dumps(value)))
    db.commit()
    db.close()


def test_store_bubbles_and_recorded_counts(tmp_path):
    path = tmp_path / "state.vscdb"
    write_store(path)
    before = path.read_bytes()
    trace = read_trace(str(path))
    assert path.read_bytes() == before
    assert trace.format == "cursor" and trace.session == COMPOSER and trace.model == "claude-4-sonnet"
    first, second = trace.calls
    assert first.response["tool_calls"][0]["function"]["name"] == "grep_search"
    assert [m["role"] for m in second.messages] == ["user", "assistant", "tool"]
    assert (first.reported.prompt, first.reported.output, first.request_id) == (4200, 90, "req-1")
    assert second.reported is None  # 0 and 0 on current builds: not recorded, never a free call
    assert {"bubbles-not-requests", "no-usage", "other-composers"} <= {n.code for n in trace.notes}
    # the billed input summed from the store's own tokenCount fields (0 and 0 is no count)
    billed = sum(b["tokenCount"]["inputTokens"] for _, b in bubbles() if b.get("tokenCount"))
    profile = tokprof.profile(trace, model="qwen2.5")
    assert profile.summary().reported.billed_input == billed == 4200
    for row in profile.calls:
        assert row.total == sum(row.buckets.values()) and min(row.buckets.values()) >= 0


def test_found_in_its_folders_and_not_vscode(tmp_path):
    home = tmp_path / "home"
    cursor = home / ".config/Cursor/User/globalStorage/state.vscdb"
    cursor.parent.mkdir(parents=True)
    write_store(cursor)
    vscode = home / ".config/Code/User/globalStorage/state.vscdb"  # VS Code's own store: no cursorDiskKV
    vscode.parent.mkdir(parents=True)
    sqlite3.connect(vscode).execute("CREATE TABLE ItemTable (key TEXT UNIQUE, value BLOB)").connection.close()
    found = local_session_files(home=home, environ={})
    assert [(f.agent, f.path) for f in found if f.path.name == "state.vscdb"] == [("cursor", cursor)]


def test_a_hostile_bubble_is_one_line(tmp_path, capsys):
    path = tmp_path / "state.vscdb"
    write_store(path)
    db = sqlite3.connect(path)
    db.execute(
        "UPDATE cursorDiskKV SET value = json_set(value, '$.tokenCount.inputTokens', -5) WHERE key LIKE 'bubbleId:%:b2'"
    )
    db.commit()
    db.close()
    out = tmp_path / "out.json"
    assert main(["profile", str(path), "-f", "json", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and "b2.tokenCount.inputTokens" in err and not out.exists()
