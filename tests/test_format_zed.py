"""Zed's threads.db (#48.1): a store written here by hand with zed-industries/zed's ``threads`` table and a
thread's JSON (``crates/agent/src/db.rs``: ``DbThread``; ``thread.rs``: the messages), zstd-compressed
as Zed writes it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import zstandard

import tokprof
from tokprof.formats import read_trace
from tokprof.formats.discovery import local_session_files
from tokprof.frontends.cli import main

THREAD = "b7c1e2d3-0000-4000-8000-000000000001"
TURN_1, TURN_2 = "u-1", "u-2"
LAST_OF_TURN_1 = {
    "input_tokens": 40,
    "output_tokens": 30,
    "cache_creation_input_tokens": 900,
    "cache_read_input_tokens": 5000,
}
LAST_OF_TURN_2 = {"input_tokens": 12, "output_tokens": 8, "cache_read_input_tokens": 6100}


def thread() -> dict:
    return {
        "title": "List files",
        "version": "0.3.0",
        "updated_at": "2026-05-01T10:00:00Z",
        "model": {"provider": "anthropic", "model": "claude-sonnet-4-5"},
        "messages": [
            {
                "User": {
                    "id": TURN_1,
                    "content": [
                        {"Text": "What is in "},
                        {"Mention": {"uri": "file:///src/a.py", "content": "a.py: print(1)"}},
                    ],
                }
            },
            {
                "Agent": {
                    "content": [
                        {"Thinking": {"text": "Run ls.", "signature": "sig"}},
                        {
                            "ToolUse": {
                                "id": "toolu_1",
                                "name": "terminal",
                                "raw_input": "{}",
                                "input": {"command": "ls"},
                                "is_input_complete": True,
                            }
                        },
                    ],
                    "tool_results": {
                        "toolu_1": {
                            "tool_use_id": "toolu_1",
                            "tool_name": "terminal",
                            "is_error": False,
                            "content": {"Text": "a.py"},
                            "output": None,
                        }
                    },
                    "reasoning_details": None,
                }
            },
            {"Agent": {"content": [{"Text": "Just a.py."}], "tool_results": {}, "reasoning_details": None}},
            {"User": {"id": TURN_2, "content": [{"Text": "Thanks"}]}},
            {"Agent": {"content": [{"Text": "Welcome."}], "tool_results": {}, "reasoning_details": None}},
        ],
        "cumulative_token_usage": {
            "input_tokens": 90,
            "output_tokens": 60,
            "cache_creation_input_tokens": 1800,
            "cache_read_input_tokens": 14000,
        },
        "request_token_usage": {TURN_1: LAST_OF_TURN_1, TURN_2: LAST_OF_TURN_2},
        "imported": False,
    }


def write_store(path: Path, data_type: str = "zstd", as_text: bool = False) -> None:
    """The store; ``as_text``: a json row's data as text (what a fuzz test can change field by field)."""
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE threads (id TEXT PRIMARY KEY, summary TEXT NOT NULL, updated_at TEXT NOT NULL, data_type TEXT NOT NULL, data BLOB NOT NULL)"
    )
    db.execute("ALTER TABLE threads ADD COLUMN parent_id TEXT")
    db.execute("ALTER TABLE threads ADD COLUMN folder_paths TEXT")
    db.execute("ALTER TABLE threads ADD COLUMN created_at TEXT")
    data = json.dumps(thread()).encode()
    blob: bytes | str = zstandard.ZstdCompressor(level=3).compress(data) if data_type == "zstd" else data
    blob = blob.decode() if as_text and isinstance(blob, bytes) and data_type == "json" else blob
    db.execute(
        "INSERT INTO threads (id, summary, updated_at, data_type, data) VALUES (?, 'List files', '2026-05-01T10:00:00+00:00', ?, ?)",
        (THREAD, data_type, blob),
    )
    old = dict(thread(), imported=True)
    db.execute(
        "INSERT INTO threads (id, summary, updated_at, data_type, data) VALUES ('imp', 'x', '2026-06-01T00:00:00+00:00', 'json', ?)",
        (json.dumps(old).encode(),),
    )
    db.commit()
    db.close()


def test_store_calls_and_per_turn_usage(tmp_path):
    path = tmp_path / "threads.db"
    write_store(path)
    before = path.read_bytes()
    trace = read_trace(str(path))
    assert path.read_bytes() == before
    assert trace.format == "zed" and trace.session == THREAD and trace.model == "claude-sonnet-4-5"
    first, second, third = trace.calls
    assert [m["role"] for m in second.messages] == ["user", "assistant", "tool"]
    assert second.messages[0]["content"] == "What is in \na.py: print(1)" and second.messages[2]["content"] == "a.py"
    assert first.reported is None  # the turn's earlier call: not recorded, never 0
    assert (second.reported.prompt, second.reported.cache_write, second.reported.cache_read) == (5940, 900, 5000)
    assert third.reported.prompt == 6112
    assert {"no-usage", "thread-totals", "other-threads", "mentions"} <= {n.code for n in trace.notes}
    # the billed input summed from the store's own request_token_usage (Anthropic's meaning)
    billed = sum(
        sum(u.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        for u in thread()["request_token_usage"].values()
    )
    profile = tokprof.profile(trace, model="qwen2.5")
    assert profile.summary().reported.billed_input == billed == 12052
    for row in profile.calls:
        assert row.total == sum(row.buckets.values()) and min(row.buckets.values()) >= 0


def test_json_rows_and_listing(tmp_path):
    home = tmp_path / "home"
    linux = home / ".local/share/zed/threads/threads.db"
    mac = home / "Library/Application Support/Zed/threads/threads.db"
    for path in (linux, mac):
        path.parent.mkdir(parents=True)
        write_store(path, "json")
    assert len(read_trace(str(linux)).calls) == 3
    found = local_session_files("zed", home=home, environ={})
    assert sorted(f.path for f in found) == sorted([linux, mac]) and {f.format for f in found} == {"zed"}


def test_a_damaged_thread_is_one_line(tmp_path, capsys):
    path = tmp_path / "threads.db"
    write_store(path)
    db = sqlite3.connect(path)
    db.execute("UPDATE threads SET data = ? WHERE id = ?", (b"\x28\xb5\x2f\xfd garbage", THREAD))
    db.commit()
    db.close()
    out = tmp_path / "out.json"
    assert main(["profile", str(path), "-f", "json", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and f"thread {THREAD}" in err and not out.exists()


def test_a_thread_that_decompresses_past_the_cap_is_one_line(tmp_path, capsys, monkeypatch):
    """A zstd bomb: the thread is decompressed under the log-line cap (TOKPROF_MAX_READ_LOG_LINE), not whole."""
    monkeypatch.setenv("TOKPROF_MAX_READ_LOG_LINE", "1")  # MiB
    path = tmp_path / "threads.db"
    write_store(path)
    bomb = zstandard.ZstdCompressor(level=3).compress(b'{"title": "' + b"x" * (3 * 1024 * 1024) + b'"}')
    db = sqlite3.connect(path)
    db.execute("UPDATE threads SET data = ? WHERE id = ?", (bomb, THREAD))
    db.commit()
    db.close()
    assert main(["profile", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"thread {THREAD}" in err and "TOKPROF_MAX_READ_LOG_LINE" in err
