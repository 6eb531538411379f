"""The README is the front door: its Python example runs as written, its two commands are the ones to
install and to test (CI runs the second), and its links and the docs' links lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
INSTALL = (
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && "
    "tokprof profile samples/incident_session.json --config samples/tokprof.toml"
)
TEST = "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && pytest && mypy"


def python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.M | re.S)


def test_the_readme_has_a_python_example():
    assert python_blocks()


@pytest.mark.parametrize("number", range(1, len(python_blocks()) + 1))
def test_python_example_runs_as_written(number, tmp_path, monkeypatch, capsys):
    """Each block runs as if from the repository root: in a fresh directory whose ``samples`` is the
    repository's, so that what the example writes (run.json) lands in the temporary directory."""
    (tmp_path / "samples").symlink_to(ROOT / "samples", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    code = compile(python_blocks()[number - 1], f"README.md, python block {number}", "exec")
    exec(code, {"__name__": "__readme__"})
    capsys.readouterr()


def test_the_two_commands_are_in_the_readme_and_ci_runs_the_second():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert INSTALL in lines and TEST in lines
    assert lines.index(INSTALL) < lines.index(TEST)
    assert TEST in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


#: Pages whose README section is being written elsewhere (docs/whatif.md and docs/serve.md hold the
#: section's text until the README has it): remove a name when the README links its page.
PENDING: set[str] = set()  # docs pages the README does not link yet


def test_the_readme_is_a_front_door():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 235  # about 200: reference lives in docs/
    text = README.read_text(encoding="utf-8")
    for page in sorted(DOCS.glob("*.md")):
        if page.name in PENDING and f"](docs/{page.name})" not in text:
            continue
        assert f"](docs/{page.name})" in text, f"the README does not link to docs/{page.name}"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)
    return {_slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, re.M)}


@pytest.mark.parametrize("page", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_links_lead_somewhere(page):
    """Every relative link of the README and the docs names a file that exists, and an anchor it has."""
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        name, _, anchor = target.partition("#")
        path = (page.parent / name).resolve() if name else page
        assert path.exists(), f"{page.name}: {target}: no such file"
        if anchor:
            assert path.suffix == ".md" and anchor in _anchors(path), f"{page.name}: {target}: no such heading"
