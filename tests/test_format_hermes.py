"""Hermes Agent's state.db (#48.1): a store written here by hand with the columns of
NousResearch/hermes-agent's ``SCHEMA_SQL`` (``hermes_state_common.py``) that the reader uses."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import tokprof
from tokprof.formats import read_trace
from tokprof.formats.discovery import local_session_files
from tokprof.frontends.cli import main

SESSION = "20260601_101500_ab12cd"
TOTALS = {
    "input_tokens": 9000,
    "output_tokens": 700,
    "cache_read_tokens": 6000,
    "cache_write_tokens": 1500,
    "reasoning_tokens": 50,
    "api_call_count": 2,
}


def write_store(path: Path) -> None:
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE system_prompts (hash TEXT PRIMARY KEY, prompt TEXT NOT NULL);
        CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT, model_config TEXT,
            system_prompt TEXT, system_prompt_hash TEXT, parent_session_id TEXT, started_at REAL NOT NULL,
            ended_at REAL, end_reason TEXT, message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0,
            input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0, cache_read_tokens INTEGER DEFAULT 0,
            cache_write_tokens INTEGER DEFAULT 0, reasoning_tokens INTEGER DEFAULT 0, cwd TEXT,
            billing_provider TEXT, estimated_cost_usd REAL, actual_cost_usd REAL, api_call_count INTEGER DEFAULT 0);
        CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
            role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL,
            token_count INTEGER, finish_reason TEXT, reasoning TEXT, reasoning_content TEXT,
            active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0);
        """
    )
    db.execute("INSERT INTO system_prompts VALUES ('h1', 'You are Hermes, a helpful agent.')")
    db.execute(
        "INSERT INTO sessions (id, source, model, system_prompt_hash, started_at, cwd, billing_provider, estimated_cost_usd,"
        " input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, api_call_count)"
        " VALUES (?, 'cli', 'anthropic/claude-sonnet-4', 'h1', 1780308900.5, '/src/app', 'openrouter', 0.0421, ?, ?, ?, ?, ?, ?)",
        (SESSION, *TOTALS.values()),
    )
    db.execute(
        "INSERT INTO sessions (id, source, model, parent_session_id, started_at) VALUES ('child', 'tool', 'm', ?, 1780309999)",
        (SESSION,),
    )
    call = [{"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "ls"}'}}]
    rows = [
        ("user", "List the files.", None, None),
        ("assistant", None, json.dumps(call), None),
        ("tool", "a.py\nb.py", None, "call_1"),
        ("assistant", "Two files.", None, None),
    ]
    for role, content, calls, call_id in rows:
        db.execute(
            "INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id, timestamp) VALUES (?, ?, ?, ?, ?, 1780308901.0)",
            (SESSION, role, content, calls, call_id),
        )
    db.commit()
    db.close()


def test_store_calls_system_prompt_and_totals(tmp_path):
    path = tmp_path / "state.db"
    write_store(path)
    before = path.read_bytes()
    trace = read_trace(str(path))
    assert path.read_bytes() == before
    assert trace.format == "hermes" and trace.session == SESSION and trace.unrecorded == ("tools",)
    first, second = trace.calls
    assert [m["role"] for m in first.messages] == ["system", "user"]
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "tool"]
    assert second.messages[2]["tool_calls"][0]["function"]["name"] == "terminal" and first.cwd == "/src/app"
    assert first.reported is None and second.reported is None  # not recorded per call, never 0
    notes = {n.code: n for n in trace.notes}
    # the session row's own sums, as written above
    assert notes["session-totals"].places == [
        f"session {SESSION}: " + ", ".join(f"{k} {v:,}" for k, v in TOTALS.items())
    ]
    assert notes["log-cost"].places == ["estimated_cost_usd 0.042100 USD"]
    profile = tokprof.profile(trace, model="qwen2.5")
    assert profile.summary().reported is None and profile.summary().not_recorded == ("tool_definitions",)
    for row in profile.calls:
        assert row.total == sum(row.buckets.values()) and min(row.buckets.values()) >= 0


def test_found_in_its_folders(tmp_path):
    home = tmp_path / "home"
    default = home / ".hermes" / "state.db"
    profile = home / ".hermes" / "profiles" / "coder" / "state.db"
    for path in (default, profile):
        path.parent.mkdir(parents=True)
        write_store(path)
    found = local_session_files("hermes", home=home, environ={})
    assert [(f.format, f.path, f.project) for f in found] == [("hermes", default, ""), ("hermes", profile, "coder")]
    moved = tmp_path / "hh" / "state.db"
    moved.parent.mkdir()
    write_store(moved)
    assert [f.path for f in local_session_files("hermes", home=home, environ={"HERMES_HOME": str(moved.parent)})] == [
        moved
    ]


def test_hostile_rows_are_one_line(tmp_path, capsys):
    path = tmp_path / "state.db"
    write_store(path)
    db = sqlite3.connect(path)
    db.execute("UPDATE messages SET tool_calls = '[{\"id\": 1}]' WHERE id = 2")
    db.commit()
    db.close()
    out = tmp_path / "out.json"
    assert main(["profile", str(path), "-f", "json", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and "message 2" in err and not out.exists()
