"""Every agent store tokprof reads as SQLite (#48.1: Goose, Hermes Agent, Zed, Cursor, Kilo CLI), the same
hostile-input rules: a store the running agent holds locked is read from a copy and never changed; a
damaged or truncated one, or a file of its name that is no database, is one line naming it, exit 2,
nothing written."""

from __future__ import annotations

import json
import sqlite3

import pytest

import test_format_cursor as cursor
import test_format_goose as goose
import test_format_hermes as hermes
import test_format_opencode as opencode
import test_format_zed as zed
from tokprof.formats import read_trace
from tokprof.frontends.cli import main

STORES = [
    ("goose", "sessions.db", goose.write_store),
    ("hermes", "state.db", hermes.write_store),
    ("zed", "threads.db", zed.write_store),
    ("cursor", "state.vscdb", cursor.write_store),
    ("kilo-cli", "kilo.db", opencode.write_db),
]


@pytest.mark.parametrize("format, name, write", STORES, ids=[s[0] for s in STORES])
def test_a_locked_store_is_read_from_a_copy_and_never_changed(tmp_path, format, name, write):
    path = tmp_path / name
    write(path)
    agent = sqlite3.connect(path, isolation_level=None)
    agent.execute("BEGIN EXCLUSIVE")  # the agent is writing
    try:
        before = path.read_bytes()
        trace = read_trace(str(path))
        assert trace.format.split("/")[0] == format and trace.calls
        assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == sorted(
            [name, f"{name}-journal"] if (tmp_path / f"{name}-journal").exists() else [name]
        )
    finally:
        agent.execute("ROLLBACK")
        agent.close()


@pytest.mark.parametrize("format, name, write", STORES, ids=[s[0] for s in STORES])
def test_a_truncated_store_is_one_line(tmp_path, capsys, format, name, write):
    path = tmp_path / name
    write(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    out = tmp_path / "out.json"
    assert main(["profile", str(path), "-i", format, "-f", "json", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("tokprof: error: ") and str(path) in err
    assert not out.exists()


@pytest.mark.parametrize("format, name, write", STORES, ids=[s[0] for s in STORES])
def test_a_file_of_its_name_that_is_no_database_is_one_line(tmp_path, capsys, format, name, write):
    path = tmp_path / name
    path.write_text("not a database\n")
    assert main(["profile", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err


def test_a_new_store_whose_tables_are_only_in_its_log_is_recognised(tmp_path):
    """The agent's first run: its tables created in WAL mode and not yet checkpointed into the file."""
    source = tmp_path / "made.db"
    goose.write_store(source)
    dump = "\n".join(sqlite3.connect(source).iterdump())
    path = tmp_path / "sessions.db"
    agent = sqlite3.connect(path, isolation_level=None)
    agent.execute("PRAGMA journal_mode=WAL")
    agent.execute("PRAGMA wal_autocheckpoint=0")
    agent.executescript(dump)  # every table and row still only in sessions.db-wal
    try:
        snapshot = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
        assert snapshot.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)
        snapshot.close()
        assert read_trace(str(path)).format == "goose"
    finally:
        agent.close()


@pytest.mark.parametrize("format, name, write", STORES, ids=[s[0] for s in STORES])
def test_a_closed_store_in_wal_mode_is_read_without_a_file_made_beside_it(tmp_path, format, name, write):
    path = tmp_path / name
    write(path)
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")  # the agent's setting, kept in the file; its log gone once closed
    db.close()
    before = path.read_bytes()
    assert read_trace(str(path)).calls
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == [name]  # no -wal, no -shm


def test_a_store_in_the_middle_of_a_write_is_read_as_committed(tmp_path):
    """A hot rollback journal beside the store (the agent is writing): read from a copy, rolled back there."""
    path = tmp_path / "sessions.db"
    goose.write_store(path)
    agent = sqlite3.connect(path, isolation_level=None)
    agent.execute("PRAGMA cache_size=1")  # spill the change to the file before the commit
    agent.execute("BEGIN IMMEDIATE")
    change = json.dumps([{"type": "text", "text": "x" * 40_000}])
    agent.execute("UPDATE messages SET content_json = ?", (change,))
    try:
        assert (tmp_path / "sessions.db-journal").exists()
        trace = read_trace(str(path))
        assert trace.calls[0].messages[0]["content"] == "List the files."  # as committed, not the write under way
        assert (tmp_path / "sessions.db-journal").exists()  # the agent's journal untouched
    finally:
        agent.execute("ROLLBACK")
        agent.close()
