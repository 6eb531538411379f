"""Kilo CLI's kilo.db (#48.1): OpenCode's tables under Kilo's name and folder (ccusage's ``adapter/kilo``
reads ``message.data`` of ``~/.local/share/kilo/kilo.db``). The store is the OpenCode test's, written by hand."""

from __future__ import annotations

import sqlite3

import tokprof
from test_format_opencode import check_calls, independent_sums, write_db
from tokprof.formats import read_trace
from tokprof.formats.discovery import local_session_files
from tokprof.frontends.cli import main


def test_store_read_as_opencode_under_its_own_name(tmp_path):
    path = tmp_path / "kilo.db"
    write_db(path)
    before = path.read_bytes()
    trace = read_trace(str(path))
    assert trace.format == "kilo-cli/sqlite" and path.read_bytes() == before
    check_calls(trace)
    profile = tokprof.profile(trace, model="qwen2.5")
    prompt, output = independent_sums()  # the store's own step-finish tokens
    assert profile.summary().reported.billed_input == prompt and profile.summary().reported.output == output
    for row in profile.calls:
        assert row.total == sum(row.buckets.values()) and min(row.buckets.values()) >= 0


def test_a_locked_store_is_read_from_a_copy(tmp_path):
    path = tmp_path / "kilo.db"
    write_db(path)
    agent = sqlite3.connect(path, isolation_level=None)
    agent.execute("BEGIN EXCLUSIVE")
    try:
        assert len(read_trace(str(path)).calls) == 2
    finally:
        agent.execute("ROLLBACK")
        agent.close()


def test_found_in_its_folders(tmp_path):
    home = tmp_path / "home"
    store = home / ".local/share/kilo/kilo.db"
    store.parent.mkdir(parents=True)
    write_db(store)
    opencode = home / ".local/share/opencode/opencode.db"
    opencode.parent.mkdir(parents=True)
    write_db(opencode)
    found = {(f.agent, f.format, f.path) for f in local_session_files(home=home, environ={})}
    assert {("kilo-cli", "kilo-cli", store), ("opencode", "opencode", opencode)} <= found
    moved = tmp_path / "k" / "kilo.db"
    moved.parent.mkdir()
    write_db(moved)
    assert moved in [
        f.path for f in local_session_files("kilo-cli", home=home, environ={"KILO_DATA_DIR": str(moved.parent)})
    ]


def test_a_damaged_store_is_one_line(tmp_path, capsys):
    path = tmp_path / "kilo.db"
    write_db(path)
    db = sqlite3.connect(path)
    db.execute("UPDATE part SET data = json_set(data, '$.tokens.input', -1) WHERE data LIKE '%step-finish%'")
    db.commit()
    db.close()
    out = tmp_path / "out.json"
    assert main(["profile", str(path), "-f", "json", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and "tokens.input" in err and not out.exists()
