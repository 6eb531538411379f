"""Droid (Factory) sessions (#48.1): a transcript and its settings file written here by hand in the shape
ccusage's (``adapter/droid``) and codeburn's (``providers/droid.ts``) readers read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tokprof
from tokprof.formats import read_trace
from tokprof.formats.discovery import local_session_files
from tokprof.frontends.cli import main

SESSION = "6f1c2a9e-1d2b-4c3d-9e8f-0a1b2c3d4e5f"
USAGE = {
    "inputTokens": 1200,
    "outputTokens": 300,
    "cacheCreationTokens": 700,
    "cacheReadTokens": 5000,
    "thinkingTokens": 40,
}


def lines() -> list[dict]:
    def message(id: str, role: str, content) -> dict:
        return {
            "type": "message",
            "id": id,
            "timestamp": "2026-04-20T10:00:00.000Z",
            "message": {"role": role, "content": content},
        }

    return [
        {"type": "session_start", "id": SESSION, "title": "Fix login", "owner": "me", "version": 2, "cwd": "/src/app"},
        message(
            "u1",
            "user",
            [
                {"type": "text", "text": "<system-reminder>rules</system-reminder>"},
                {"type": "text", "text": "Fix the login bug"},
            ],
        ),
        message(
            "a1",
            "assistant",
            [
                {"type": "thinking", "thinking": "Read it."},
                {"type": "tool_use", "id": "call-1", "name": "Read", "input": {"file_path": "login.py"}},
            ],
        ),
        message("u2", "user", [{"type": "tool_result", "tool_use_id": "call-1", "content": "def login(): pass"}]),
        message("a2", "assistant", [{"type": "text", "text": "Fixed."}]),
        {"type": "todo_state", "id": "t1"},
    ]


def write(folder: Path, records: list[dict] | None = None, settings: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{SESSION}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (records or lines())))
    if settings is not False:
        (folder / f"{SESSION}.settings.json").write_text(
            json.dumps(
                settings or {"model": "claude-sonnet-4-5-20250929", "providerLock": "anthropic", "tokenUsage": USAGE}
            )
        )
    return path


def test_session_calls_and_totals(tmp_path):
    path = write(tmp_path / "-src-app")
    trace = read_trace(str(path))
    assert trace.format == "droid" and trace.session == SESSION and trace.model == "claude-sonnet-4-5-20250929"
    first, second = trace.calls
    assert [m["role"] for m in second.messages] == ["user", "assistant", "tool"]
    assert second.messages[2]["content"] == "def login(): pass" and first.cwd == "/src/app"
    assert first.reported is None and second.reported is None  # not recorded per call: no share made up
    totals = next(n for n in trace.notes if n.code == "session-totals")
    settings = json.loads((path.parent / f"{SESSION}.settings.json").read_text())["tokenUsage"]
    assert totals.places == [f"{SESSION}.settings.json: " + ", ".join(f"{k} {v:,}" for k, v in settings.items())]
    profile = tokprof.profile(trace, model="qwen2.5")
    assert profile.summary().reported is None
    for row in profile.calls:
        assert row.total == sum(row.buckets.values()) and min(row.buckets.values()) >= 0


def test_without_settings_says_so(tmp_path):
    trace = read_trace(str(write(tmp_path, settings=False)))
    assert "no-settings" in {n.code for n in trace.notes} and trace.model is None


def test_found_in_its_folder(tmp_path):
    home = tmp_path / "home"
    path = write(home / ".factory/sessions/-src-app")
    found = local_session_files("droid", home=home, environ={})
    assert [(f.format, f.path, f.project) for f in found] == [("droid", path, "-src-app")]
    moved = write(tmp_path / "factory/sessions/-x")
    found = local_session_files("droid", home=home, environ={"FACTORY_DIR": str(tmp_path / "factory")})
    assert [f.path for f in found] == [moved]


@pytest.mark.parametrize(
    "where, change, named",
    [
        ("line", lambda r: r[2]["message"]["content"][1].pop("id"), "line 3: message.content[1].id"),
        ("line", lambda r: r[1]["message"].update(role="robot"), "line 2: message.role"),
        ("settings", None, "tokenUsage.inputTokens"),
    ],
)
def test_hostile_input_is_one_line(tmp_path, capsys, where, change, named):
    records = lines()
    settings = None
    if change is not None:
        change(records)
    else:
        settings = {"model": "x", "tokenUsage": {**USAGE, "inputTokens": "lots"}}
    path = write(tmp_path, records, settings)
    out = tmp_path / "out.json"
    assert main(["profile", str(path), "-f", "json", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and named in err and not out.exists()
    assert (str(path) if where == "line" else f"{SESSION}.settings.json") in err


def test_a_folder_of_sessions_reads_the_settings_with_their_transcript(tmp_path):
    from tokprof.formats.discovery import scan

    path = write(tmp_path / "-src-app")
    found = scan(tmp_path)
    assert found.sessions == [("droid", path)] and found.skipped == []  # the settings file is not "skipped"


def test_a_compaction_starts_later_prompts_from_its_summary(tmp_path):
    records = lines()[:5]
    records.insert(
        4, {"type": "compaction_state", "id": "c1", "summaryText": "The user asked to fix login; a Read found it."}
    )
    records.append({"type": "todo_state", "id": "t1", "todos": "1. [pending] test"})
    trace = read_trace(str(write(tmp_path, records)))
    assert trace.compactions == 1 and "compaction" in {n.code for n in trace.notes}
    assert "unknown-record" not in {n.code for n in trace.notes}
    second = trace.calls[1]
    assert [m["role"] for m in second.messages] == ["user"] and second.messages[0]["content"].startswith(
        "The user asked"
    )


def test_found_in_the_newer_projects_folder(tmp_path):
    home = tmp_path / "home"
    path = write(home / ".factory/projects/-src-app")
    assert [f.path for f in local_session_files("droid", home=home, environ={})] == [path]
