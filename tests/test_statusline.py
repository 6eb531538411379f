"""tokprof statusline with Claude Code's documented statusLine input (HOME and XDG_CACHE_HOME in tmp)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import stop_statusline_counters
from test_watch import lines

ROOT = Path(__file__).resolve().parent.parent


def run(tmp_path, payload, buckets: bool = False, **extra: str) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        HOME=str(tmp_path / "home"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        PYTHONPATH=str(ROOT),
        TOKPROF_STATUSLINE_BUCKETS="1" if buckets else "0",
        TOKPROF_STATUSLINE_IDLE="20",
    )
    env.pop("TOKPROF_CACHE_DIR", None)  # the state goes to XDG_CACHE_HOME (tests point TOKPROF_CACHE_DIR elsewhere)
    env.update(extra)
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        [sys.executable, "-m", "tokprof", "statusline"],
        input=text,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def payload(transcript: Path, cost: float | None = 1.234) -> dict:
    # the fields Claude Code documents for a statusLine command
    out = {
        "hook_event_name": "Status",
        "session_id": "s-1",
        "transcript_path": str(transcript),
        "cwd": "/w",
        "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"},
        "workspace": {"current_dir": "/w", "project_dir": "/w"},
        "version": "2.0.31",
        "output_style": {"name": "default"},
    }
    if cost is not None:
        out["cost"] = {"total_cost_usd": cost, "total_duration_ms": 60000}
    return out


def test_statusline_line_and_its_state(tmp_path):
    f = tmp_path / "s.jsonl"
    f.write_text(lines([(20_000, 0), (150_000, 19_000)]))
    first = run(tmp_path, payload(f))
    assert first.returncode == 0 and first.stdout == "ctx 75% ! of 200k · 17k to compact · +130k · $1.23 · cache 11%\n"
    assert list((tmp_path / "cache" / "tokprof" / "statusline").glob("*.pickle"))
    elsewhere = run(tmp_path, payload(f), TOKPROF_CACHE_DIR=str(tmp_path / "own"))  # and TOKPROF_CACHE_DIR first
    assert elsewhere.stdout == first.stdout and list((tmp_path / "own" / "statusline").glob("*.pickle"))
    with open(f, "a") as out:  # one more call, read from the kept state
        out.write(lines([(20_000, 0), (150_000, 19_000), (152_000, 149_000)]).split("\n", 6)[6])
    second = run(tmp_path, payload(f, cost=None))
    assert second.returncode == 0 and second.stdout.startswith("ctx 76% ! of 200k · 15k to compact · +2.0k · cache")
    assert "cache 52%" in second.stdout  # 168,000 of 322,000 read


def test_statusline_never_a_traceback(tmp_path):
    for given in ("[1", "[]", json.dumps({"session_id": "x"}), json.dumps(payload(tmp_path / "missing.jsonl"))):
        done = run(tmp_path, given)
        assert done.returncode == 0 and done.stdout.startswith("tokprof: ") and "Traceback" not in done.stderr
    f = tmp_path / "s.jsonl"
    f.write_text("garbage\n")
    done = run(tmp_path, payload(f))
    assert done.returncode == 0 and done.stdout == "tokprof: no model call yet\n"


def test_statusline_shows_the_buckets_its_counter_wrote(tmp_path):
    import time

    f = tmp_path / "s.jsonl"
    f.write_text(lines([(20_000, 0), (150_000, 19_000)]))
    first = run(tmp_path, payload(f), buckets=True)  # starts the counter: no buckets yet
    assert first.returncode == 0 and first.stdout.startswith("ctx 75% ! of 200k · 17k to compact · +130k · ")
    try:
        deadline = time.monotonic() + 90
        while True:
            done = run(tmp_path, payload(f), buckets=True)
            if "results" in done.stdout or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        # Claude Code records neither system prompt nor tools: the rest of the report is unrecorded
        assert done.stdout.startswith("ctx 75% ! of 200k · 17k to compact · +130k · results ~"), done.stdout
        assert " · unrecorded ~" in done.stdout and done.stdout.endswith(" · $1.23 · cache 11%\n")
        assert "tools" not in done.stdout
        with open(f, "a") as out:  # one more call: counted by the same counter
            out.write(lines([(20_000, 0), (150_000, 19_000), (152_000, 149_000)]).split("\n", 6)[6])
        deadline = time.monotonic() + 60
        while True:
            done = run(tmp_path, payload(f), buckets=True)
            if (
                done.stdout.startswith("ctx 76% ! of 200k · 15k to compact · +2.0k · results")
                or time.monotonic() > deadline
            ):
                break
            time.sleep(0.3)
        assert done.stdout.startswith("ctx 76% ! of 200k · 15k to compact · +2.0k · results ~"), done.stdout
    finally:  # the counter this test started (it would exit when idle)
        stop_statusline_counters(tmp_path / "cache" / "tokprof" / "statusline")


def test_a_process_left_behind_is_found():
    """The check every test run ends with (conftest's ``_no_process_left_behind``) finds a process
    started in a session of its own by a parent that has exited, as the counter above is started."""
    import signal

    import pytest
    from conftest import adopt_orphans, left_behind, running_children

    if not adopt_orphans():
        pytest.skip("no child subreaper on this system")
    sleeper = "import time; time.sleep(120)  # left behind on purpose"
    start = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {sleeper!r}], start_new_session=True)"
    subprocess.run([sys.executable, "-c", start], check=True, timeout=60)
    found = [pid for pid, command in running_children().items() if "left behind on purpose" in command]
    assert len(found) == 1
    os.kill(found[0], signal.SIGKILL)
    assert found[0] not in left_behind(grace=10.0)


def test_the_window_claude_code_runs_with(tmp_path):
    """(#46 item 6) Claude Opus 4.6 has a 1M window in the price data, but Claude Code runs it at
    200,000 unless its input says otherwise (``context_window.context_window_size``), its model id
    names the 1M option (``[1m]``), or a prompt above 200,000 shows it; the tokens left before it
    compacts by itself are its window less 33,000 (20,000 for the summary, a buffer of 13,000)."""
    f = tmp_path / "s.jsonl"
    f.write_text(lines([(20_000, 0), (169_000, 19_000)]).replace("claude-sonnet-4-5", "claude-opus-4-6"))
    opus = dict(payload(f, cost=None), model={"id": "claude-opus-4-6", "display_name": "Opus 4.6"})
    assert run(tmp_path, opus).stdout.startswith("compact due".join(["ctx 84% ! of 200k · ", " · +149k"]))
    large = dict(opus, model={"id": "claude-opus-4-6[1m]", "display_name": "Opus 4.6 (1M context)"})
    assert run(tmp_path, large).stdout.startswith("ctx 17% of 1000k · 798k to compact · +149k")
    said = dict(opus, context_window={"context_window_size": 400_000, "used_percentage": 42})
    assert run(tmp_path, said).stdout.startswith("ctx 42% of 400k · 198k to compact · +149k")
    with open(f, "a") as out:  # a prompt above 200,000: the 1M option was on
        out.write(
            lines([(20_000, 0), (169_000, 19_000), (230_000, 160_000)])
            .split("\n", 6)[6]
            .replace("sonnet-4-5", "opus-4-6")
        )
    assert run(tmp_path, opus).stdout.startswith("ctx 23% of 1000k · 737k to compact · +61k")
