"""Every output the README and the docs show is the real one: each ```` ``` ```` block that starts
with ``$ tokprof ...`` is run from the repository root at 100 columns, and what the block shows must
be what the command prints. A line ``...`` marks a cut: the pieces between cuts
must each appear, whole lines in order, in the real output; a block with no cut is the whole output."""

from __future__ import annotations

import os
import re
import shlex
import sys

import pytest

from conftest import ROOT
from tokprof.frontends.cli import main

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CUT = {"..."}  # "…" alone is a real row: a table's rows left out
#: Commands that do not end by themselves (servers) are shown, not run.
NOT_RUN = ("tokprof serve", "tokprof record", "tokprof watch")


def shown_outputs() -> list[tuple[str, str, list[str]]]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"^```\w*\n(.*?)^```", text, re.M | re.S):
            lines = block.splitlines()
            if not lines or not lines[0].startswith("$ tokprof ") or lines[0].startswith(NOT_RUN):
                continue
            if len(lines) == 1 or any(line.startswith("$ ") for line in lines[1:]) or lines[0].rstrip().endswith("&"):
                continue
            found.append((page.relative_to(ROOT).as_posix(), lines[0][2:], lines[1:]))
    return found


def pieces(lines: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for line in lines:
        if line.strip() in CUT:
            out.append([])
        else:
            out[-1].append(line)
    return [piece for piece in out if piece]


def contains_in_order(real: list[str], wanted: list[list[str]]) -> bool:
    at = 0
    for piece in wanted:
        for start in range(at, len(real) - len(piece) + 1):
            if real[start : start + len(piece)] == piece:
                at = start + len(piece)
                break
        else:
            return False
    return True


@pytest.mark.parametrize("page,command,shown", shown_outputs(), ids=lambda v: v if isinstance(v, str) else "")
def test_shown_output_is_real(page, command, shown, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.chdir(ROOT)
    if "../shared/corpus/" in command and not (ROOT.parent / "shared" / "corpus").is_dir():
        pytest.skip("the shared corpus is absent")  # a real agent's log, beside the repository
    # a command the docs show as `python script.py` runs with this interpreter (its packages)
    python = shlex.quote(sys.executable)
    argv = [re.sub(r"(^|=)python(?= )", lambda m: m.group(1) + python, a) for a in shlex.split(command)[1:]]
    if "whatif" in argv[:1]:
        argv.append("--no-progress")
    main(argv)
    captured = capsys.readouterr()
    real = [line.rstrip() for line in (captured.out + captured.err).splitlines()]  # spaces at the end are unseen
    shown = [line.rstrip() for line in shown]
    if any(line.strip() in CUT for line in shown):
        assert contains_in_order(real, pieces(shown)), f"{page}: `{command}` prints otherwise:\n" + "\n".join(real)
    else:
        if shown != real and os.environ.get("TOKPROF_REGENERATE"):
            path = ROOT / page
            text = path.read_text(encoding="utf-8")
            old = "$ " + command + "\n" + "".join(line + "\n" for line in shown)
            assert text.count(old) == 1, f"{page}: the block of `{command}` is not unique"
            path.write_text(
                text.replace(old, "$ " + command + "\n" + "".join(line + "\n" for line in real)), encoding="utf-8"
            )
            return
        assert shown == real, f"{page}: `{command}`"


def test_there_are_outputs_to_check():
    assert len(shown_outputs()) >= 5
