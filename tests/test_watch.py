"""tokprof watch: a session followed while a writer appends to it (hand-made Claude Code lines)."""

from __future__ import annotations

import json
import os
import re
import select
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tokprof.base.follow import Follower
from tokprof.live import LiveSession

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus" / "claude_code_medium_full-session-four.jsonl"


def turn(i: int, prompt: int, read: int) -> list[dict]:
    """One hand-made Claude Code exchange: a user line, an assistant tool call, its result."""
    base = {"sessionId": "s-1", "isSidechain": False, "timestamp": f"2025-10-01T10:{i:02d}:00Z"}
    user = {
        **base,
        "type": "user",
        "uuid": f"u{i}",
        "parentUuid": f"r{i - 1}" if i else None,
        "message": {"role": "user", "content": f"step {i}: look at the logs"},
    }
    assistant = {
        **base,
        "type": "assistant",
        "uuid": f"a{i}",
        "parentUuid": f"u{i}",
        "requestId": f"req{i}",
        "message": {
            "id": f"msg{i}",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "stop_reason": "tool_use",
            "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"n": i}}],
            "usage": {
                "input_tokens": 10,
                "cache_creation_input_tokens": prompt - read - 10,
                "cache_read_input_tokens": read,
                "output_tokens": 50,
            },
        },
    }
    result = {
        **base,
        "type": "user",
        "uuid": f"r{i}",
        "parentUuid": f"a{i}",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "log line " * (40 * (i + 1))}],
        },
    }
    return [user, assistant, result]


def lines(turns: list[tuple[int, int]]) -> str:
    return "".join(json.dumps(r) + "\n" for i, (p, r) in enumerate(turns) for r in turn(i, p, r))


def test_follower_partial_truncated_replaced(tmp_path):
    f = tmp_path / "s.jsonl"
    f.write_bytes(b'{"a": 1}\n{"b"')
    follower = Follower(str(f))
    assert [n for n, _ in follower.read().lines] == [1]
    with open(f, "ab") as out:
        out.write(b": 2}\n")
    got = follower.read()
    assert got.lines == [(2, b'{"b": 2}')] and not got.restarted
    f.write_bytes(b'{"c": 3}\n')  # truncated: shorter than what was read
    got = follower.read()
    assert got.restarted and got.lines == [(1, b'{"c": 3}')]
    other = tmp_path / "t.jsonl"
    other.write_bytes(b'{"d": 4}\n{"e": 5}\n')
    os.replace(other, f)  # replaced: another file at the path
    got = follower.read()
    assert got.restarted and [n for n, _ in got.lines] == [1, 2]
    f.unlink()
    assert follower.read().missing


