"""The OpenCode reader: the SQLite store, the older storage/ JSON files, `opencode run --format json`.

Fixtures are written here. Their shapes were checked against OpenCode's source (anomalyco/opencode,
read through the search tool): packages/opencode/src/session/session.sql.ts (tables session{id,
project_id, parent_id, slug, directory, title, version, time_created, time_updated, ...},
message{id, session_id, time_created, time_updated, data JSON}, part{id, message_id, session_id,
time_created, time_updated, data JSON}); the message info and parts of message-v2 (assistant
info modelID/providerID/tokens{input, output, reasoning, cache{read, write}}/cost/summary/error;
parts text, reasoning, tool{callID, tool, state{status, input, output | error}}, step-start,
step-finish{tokens, cost}); and getUsage, whose tokens.input is the input minus cache reads and
writes. The run stream's events follow the corpus file (opencode/opencode_run_json_*.jsonl).
"""

from __future__ import annotations

import json
import sqlite3

import pytest

import tokprof
from conftest import ROOT, write_json
from tokprof.frontends.cli import main
from tokprof.formats import read_trace

CORPUS = ROOT.parent / "shared" / "corpus" / "opencode"
SESSION = "ses_0001"
MODEL = "claude-sonnet-4-5"


def tokens(fresh: int, output: int, read: int = 0, write: int = 0, reasoning: int = 0) -> dict:
    return {"input": fresh, "output": output, "reasoning": reasoning, "cache": {"read": read, "write": write}}


def conversation() -> list[tuple[dict, list[dict]]]:
    """(message info, parts) of a session: a user turn, an assistant message of two steps (a tool call
    then an answer), and a failed assistant message with no tokens."""
    user = {"id": "msg_01", "role": "user", "time": {"created": 1767268800000}}
    assistant = {
        "id": "msg_02",
        "role": "assistant",
        "modelID": MODEL,
        "providerID": "anthropic",
        "time": {"created": 1767268801000},
        "cost": 0.0123,
        "tokens": tokens(30, 60, read=2000, write=500),
    }
    failed = {
        "id": "msg_03",
        "role": "assistant",
        "modelID": MODEL,
        "providerID": "anthropic",
        "time": {"created": 1767268809000},
        "error": {"name": "APIError"},
        "tokens": tokens(0, 0),
    }
    return [
        (user, [{"id": "prt_01", "type": "text", "text": "Define cat."}]),
        (
            assistant,
            [
                {"id": "prt_02", "type": "step-start"},
                {"id": "prt_03", "type": "text", "text": "Let me look."},
                {
                    "id": "prt_04",
                    "type": "tool",
                    "callID": "call_1",
                    "tool": "lookup",
                    "state": {"status": "completed", "input": {"word": "cat"}, "output": "a small feline"},
                },
                {
                    "id": "prt_05",
                    "type": "step-finish",
                    "cost": 0.008,
                    "tokens": tokens(10, 20, write=500, reasoning=5),
                },
                {"id": "prt_06", "type": "step-start"},
                {"id": "prt_07", "type": "text", "text": "A cat is a small feline."},
                {"id": "prt_08", "type": "step-finish", "cost": 0.0043, "tokens": tokens(20, 40, read=2000)},
            ],
        ),
        (
            failed,
            [{"id": "prt_09", "type": "step-start"}, {"id": "prt_10", "type": "step-finish", "tokens": tokens(0, 0)}],
        ),
    ]


