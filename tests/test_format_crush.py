"""Crush stores (#48.1): a project's ``.crush/crush.db``, listed by Crush's ``projects.json``.

The fixture is written here by hand with Crush's schema (``internal/db/migrations``: ``sessions``,
``messages``, ``files``) and its parts' JSON (``internal/message``); no text comes from a real store.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import tokprof
from tokprof.runs.sessions import local_sessions
from tokprof.formats import read_trace
from tokprof.frontends.cli import main

SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT NOT NULL,
  message_count INTEGER NOT NULL DEFAULT 0, prompt_tokens INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0.0,
  updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL, summary_message_id TEXT);
CREATE TABLE files (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, path TEXT NOT NULL, content TEXT NOT NULL,
  version INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL,
  parts TEXT NOT NULL default '[]', model TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
  finished_at INTEGER, provider TEXT);
"""
T = 1757360294


def text(value: str) -> dict:
    return {"type": "text", "data": {"text": value}}


def call(call_id: str, name: str) -> dict:
    return {
        "type": "tool_call",
        "data": {"id": call_id, "name": name, "input": '{"file_path": "a.py"}', "type": "function", "finished": True},
    }


def result(call_id: str, content: str) -> dict:
    return {
        "type": "tool_result",
        "data": {"tool_call_id": call_id, "name": "", "content": content, "metadata": "", "is_error": False},
    }


def done(reason: str) -> dict:
    return {"type": "finish", "data": {"reason": reason, "time": T}}


MODEL = "claude-sonnet-4-20250514"


