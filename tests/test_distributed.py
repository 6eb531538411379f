"""Profiling session files as Dask tasks (the dask extra) gives the report of the directory mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOT
from test_sessions import claude_project, codex_tree

pytest.importorskip("dask")

CORPUS = ROOT.parent / "shared" / "corpus"


def test_dask_local_gives_the_directory_report(tmp_path, model_dir):
    import tokprof
    from tokprof.frontends.distributed import profile_paths

    project = claude_project(tmp_path / "claude")
    codex_tree(tmp_path / "codex")
    expected = tokprof.profile(tmp_path, model=str(model_dir), jobs=1)
    paths = [tmp_path / row.path for row in expected.sessions]
    for scheduler in ("threads", "processes"):
        got = profile_paths(paths, str(model_dir), scheduler=scheduler, root=str(tmp_path))
        assert json.dumps(got.to_dict()) == json.dumps(
            dict(expected.to_dict(), skipped=[])
        )  # the directory mode also lists what is not a session
    assert project.exists()


def test_reports_combine(tmp_path, model_dir):
    import tokprof
    from tokprof.analyses.sessions import SessionsReport

    claude_project(tmp_path / "a")
    codex_tree(tmp_path / "b")
    a = tokprof.profile(tmp_path / "a", model=str(model_dir))
    b = tokprof.profile(tmp_path / "b", model=str(model_dir))
    both = SessionsReport.combine([a, b], "both")
    assert both.totals().calls == a.totals().calls + b.totals().calls
    assert both.totals().billed_input == a.totals().billed_input + b.totals().billed_input
    assert [r.session for r in both.sessions] == [r.session for r in a.sessions + b.sessions]


#: Corpus sessions of three agents, each a few hundred kilobytes (the whole corpus grows with every reader).
MIXED = [
    "claude_code_medium_full-session-four.jsonl",
    "codex_rollout-2025-09-25T09-49-46-01998190-fba6-7f40-9309-dc4e48c5844a.jsonl",
    "swe_agent_v0_gpt4_pydicom__pydicom-1458.traj",
]


def _corpus_sessions(folder: Path) -> list:
    from tokprof.formats import scan_directory

    for name in MIXED:
        (folder / name).symlink_to(CORPUS / name)  # a symlinked file is a session of the folder
    return [path for _, path in scan_directory(str(folder)).sessions]


@pytest.mark.skipif(not all((CORPUS / name).is_file() for name in MIXED), reason="needs ../shared/corpus")
def test_dask_over_the_corpus_equals_jobs_2_row_for_row_with_prices(tmp_path):
    """One engine: a Dask run applies the user's prices exactly as ``--jobs 2`` does (sessions of three
    agents from the corpus)."""
    import tokprof
    from tokprof.frontends.distributed import profile_paths

    prices = ["my-model=1/2", "0.5/4/0.05/0.6"]
    paths = _corpus_sessions(tmp_path)
    assert len(paths) == len(MIXED)
    expected = tokprof.profile(tmp_path, jobs=2, prices=prices, records=True)
    unpriced = tokprof.profile(tmp_path, jobs=1, records=True)
    got = profile_paths(paths, prices=prices, scheduler="processes", root=str(tmp_path), records=True)
    assert [r.to_dict() for r in got.sessions] == [r.to_dict() for r in expected.sessions]
    assert [c.to_dict() for c in got.calls] == [c.to_dict() for c in expected.calls]
    assert [r.cost for r in expected.sessions] != [r.cost for r in unpriced.sessions]  # the prices count
    assert sum(c.total for c in got.calls) == got.totals().billed_input


def test_the_engine_is_the_only_directory_run(tmp_path, model_dir):
    """profile_directory and the Dask path share the directory engine's functions: neither api nor
    distributed keeps a directory run of its own, and distributed imports no private name of api."""
    import ast

    import tokprof.analyses.directory as engine
    import tokprof.api as api
    import tokprof.runs.sessions as sessions

    source = Path(ROOT / "tokprof" / "frontends" / "distributed.py").read_text()
    imported = [a.name for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom) for a in node.names]
    assert not [name for name in imported if name.startswith("_")]
    for gone in ("_map", "_profile_session", "_request_ids", "_copies", "_SessionOptions", "sessions_report"):
        assert not hasattr(api, gone) and not hasattr(sessions, gone)
    source = Path(ROOT / "tokprof" / "runs" / "sessions.py").read_text()
    assert "from tokprof.analyses.directory import" in source and "run_sessions" in source
    assert engine.run_sessions


def test_local_map_keeps_the_order_and_counts_progress():
    from tokprof.analyses.directory import local_map

    done = []
    for jobs in (1, 2):
        done.clear()
        assert local_map(jobs, lambda: done.append(1))(abs, [-3, 2, -1]) == [3, 2, 1]
        assert len(done) == 3


def test_prices_reach_the_workers(tmp_path, model_dir):
    import tokprof
    from tokprof.frontends.distributed import profile_paths

    claude_project(tmp_path / "claude")
    base = tokprof.profile(tmp_path, model=str(model_dir), jobs=1, prices=["1/2"])
    paths = [tmp_path / row.path for row in base.sessions]
    got = profile_paths(paths, str(model_dir), prices=["1/2"], scheduler="threads", root=str(tmp_path))
    assert [r.cost for r in got.sessions] == [r.cost for r in base.sessions]
    assert any(r.cost for r in got.sessions)
