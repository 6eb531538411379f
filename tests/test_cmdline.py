"""Each command is pinned to the call it makes (as coverage.py's test_cmdline pins its commands to
``Coverage``): the CLI parses its flags into one :class:`tokprof.Options` and one call of a job of
:mod:`tokprof.runs` (front ends import the internal modules that own what they call), and renders what
it returns with ``render_report``; nothing else does the work. Every command of ``tokprof --help`` is
here (``test_every_command_is_pinned``); the long-running ones (``serve``, ``record``, ``watch``,
``statusline``) are pinned to the object they count with."""

from __future__ import annotations

import importlib
import io
import json

import pytest

import tokprof
from conftest import ROOT
from tokprof.frontends.cli import main
from tokprof.render.tables import TeamOptions

SAMPLE = str(ROOT / "samples" / "incident_session.json")


class Called(Exception):
    pass


#: The module each function a command calls is taken from.
HOME = {
    **dict.fromkeys(["profile", "saved_profile"], "tokprof.runs.profile"),
    **dict.fromkeys(
        ["profile_directory", "find_session", "local_sessions", "session_periods"], "tokprof.runs.sessions"
    ),
    **dict.fromkeys(["whatif", "suggest_facts", "probe"], "tokprof.runs.whatif"),
    "tools_report": "tokprof.runs.tools",
    "run_check": "tokprof.runs.check",
    "diff": "tokprof.runs.diff",
    "report_site": "tokprof.runs.site",
    **dict.fromkeys(
        ["render_report", "incremental_state", "report_tables", "prometheus_text", "send_spans"],
        "tokprof.runs.reports",
    ),
    "find_mcp_servers": "tokprof.mcp.api",
    "LiveSession": "tokprof.live",
    "LiveRecording": "tokprof.live_record",
    "get_model": "tokprof.runs.model",
}


@pytest.fixture(scope="module", autouse=True)
def _imported_before_any_spy():
    """Every module a command may import is imported before a spy replaces a function: a module first
    imported while a spy is in place (``from tokprof.runs.profile import profile``) would keep the spy
    after the test, and a later test file would call it."""
    import pkgutil

    import tokprof.runs

    for module in pkgutil.iter_modules(tokprof.runs.__path__, "tokprof.runs."):
        importlib.import_module(module.name)
    for name in set(HOME.values()):
        importlib.import_module(name)


@pytest.fixture
def spy(monkeypatch):
    """Replaces one function where the command takes it; the call's arguments are recorded, then the
    command stops."""

    def replace(name: str):
        calls: list[tuple[str, tuple, dict]] = []

        def recorder(*args, **kwargs):
            calls.append((name, args, kwargs))
            raise Called(name)

        monkeypatch.setattr(importlib.import_module(HOME[name]), name, recorder)
        return calls

    return replace


@pytest.fixture
def stub(monkeypatch):
    """Replaces one function by one that records its call and returns ``value``."""

    def replace(name: str, value: object):
        calls: list[tuple[str, tuple, dict]] = []

        def recorder(*args, **kwargs):
            calls.append((name, args, kwargs))
            return value

        monkeypatch.setattr(importlib.import_module(HOME[name]), name, recorder)
        return calls

    return replace


def run(argv):
    with pytest.raises(Called) as stopped:
        main(argv)
    return str(stopped.value)


def test_profile_calls_tokprof_profile(spy):
    calls = spy("profile")
    assert run(["profile", SAMPLE, "--model", "qwen3", "--no-progress"]) == "profile"
    ((name, (log, options), kwargs),) = calls
    assert log == SAMPLE and isinstance(options, tokprof.Options) and not kwargs
    assert options.model == "qwen3" and options.progress is False and options.input_format is None


def test_profile_of_a_directory_calls_profile_directory(spy, tmp_path):
    calls = spy("profile_directory")
    assert run(["profile", str(tmp_path), "--jobs", "1"]) == "profile_directory"
    assert calls[0][1][0] == str(tmp_path) and calls[0][1][1].jobs == 1


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
    assert calls[0][1][0] == SAMPLE and calls[0][1][1].tools is None


