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
    from tokprof.distributed import profile_paths

    project = claude_project(tmp_path / "claude")
    codex_tree(tmp_path / "codex")
    expected = tokprof.profile_directory(tmp_path, str(model_dir), jobs=1)
    paths = [tmp_path / row.path for row in expected.sessions]
    for scheduler in ("threads", "processes"):
        got = profile_paths(paths, str(model_dir), scheduler=scheduler, root=str(tmp_path))
        assert json.dumps(got.to_dict()) == json.dumps(
            dict(expected.to_dict(), skipped=[]))  # the directory mode also lists what is not a session
    assert project.exists()


def test_reports_combine(tmp_path, model_dir):
    import tokprof
    from tokprof.analyses.sessions import SessionsReport

    claude_project(tmp_path / "a")
    codex_tree(tmp_path / "b")
    a = tokprof.profile_directory(tmp_path / "a", str(model_dir))
    b = tokprof.profile_directory(tmp_path / "b", str(model_dir))
    both = SessionsReport.combine([a, b], "both")
    assert both.totals().calls == a.totals().calls + b.totals().calls
    assert both.totals().billed_input == a.totals().billed_input + b.totals().billed_input
    assert [r.session for r in both.sessions] == [r.session for r in a.sessions + b.sessions]


@pytest.mark.skipif(not CORPUS.is_dir(), reason="needs ../shared/corpus")
def test_dask_on_the_shared_corpus():
    import tokprof
    from tokprof.distributed import profile_paths

    folder = CORPUS / "claude_code_2.1_compacted"
    expected = tokprof.profile_directory(folder, jobs=1)
    paths = [folder / row.path for row in expected.sessions]
    got = profile_paths(paths, scheduler="processes", root=str(folder))
    assert [r.to_dict() for r in got.sessions] == [r.to_dict() for r in expected.sessions]
    assert Path(folder).is_dir()
