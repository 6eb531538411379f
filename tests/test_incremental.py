"""Incremental directory runs: a rerun over a folder that grew profiles only new or changed files,
counts calls resumed into a new file once, and writes what a full run writes.

Fixtures: test_sessions' hand-written Claude Code project and Codex tree; the resumed session is
the compacted one's lines copied into a new file (what Claude Code does on --resume)."""

from __future__ import annotations

import json
import shutil

import pytest
from test_sessions import claude_project, codex_tree

from tokprof.frontends.cli import main

pq = pytest.importorskip("pyarrow.parquet")


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def tables(folder):
    return {name: pq.read_table(folder / f"{name}.parquet").to_pylist() for name in ("calls", "sessions")}


def test_rerun_over_a_grown_folder_equals_a_full_run(tmp_path, model_dir, capsys):
    logs = tmp_path / "logs"
    project = claude_project(logs / "claude")
    codex_tree(logs / "codex")
    inc, full = tmp_path / "inc", tmp_path / "full"
    inc.mkdir()
    full.mkdir()
    args = ["profile", str(logs), "--model", str(model_dir), "-f", "parquet", "--no-progress", "-j", "1"]
    assert run(args + ["-o", str(inc), "--incremental"], capsys)[0] == 0
    state = json.loads((inc / ".tokprof-state.json").read_text())
    assert all(entry["sha256"] and "request_ids" in entry for entry in state["files"].values())
    # the folder grows: a resumed session copies the compacted session's calls into a new file
    lines = (project / "sess-compacted.jsonl").read_text().splitlines()
    resumed = [json.dumps(dict(json.loads(line), sessionId="sess-resumed")) for line in lines]
    (project / "sess-resumed.jsonl").write_text("\n".join(resumed) + "\n")
    assert run(args + ["-o", str(inc), "--incremental"], capsys)[0] == 0
    assert run(args + ["-o", str(full)], capsys)[0] == 0
    assert tables(inc) == tables(full)
    ids = [c["request_id"] for c in tables(full)["calls"] if c["request_id"]]
    assert len(ids) == len(set(ids))  # resumed calls counted once


def test_only_new_or_changed_files_are_profiled(tmp_path, model_dir):
    import tokprof
    from tokprof.analyses.directory import SessionTask, local_map
    from tokprof.formats import scan_directory
    from tokprof.analyses.incremental import run_incremental
    from tokprof.runs.sessions import session_options

    logs = tmp_path / "logs"
    project = claude_project(logs / "claude")
    codex_tree(logs / "codex")
    options = session_options(tokprof.Options(model=str(model_dir), records=True))

    def tasks():
        return [SessionTask(kind, str(path)) for kind, path in scan_directory(str(logs)).sessions]

    first, state, stats = run_incremental(tasks(), options, local_map(1), str(logs), {})
    assert stats.profiled == stats.files == 3
    again, state, stats = run_incremental(tasks(), options, local_map(1), str(logs), state)
    assert stats.profiled == 0 and [r.to_dict() for r in again.sessions] == [r.to_dict() for r in first.sessions]
    shutil.copy(project / "sess-simple.jsonl", project / "sess-copy.jsonl")
    with (project / "sess-simple.jsonl").open("a") as f:
        f.write("\n")  # changed size, same calls
    grown, state, stats = run_incremental(tasks(), options, local_map(1), str(logs), state)
    assert stats.files == 4 and stats.profiled == 2  # the changed file and the new one
    other = session_options(tokprof.Options(model=str(model_dir), records=True, prices=["1/2"]))
    _, _, stats = run_incremental(tasks(), other, local_map(1), str(logs), state)
    assert stats.profiled == 4  # other prices: every file again


def test_another_tokprof_or_genai_prices_profiles_every_file_again(tmp_path, model_dir, monkeypatch):
    """A state file written by another version holds that version's counts and rates: not reused."""
    import tokprof
    from tokprof.analyses.directory import SessionTask, local_map
    from tokprof.formats import scan_directory
    from tokprof.analyses.incremental import run_incremental
    from tokprof.runs.sessions import session_options

    logs = tmp_path / "logs"
    claude_project(logs / "claude")
    options = session_options(tokprof.Options(model=str(model_dir), records=True))
    tasks = [SessionTask(kind, str(path)) for kind, path in scan_directory(str(logs)).sessions]
    _, state, stats = run_incremental(tasks, options, local_map(1), str(logs), {})
    monkeypatch.setattr("tokprof.analyses.incremental.__version__", "99.0")
    _, state, again = run_incremental(tasks, options, local_map(1), str(logs), state)
    assert again.profiled == stats.files
    monkeypatch.setattr("tokprof.pricing.cost.genai_version", lambda: "99.0")
    _, _, again = run_incremental(tasks, options, local_map(1), str(logs), state)
    assert again.profiled == stats.files


def test_incremental_needs_a_folder_output(tmp_path, model_dir, capsys):
    logs = tmp_path / "logs"
    claude_project(logs / "claude")
    code, _, err = run(["profile", str(logs), "--model", str(model_dir), "--incremental"], capsys)
    assert code == 2 and "--incremental" in err


def test_a_damaged_state_file_means_profiling_again(tmp_path, model_dir, capsys):
    logs = tmp_path / "logs"
    claude_project(logs / "claude")
    inc, full = tmp_path / "inc", tmp_path / "full"
    inc.mkdir()
    full.mkdir()
    args = ["profile", str(logs), "--model", str(model_dir), "-f", "parquet", "--no-progress", "-j", "1"]
    assert run(args + ["-o", str(inc), "--incremental"], capsys)[0] == 0
    state = inc / ".tokprof-state.json"
    doc = json.loads(state.read_text())
    for entry in doc["files"].values():
        entry["outcome"] = {"row": {"session": 3}}
        entry["request_ids"] = [1, 2]
    state.write_text(json.dumps(doc))
    assert run(args + ["-o", str(inc), "--incremental"], capsys)[0] == 0
    assert run(args + ["-o", str(full)], capsys)[0] == 0
    assert tables(inc) == tables(full)
    doc = json.loads(state.read_text())  # whole outcomes whose values have the wrong types
    for entry in doc["files"].values():
        entry["outcome"]["row"]["calls"] = "many"
        for record in entry["outcome"]["calls"]:
            record["total"] = "lots"
    state.write_text(json.dumps(doc))
    code, _, err = run(args + ["-o", str(inc), "--incremental"], capsys)
    assert code == 0, err  # before: a pyarrow traceback
    assert tables(inc) == tables(full)
    state.write_text("{not json")
    code, _, err = run(args + ["-o", str(inc), "--incremental"], capsys)
    assert code == 2 and "state file" in err
