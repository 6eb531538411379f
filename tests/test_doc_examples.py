"""Every shell example in the README and the docs runs as written (#46 item 1), as
tests/test_doc_outputs.py checks every output they show.

A shell example is a ```` ```sh ```` (or ``bash``) block, each line a command (a line ending with a
backslash goes on; ``#`` starts a comment), or a ```` ```console ```` block: its lines starting with
``$`` are commands, and the lines after each, up to the next, what it prints. An example that
cannot run here is marked by an HTML comment on the line before its block,
``<!-- not run: WHY -->`` (a network, a running agent, packages installed); every other example
runs, so that a new one is checked by default.

They run in a folder of their own holding the repository's ``samples`` and ``sessions/``, a small
hand-written Claude Code project, with a HOME whose ``~/.claude/projects/-home-me-src-app/`` is the
same project; ``tokprof`` and ``python`` are this interpreter's. Each command ends with 0, and what
a console block shows is what it prints (with the port ``tokprof serve --port 0`` took standing for
the 8765 the page shows). ``tokprof serve`` runs in the background until its block is done.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import test_format_claude_code as cc
from conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(?:^<!-- not run: (?P<why>.+?) -->\n)?^```(?P<lang>\w*)\n(?P<body>.*?)^```", re.M | re.S)
SHELLS = ("sh", "bash", "console")
PORT = "8765"  # what the pages show; the server here takes a free port


@dataclass
class Example:
    page: str
    line: int
    why_not: str | None
    commands: list[tuple[str, list[str]]] = field(default_factory=list)  # (command, what it prints when shown)

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def examples() -> list[Example]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            if match["lang"] not in SHELLS:
                continue
            example = Example(page.relative_to(ROOT).as_posix(), text.count("\n", 0, match.start("body")), match["why"])
            lines = match["body"].splitlines()
            if match["lang"] == "console":
                for line in lines:
                    if line.startswith("$ "):
                        example.commands.append((line[2:], []))
                    elif example.commands:
                        example.commands[-1][1].append(line)
            else:
                command = ""
                for line in lines:
                    command += line
                    if command.endswith("\\"):
                        command = command[:-1] + " "
                        continue
                    if command.strip() and not command.lstrip().startswith("#"):
                        example.commands.append((command, []))
                    command = ""
            found.append(example)
    return found


def test_every_shell_block_has_commands_and_unrun_ones_say_why():
    found = examples()
    assert len(found) >= 8
    for example in found:
        assert example.commands, f"{example.name}: a shell block with no command"
        assert example.why_not is None or len(example.why_not) > 10, f"{example.name}: say why it is not run"
    assert sum(e.why_not is None for e in found) >= 3  # the serve session, the directory and the tables examples


def claude_project(folder: Path) -> Path:
    """A Claude Code project: a session compacted once (its id holds 3f2a, as docs/formats.md's
    --session picks it) and a short one."""
    rows = cc.timed(cc.compacted())
    cc.write_jsonl(
        folder / "3f2a9c1e-compacted.jsonl", [dict(row, sessionId="3f2a9c1e", gitBranch="main") for row in rows]
    )
    simple = [cc.user("u1", None, "hello"), cc.assistant("a1", "u1", "r9", [cc.text("hi")], stop="end_turn")]
    cc.write_jsonl(
        folder / "b7d0-simple.jsonl", [dict(row, sessionId="b7d0", timestamp="2026-11-12T10:00:00Z") for row in simple]
    )
    return folder


@pytest.fixture
def sandbox(tmp_path):
    """The folder the examples run in, and their environment."""
    (tmp_path / "samples").symlink_to(ROOT / "samples", target_is_directory=True)
    claude_project(tmp_path / "home" / ".claude" / "projects" / "-home-me-src-app")
    shutil.copytree(tmp_path / "home" / ".claude" / "projects" / "-home-me-src-app", tmp_path / "sessions")
    env = dict(os.environ, HOME=str(tmp_path / "home"), COLUMNS="100", TZ="UTC", LC_ALL="C.UTF-8")
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "PI_CODING_AGENT_DIR", "QWEN_RUNTIME_DIR"):
        env.pop(name, None)
    bin_dir = os.path.dirname(sys.executable)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    if not os.path.exists(os.path.join(bin_dir, "tokprof")):
        pytest.skip("tokprof is not installed beside this interpreter (pip install -e .)")
    return tmp_path, env


def _server(command: str, cwd: Path, env: dict) -> tuple[subprocess.Popen, str, str]:
    """``tokprof serve`` on a free port: the process, the line it printed at start, its port."""
    proc = subprocess.Popen(
        ["bash", "-c", "exec " + command + " --port 0"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().rstrip("\n")
    port = re.search(r"127\.0\.0\.1:(\d+)", line)
    if port is None:
        proc.kill()
        proc.wait(10)
        raise AssertionError(f"`{command}` printed {line!r}")
    return proc, line, port.group(1)


@pytest.mark.parametrize("example", [e for e in examples() if e.why_not is None], ids=lambda e: e.name)
def test_the_example_runs_as_written(example, sandbox):
    folder, env = sandbox
    servers: list[subprocess.Popen] = []
    port = PORT
    try:
        for command, shown in example.commands:
            if command.startswith("tokprof serve"):
                proc, said, port = _server(command, folder, env)
                servers.append(proc)
                printed = [said]
            else:
                if command.split()[0] == "curl" and shutil.which("curl") is None:
                    pytest.skip("curl is not installed")
                done = subprocess.run(
                    ["bash", "-c", command.replace(f"127.0.0.1:{PORT}", f"127.0.0.1:{port}")],
                    cwd=folder,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=300,
                    check=False,
                )
                assert done.returncode == 0, f"{example.name}: `{command}` exits {done.returncode}:\n{done.stderr}"
                printed = (done.stdout + done.stderr).splitlines()
            if shown:
                real = [line.rstrip().replace(f"127.0.0.1:{port}", f"127.0.0.1:{PORT}") for line in printed]
                assert real == [line.rstrip() for line in shown], f"{example.name}: `{command}`"
    finally:
        for proc in servers:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            if proc.stdout is not None:
                proc.stdout.close()