def store(path: Path, wal: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    if wal:
        db.execute("PRAGMA journal_mode=WAL")
    db.executescript(SCHEMA)
    sessions = [
        ("old", None, "An older session", 10, 2, 0.01, T - 1000, None),
        ("s1", None, "Add a flag", 5400, 120, 0.0842, T, "m7"),
        ("task-1", "s1", "Find the tests", 900, 30, 0.004, T + 5, None),
    ]
    for sid, parent, title, prompt, completion, cost, created, summary in sessions:
        db.execute(
            "INSERT INTO sessions VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?, ?)",
            (sid, parent, title, prompt, completion, cost, created, created, summary),
        )
    messages = [
        ("m0", "old", "user", [text("Hi."), done("stop")], "", T - 1000),
        ("m1", "s1", "user", [text("Add a --verbose flag."), done("stop")], "", T),
        ("m2", "s1", "assistant", [call("c1", "view"), call("c2", "agent"), done("tool_use")], MODEL, T + 1),
        ("m3", "s1", "tool", [result("c1", "import sys"), result("c2", "tests are in tests/")], "", T + 2),
        (
            "m4",
            "s1",
            "assistant",
            [{"type": "reasoning", "data": {"thinking": "Edit it."}}, text("Done."), done("end_turn")],
            MODEL,
            T + 3,
        ),
        ("m5", "task-1", "user", [text("Find the tests."), done("stop")], "", T + 5),
        ("m6", "task-1", "assistant", [text("tests/"), done("end_turn")], MODEL, T + 6),
        ("m7", "s1", "assistant", [text("Summary: a flag was added."), done("end_turn")], MODEL, T + 7),
        ("m8", "s1", "user", [text("Now document it."), done("stop")], "", T + 8),
        ("m9", "s1", "assistant", [text("Documented."), done("end_turn")], MODEL, T + 9),
    ]
    for mid, sid, role, parts, model, created in messages:
        db.execute(
            "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (mid, sid, role, json.dumps(parts), model, created, created, created, "anthropic"),
        )
    db.commit()
    db.close()
    return path


def test_newest_main_session_with_its_task_as_a_thread(tmp_path):
    path = store(tmp_path / "app" / ".crush" / "crush.db")
    trace = read_trace(str(path))
    assert trace.format == "crush" and trace.session == "s1" and trace.unrecorded == ("system", "tools")
    assert [(c.request_id, c.thread) for c in trace.calls] == [
        ("m2", ""),
        ("m4", ""),
        ("m6", "Find the tests"),
        ("m7", ""),
        ("m9", ""),
    ]
    assert all(c.reported is None for c in trace.calls)  # Crush stores no usage per call: not recorded, never 0
    m4 = trace.calls[1]
    assert [m["role"] for m in m4.messages] == ["user", "assistant", "tool", "tool"]
    assert m4.response["reasoning_content"] == "Edit it." and m4.model == MODEL
    last = trace.calls[-1]  # after the summary: the summary, as user text, then what followed
    assert [(m["role"], m["content"]) for m in last.messages] == [
        ("user", "Summary: a flag was added."),
        ("user", "Now document it."),
    ]
    assert {c.cwd for c in trace.calls} == {str((tmp_path / "app").resolve())}
    notes = {note.code: note for note in trace.notes}
    assert "old (An older session)" in notes["other-sessions"].places[0]
    assert notes["session-figures"].places == [
        "Add a flag: prompt_tokens 5,400 and completion_tokens 120 (last call), cost $0.0842 (Crush's)",
        "Find the tests: prompt_tokens 900 and completion_tokens 30 (last call), cost $0.0040 (Crush's)",
    ]
    summary = tokprof.profile(trace).summary()
    assert summary.reported is None  # nothing reported per call: no "billed input, reported"
    assert summary.billed_input > 0 and summary.estimate is not None  # computed, labelled an estimate


def test_a_wal_store_is_never_changed_nor_given_side_files(tmp_path):
    path = store(tmp_path / ".crush" / "crush.db", wal=True)
    before = sorted(p.name for p in path.parent.iterdir())
    data = path.read_bytes()
    assert len(read_trace(str(path)).calls) == 5
    assert sorted(p.name for p in path.parent.iterdir()) == before and path.read_bytes() == data


def test_a_store_locked_by_the_agent_is_read_from_a_copy(tmp_path):
    path = store(tmp_path / ".crush" / "crush.db")
    data = path.read_bytes()
    agent = sqlite3.connect(path, timeout=0)
    agent.execute("BEGIN EXCLUSIVE")  # the running agent holds the store locked
    try:
        trace = read_trace(str(path))
    finally:
        agent.rollback()
        agent.close()
    assert len(trace.calls) == 5 and path.read_bytes() == data


def test_sessions_lists_the_projects_crush_knows(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for name in ("CRUSH_GLOBAL_DATA", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    project = tmp_path / "work" / "app"
    store(project / ".crush" / "crush.db")
    index = home / ".local/share/crush/projects.json"
    index.parent.mkdir(parents=True)
    index.write_text(
        json.dumps(
            {
                "projects": [
                    {
                        "path": str(project),
                        "data_dir": str(project / ".crush"),
                        "last_accessed": "2026-01-01T00:00:00Z",
                    },
                    {
                        "path": str(tmp_path / "gone"),
                        "data_dir": str(tmp_path / "gone" / ".crush"),
                        "last_accessed": "x",
                    },
                ]
            }
        )
    )
    rows = local_sessions("crush")
    assert [(row.project, row.calls, row.cost) for row in rows] == [(str(project.resolve()), 5, None)]  # not priced
    moved = tmp_path / "crush-data"
    moved.mkdir()
    (moved / "projects.json").write_text(json.dumps({"projects": []}))
    monkeypatch.setenv("CRUSH_GLOBAL_DATA", str(moved))
    monkeypatch.setenv("XDG_DATA_HOME", str(moved))
    assert local_sessions("crush") == []


@pytest.mark.parametrize(
    "sql, where",
    [
        (
            'UPDATE messages SET parts = \'[{"type": "text", "data": {"text": 7}}]\' WHERE id = \'m1\'',
            "message m1: parts[0].data.text",
        ),
        ("UPDATE messages SET parts = '[{\"type\": \"text\"' WHERE id = 'm4'", "message m4: parts"),
        ("UPDATE sessions SET prompt_tokens = -3 WHERE id = 's1'", "session s1: prompt_tokens"),
        ("UPDATE messages SET role = 'robot' WHERE id = 'm8'", "message m8: role"),
    ],
)
def test_hostile_store_is_one_line(tmp_path, capsys, sql, where):
    path = store(tmp_path / ".crush" / "crush.db")
    db = sqlite3.connect(path)
    db.execute("PRAGMA ignore_check_constraints = ON")
    db.execute(sql)
    db.commit()
    db.close()
    data = path.read_bytes()
    out_file = tmp_path / "out.json"
    assert main(["profile", str(path), "-f", "json", "-o", str(out_file)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"{path}: {where}" in err and "Traceback" not in err
    assert not out_file.exists() and path.read_bytes() == data


def test_a_damaged_store_is_refused_in_one_line(tmp_path, capsys):
    path = store(tmp_path / ".crush" / "crush.db")
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # the first page, where the schema lives, overwritten
    path.write_bytes(bytes(data))
    assert main(["profile", str(path), "-i", "crush"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and str(path) in err and "Traceback" not in err


def store_bytes() -> bytes:
    """The fixture store's bytes (a fuzz seed)."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        return store(Path(folder) / "crush.db").read_bytes()
