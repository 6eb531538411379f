"""OpenClaw sessions (#48.1): pi's v3 session files, which OpenClaw writes under
``~/.openclaw/agents/<agent>/sessions/`` (OpenClaw's docs/reference/session-management-compaction.md;
ccusage's ``adapter/openclaw`` reads the same lines). A session written here by hand in that shape,
with OpenClaw's own entries (``custom`` model snapshots)."""

from __future__ import annotations

import json
from pathlib import Path

import tokprof
from test_format_pi import answer, entry, result, say, usage
from tokprof.formats import read_trace
from tokprof.formats.discovery import local_session_files
from tokprof.frontends.cli import main

T = "2026-07-01T09:00:00.000Z"
SESSION = "0a6f4c1e-7b2d-4f3a-9c8e-1d2e3f4a5b6c"


def lines() -> list[dict]:
    return [
        {"type": "session", "version": 3, "id": SESSION, "timestamp": T, "cwd": "/home/me/.openclaw/workspace"},
        {
            "type": "model_change",
            "id": "m1",
            "parentId": None,
            "timestamp": T,
            "provider": "anthropic",
            "modelId": "claude-opus-4-6",
        },
        {"type": "thinking_level_change", "id": "k1", "parentId": "m1", "timestamp": T, "thinkingLevel": "low"},
        {
            "type": "custom",
            "customType": "model-snapshot",
            "id": "x1",
            "parentId": "k1",
            "timestamp": T,
            "data": {"provider": "anthropic", "modelId": "claude-opus-4-6"},
        },
        entry("u1", "x1", say("What is on my calendar?")),
        entry("a1", "u1", answer("claude-opus-4-6", usage(12, 40, read=0, write=9000), calls=["t1"])),
        entry("r1", "a1", result("t1", "10:00 standup")),
        entry("a2", "r1", answer("claude-opus-4-6", usage(20, 25, read=9000, write=150), text="A standup at 10.")),
    ]


def write(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_session_read_as_pi_with_its_usage(tmp_path):
    records = lines()
    path = write(tmp_path / f"{SESSION}.jsonl", records)
    trace = read_trace(str(path))
    assert trace.format == "pi" and trace.session == SESSION and len(trace.calls) == 2
    # the billed input summed from the file's own usage fields: input + cacheRead + cacheWrite
    billed = sum(
        u["input"] + u["cacheRead"] + u["cacheWrite"]
        for r in records
        if r.get("type") == "message" and (u := r["message"].get("usage"))
    )
    profile = tokprof.profile(trace, model="qwen2.5")
    assert profile.summary().reported.billed_input == billed == 9012 + 9170
    for row in profile.calls:
        assert row.total == sum(row.buckets.values()) and min(row.buckets.values()) >= 0


def test_found_in_its_folders_with_archived_transcripts(tmp_path):
    home = tmp_path / "home"
    live = write(home / ".openclaw/agents/main/sessions" / f"{SESSION}.jsonl", lines())
    reset = write(home / ".openclaw/agents/main/sessions" / f"{SESSION}.jsonl.reset.2026-07-02T00-00-00Z", lines())
    old = write(home / ".clawdbot/agents/coder/sessions/s.jsonl", lines())
    (home / ".openclaw/agents/main/sessions/sessions.json").write_text("{}")
    found = local_session_files("openclaw", home=home, environ={})
    assert sorted((f.path, f.project, f.format) for f in found) == sorted(
        [(live, "main", "pi"), (reset, "main", "pi"), (old, "coder", "pi")]
    )
    moved = write(tmp_path / "state/agents/main/sessions/s.jsonl", lines())
    found = local_session_files("openclaw", home=home, environ={"OPENCLAW_STATE_DIR": str(tmp_path / "state")})
    assert moved in [f.path for f in found] and live not in [f.path for f in found]


def test_hostile_line_is_one_line(tmp_path, capsys):
    records = lines()
    records[5]["message"]["usage"]["cacheWrite"] = "many"
    path = write(tmp_path / "s.jsonl", records)
    out = tmp_path / "out.json"
    assert main(["profile", str(path), "-f", "json", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and "line 6" in err and "cacheWrite" in err
    assert not out.exists()
