"""tokprof sessions lists the agents of #48.1's second group in their folders, each by its own reader, and
says which costs rest on every call's usage, some calls' or none ("not recorded", never $0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import test_format_amp as amp
import test_format_codebuff as codebuff
import test_format_cursor as cursor
import test_format_continue as continue_dev
import test_format_goose as goose
import test_format_zed as zed
from tokprof.formats.discovery import local_session_files
from tokprof.frontends.cli import main


def machine(home: Path) -> None:
    def folder(path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    goose.write_store(folder(home / ".local/share/goose/sessions/sessions.db"))
    zed.write_store(folder(home / ".local/share/zed/threads/threads.db"))
    amp.write(home / ".local/share/amp/threads" / f"{amp.THREAD}.json", amp.thread())
    continue_dev.write(home / ".continue/sessions" / f"{continue_dev.SESSION}.json", continue_dev.session())


def test_sessions_say_what_usage_is_recorded(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    machine(home)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("COLUMNS", "160")
    for name in ("XDG_DATA_HOME", "AMP_DATA_DIR", "GOOSE_PATH_ROOT", "CONTINUE_GLOBAL_DIR"):
        monkeypatch.delenv(name, raising=False)
    assert main(["sessions", "-f", "json"]) == 0
    rows = {row["agent"]: row for row in json.loads(capsys.readouterr().out)["sessions"]}
    assert set(rows) == {"goose", "zed", "amp", "continue"}
    assert (rows["goose"]["calls"], rows["goose"]["calls_with_usage"], rows["goose"]["cost"]) == (2, 0, None)
    assert (rows["zed"]["calls"], rows["zed"]["calls_with_usage"]) == (3, 2) and rows["zed"]["cost"] > 0
    assert main(["sessions"]) == 0
    table = capsys.readouterr().out
    goose_line = next(line for line in table.splitlines() if " goose " in line)  # rows are numbered
    zed_line = next(line for line in table.splitlines() if " zed " in line)
    assert "not recorded" in goose_line and "$0" not in goose_line
    assert "(2/3)" in zed_line and "of the n calls of m whose usage the agent recorded" in table


def _store(write):
    def make(path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(path)

    return make


def _json_file(value):
    def make(path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))

    return make


@pytest.mark.parametrize(
    "agent, where, make",
    [
        ("goose", "Library/Application Support/goose/sessions/sessions.db", _store(goose.write_store)),
        ("goose", "AppData/Roaming/Block/goose/data/sessions/sessions.db", _store(goose.write_store)),
        ("zed", "Library/Application Support/Zed/threads/threads.db", _store(zed.write_store)),
        ("zed", "AppData/Local/Zed/threads/threads.db", _store(zed.write_store)),
        ("cursor", "Library/Application Support/Cursor/User/globalStorage/state.vscdb", _store(cursor.write_store)),
        ("cursor", "AppData/Roaming/Cursor/User/globalStorage/state.vscdb", _store(cursor.write_store)),
        ("amp", "AppData/Roaming/Code/User/globalStorage/sourcegraph.amp/threads3/T-9.json", _json_file(amp.thread())),
        (
            "amp",
            "Library/Application Support/Cursor/User/globalStorage/sourcegraph.amp/threads3/T-9.json",
            _json_file(amp.thread()),
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_macos_and_windows_folders(tmp_path, agent, where, make):
    """The folders each agent writes on macOS and Windows, below the user's home folder."""
    home = tmp_path / "home"
    make(home / where)
    assert [f.path for f in local_session_files(agent, home=home, environ={})] == [home / where]


def _large(value, where: str):
    """A document larger than discovery's 64 KB peek: a long first user message."""
    big = "word " * 30_000
    if where == "amp":
        value["messages"][0]["content"][0]["text"] = big
    elif where == "continue":
        value["history"][0]["message"]["content"][0]["text"] = big
    else:
        value[0]["content"] = big
    return value


@pytest.mark.parametrize(
    "agent, where, value",
    [
        ("amp", ".local/share/amp/threads/T-019b9d03-62e3-772f-9780-3e637f90eaec.json", amp.thread),
        ("continue", ".continue/sessions/s.json", continue_dev.session),
        ("codebuff", ".config/manicode/projects/app/chats/c/chat-messages.json", codebuff.chat),
    ],
    ids=["amp", "continue", "codebuff"],
)
def test_a_document_larger_than_the_peek_is_listed(tmp_path, agent, where, value):
    home = tmp_path / "home"
    path = home / where
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(_large(value(), agent), indent=1))
    assert path.stat().st_size > 64 * 1024
    assert [(f.format, f.path) for f in local_session_files(agent, home=home, environ={})] == [(agent, path)]
