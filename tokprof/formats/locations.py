"""Where each agent keeps its sessions on this machine: a small registry, one row per agent.

A row names the agent, the folder it writes sessions to (below the home directory, or below the
folder an environment variable names, when the agent reads one), and the file pattern of its
sessions there. :func:`session_files` lists the files of every row (or one agent's), recognised by
content (:func:`tokprof.formats.discovery.session_format`): a file in an agent's folder that is not
a session of a format tokprof reads is not listed. Readers of other agents add their row with
:func:`register` (``register(Location("cline", ...))``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Location:
    agent: str  # the name ``--agent`` takes
    default: str  # the sessions folder below the home directory
    patterns: tuple[str, ...]  # the session files below that folder (Path.glob patterns)
    env: str | None = None  # the environment variable that moves the folder, if the agent reads one
    below_env: str = ""  # the sessions folder below the folder that variable names
    #: The project of a session: the name of the folder this many levels above the file (0: none).
    project_depth: int = 1
    #: File names that are not sessions of their own (Claude Code's ``agent-*.jsonl`` subagents are read
    #: with their session).
    skip: tuple[str, ...] = ()
    several: bool = False  # the variable may list several folders, comma-separated (Claude Code's)

    def roots(self, home: Path, environ: Mapping[str, str]) -> list[Path]:
        """The agent's sessions folders: below the variable's folder (folders, for a variable that lists
        several) when it is set, else below the home directory."""
        value = environ.get(self.env, "") if self.env else ""
        if value.strip():
            parts = value.split(",") if self.several else [value]
            return [Path(part.strip()).expanduser() / self.below_env for part in parts if part.strip()]
        return [home / self.default]

    def project(self, path: Path) -> str:
        if self.project_depth <= 0:
            return ""
        parents = path.parents
        return parents[self.project_depth - 1].name if len(parents) >= self.project_depth else ""


#: Where VS Code and its forks keep an extension's storage, below the home directory: Linux, macOS,
#: Windows (``%APPDATA%`` is ``AppData/Roaming``). ``*`` is the application's folder: ``Code``, ``Code -
#: Insiders``, ``VSCodium``, ``Cursor``, ``Windsurf``, ``Trae``, ``Kiro``, ... whichever are there.
EDITOR_STORAGE = (
    ".config/*/User/globalStorage",
    "Library/Application Support/*/User/globalStorage",
    "AppData/Roaming/*/User/globalStorage",
)
CLINE_TASK = "*/api_conversation_history.json"  # a Cline-family task: tasks/<task id>/


def vscode_tasks(extension: str) -> tuple[str, ...]:
    """The task folders of a Cline-family extension (by its id) in every VS Code-like editor."""
    return tuple(f"{storage}/{extension}/tasks/{CLINE_TASK}" for storage in EDITOR_STORAGE)


LOCATIONS: list[Location] = [
    Location(
        "claude-code",
        ".claude/projects",
        ("*/*.jsonl",),
        env="CLAUDE_CONFIG_DIR",
        below_env="projects",
        skip=("agent-",),
        several=True,
    ),
    Location(
        "codex", ".codex/sessions", ("**/rollout-*.jsonl",), env="CODEX_HOME", below_env="sessions", project_depth=0
    ),
    Location(
        "gemini-cli",
        ".gemini/tmp",
        ("*/chats/session-*.json", "*/chats/session-*.jsonl", "*/chats/*/*.jsonl"),
        env="GEMINI_CLI_HOME",
        below_env=".gemini/tmp",
        project_depth=2,
    ),
    Location(
        "qwen-code",
        ".qwen/projects",
        ("*/chats/*.jsonl",),
        env="QWEN_RUNTIME_DIR",
        below_env="projects",
        project_depth=2,
    ),
    Location("pi", ".pi/agent/sessions", ("*/*.jsonl",), env="PI_CODING_AGENT_DIR", below_env="sessions"),
    # OpenCode: its SQLite store (read for its newest main session), and the older storage/ files
    Location(
        "opencode",
        ".local/share/opencode",
        ("opencode.db", "storage/session/*/*.json"),
        env="XDG_DATA_HOME",
        below_env="opencode",
        project_depth=0,
    ),
    *(
        Location(agent, "", vscode_tasks(extension), project_depth=0)
        for agent, extension in (
            ("cline", "saoudrizwan.claude-dev"),
            ("roo", "rooveterinaryinc.roo-cline"),
            ("kilo", "kilocode.kilo-code"),
        )
    ),
    # Cline's CLI data folder: CLINE_DATA_DIR, else CLINE_DIR/data, else ~/.cline/data
    Location("cline", ".cline/data/tasks", (CLINE_TASK,), env="CLINE_DATA_DIR", below_env="tasks", project_depth=0),
    Location("cline", ".cline/data/tasks", (CLINE_TASK,), env="CLINE_DIR", below_env="data/tasks", project_depth=0),
]


def register(location: Location) -> None:
    """Add (or replace, by agent name) an agent's row (its rows, for an agent with several)."""
    LOCATIONS[:] = [row for row in LOCATIONS if row.agent != location.agent] + [location]


def agents() -> tuple[str, ...]:
    return tuple(dict.fromkeys(row.agent for row in LOCATIONS))  # an agent may have several rows


@dataclass(frozen=True)
class SessionFile:
    agent: str
    format: str  # the format tokprof reads it as
    path: Path
    project: str


def session_files(
    agent: str | None = None, home: Path | None = None, environ: Mapping[str, str] | None = None
) -> list[SessionFile]:
    """Every agent's session files in its folder (or one agent's), recognised by content."""
    from tokprof.formats.discovery import session_format

    home = Path.home() if home is None else home
    environ = os.environ if environ is None else environ
    out: list[SessionFile] = []
    seen: set[Path] = set()
    for row in LOCATIONS:
        if agent is not None and row.agent != agent:
            continue
        for root in row.roots(home, environ):
            if not root.is_dir():
                continue
            for pattern in row.patterns:
                for path in sorted(root.glob(pattern)):
                    real = path.resolve()
                    if real in seen or not path.is_file() or path.name.startswith(row.skip or ("\0",)):
                        continue
                    seen.add(real)
                    kind = session_format(path)
                    if kind is not None:
                        out.append(SessionFile(row.agent, kind, path, row.project(path)))
    return out
