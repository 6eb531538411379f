"""``-o`` never replaces what a run reads or may write (#33 item 3), and two outputs never share one
file (item 8): hand-made logs, a directory of sessions, a configuration found from the working
directory and its baseline, links."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import test_format_claude_code as cc
from conftest import FIXTURES

from tokprof.frontends.cli import main

TRANSCRIPT = FIXTURES / "good_transcript.json"


def refused(args, capsys, protected: Path, what: str = "would overwrite the input") -> None:
    before = protected.read_bytes()
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("tokprof: error: ") and what in err and err.count("\n") == 1, err
    assert protected.read_bytes() == before


def simple_session(path: Path, session: str = "s1") -> Path:
    rows = [cc.user("u1", None, "hello"), cc.assistant("a1", "u1", "r9", [cc.text("hi")], stop="end_turn")]
    cc.write_jsonl(path, [dict(row, sessionId=session) for row in rows])
    return path


def test_a_file_of_a_directory_input(tmp_path, model_dir, capsys):
    project = tmp_path / "project"
    session = simple_session(project / "s1.jsonl")
    simple_session(project / "s2.jsonl", "s2")
    refused(["profile", str(project), "--model", str(model_dir), "-o", str(session)], capsys, session)


def test_a_subagent_transcript(tmp_path, model_dir, capsys):
    session = simple_session(tmp_path / "s1.jsonl")
    agent = simple_session(tmp_path / "s1" / "subagents" / "agent-a1.jsonl")
    refused(["profile", str(session), "--model", str(model_dir), "-o", str(agent)], capsys, agent)


def test_a_link_to_the_log(tmp_path, model_dir, capsys):
    log = tmp_path / "log.json"
    log.write_bytes(TRANSCRIPT.read_bytes())
    link = tmp_path / "link.json"
    os.symlink(log, link)
    refused(["profile", str(log), "--model", str(model_dir), "-f", "json", "-o", str(link)], capsys, log)
    hard = tmp_path / "hard.json"
    os.link(log, hard)
    refused(["profile", str(log), "--model", str(model_dir), "-f", "json", "-o", str(hard)], capsys, log)


@pytest.mark.parametrize("option", ["--chat-template", "--tools", "--system"])
def test_a_file_an_option_names(tmp_path, model_dir, capsys, option):
    session = simple_session(tmp_path / "s1.jsonl")
    given = tmp_path / "given.txt"
    given.write_text(
        {
            "--chat-template": "{{ messages|length }}",
            "--tools": json.dumps([{"name": "f", "description": "d", "input_schema": {"type": "object"}}]),
            "--system": "Be brief.",
        }[option]
    )
    args = ["profile", str(session), "--model", str(model_dir), option, str(given), "-f", "json", "-o", str(given)]
    refused(args, capsys, given)


@pytest.mark.parametrize("command", ["profile", "tools"])
def test_the_found_configuration_and_its_baseline(tmp_path, model_dir, capsys, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tokprof.toml").write_text('baseline = "base.json"\n')
    (tmp_path / "base.json").write_text("{}\n")
    for target in ("tokprof.toml", "base.json"):
        refused([command, str(TRANSCRIPT), "--model", str(model_dir), "-o", target], capsys, tmp_path / target)


def test_the_configured_baseline_in_check(tmp_path, model_dir, capsys):
    config = tmp_path / "conf" / "tokprof.toml"
    config.parent.mkdir()
    config.write_text('baseline = "b.json"\n[budgets]\nlargest_prompt = 100000\n')
    baseline = config.parent / "b.json"
    common = ["check", str(TRANSCRIPT), "--model", str(model_dir), "--config", str(config)]
    assert main([*common, "--update-baseline"]) == 0, capsys.readouterr().err
    assert baseline.exists()
    capsys.readouterr()
    refused(
        ["check", str(TRANSCRIPT), "--model", str(model_dir), "--config", str(config), "-o", str(baseline)],
        capsys,
        baseline,
    )


@pytest.mark.parametrize("how", ["the log", "a link to the log", "a hard link to the log"])
def test_update_baseline_never_replaces_the_log(tmp_path, model_dir, capsys, monkeypatch, how):
    """#45 item 1: ``--baseline`` naming the log (or a link to it) replaced the log with baseline JSON."""
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "log.json"
    log.write_bytes(TRANSCRIPT.read_bytes())
    baseline = log
    if how != "the log":
        baseline = tmp_path / "base.json"
        (os.symlink if how == "a link to the log" else os.link)(log, baseline)
    args = ["check", str(log), "--model", str(model_dir), "--baseline", str(baseline), "--update-baseline"]
    refused(args, capsys, log)


@pytest.mark.parametrize("given", ["--config", "found"])
def test_update_baseline_never_replaces_the_configuration(tmp_path, model_dir, capsys, monkeypatch, given):
    """A baseline naming the configuration file replaced it (the next check failed "invalid TOML"),
    whether named by --baseline or by the configuration itself."""
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "tokprof.toml"
    config.write_text('baseline = "tokprof.toml"\n[budgets]\nlargest_prompt = 100000\n')
    args = ["check", str(TRANSCRIPT), "--model", str(model_dir), "--update-baseline"]
    refused(args + (["--config", str(config)] if given == "--config" else []), capsys, config)
    config.write_text("[budgets]\nlargest_prompt = 100000\n")
    refused(args + ["--baseline", "tokprof.toml"], capsys, config)
    refused(args + ["--baseline", str(TRANSCRIPT.parent / ".." / "fixtures" / TRANSCRIPT.name)], capsys, TRANSCRIPT)


