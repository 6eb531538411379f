"""Nothing from a log becomes a GitHub workflow command (#33 item 4): a tool named like one starts
table rows in ``tools`` and ``profile``; every line written to standard output is neutralised."""

from __future__ import annotations

import json
import re

import pytest
from conftest import FIXTURES

from tokprof.frontends.cli import main
from tokprof.base.text import no_workflow_commands

COMMAND_LINE = re.compile(r"^[ \t]*(::|##\[)", re.MULTILINE)
NAMES = ["::error file=app.py::pwned", "::add-mask::secret", "##[error]old", "::stop-commands::tok"]


def hostile_log(tmp_path):
    log = json.loads((FIXTURES / "good_transcript.json").read_text())
    renames = {}
    for tool, name in zip(log["tools"], NAMES):
        renames[tool["function"]["name"]] = name
        tool["function"]["name"] = name
    for message in log["messages"]:
        for call in message.get("tool_calls") or []:
            call["function"]["name"] = renames.get(call["function"]["name"], call["function"]["name"])
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["profile"],
        ["tools"],
        ["profile", "--calls", "all"],
        ["tools", "-f", "csv"],
        ["profile", "-f", "csv"],
        ["whatif"],
    ],
)
def test_no_line_starts_a_workflow_command(tmp_path, model_dir, capsys, monkeypatch, args):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    path = hostile_log(tmp_path)
    code = main([args[0], str(path), *args[1:], "--model", str(model_dir), "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert not COMMAND_LINE.search(out), out
    assert not COMMAND_LINE.search(err), err


def test_neutralised_lines_read_the_same():
    assert no_workflow_commands("::error x::y\n  ::add-mask::z\nok ::a\n##[group]b\n") == (
        "\uff1a:error x::y\n  \uff1a:add-mask::z\nok ::a\n\uff03#[group]b\n"
    )
    assert no_workflow_commands('{"name": "::error::x"}\n') == '{"name": "::error::x"}\n'  # JSON never starts so


def test_an_annotation_s_message_never_ends_its_line():
    from types import SimpleNamespace

    from tokprof.analyses.budgets import FAIL
    from tokprof.frontends.github import github_annotations

    metric = SimpleNamespace(name="largest_tool", status=FAIL, reasons=["tool a\r::add-mask::x\n::error::y 5%"])
    text = github_annotations(SimpleNamespace(metrics=[metric], servers=[]))
    assert text == "::error title=tokprof largest_tool::tool a%0D::add-mask::x%0A::error::y 5%25\n"


def test_an_annotation_title_keeps_a_server_name_from_adding_properties():
    """An MCP server's name comes from the project's configuration: a comma in it would end the title
    property and start others (``file=``, ``line=``), a percent sign would be read as an escape."""
    from types import SimpleNamespace

    from tokprof.frontends.github import github_annotations

    server = SimpleNamespace(status="fail", kind="stdio", name="x,file=README.md,line=1 50%0A:y\n", reasons=["no"])
    text = github_annotations(SimpleNamespace(metrics=[], servers=[server]))
    assert text == "::error title=tokprof MCP stdio x%2Cfile=README.md%2Cline=1 50%250A_y\\n::no\n"
    assert text.count("\n") == 1 and "," not in text.split("::")[1]
