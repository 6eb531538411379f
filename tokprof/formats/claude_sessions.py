"""Where Claude Code keeps its transcripts: the session files of a project folder, and the subagent
transcripts read with each session (see :mod:`tokprof.formats.claude_code`)."""

from __future__ import annotations

from pathlib import Path

from tokprof.formats.jsonfile import parse_or

#: Line types that mark a Claude Code transcript (for detection), with the fields that identify one.
SNIFF_TYPES = ("user", "assistant", "system", "summary", "progress", "file-history-snapshot", "queue-operation")
SNIFF_FIELDS = ("sessionId", "uuid")


def sessions(directory: Path) -> list[Path]:
    """The session transcripts in a Claude Code project folder, or in every project folder under a
    directory (``~/.claude/projects``), sorted by path.

    Every ``*.jsonl`` file directly in a project folder whose first lines are Claude Code lines is a
    session, except subagent transcripts, which :func:`read` reads with their session:
    ``<session>/subagents/*.jsonl`` are in the session's own folder (not searched), and an
    ``agent-*.jsonl`` file (Claude Code 2.0) is listed only when no session file in the folder has
    its ``sessionId`` (its session is missing, so it would be read by no session).
    """
    directory = Path(directory)
    folders = [directory] + sorted(p for p in directory.rglob("*") if p.is_dir())
    found: list[Path] = []
    for folder in folders:
        parts = folder.relative_to(directory).parts
        # a session's own folder (beside <session>.jsonl) holds its subagents: read with the session
        if any((directory.joinpath(*parts[:i]) / (parts[i] + ".jsonl")).is_file() for i in range(len(parts))):
            continue
        found += _project_sessions(folder)
    return found


def _project_sessions(folder: Path) -> list[Path]:
    peeked = [(p, peek(p)) for p in sorted(folder.glob("*.jsonl")) if p.is_file()]
    files = [(p, session) for p, (is_transcript, session) in peeked if is_transcript]
    known = {session for p, session in files if not p.name.startswith("agent-")} - {None}
    return [p for p, session in files if not p.name.startswith("agent-") or session not in known]


def peek(path: Path, lines: int = 50) -> tuple[bool, str | None]:
    """Whether the first lines of a file are Claude Code lines, and the first ``sessionId`` among them
    (without loading the whole file)."""
    found, session = False, None
    try:
        with open(path, encoding="utf-8-sig") as f:
            for _, text in zip(range(lines), f):
                record = parse_or(text)
                if not isinstance(record, dict):
                    continue
                found = found or record.get("type") in SNIFF_TYPES
                if isinstance(record.get("sessionId"), str):
                    return found, record["sessionId"]
    except OSError:
        # unreadable: listed anyway when it is named like a session, so that it is reported as skipped
        return path.suffix == ".jsonl" and not path.name.startswith("rollout-"), None
    except UnicodeDecodeError:  # not text: not a transcript
        return False, None
    return found, session


def subagent_files(path: Path, session: str | None) -> list[Path]:
    """The subagent transcripts of a session file: ``<session>/subagents/*.jsonl`` beside it, and
    ``agent-*.jsonl`` files beside it with the same ``sessionId``."""
    if path.name.startswith("agent-") or path.parent.name == "subagents":
        return []  # a subagent transcript read on its own
    folder = path.parent / path.stem / "subagents"
    files = sorted(p for p in folder.glob("*.jsonl") if p.is_file()) if folder.is_dir() else []
    if session is not None:
        siblings = sorted(path.parent.glob("agent-*.jsonl"))
        files += [p for p in siblings if p.is_file() and peek(p)[1] == session]
    return files
