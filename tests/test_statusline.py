"""tokprof statusline with Claude Code's documented statusLine input (HOME and XDG_CACHE_HOME in tmp)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from test_watch import lines

ROOT = Path(__file__).resolve().parent.parent


def run(tmp_path, payload, **extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    env.pop("TOKPROF_CACHE_DIR", None)  # the state goes to XDG_CACHE_HOME (tests point TOKPROF_CACHE_DIR elsewhere)
    env.update(extra)
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run([sys.executable, "-m", "tokprof", "statusline"], input=text, capture_output=True,
                          text=True, env=env, timeout=60, check=False)


def payload(transcript: Path, cost: float | None = 1.234) -> dict:
    # the fields Claude Code documents for a statusLine command
    out = {"hook_event_name": "Status", "session_id": "s-1", "transcript_path": str(transcript), "cwd": "/w",
           "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"},
           "workspace": {"current_dir": "/w", "project_dir": "/w"}, "version": "2.0.31",
           "output_style": {"name": "default"}}
    if cost is not None:
        out["cost"] = {"total_cost_usd": cost, "total_duration_ms": 60000}
    return out


def test_statusline_line_and_its_state(tmp_path):
    f = tmp_path / "s.jsonl"
    f.write_text(lines([(20_000, 0), (150_000, 19_000)]))
    first = run(tmp_path, payload(f))
    assert first.returncode == 0 and first.stdout == "ctx 75% ! of 200k · +130k · $1.23 · cache 11%\n"
    assert list((tmp_path / "cache" / "tokprof" / "statusline").glob("*.pickle"))
    elsewhere = run(tmp_path, payload(f), TOKPROF_CACHE_DIR=str(tmp_path / "own"))  # and TOKPROF_CACHE_DIR first
    assert elsewhere.stdout == first.stdout and list((tmp_path / "own" / "statusline").glob("*.pickle"))
    with open(f, "a") as out:  # one more call, read from the kept state
        out.write(lines([(20_000, 0), (150_000, 19_000), (152_000, 149_000)]).split("\n", 6)[6])
    second = run(tmp_path, payload(f, cost=None))
    assert second.returncode == 0 and second.stdout.startswith("ctx 76% ! of 200k · +2.0k · cache")
    assert "cache 52%" in second.stdout  # 168,000 of 322,000 read


def test_statusline_never_a_traceback(tmp_path):
    for given in ("[1", "[]", json.dumps({"session_id": "x"}), json.dumps(payload(tmp_path / "missing.jsonl"))):
        done = run(tmp_path, given)
        assert done.returncode == 0 and done.stdout.startswith("tokprof: ") and "Traceback" not in done.stderr
    f = tmp_path / "s.jsonl"
    f.write_text("garbage\n")
    done = run(tmp_path, payload(f))
    assert done.returncode == 0 and done.stdout == "tokprof: no model call yet\n"
