"""Per-call and per-session tables (Parquet, CSV), rollups by project, branch, ... and a time range.

The fixtures are the hand-written sessions of test_sessions (a Claude Code project, a Codex tree),
with ``gitBranch`` added to the Claude Code lines of one session here: the Codex one records
``cwd`` "/w" and no git information, the other Claude Code session no branch ("unknown")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_format_claude_code as cc
from conftest import ROOT
from test_sessions import claude_project, codex_tree

from tokprof.frontends.cli import main

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")
CORPUS = ROOT.parent / "shared" / "corpus"


def folder(root: Path) -> Path:
    project = claude_project(root / "claude")
    lines = [json.loads(line) for line in (project / "sess-simple.jsonl").read_text().splitlines()]
    cc.write_jsonl(project / "sess-simple.jsonl", [dict(row, gitBranch="feat/x", cwd="/home/me/app") for row in lines])
    codex_tree(root / "codex")
    return root


def q(sql: str) -> list[tuple]:
    """The rows of a DuckDB query."""
    con = duckdb.connect()
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def one(sql: str):
    return q(sql)[0][0]


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_parquet_tables_queried_with_duckdb(tmp_path, model_dir, capsys):
    logs, out = folder(tmp_path / "logs"), tmp_path / "out"
    out.mkdir()
    code, _, err = run(
        [
            "profile",
            str(logs),
            "--model",
            str(model_dir),
            "-f",
            "parquet",
            "-o",
            str(out),
            "--by",
            "branch",
            "--machine",
            "ci-1",
            "--no-progress",
        ],
        capsys,
    )
    assert code == 0, err
    code, text, _ = run(["profile", str(logs), "--model", str(model_dir), "-f", "json", "--no-progress"], capsys)
    billed = json.loads(text)["totals"]["billed_input"]
    calls, sessions = str(out / "calls.parquet"), str(out / "sessions.parquet")
    assert one(f"select sum(total) from '{calls}'") == billed
    assert one(f"select sum(billed_input) from '{sessions}'") == billed
    buckets = "coalesce(system, 0) + coalesce(tool_definitions, 0) + tool_results + conversation + unrecorded"
    assert one(f"select count(*) from '{calls}' where {buckets} != total") == 0
    # a Claude Code log records neither the system prompt nor the tools: null, never 0
    assert one(f"select count(*) from '{calls}' where agent = 'claude-code' and system is not null") == 0
    assert one(f"select count(*) from '{calls}' where agent = 'claude-code' and tool_definitions is not null") == 0
    assert one(f"select count(*) from '{calls}' where agent = 'claude-code'") > 0
    by_branch = dict(q(f"select coalesce(git_branch, 'unknown'), sum(total) from '{calls}' group by 1"))
    assert set(by_branch) == {"feat/x", "unknown"}
    rollup = dict(q(f"select branch, billed_input from '{out / 'rollup_branch.parquet'}'"))
    assert rollup == by_branch
    # null for what a log does not record, never 0; the machine given on every row
    assert one(f"select count(*) from '{calls}' where git_commit is not null") == 0
    assert q(f"select distinct machine from '{calls}'") == [("ci-1",)]
    assert q(f"select distinct \"user\" from '{calls}'") == [(None,)]
    columns = [c[0] for c in q(f"describe select * from '{calls}'")]
    assert "text" not in columns  # no prompt or tool text unless --with-text
    import pyarrow.parquet as pq

    assert pq.read_schema(calls).metadata[b"tokprof.schema_version"] == b"2"


def test_with_text_and_csv_folder(tmp_path, model_dir, capsys):
    logs, out = folder(tmp_path / "logs"), tmp_path / "out"
    out.mkdir()
    code, _, err = run(
        ["profile", str(logs), "--model", str(model_dir), "-f", "csv", "-o", f"{out}/", "--with-text", "--no-progress"],
        capsys,
    )
    assert code == 0, err
    import csv

    rows = list(csv.DictReader((out / "calls.csv").open()))
    assert rows and all(json.loads(r["text"])["messages"] for r in rows)
    assert {r["project"] for r in rows} == {"/home/me/app", "/w", ""}  # "" is null: not recorded
    sessions = list(csv.DictReader((out / "sessions.csv").open()))
    assert sum(int(r["total"]) for r in rows) == sum(int(r["billed_input"]) for r in sessions)


def test_rollups_in_table_and_json_with_unknown(tmp_path, model_dir, capsys):
    logs = folder(tmp_path / "logs")
    code, text, err = run(
        [
            "profile",
            str(logs),
            "--model",
            str(model_dir),
            "-f",
            "json",
            "--by",
            "branch",
            "--by",
            "agent,project",
            "--no-progress",
        ],
        capsys,
    )
    assert code == 0, err
    doc = json.loads(text)
    branch, pair = doc["rollups"]
    assert [r["branch"] for r in branch["rows"]] == ["feat/x", "unknown"]  # unknown last, never dropped
    assert sum(r["billed_input"] for r in branch["rows"]) == doc["totals"]["billed_input"]
    writes = [s["cache_write_reported"] for s in doc["sessions"] if s.get("cache_write_reported") is not None]
    assert writes and sum(r["reported_cache_write"] or 0 for r in branch["rows"]) == sum(writes)  # teams pay for them
    assert {(r["agent"], r["project"]) for r in pair["rows"]} == {
        ("claude-code", "/home/me/app"),
        ("claude-code", "unknown"),
        ("codex", "/w"),
    }
    code, table, _ = run(["profile", str(logs), "--model", str(model_dir), "--by", "branch", "--no-progress"], capsys)
    assert code == 0 and "By branch:" in table and "unknown" in table


def test_since_until_by_call_time(tmp_path, model_dir, capsys):
    logs = folder(tmp_path / "logs")
    code, text, _ = run(
        ["profile", str(logs), "--model", str(model_dir), "-f", "json", "--by", "day", "--no-progress"], capsys
    )
    days = [r["day"] for r in json.loads(text)["rollups"][0]["rows"]]
    first = days[0]
    code, text, err = run(
        [
            "profile",
            str(logs),
            "--model",
            str(model_dir),
            "-f",
            "json",
            "--by",
            "day",
            "--since",
            first,
            "--until",
            first,
            "--no-progress",
        ],
        capsys,
    )
    assert code == 0, err
    assert [r["day"] for r in json.loads(text)["rollups"][0]["rows"]] == [first]
    code, _, err = run(["profile", str(logs), "--model", str(model_dir), "--since", "yesterday"], capsys)
    assert code == 2 and "--since yesterday" in err


def test_team_options_need_a_directory(tmp_path, model_dir, capsys):
    logs = folder(tmp_path / "logs")
    one = next((logs / "claude").rglob("sess-simple.jsonl"))
    code, _, err = run(["profile", str(one), "--model", str(model_dir), "-f", "parquet", "-o", str(tmp_path)], capsys)
    assert code == 2 and "for a directory" in err
    code, _, err = run(["profile", str(logs), "--model", str(model_dir), "-f", "parquet"], capsys)
    assert code == 2 and "-o" in err
    code, _, err = run(["profile", str(logs), "--model", str(model_dir), "--by", "colour"], capsys)
    assert code == 2 and "--by colour" in err


#: Corpus sessions that record their branch (Claude Code, Codex) and one that records none (SWE-agent).
BRANCHED = [
    "claude_code_medium_full-session-four.jsonl",
    "codex_rollout-2025-09-25T09-49-46-01998190-fba6-7f40-9309-dc4e48c5844a.jsonl",
    "codex_0.58_rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
    "swe_agent_v0_gpt4_pydicom__pydicom-1458.traj",
]


def test_corpus_branches_and_projects(tmp_path, capsys):
    import tokprof
    from tokprof.analyses.rollups import rollup

    if not all((CORPUS / name).is_file() for name in BRANCHED):
        pytest.skip("needs ../shared/corpus")
    for name in BRANCHED:  # these sessions in a folder of their own (the whole corpus grows with every reader)
        (tmp_path / name).symlink_to(CORPUS / name)
    report = tokprof.profile(tmp_path, jobs=1, records=True)
    assert len(report.sessions) == len(BRANCHED)
    assert sum(c.total for c in report.calls) == report.totals().billed_input
    recorded = [c for c in report.calls if c.agent.split("/")[0] in ("claude-code", "codex")]
    branches = {row.key[0] for row in rollup(recorded, ("branch",)).rows}
    assert "main" in branches and "unknown" not in branches  # every Claude Code and Codex session records its branch
    others = {row.key[0] for row in rollup([c for c in report.calls if c not in recorded], ("branch",)).rows}
    assert others == {"unknown"}  # SWE-agent, Gemini CLI, pi, ... record none: unknown, never dropped
    codex = [c for c in report.calls if c.agent == "codex"]
    assert codex and all(c.git_commit and c.project for c in codex)


def test_rollups_json_is_valid_against_the_sessions_schema(tmp_path, model_dir, capsys):
    pytest.importorskip("jsonschema")
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource
    from test_schema import _schema_files, assert_valid

    logs = folder(tmp_path / "logs")
    code, text, _ = run(
        [
            "profile",
            str(logs),
            "--model",
            str(model_dir),
            "-f",
            "json",
            "--by",
            "branch,day",
            "--by",
            "user",
            "--no-progress",
        ],
        capsys,
    )
    assert code == 0
    schemas = _schema_files()
    registry = Registry().with_resources((name, Resource.from_contents(doc)) for name, doc in schemas.items())
    validator = Draft202012Validator(schemas["sessions.schema.json"], registry=registry)
    assert_valid({"sessions": validator}, "sessions", json.loads(text))
    user = json.loads(text)["rollups"][1]["rows"]
    assert [r["user"] for r in user] == ["unknown"]  # no --user: unknown, never dropped


def test_parquet_without_pyarrow_is_a_hint_and_no_file(tmp_path, model_dir, capsys, monkeypatch):
    import sys

    logs, out = folder(tmp_path / "logs"), tmp_path / "out"
    out.mkdir()
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    code, _, err = run(
        ["profile", str(logs), "--model", str(model_dir), "-f", "parquet", "-o", str(out), "--no-progress"], capsys
    )
    assert code == 2 and "pip install 'tokprof[parquet]'" in err
    assert list(out.iterdir()) == []


def test_a_branch_that_is_not_a_string_names_the_line(tmp_path, model_dir, capsys):
    logs = folder(tmp_path / "logs")
    path = next(logs.rglob("sess-simple.jsonl"))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    cc.write_jsonl(path, [dict(row, gitBranch=7) for row in rows])
    code, _, err = run(["profile", str(path), "--model", str(model_dir), "--no-progress"], capsys)
    assert code == 2 and "gitBranch" in err and "line 2: gitBranch" in err and "Traceback" not in err


def test_a_tables_folder_that_does_not_exist_is_made(tmp_path, model_dir, capsys):
    """docs/tables.md's ``-o out/``: the folder is made, its parents too (#46 item 2)."""
    logs, out = folder(tmp_path / "logs"), tmp_path / "new" / "out"
    args = ["profile", str(logs), "--model", str(model_dir), "-f", "csv", "-o", f"{out}/", "--no-progress"]
    code, _, err = run(args, capsys)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["calls.csv", "sessions.csv"]
