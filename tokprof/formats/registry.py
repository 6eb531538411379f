"""The log formats tokprof reads: one line per reader module, in the order detection tries them (most
specific first). A format's name, description, detection, reader and its agent's folders are declared
in its module (``LOG_FORMAT``, :class:`tokprof.formats.reader.LogFormat`); everything else is derived
from these declarations."""

from __future__ import annotations

import importlib
from functools import cache

from tokprof.formats.locations import Location
from tokprof.formats.reader import KINDS, LogFormat

#: The reader modules, in the order detection tries them: a new format is its module and a line here.
MODULES = (
    "tokprof.formats.inspect_ai",
    "tokprof.formats.amp",
    "tokprof.formats.droid",
    "tokprof.formats.codebuff",
    "tokprof.formats.continue_dev",
    "tokprof.formats.cursor_agent",
    "tokprof.formats.gemini_cli",
    "tokprof.formats.qwen_code",
    "tokprof.formats.cline",
    "tokprof.formats.pi",
    "tokprof.formats.openhands",
    "tokprof.formats.kimi_code",
    "tokprof.formats.kimi_cli",
    "tokprof.formats.copilot_cli",
    "tokprof.formats.aider",
    "tokprof.formats.otel",
    "tokprof.formats.goose",
    "tokprof.formats.hermes",
    "tokprof.formats.kilo_cli",
    "tokprof.formats.crush",
    "tokprof.formats.zed",
    "tokprof.formats.cursor",
    "tokprof.formats.opencode",
    "tokprof.formats.claude_print",
    "tokprof.formats.claude_code",
    "tokprof.formats.codex",
    "tokprof.formats.swe_agent",
    "tokprof.formats.anthropic",
    "tokprof.formats.openai_responses",
    "tokprof.formats.openai_chat",
)


@cache
def shipped() -> tuple[LogFormat, ...]:
    """The declarations of the formats tokprof ships, in detection order."""
    return tuple(importlib.import_module(module).LOG_FORMAT for module in MODULES)


#: Formats added by :func:`add_format` in this process (another package's reader, or a test's).
_ADDED: list[LogFormat] = []


def add_format(declared: LogFormat) -> None:
    """Add a format declared outside the package (or replace the one added under its name): detection
    tries it before the shipped ones, which are more general (a JSONL of chat requests is also many
    an agent's)."""
    if any(f.name == declared.name for f in shipped()):
        raise ValueError(f"a format named {declared.name!r} ships with tokprof")
    _ADDED[:] = [f for f in _ADDED if f.name != declared.name] + [declared]


def remove_format(name: str) -> None:
    """Remove a format :func:`add_format` added."""
    _ADDED[:] = [f for f in _ADDED if f.name != name]


def formats() -> tuple[LogFormat, ...]:
    """Every format's declaration, in detection order: the added ones, then the shipped ones."""
    return (*_ADDED, *shipped())


def names() -> tuple[str, ...]:
    """The formats' names, in detection order (what ``-i`` takes)."""
    return tuple(f.name for f in formats())


def session_names() -> tuple[str, ...]:
    """The formats whose files are agent sessions, in detection order."""
    return tuple(f.name for f in formats() if f.sessions)


def by_name(name: str) -> LogFormat:
    """A format by its name (KeyError for another)."""
    for found in formats():
        if found.name == name:
            return found
    raise KeyError(name)


def listed() -> tuple[str, ...]:
    """The formats' names in the order messages list them: API captures, evaluation logs, then the agents'
    own session files, each kind in detection order."""
    return tuple(f.name for kind in KINDS for f in formats() if f.kind == kind)


#: Agents' folders registered by other packages (:func:`register`), after the readers' own.
_REGISTERED: list[Location] = []


def register(location: Location) -> None:
    """Add (or replace, by agent name) an agent's folder that no reader of tokprof declares."""
    _REGISTERED[:] = [row for row in _REGISTERED if row.agent != location.agent] + [location]


def locations() -> list[Location]:
    """Where every agent keeps its sessions: the readers' declarations, then the registered ones (a
    registered agent replaces a reader's of the same name)."""
    registered = {row.agent for row in _REGISTERED}
    return [row for f in formats() for row in f.locations if row.agent not in registered] + _REGISTERED


def agents() -> tuple[str, ...]:
    """The agents ``tokprof sessions --agent`` takes (an agent may have several folders)."""
    return tuple(dict.fromkeys(row.agent for row in locations()))


def _folders(location: Location) -> list[str]:
    """A location's sessions folders as the docs show them: below the home directory, globs kept."""
    if location.default:
        return [f"~/{location.default}"]
    found = []
    for pattern in location.patterns:
        parts = pattern.split("/")[:-1]
        while parts and "*" in parts[-1]:
            parts.pop()
        found.append("/".join(["~", *parts]))
    return found


def _cell(text: str) -> str:
    """Text in a Markdown table cell, shown as written (``<id>``, ``*`` and ``|`` kept from markup)."""
    if text.startswith("`"):
        return text
    return text.replace("|", "\\|").replace("*", "\\*").replace("<", "&lt;").replace(">", "&gt;")


def docs_table() -> str:
    """The formats as docs/formats.md lists them (tests/test_plugins.py checks the docs hold it): each
    format's name, what its log is, what the log records and where its agent keeps it, from the
    declarations alone, in the order messages list them."""
    rows = [
        "| `--input-format` | kind | what | what it records | where (Linux, macOS, Windows; `$VAR` moves it) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name in listed():
        found = by_name(name)
        folders = dict.fromkeys(f"`{folder}`" for row in found.locations for folder in _folders(row))
        moved = dict.fromkeys(f"`${row.env}`" for row in found.locations if row.env)
        where = ", ".join(folders) + (f" ({', '.join(moved)})" if moved else "") if folders else "a file you name"
        cells = (f"`{name}`", found.kind, found.description, found.records_what or "see below", where)
        rows.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(rows) + "\n"