def test_update_baseline_through_a_configured_baseline_naming_the_log(tmp_path, model_dir, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "log.json"
    log.write_bytes(TRANSCRIPT.read_bytes())
    (tmp_path / "tokprof.toml").write_text('baseline = "log.json"\n')
    refused(["check", "log.json", "--model", str(model_dir), "--update-baseline"], capsys, log)
    # the configured baseline itself is still written, as before
    (tmp_path / "tokprof.toml").write_text('baseline = "base.json"\n')
    assert main(["check", "log.json", "--model", str(model_dir), "--update-baseline"]) == 0
    assert json.loads((tmp_path / "base.json").read_text())


def test_the_library_never_writes_a_baseline_over_an_input(tmp_path, model_dir, monkeypatch):
    import tokprof
    from tokprof.base.errors import TokprofError
    from tokprof.runs.check import run_check

    monkeypatch.chdir(tmp_path)
    log = tmp_path / "log.json"
    log.write_bytes(TRANSCRIPT.read_bytes())
    run = run_check(log, tokprof.Options(model=str(model_dir)), baseline=log, update_baseline=True)
    with pytest.raises(TokprofError, match="would overwrite the input"):
        run.write_baseline()
    assert log.read_bytes() == TRANSCRIPT.read_bytes()


def test_two_outputs_to_one_file(tmp_path, model_dir, capsys):
    out = tmp_path / "out.html"
    out.write_text("keep")
    refused(
        ["profile", str(TRANSCRIPT), "--model", str(model_dir), "-o", str(out), "--html", str(out)],
        capsys,
        out,
        "two outputs would be written to the same file",
    )
    code = main(
        [
            "profile",
            str(TRANSCRIPT),
            "--model",
            str(model_dir),
            "-o",
            str(tmp_path / "a.txt"),
            "--html",
            str(tmp_path / "b.html"),
        ]
    )
    capsys.readouterr()
    assert code == 0 and (tmp_path / "a.txt").exists() and (tmp_path / "b.html").exists()


def test_a_new_file_beside_the_inputs_is_fine(tmp_path, model_dir, capsys):
    project = tmp_path / "project"
    simple_session(project / "s1.jsonl")
    code = main(["profile", str(project), "--model", str(model_dir), "-o", str(project / "summary.txt")])
    assert code == 0, capsys.readouterr().err


@pytest.mark.parametrize(
    "value, says", [("nan%", "finite percentage"), ("inf%", "finite percentage"), ("-5%", "must not be negative")]
)
def test_a_percentage_that_is_not_a_number_is_not_called_negative(value, says):
    from tokprof.transforms.config import ConfigError, parse_increase

    with pytest.raises(ConfigError, match=says):
        parse_increase(value, "tokprof.toml: max_increase")


def test_sigterm_while_writing_leaves_no_temporary_file(tmp_path, monkeypatch):
    """SIGTERM arriving while the outputs are staged: no .tmp file beside the target, no output."""
    import signal

    from tokprof.base import outputs

    real = outputs.write_temporary
    calls = []

    def then_terminated(target, data):  # the first output staged, SIGTERM while the second is written
        calls.append(target)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        return real(target, data)

    monkeypatch.setattr(outputs, "write_temporary", then_terminated)
    with pytest.raises(SystemExit) as stopped:
        outputs.write_files([(str(tmp_path / "a.json"), b"{}"), (str(tmp_path / "b.html"), b"<html>")])
    assert stopped.value.code == 143
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_the_sessions_list_never_replaces_a_session(tmp_path, capsys, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "PI_CODING_AGENT_DIR", "QWEN_RUNTIME_DIR"):
        monkeypatch.delenv(name, raising=False)
    session = home / ".claude/projects/-work-app/s1.jsonl"
    session.parent.mkdir(parents=True)
    simple_session(session)
    refused(["sessions", "-f", "json", "-o", str(session)], capsys, session)


def test_the_mcp_catalogue_never_replaces_a_configuration_it_read(tmp_path, capsys):
    import sys

    from test_mcp import SERVER

    server = tmp_path / "server.py"
    server.write_text(SERVER, encoding="utf-8")
    config = tmp_path / "mcp.json"
    config.write_text(
        '{"mcpServers": {"one": {"command": '
        + json.dumps(sys.executable)
        + ', "args": ['
        + json.dumps(str(server))
        + ', "1", "0"]}}}'
    )
    refused(["mcp", "--file", str(config), "-o", str(config)], capsys, config)


def test_text_in_pieces_that_fails_half_way_writes_nothing_to_a_pipe_or_the_files(tmp_path):
    """A profile's JSON comes in pieces; one that fails half way made (a NaN in its summary, say)
    must leave neither half a document in a pipe (no temporary there) nor the other files written."""
    from tokprof.base import outputs
    from tokprof.base.errors import TokprofError

    fifo, other = tmp_path / "fifo", tmp_path / "other.html"
    os.mkfifo(fifo)
    # the reader's end opened first, without waiting for a writer (no thread to be left blocked)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)

    def pieces():
        yield b'{\n  "calls": ['
        raise TokprofError("not written")

    try:
        with pytest.raises(TokprofError):
            outputs.write_files([(str(other), b"<html>"), (str(fifo), pieces())])
        try:
            got = [os.read(reader, 1 << 16)]  # what a writer wrote and closed; b"" if nothing
        except BlockingIOError:  # a writer still holds it open, having written nothing
            got = [b""]
    finally:
        os.close(reader)
    assert got == [b""] and not other.exists()
