"""Goose's sessions.db (#48.1): a store written here by hand with block/goose's schema
(``session_manager.rs``: ``sessions``, ``messages``) and message JSON (``conversation/message.rs``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import tokprof
from tokprof.formats import read_trace
from tokprof.formats.discovery import local_session_files
from tokprof.frontends.cli import main

SESSION = "20260501_1"


def content(*items: dict) -> str:
    return json.dumps(list(items))


def text(value: str) -> dict:
    return {"type": "text", "text": value}


def write_store(path: Path, sessions: list[tuple] | None = None) -> None:
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE sessions (id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
            user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user', working_dir TEXT NOT NULL,
            created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
            extension_data TEXT DEFAULT '{}', total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
            accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER, accumulated_output_tokens INTEGER,
            schedule_id TEXT, recipe_json TEXT, user_recipe_values_json TEXT, model_config_json TEXT, provider_name TEXT);
        CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
            role TEXT NOT NULL, content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
            timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT);
        """
    )
    for row in sessions or [(SESSION, "user", "2026-05-01 10:00:00", 5400, 5000, 400)]:
        db.execute(
            "INSERT INTO sessions (id, session_type, working_dir, created_at, accumulated_total_tokens,"
            " accumulated_input_tokens, accumulated_output_tokens, model_config_json, provider_name)"
            " VALUES (?, ?, '/src/app', ?, ?, ?, ?, ?, 'anthropic')",
            (*row, json.dumps({"model_name": "claude-sonnet-4-20250514"})),
        )
    visible = json.dumps({"userVisible": True, "agentVisible": True})
    rows = [
        ("user", content(text("List the files.")), visible),
        (
            "assistant",
            content(
                text("Looking."),
                {
                    "type": "toolRequest",
                    "id": "t1",
                    "toolCall": {"status": "success", "value": {"name": "shell", "arguments": {"command": "ls"}}},
                },
            ),
            visible,
        ),
        (
            "user",
            content(
                {"type": "toolResponse", "id": "t1", "toolResult": {"status": "success", "value": [text("a.py\nb.py")]}}
            ),
            visible,
        ),
        (
            "user",
            content({"type": "systemNotification", "notificationType": "inlineMessage", "msg": "x"}),
            json.dumps({"userVisible": True, "agentVisible": False}),
        ),
        ("assistant", content(text("Two files.")), visible),
    ]
    for role, body, meta in rows:
        db.execute(
            "INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json) VALUES (?, ?, ?, 1777629600, ?)",
            (SESSION, role, body, meta),
        )
    db.commit()
    db.close()


def test_store_calls_and_not_recorded_usage(tmp_path):
    path = tmp_path / "sessions.db"
    write_store(path)
    before = path.read_bytes()
    trace = read_trace(str(path))
    assert path.read_bytes() == before  # never written
    assert trace.format == "goose" and trace.session == SESSION and trace.model == "claude-sonnet-4-20250514"
    first, second = trace.calls
    assert [m["role"] for m in first.messages] == ["user"]
    assert [m["role"] for m in second.messages] == ["user", "assistant", "tool"]
    assert second.messages[2]["content"] == "a.py\nb.py" and first.cwd == "/src/app"
    assert first.reported is None and second.reported is None  # not recorded per call, never 0
    totals = next(n for n in trace.notes if n.code == "session-totals")
    # the store's own accumulated columns, as written above
    assert totals.places == [f"session {SESSION}: input_tokens 5,000, output_tokens 400, total_tokens 5,400"]
    profile = tokprof.profile(trace, model="qwen2.5")
    assert profile.summary().reported is None  # no reported usage: not a 0
    for row in profile.calls:
        assert row.total == sum(row.buckets.values()) and min(row.buckets.values()) >= 0


def test_newest_user_session_and_listing(tmp_path):
    store = tmp_path / "home" / ".local/share/goose/sessions/sessions.db"
    store.parent.mkdir(parents=True)
    write_store(
        store,
        [
            (SESSION, "user", "2026-05-01 10:00:00", 10, 8, 2),
            ("20260502_1", "sub_agent", "2026-05-02 10:00:00", 1, 1, 0),
        ],
    )
    trace = read_trace(str(store))
    assert trace.session == SESSION  # a sub-agent's session is not the newest user session
    found = local_session_files(home=tmp_path / "home", environ={})
    assert [(f.agent, f.format, f.path) for f in found] == [("goose", "goose", store)]
    moved = tmp_path / "root" / "data/sessions/sessions.db"
    moved.parent.mkdir(parents=True)
    write_store(moved)
    found = local_session_files("goose", home=tmp_path / "home", environ={"GOOSE_PATH_ROOT": str(tmp_path / "root")})
    assert [f.path for f in found] == [moved]


def test_a_locked_store_is_read_from_a_copy(tmp_path):
    path = tmp_path / "sessions.db"
    write_store(path)
    agent = sqlite3.connect(path, isolation_level=None)
    agent.execute("BEGIN EXCLUSIVE")  # the running agent holds its write lock
    try:
        before = path.read_bytes()
        trace = read_trace(str(path))
        assert len(trace.calls) == 2 and path.read_bytes() == before
    finally:
        agent.execute("ROLLBACK")
        agent.close()


def test_hostile_rows_are_one_line(tmp_path, capsys):
    path = tmp_path / "sessions.db"
    write_store(path)
    db = sqlite3.connect(path)
    db.execute('UPDATE messages SET content_json = \'[{"type": "text", "text": 7}]\' WHERE id = 2')
    db.commit()
    db.close()
    out = tmp_path / "out.json"
    assert main(["profile", str(path), "-f", "json", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and "message 2" in err and "text" in err
    assert not out.exists()


def test_a_damaged_store_is_one_line(tmp_path, capsys):
    path = tmp_path / "sessions.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    assert main(["profile", str(path), "-i", "goose"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err


def test_a_store_in_use_with_its_write_ahead_log_is_read_whole(tmp_path):
    """The running agent's store: WAL mode, the latest messages still in the -wal file (not checkpointed)."""
    path = tmp_path / "sessions.db"
    write_store(path)
    agent = sqlite3.connect(path, isolation_level=None)
    agent.execute("PRAGMA journal_mode=WAL")
    agent.execute("PRAGMA wal_autocheckpoint=0")
    reply = json.dumps([text("And a third file?")])
    agent.execute(
        "INSERT INTO messages (session_id, role, content_json, created_timestamp) VALUES (?, 'assistant', ?, 1777629700)",
        (SESSION, reply),
    )
    try:
        assert (tmp_path / "sessions.db-wal").stat().st_size > 0
        trace = read_trace(str(path))
        assert len(trace.calls) == 3  # the message only the log holds is read
    finally:
        agent.close()