def write_db(path) -> None:
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT, slug TEXT NOT NULL,
            directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL, time_created INTEGER NOT NULL,
            time_updated INTEGER NOT NULL);
        CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
            time_updated INTEGER NOT NULL, data TEXT NOT NULL);
        CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,
            time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
    """)
    db.execute("INSERT INTO session VALUES (?, 'prj', NULL, 's', '/src', 'old', '1.1', 1, 1)", ("ses_old",))
    db.execute("INSERT INTO session VALUES (?, 'prj', NULL, 's', '/src', 'test', '1.1', 1767268800000, 1)", (SESSION,))
    db.execute(
        "INSERT INTO session VALUES ('ses_child', 'prj', ?, 's', '/src', 'sub', '1.1', 1767268900000, 1)", (SESSION,)
    )
    for info, parts in conversation():
        data = {k: v for k, v in info.items() if k != "id"}
        db.execute(
            "INSERT INTO message VALUES (?, ?, ?, 0, ?)",
            (info["id"], SESSION, info["time"]["created"], json.dumps(data)),
        )
        for part in parts:
            body = {k: v for k, v in part.items() if k != "id"}
            db.execute(
                "INSERT INTO part VALUES (?, ?, ?, 0, 0, ?)", (part["id"], info["id"], SESSION, json.dumps(body))
            )
    db.commit()
    db.close()


def check_calls(trace) -> None:
    assert len(trace.calls) == 2 and trace.unrecorded == ("system", "tools")
    first, second = trace.calls
    assert [m["role"] for m in first.messages] == ["user"]
    assert [m["role"] for m in second.messages] == ["user", "assistant", "tool"]
    assert second.messages[2] == {"role": "tool", "tool_call_id": "call_1", "content": "a small feline"}
    assert (first.reported.prompt, first.reported.cache_write, first.reported.output) == (510, 500, 25)
    assert (second.reported.prompt, second.reported.cache_read) == (2020, 2000)
    assert first.model == MODEL and "error-response" in [n.code for n in trace.notes]


def independent_sums() -> tuple[int, int]:
    """The billed input and output of the fixture, from its own step-finish tokens."""
    prompt = output = 0
    for _, parts in conversation():
        for part in parts:
            if part["type"] == "step-finish":
                t = part["tokens"]
                prompt += t["input"] + t["cache"]["read"] + t["cache"]["write"]
                output += t["output"] + t["reasoning"]
    return prompt, output


def test_sqlite_store(tmp_path):
    path = tmp_path / "opencode.db"
    write_db(path)
    before = path.read_bytes()
    trace = read_trace(str(path))
    assert trace.format == "opencode/sqlite" and trace.session == SESSION
    check_calls(trace)
    assert path.read_bytes() == before  # opened read-only
    profile = tokprof.profile(trace, model="qwen2.5", prices=["1/2/0.1/1.25"])
    prompt, output = independent_sums()
    assert sum(row.reported.prompt for row in profile.calls) == prompt == 2530
    reads, writes = 2000, 500
    expected = ((prompt - reads - writes) * 1 + reads * 0.1 + writes * 1.25 + output * 2) / 1e6
    assert profile.summary().cost.total == pytest.approx(expected, abs=1e-12)
    for row in profile.calls:
        assert row.total == sum(row.buckets.values()) and min(row.buckets.values()) >= 0


def test_storage_files(tmp_path):
    storage = tmp_path / "storage"
    session_file = storage / "session" / "prj" / f"{SESSION}.json"
    session_file.parent.mkdir(parents=True)
    write_json(
        session_file,
        {
            "id": SESSION,
            "projectID": "prj",
            "directory": "/src",
            "title": "t",
            "version": "0.9",
            "time": {"created": 1767268800000, "updated": 1},
        },
    )
    for info, parts in conversation():
        (storage / "message" / SESSION).mkdir(parents=True, exist_ok=True)
        write_json(storage / "message" / SESSION / f"{info['id']}.json", {**info, "sessionID": SESSION})
        (storage / "part" / info["id"]).mkdir(parents=True, exist_ok=True)
        for part in parts:
            write_json(
                storage / "part" / info["id"] / f"{part['id']}.json",
                {**part, "messageID": info["id"], "sessionID": SESSION},
            )
    trace = read_trace(str(session_file))
    assert trace.format == "opencode/storage"
    check_calls(trace)


def run_events() -> list[dict]:
    _, parts = conversation()[1]
    return [
        {
            "type": {"step-start": "step_start", "step-finish": "step_finish", "tool": "tool_use"}.get(
                p["type"], p["type"]
            ),
            "timestamp": 1767268801000 + i,
            "sessionID": SESSION,
            "part": {**p, "sessionID": SESSION, "messageID": "msg_02"},
        }
        for i, p in enumerate(parts)
    ]


def test_run_json_stream(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in run_events()))
    trace = read_trace(str(path))
    assert trace.format == "opencode/run-json" and len(trace.calls) == 2
    assert trace.calls[0].messages == [] and [m["role"] for m in trace.calls[1].messages] == ["assistant", "tool"]
    assert {"no-user-messages", "log-cost"} <= {n.code for n in trace.notes}


@pytest.mark.parametrize(
    "field, value, named",
    [
        ("tokens", {"input": "many", "output": 1}, "tokens.input"),
        ("state", None, ".state"),
    ],
)
def test_malformed_is_one_line(tmp_path, capsys, field, value, named):
    events = run_events()
    target = events[3] if field == "tokens" else events[2]
    target["part"][field] = value
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert main(["profile", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and named in err


def test_a_damaged_database_is_one_line(tmp_path, capsys):
    path = tmp_path / "opencode.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    assert main(["profile", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err


def test_corpus_run_stream():
    path = CORPUS / "opencode_run_json_analysis_20260117_125610.jsonl"
    if not path.exists():
        pytest.skip("the shared corpus is absent")
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    finishes = [e["part"]["tokens"] for e in events if e["type"] == "step_finish"]
    billed = sum(t["input"] + t["cache"]["read"] + t["cache"]["write"] for t in finishes)
    trace = read_trace(str(path))
    assert len(trace.calls) == len(finishes) == 20
    assert sum(c.reported.prompt for c in trace.calls) == billed
    assert sum(c.reported.output for c in trace.calls) == sum(t["output"] + t["reasoning"] for t in finishes)
    assert len(trace.tool_calls()) == sum(1 for e in events if e["type"] == "tool_use")
    profile = tokprof.profile(trace, model="qwen2.5")
    for row in profile.calls:
        assert row.total == sum(row.buckets.values()) and min(row.buckets.values()) >= 0