def test_check_calls_run_check(spy):
    calls = spy("run_check")
    assert (
        run(["check", SAMPLE, "--config", str(ROOT / "samples" / "tokprof.toml"), "--update-baseline"]) == "run_check"
    )
    assert calls[0][1][0] == SAMPLE and calls[0][2]["update_baseline"] is True


def test_report_calls_profile_and_renders_html(spy, tmp_path):
    calls = spy("render_report")
    assert run(["report", SAMPLE, "-o", str(tmp_path / "r.html")]) == "render_report"
    assert calls[0][1][1] == "html" and isinstance(calls[0][1][0], tokprof.Profile)
    assert not (tmp_path / "r.html").exists()


PINNED = set()


def pins(command: str):
    """Marks a test as the pin of a command (``mcp --list``: of ``mcp``)."""
    PINNED.add(command)
    return lambda test: test


@pins("profile")
def test_profile_of_a_session_in_a_directory_calls_find_session(spy, tmp_path):
    calls = spy("find_session")
    assert run(["profile", str(tmp_path), "--session", "3f2a", "--no-progress"]) == "find_session"
    assert calls[0][1] == (str(tmp_path), "3f2a")


def test_profile_of_a_directory_by_project_renders_with_the_team(spy, stub, tmp_path):
    report = object()
    directory = stub("profile_directory", report)
    rendered = spy("render_report")
    argv = ["profile", str(tmp_path), "--jobs", "1", "--by", "project", "--since", "2026-11-30", "-f", "json"]
    assert run(argv) == "render_report"
    assert directory[0][1][1].records is True
    args, team = rendered[0][1], rendered[0][2]["team"]
    assert args == (report, "json") and isinstance(team, TeamOptions)
    assert team.by == (("project",),) and team.since.isoformat() == "2026-11-30T00:00:00+00:00"


def test_an_incremental_directory_run_keeps_its_state_with_the_tables(spy, stub, tmp_path):
    report, state = object(), {"kept": 1}
    loaded = stub("incremental_state", state)
    directory = stub("profile_directory", report)
    tables = spy("report_tables")
    out = tmp_path / "out"
    out.mkdir()
    assert run(["profile", str(tmp_path), "-f", "csv", "-o", f"{out}/", "--incremental"]) == "report_tables"
    assert loaded[0][1] == (f"{out}/",) and directory[0][1][1].state is state
    assert tables[0][1] == (report, "csv", f"{out}/") and tables[0][2]["state"] is state


@pins("sessions")
def test_sessions_calls_local_sessions(spy):
    calls = spy("local_sessions")
    assert run(["sessions", "--agent", "codex"]) == "local_sessions"
    assert calls[0][1] == ("codex",)


def test_sessions_by_a_period_calls_session_periods(spy, stub):
    stub("local_sessions", [])
    calls = spy("session_periods")
    assert run(["sessions", "--by", "day", "--tz", "UTC", "--since", "7d"]) == "session_periods"
    assert calls[0][1] == ([], ["day"]) and calls[0][2] == {"tz": "UTC", "since": "7d", "until": None}


def test_report_of_a_directory_calls_report_site(spy, tmp_path):
    calls = spy("report_site")
    assert run(["report", str(tmp_path), "-o", str(tmp_path / "site"), "--no-progress"]) == "report_site"
    assert calls[0][1][0] == str(tmp_path) and calls[0][1][2].progress is False
    assert run(["report", "--all", "--agent", "codex", "-o", str(tmp_path / "site")]) == "report_site"
    assert calls[1][1][0] is None and calls[1][2]["agent"] == "codex"


@pins("diff")
def test_diff_calls_diff(spy):
    calls = spy("diff")
    assert run(["diff", SAMPLE, "run.json", "--model", "qwen2.5", "--no-progress"]) == "diff"
    (a, b, options) = calls[0][1]
    assert (a, b) == (SAMPLE, "run.json") and options.model == "qwen2.5" and options.progress is False


@pins("whatif")
def test_whatif_with_a_facts_file_passes_it_on(spy, tmp_path):
    calls = spy("whatif")
    facts = tmp_path / "facts.txt"
    facts.write_text("INC-4412\n", encoding="utf-8")
    assert run(["whatif", SAMPLE, "--fact", "a", "--facts", str(facts), "--no-progress"]) == "whatif"
    assert calls[0][2]["facts"] == ["a"] and calls[0][2]["facts_file"] == str(facts)


