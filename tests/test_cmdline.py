"""Each command is pinned to the public API call it makes (as coverage.py's test_cmdline pins its
commands to ``Coverage``): the CLI parses options into one call of a ``tokprof`` function and renders
what it returns with ``tokprof.render_report``; nothing else does the work."""

from __future__ import annotations

import pytest

import tokprof
from conftest import ROOT
from tokprof.frontends.cli import main

SAMPLE = str(ROOT / "samples" / "incident_session.json")


class Called(Exception):
    pass


@pytest.fixture
def spy(monkeypatch):
    """Replaces one public function; the call's arguments are recorded, then the command stops."""
    calls: list[tuple[str, tuple, dict]] = []

    def replace(name: str):
        def recorder(*args, **kwargs):
            calls.append((name, args, kwargs))
            raise Called(name)

        monkeypatch.setattr(tokprof, name, recorder)
        return calls

    return replace


def run(argv):
    with pytest.raises(Called) as stopped:
        main(argv)
    return str(stopped.value)


def test_profile_calls_tokprof_profile(spy):
    calls = spy("profile")
    assert run(["profile", SAMPLE, "--model", "qwen3", "--no-progress"]) == "profile"
    ((name, args, kwargs),) = calls
    assert args == (SAMPLE, "qwen3") and kwargs["progress"] is False and kwargs["input_format"] is None


def test_profile_of_a_directory_calls_profile_directory(spy, tmp_path):
    calls = spy("profile_directory")
    assert run(["profile", str(tmp_path), "--jobs", "1"]) == "profile_directory"
    assert calls[0][1][0] == str(tmp_path) and calls[0][2]["jobs"] == 1


def test_profile_of_a_folder_of_recordings_calls_profile_on_the_newest(spy, tmp_path):
    for name in ("20261201T210000Z-claude.jsonl", "20261201T220000Z-claude.jsonl"):
        (tmp_path / name).write_text("")  # tokprof record's names; no call recorded yet
    calls = spy("profile")
    assert run(["profile", str(tmp_path), "--no-progress"]) == "profile"
    assert calls[0][1][0] == str(tmp_path / "20261201T220000Z-claude.jsonl")


def test_whatif_calls_tokprof_whatif(spy):
    calls = spy("whatif")
    assert run(["whatif", SAMPLE, "-p", "window:4", "--no-progress"]) == "whatif"
    args, kwargs = calls[0][1], calls[0][2]
    assert args[0] == SAMPLE and "window:4" in list(args[1] if len(args) > 1 else kwargs["policies"])


def test_tools_calls_tools_report(spy):
    calls = spy("tools_report")
    assert run(["tools", SAMPLE]) == "tools_report"
    assert calls[0][1] == (SAMPLE,)


def test_check_calls_run_check(spy):
    calls = spy("run_check")
    assert (
        run(["check", SAMPLE, "--config", str(ROOT / "samples" / "tokprof.toml"), "--update-baseline"]) == "run_check"
    )
    assert calls[0][1] == (SAMPLE,) and calls[0][2]["update_baseline"] is True


def test_report_calls_profile_and_renders_html(spy, tmp_path):
    calls = spy("render_report")
    assert run(["report", SAMPLE, "-o", str(tmp_path / "r.html")]) == "render_report"
    assert calls[0][1][1] == "html" and isinstance(calls[0][1][0], tokprof.Profile)
    assert not (tmp_path / "r.html").exists()
