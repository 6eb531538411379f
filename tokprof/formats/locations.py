"""Where an agent keeps its sessions on this machine, as a reader declares it (``LOG_FORMAT.locations``).

A :class:`Location` names the agent, the folder it writes sessions to (below the home directory, or
below the folder an environment variable names, when the agent reads one), and the file pattern of
its sessions there. :func:`tokprof.formats.discovery.session_files` lists the files of every agent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
    #: The session files an index file lists, when the agent keeps an index rather than a folder of
    #: sessions (Crush's ``projects.json``): given the sessions folder, the files (``patterns`` name the index).
    index: Callable[[Path], list[Path]] | None = None
    #: The format of this folder's files when they are not sessions of a session format (Copilot CLI's
    #: OpenTelemetry file export: ``otel``): each file is listed when that format recognises it.
    format: str | None = None

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