def test_whatif_suggest_facts_calls_suggest_facts(spy):
    calls = spy("suggest_facts")
    assert run(["whatif", SAMPLE, "--suggest-facts"]) == "suggest_facts"
    assert calls[0][1][0] == SAMPLE


@pins("probe")
def test_probe_calls_tokprof_probe(spy):
    calls = spy("probe")
    argv = ["probe", SAMPLE, "--question", "Which incident?", "--expect", "INC-4412"]
    assert run([*argv, "--endpoint", "http://127.0.0.1:9/v1", "--dry-run"]) == "probe"
    (_, args, kwargs) = calls[0]
    assert args[:4] == (SAMPLE, "Which incident?", "INC-4412", "http://127.0.0.1:9/v1") and kwargs["dry_run"] is True


@pins("export")
def test_export_calls_profile_directory_then_the_exports(stub, spy, tmp_path):
    report = object()
    directory = stub("profile_directory", report)
    text = stub("prometheus_text", "# metrics\n")
    sent = spy("send_spans")
    out = tmp_path / "metrics.prom"
    argv = ["export", str(tmp_path), "--prometheus", str(out), "--endpoint", "http://127.0.0.1:9/v1/traces"]
    assert run(argv) == "send_spans"
    assert directory[0][1][1].records is True and text[0][1] == (report,)
    assert sent[0][1] == (report, "http://127.0.0.1:9/v1/traces")
    assert out.read_text(encoding="utf-8") == "# metrics\n"


@pins("mcp")
def test_mcp_calls_find_mcp_servers(spy, tmp_path):
    calls = spy("find_mcp_servers")
    assert run(["mcp", "--list", "--server", "echo=python -c pass"]) == "find_mcp_servers"
    assert calls[0][2]["servers"] == ["echo=python -c pass"]


@pins("statusline")
def test_statusline_counts_with_a_live_session(spy, tmp_path, monkeypatch):
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("", encoding="utf-8")
    monkeypatch.setenv("TOKPROF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps({"transcript_path": str(transcript)})))
    calls = spy("LiveSession")
    assert main(["statusline"]) == 0  # the status line never fails: it shows the error on its line
    assert calls[0][1] == (str(transcript),)


@pins("watch")
def test_watch_follows_each_session_with_a_live_session(spy, tmp_path):
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("", encoding="utf-8")
    calls = spy("LiveSession")
    assert run(["watch", str(tmp_path), "--json", "--thresholds", "60,75"]) == "LiveSession"
    assert calls[0][1] == (str(transcript),) and calls[0][2]["thresholds"] == (0.6, 0.75)


@pins("serve")
def test_serve_loads_its_models_with_get_model(spy):
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    calls = spy("get_model")
    assert run(["serve", "--model", "qwen3", "--port", "0"]) == "get_model"
    assert calls[0][1] == ("qwen3",)


@pins("record")
def test_record_follows_the_recording_with_a_live_recording(spy, tmp_path):
    pytest.importorskip("uvicorn")
    calls = spy("LiveRecording")
    assert run(["record", "-o", str(tmp_path), "--", "true"]) == "LiveRecording"
    assert calls[0][1][0].startswith(str(tmp_path))


@pins("collect")
def test_collect_runs_the_receiver_with_its_options(monkeypatch, tmp_path):
    pytest.importorskip("pyarrow")
    pytest.importorskip("opentelemetry.proto")
    from tokprof.frontends.collect import server

    calls = []
    monkeypatch.setattr(server, "run", lambda options: calls.append(options) or 0)
    assert main(["collect", str(tmp_path), "--port", "0", "--keep", "aggregates", "--hash-users"]) == 0
    assert calls[0].destination == str(tmp_path) and calls[0].keep == "aggregates" and calls[0].hash_users


PINNED.update({"tools", "check", "report"})  # the first tests of this file


def test_every_command_is_pinned():
    from tokprof.frontends.cli import app

    commands = {command.name or command.callback.__name__ for command in app.registered_commands}
    assert commands == PINNED, f"pin {sorted(commands - PINNED)} to its API call here"
