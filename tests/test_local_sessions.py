"""The sessions of every agent on this machine (#27, item 7): ``tokprof sessions`` and ``tokprof
profile`` with no LOG, from each agent's folder below a temporary HOME (or the folder its
environment variable names). The session files are the hand-made fixtures of the format tests."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import test_format_claude_code as claude_log
import test_format_gemini_cli as gemini_log
import test_format_pi as pi_log
import test_format_qwen_code as qwen_log

from tokprof.runs.sessions import local_sessions
from tokprof.frontends.cli import main
from tokprof.formats import registry
from tokprof.formats.locations import Location

VARIABLES = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "PI_CODING_AGENT_DIR", "QWEN_RUNTIME_DIR")


def jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("COLUMNS", "200")  # every column shown, whatever the terminal running the tests
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    gemini = home / ".gemini/tmp/4aa47759/chats/session-2026-03-26T04-33-b36c9e17.json"
    gemini.parent.mkdir(parents=True)
    gemini.write_text(json.dumps(gemini_log.session(gemini_log.messages())))
    jsonl(home / ".pi/agent/sessions/--work-app--/2026-06-05_sess-1.jsonl", pi_log.v3_lines())
    jsonl(home / ".qwen/projects/work-app/chats/qs-1.jsonl", qwen_log.lines())
    jsonl(home / ".claude/projects/-work-app/s1.jsonl", claude_log.split_response())
    (home / ".claude/projects/-work-app/notes.jsonl").write_text('{"not": "a session"}\n')
    return home


def test_every_agents_sessions_newest_first(home):
    rows = local_sessions()
    assert {row.agent for row in rows} == {"gemini-cli", "pi", "qwen-code", "claude-code"}
    starts = [row.start for row in rows]
    assert all(start is not None for start in starts) and starts == sorted(starts, reverse=True)
    by_agent = {row.agent: row for row in rows}
    assert by_agent["gemini-cli"].project == "4aa47759" and by_agent["gemini-cli"].calls == 2
    assert by_agent["pi"].project == "/work/app" and by_agent["pi"].calls == 4  # the cwd the log records (#49.1)
    assert by_agent["qwen-code"].project == "/work/app"
    assert by_agent["gemini-cli"].cost is not None and by_agent["gemini-cli"].cost > 0
    assert not any(row.path.endswith("notes.jsonl") for row in rows)  # recognised by content


def test_agent_filter_and_json(home, capsys):
    assert main(["sessions", "--agent", "pi", "-f", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)["sessions"]
    assert [row["agent"] for row in listed] == ["pi"] and listed[0]["calls"] == 4
    assert main(["profile", "--agent", "gemini-cli", "-f", "json"]) == 0  # profile with no LOG lists them too
    assert [row["format"] for row in json.loads(capsys.readouterr().out)["sessions"]] == ["gemini-cli"]


def test_table_and_unknown_agent(home, capsys):
    assert main(["sessions"]) == 0
    out = capsys.readouterr().out
    assert "sessions on this machine (4 sessions, newest first)" in out and "gemini-cli" in out
    assert main(["sessions", "--agent", "nobody"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown agent 'nobody'" in err


@pytest.mark.parametrize("columns", ["40", "60", "80"])
def test_a_narrow_terminal_numbers_the_rows_and_prints_each_path_whole(home, capsys, monkeypatch, columns):
    """The rows numbered, and their files listed under their folders (``~`` for the home folder), every
    line within the width (#46 item 11), a path folded rather than cut: the next command needs it."""
    monkeypatch.setenv("COLUMNS", columns)
    assert main(["sessions"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= int(columns)
    text = "".join(line.strip() for line in lines)  # a folded path joined again
    for number, row in enumerate(local_sessions(), 1):
        folder, name = os.path.split(row.path)
        shown = "~" + folder[len(str(home)) :] + "/"
        assert shown in text and f"{number}  {name}" in text, (shown, name)


def test_a_wide_terminal_shows_each_file_in_the_table(home, capsys):
    assert main(["sessions"]) == 0  # COLUMNS=200
    out = capsys.readouterr().out
    assert "~/.claude/projects/-work-app/s1.jsonl" in out and str(home) not in out and "left out" not in out


def test_environment_variables_move_the_folders(home, tmp_path, monkeypatch):
    config = tmp_path / "claude-config"
    jsonl(config / "projects/-elsewhere/s2.jsonl", claude_log.split_response())
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    pi_dir = tmp_path / "pi-agent"
    jsonl(pi_dir / "sessions/--x--/s.jsonl", pi_log.old_lines())
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(pi_dir))
    rows = local_sessions()
    assert [row.project for row in rows if row.agent == "claude-code"] == ["-elsewhere"]
    assert [Path(row.path).parent.name for row in rows if row.agent == "pi"] == ["--x--"]
    pi_dir = tmp_path / "pi, agent"  # a comma in another agent's folder is part of its name
    jsonl(pi_dir / "sessions/--y--/s.jsonl", pi_log.old_lines())
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(pi_dir))
    assert [Path(row.path).parent.name for row in local_sessions() if row.agent == "pi"] == ["--y--"]


def test_an_unreadable_session_is_a_row_with_its_error(home):
    bad = gemini_log.session(gemini_log.messages())
    bad["messages"][1]["tokens"]["input"] = "many"
    (home / ".gemini/tmp/4aa47759/chats/session-2026-03-27T00-00-bad.json").write_text(json.dumps(bad))
    rows = [row for row in local_sessions("gemini-cli") if row.error]
    assert len(rows) == 1 and rows[0].calls is None and "messages[1].tokens.input" in rows[0].error


def test_other_readers_register_their_location(home):
    try:
        registry.register(Location("other-agent", ".other/sessions", ("*.jsonl",), project_depth=0))
        jsonl(home / ".other/sessions/a.jsonl", pi_log.v3_lines())
        assert [row.agent for row in local_sessions("other-agent")] == ["other-agent"]
    finally:
        registry._REGISTERED.clear()


def test_profile_with_no_log_on_an_empty_machine(tmp_path, monkeypatch, capsys):
    """``tokprof profile`` with no LOG lists the machine's sessions (it was a usage error before #27)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "200")
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert main(["profile"]) == 0
    assert "(0 sessions, newest first)" in capsys.readouterr().out
    assert main(["profile", "-f", "csv"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_names_from_the_disk_are_escaped_in_the_table(home, capsys):
    jsonl(home / ".pi/agent/sessions/--evil\x1b[31m--/s.jsonl", pi_log.v3_lines())
    assert main(["sessions", "--agent", "pi"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "evil" in out