def test_live_session_counts_only_new_calls(tmp_path):
    f = tmp_path / "s.jsonl"
    text = lines([(20_000, 0), (150_000, 19_000), (165_000, 20_000)])
    f.write_text(text[: len(text) // 2])  # a partial last line, too
    live = LiveSession(str(f), count=False)
    first = live.update()
    f.write_text(text)
    second = live.update()
    assert [c.call for c in first + second] == [0, 1, 2]
    calls = first + second
    last = calls[-1]
    assert last.window == 200_000 and last.fill == pytest.approx(0.825)
    assert last.past == (0.7, 0.8) and last.crossed == (0.8,)
    assert calls[1].crossed == (0.7,) and calls[1].cache_broke is False
    assert last.cache_broke is True  # read 20,000 of the previous 150,000
    assert last.cost is not None and last.cost > 0
    assert last.cache_read_share == pytest.approx(39_000 / 335_000, abs=1e-6)
    assert live.update() == []


def test_live_session_buckets_add_up_to_the_report(tmp_path):
    f = tmp_path / "s.jsonl"
    f.write_text(lines([(20_000, 0), (30_000, 19_000)]))
    calls = LiveSession(str(f)).update()
    assert all(sum(c.buckets.values()) == c.prompt for c in calls)
    assert calls[1].largest_result["tool"] == "Read" and calls[1].largest_result["tokens"] > 0
    assert calls[1].estimate and calls[1].added == 10_000


def test_bad_lines_are_skipped(tmp_path):
    f = tmp_path / "s.jsonl"
    f.write_text("not json\n" + json.dumps({"type": "user", "uuid": "x", "message": 3}) + "\n" + lines([(2000, 0)]))
    live = LiveSession(str(f), count=False)
    assert len(live.update()) == 1 and len(live.problems) == 2


def _env(tmp_path):
    env = dict(
        os.environ,
        HOME=str(tmp_path / "home"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        COLUMNS="160",
        PYTHONPATH=str(ROOT),
        TZ="UTC",
        LC_ALL="C.UTF-8",
    )
    return env


def _read_until(stream, wanted, timeout=60.0) -> str:
    got = ""
    end = time.monotonic() + timeout
    while time.monotonic() < end and wanted not in got:
        ready, _, _ = select.select([stream], [], [], 0.5)
        if ready:
            chunk = os.read(stream.fileno() if hasattr(stream, "fileno") else stream, 65536)
            if not chunk:
                break
            got += chunk.decode("utf-8", "replace")
    return got


def test_watch_json_and_on_threshold(tmp_path):
    f = tmp_path / "proj" / "s.jsonl"
    f.parent.mkdir()
    f.write_text(lines([(20_000, 0)]))
    marker = tmp_path / "crossed.txt"
    hook = f"{shlex.quote(sys.executable)} -c \"import os; open({str(marker)!r}, 'w').write(os.environ['TOKPROF_THRESHOLD'] + ' ' + os.environ['TOKPROF_PROMPT'])\""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tokprof",
            "watch",
            str(tmp_path / "proj"),
            "--json",
            "--interval",
            "0.1",
            "--on-threshold",
            hook,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(tmp_path),
        cwd=tmp_path,
    )
    try:
        time.sleep(3)
        with open(f, "a") as out:
            out.write(lines([(20_000, 0), (150_000, 19_000)]).split("\n", 3)[3])
        got = _read_until(proc.stdout, "\n")
        record = json.loads(got.splitlines()[0])
        assert record["call"] == 1 and record["crossed"] == [0.7] and record["prompt"] == 150_000
        end = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < end:
            time.sleep(0.1)
        assert marker.read_text() == "0.7 150000"
    finally:
        proc.kill()
        proc.wait(10)
    assert b"Traceback" not in proc.stderr.read()


def test_watch_in_a_terminal(tmp_path):
    import pty

    f = tmp_path / "proj" / "s.jsonl"
    f.parent.mkdir()
    f.write_text(lines([(20_000, 0)]))
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokprof", "watch", str(f.parent), "--interval", "0.1"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=_env(tmp_path),
        cwd=tmp_path,
    )
    os.close(slave)
    try:
        screen = _read_until(master, "10%")  # the session as it is: 20,000 of 200,000
        assert "s.jsonl" in screen
        with open(f, "a") as out:
            out.write(lines([(20_000, 0), (165_000, 5_000)]).split("\n", 3)[3])
        screen = _read_until(master, "broke")
        screen += _read_until(master, "differs.", timeout=20)  # the table's note, after it
        words = " ".join(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", " ", screen).split())
        assert all(part in words for part in ("82% of 200k", "past 80%", "2.0k to compact", " broke "))
        # (#46 items 6, 7) Claude Code compacts at 167,000 of 200,000: 2.0k to go; each bucket by its own
        # name (tool results are not tool definitions), an estimate marked, and why it is one said
        assert "results ~" in words and "unrecorded ~" in words and "tool" not in words.replace("tokprof", "")
        assert "~ marks an estimate" in words and "tokprof profile takes each call as the one before" in words
        if CORPUS.exists():  # real lines appended to a session file
            g = tmp_path / "proj" / "real.jsonl"
            g.write_text("")
            with open(CORPUS) as src, open(g, "a") as out:
                out.writelines(src)
        assert "Traceback" not in screen
    finally:
        proc.kill()
        proc.wait(10)
        os.close(master)


def test_a_session_that_moves_and_a_new_one(tmp_path):
    from tokprof.frontends.watch import Watcher

    folder = tmp_path / "proj"
    folder.mkdir()
    f = folder / "a.jsonl"
    f.write_text(lines([(2000, 0)]))
    watcher = Watcher([str(folder)], (0.7, 0.8))
    watcher.scan()
    assert [c.call for c in watcher.poll()] == [0]
    moved = folder / "b.jsonl"
    os.replace(f, moved)
    with open(moved, "a") as out:
        out.write(lines([(2000, 0), (3000, 1900)]).split("\n", 3)[3])
    watcher.scan()
    assert [(c.call, Path(c.path).name) for c in watcher.poll()] == [(1, "b.jsonl")]  # its state kept
    (folder / "c.jsonl").write_text(lines([(5000, 0)]))
    watcher.scan()
    assert [(c.call, Path(c.path).name) for c in watcher.poll()] == [(0, "c.jsonl")]
    assert len(watcher.sessions) == 2


def test_bad_thresholds_are_one_line(tmp_path, capsys):
    from tokprof.frontends.cli import main

    assert main(["watch", str(tmp_path), "--thresholds", "x"]) == 2
    err = capsys.readouterr().err
    assert "--thresholds" in err and "Traceback" not in err


@pytest.mark.parametrize("json_lines", [False, True])
def test_watch_a_path_that_does_not_exist_is_one_line(tmp_path, json_lines, capsys):
    """(#46 item 3) not a silent wait without end: one line naming the path, exit 2."""
    from tokprof.frontends.cli import main

    missing = tmp_path / "no" / "such" / "path"
    assert main(["watch", str(missing), *(["--json"] if json_lines else [])]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"tokprof: error: {missing}: no such file or folder\n"


def test_watch_says_what_it_waits_for(tmp_path):
    """A folder with no session yet: --json says so on standard error; a terminal shows it under the
    table until a session is written (a real pseudo-terminal), then the session."""
    import pty

    folder = tmp_path / "proj"
    folder.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokprof", "watch", str(folder), "--json", "--interval", "0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(tmp_path),
    )
    try:
        said = _read_until(proc.stderr, "\n")
    finally:
        proc.kill()
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()
    assert said == f"tokprof: waiting for a session to be written: a *.jsonl file under {folder}\n"
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokprof", "watch", "--interval", "0.1"],  # the agents' own folders, in HOME
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=_env(tmp_path),
    )
    os.close(slave)
    try:
        screen = _read_until(master, "there yet")
        deadline = time.monotonic() + 60
        while "there yet" not in screen.rsplit("~/.codex", 1)[-1] and time.monotonic() < deadline:
            screen += _read_until(master, "there yet", timeout=5)  # the whole caption: both folders
        words = " ".join(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", " ", screen).split())  # as wrapped at any width
        assert "waiting for a session to be written: a *.jsonl file under ~/.claude/projects (not there" in words
        projects = tmp_path / "home" / ".claude" / "projects" / "p"
        projects.mkdir(parents=True)
        (projects / "s.jsonl").write_text(lines([(20_000, 0)]))
        screen = _read_until(master, "10%")  # found at the next search of the folders
        assert "s.jsonl" in screen and "Traceback" not in screen
    finally:
        proc.kill()
        proc.wait(10)
        os.close(master)


def test_the_figures_of_a_claude_code_call_against_the_window_it_runs_with(tmp_path):
    """(#46 item 6) Claude Opus 4.6 has a 1M window in the price data; Claude Code runs it at 200,000
    and compacts at 167,000 (the window less 20,000 for the summary and a buffer of 13,000)."""
    f = tmp_path / "s.jsonl"
    f.write_text(lines([(20_000, 0), (169_000, 19_000)]).replace("claude-sonnet-4-5", "claude-opus-4-6"))
    live = LiveSession(str(f), count=False)
    last = live.update()[-1]
    assert (last.window, last.window_source, last.fill) == (200_000, "Claude Code", 0.845)
    assert (last.compacts_at, last.to_compact, last.past) == (167_000, -2_000, (0.7, 0.8))
    live.agent_says(1_000_000, "claude-opus-4-6[1m]")  # what Claude Code's statusLine input says
    assert (live.last.window, live.last.window_source, live.last.to_compact) == (1_000_000, "the agent", 798_000)
    assert live.last.past == () and json.loads(live.last.to_json())["compacts_at"] == 967_000
