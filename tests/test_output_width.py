"""Tables fit the terminal: at 80 columns no row of profile, tools or check is broken in two."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT
from tokprof.frontends.cli import main

SAMPLE = ROOT / "samples" / "incident_session.json"


@pytest.fixture
def saved(sample_profile) -> str:
    """The sample's saved profile (conftest's, made once): ``tokprof profile`` shows it as it shows the
    log (tests/test_saved_profile.py), so the table's layout is checked on it at each width."""
    return str(sample_profile)


def table_at(width, args, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(args) in (0, 1)
    return capsys.readouterr().out


@pytest.mark.parametrize("width", [80, 100, 120])
def test_profile_rows_fit(width, saved, capsys, monkeypatch):
    out = table_at(width, ["profile", saved], capsys, monkeypatch)
    rows = [line for line in out.splitlines() if re.match(r"^\s*\d+\s+[\d,]+(\s+[\d,]+)+\s*$", line)]
    assert len(rows) == 20  # the first and last ten of 59 calls
    assert all(len(line) <= width for line in rows)
    header = next(line for line in out.splitlines() if re.match(r"call\s+system\s", line))
    assert len(header) <= width and "total" in header
    assert "39 of 59 calls not shown" in out


def test_profile_calls_option(saved, capsys, monkeypatch):
    out = table_at(80, ["profile", saved, "--calls", "all"], capsys, monkeypatch)
    assert len([line for line in out.splitlines() if re.match(r"^\s*\d+\s+[\d,]+", line)]) == 59
    out = table_at(80, ["profile", saved, "--calls", "4"], capsys, monkeypatch)
    calls = [int(line.split()[0]) for line in out.splitlines() if re.match(r"^\s*\d+\s+[\d,]+", line)]
    assert calls == [0, 1, 57, 58]
    assert main(["profile", saved, "--calls", "some"]) == 2
    assert "--calls: expected a number of rows or 'all'" in capsys.readouterr().err


def test_tools_rows_fit(capsys, monkeypatch):
    out = table_at(80, ["tools", str(SAMPLE)], capsys, monkeypatch)
    catalogue, cuts = out.split("\nCut list")
    rows = [line for line in catalogue.splitlines() if re.match(r"^\w+( \(unused\))?\s+\d", line)]
    assert len(rows) == 12 and all(len(line) <= 80 for line in rows)
    assert all(len(line) <= 80 for line in cuts.splitlines())  # the cut list fits too (#47.3)


def test_check_rows_fit(capsys, monkeypatch):
    monkeypatch.chdir(ROOT / "samples")
    out = table_at(80, ["check", str(SAMPLE)], capsys, monkeypatch)
    rows = [line for line in out.splitlines() if re.match(r"^[a-z_]+\s+[\d,.%]+\s", line)]
    assert len(rows) == 7 and all(len(line) <= 80 and line.rstrip().endswith("pass") for line in rows)


def test_text_from_the_log_cannot_style_or_drive_the_terminal(tmp_path, capsys, monkeypatch):
    import json

    from conftest import small_transcript

    name = "look[/bold][red]up\x1b[31m\u202e"
    log = json.loads(json.dumps(small_transcript()).replace('"lookup"', json.dumps(name)))
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    for command in ("profile", "tools"):
        out = table_at(120, [command, str(path), "--model", "qwen2.5"], capsys, monkeypatch)
        assert "\x1b" not in out and "\u202e" not in out
    assert "look[/bold][red]up\\x1b[31m\\u202e" in out  # shown as written, escapes visible


@pytest.mark.parametrize("width", [80, 100])
def test_wrapped_lines_hang(width, capsys, monkeypatch, tmp_path):
    """Prose wraps with a hanging indent: a continuation line never starts at column 0, whatever
    the length of the path in the title (the table's header is the only line starting 'call')."""
    deep = tmp_path.joinpath(*["a-long-folder-name"] * 6)
    deep.mkdir(parents=True)
    log = deep / SAMPLE.name
    log.write_bytes(SAMPLE.read_bytes())
    out = table_at(width, ["profile", str(log)], capsys, monkeypatch)
    lines = out.splitlines()
    assert lines[0].startswith("tokprof profile of") and all(line.startswith("  ") for line in lines[1:2])
    assert not [line for line in lines if line.startswith("calls")]  # "(59 calls, ...)" stayed indented
    assert all(len(line) <= width for line in lines) and lines[0] == lines[0].rstrip()


def test_summary_values_wrap_under_their_column():
    from tokprof.render.console import hanging_indent

    assert hanging_indent("  billed input              1,243,308 tokens") == len("  billed input              ")
    assert hanging_indent("warning: a long sentence  with two spaces far in") == 2
    assert hanging_indent("    a nested line") == 6


CORPUS = ROOT.parent / "shared" / "corpus"
COMPACTED = CORPUS / "claude_code_2.1_compacted" / "8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"


@pytest.mark.skipif(not COMPACTED.exists(), reason="needs ../shared/corpus")
def test_a_log_with_subagents_names_each_calls_thread(capsys, monkeypatch):
    out = table_at(160, ["profile", str(COMPACTED), "--calls", "all"], capsys, monkeypatch)
    header = next(line for line in out.splitlines() if re.match(r"call\s+thread\s", line))
    rows = [line.split() for line in out.splitlines() if re.match(r"^\s*\d+\s+\S+\s+(n/r|[\d,]+)\s", line)]
    threads = {row[1] for row in rows}
    assert header and "main" in threads and len(threads) > 1


def test_emoji_codes_from_the_log_stay_text():
    """Prose lines print as the console does, with emoji codes off: a log's ``:thumbs_up:`` is shown as written."""
    from tokprof.render import RenderOptions
    from tokprof.render.console import safe, text_console

    console, out = text_console(RenderOptions())
    console.print("tool " + safe("[x] :thumbs_up: :fire:"))
    console.print("tool " + safe("[x] :thumbs_up: :fire:") + " " * 60 + "wrapped")  # a line that wraps
    assert out.getvalue().split("\n")[0] == "tool [x] :thumbs_up: :fire:"
    assert ":thumbs_up: :fire:" in out.getvalue().split("\n")[1]


@pytest.mark.parametrize("width", [50, 76, 80])
def test_the_columns_left_out_are_said_in_whole_clauses(width, capsys, monkeypatch):
    """The note under a table that left columns out is written at the terminal's width, not the
    table's: one line when it fits, else one line per clause, never broken mid-clause (#46 item 11)."""
    out = table_at(width, ["tools", str(SAMPLE)], capsys, monkeypatch)
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "left out at this width" in line)
    whole = re.match(r"^\(\d columns? left out at this width: a wider terminal or -f json shows them\)$", lines[at])
    if width >= 76:
        assert whole is not None, lines[at]
    else:
        assert re.match(r"^\(\d columns? left out at this width:$", lines[at])
        assert lines[at + 1] == " a wider terminal or -f json shows them)"
