"""The sessions of a directory, found by content: every ``.jsonl``, ``.json`` and ``.traj`` file below
it is sniffed from its first lines as a session of an agent tokprof reads (a Claude Code transcript, a
Codex rollout, an SWE-agent trajectory, ...), whatever its name; every other such file is listed with
why it is not read.

* Files are found at any depth (``Path.rglob``: a symlinked folder is not entered, a symlinked file
  is found; a file reached twice is listed once, by its resolved path).
* A Cline, Roo Code or Kilo Code task folder's ``api_conversation_history.json`` is a session, known
  by its name; the folder's other files (``ui_messages.json``, ``task_metadata.json``, ...) are read
  with it and not listed.
* A Claude Code session's own folder (``<session>/`` beside ``<session>.jsonl``) holds its
  subagent transcripts, read with the session: it is not searched. An ``agent-*.jsonl`` transcript
  beside a session with its ``sessionId`` (Claude Code 2.0) is read with that session; one whose
  session is not in the folder is a session of its own.
* Sniffing reads the first 64 KB and at most 20 lines (within 16 MB) of a file, never a whole large
  file: the session readers' own ``sniff`` decides on those lines. A Gemini CLI session file, an
  SWE-agent trajectory or a document that starts like another session format's (``LogFormat.starts``:
  Amp, Continue, Codebuff; one JSON value) larger than the peek is parsed whole up to 16 MB; a ``.traj``
  file that starts like a trajectory is one, whatever its size. A file that is not a session is
  skipped with a reason: ``not a session of an agent tokprof reads: looks like …`` (what it looks like,
  see :mod:`tokprof.formats.lookalike`; a log of another format tokprof reads says so), or
  ``unreadable: …``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import tokprof.base.bounded as bounded
from tokprof.base.errors import InputError
from tokprof.formats import lookalike
from tokprof.formats.jsonfile import Document, Lines, parse
from tokprof.formats.agent_db import SQLITE_MAGIC
from tokprof.formats.lookalike import HEAD_BYTES, Lookalike
from tokprof.formats.reader import LogFormat

SUFFIXES = (".jsonl", ".json", ".traj")
PEEK_LINES = 20
PEEK_BYTES = 16 * 1024 * 1024
NOT_SESSION = "not a session of an agent tokprof reads"  # the agents are too many to name in one line


@dataclass
class Found:
    """A directory's sessions (format, file) and the files that are not read, with why."""

    sessions: list[tuple[str, Path]] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)


@dataclass
class _Peek:
    format: str | None = None  # the session format, when the file is a session
    session: str | None = None  # a Claude Code transcript's first sessionId
    reason: str | None = None  # why it is not a session


def scan(directory: str | Path) -> Found:
    from tokprof.formats.registry import session_names

    root = Path(directory)
    found = Found()
    seen: set[Path] = set()
    own_folders: dict[Path, bool] = {}
    peeked: list[tuple[Path, _Peek]] = []
    for path in sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES):
        if not path.is_file() or _in_session_folder(root, path, own_folders) or _task_companion(path):
            continue
        real = path.resolve()  # a symlinked file or folder is one file, listed once
        if real in seen:
            continue
        seen.add(real)
        peeked.append((path, _peek(path)))
    # Claude Code 2.0 subagent files beside their session are read with it
    sessions_by_folder: dict[Path, set[str]] = {}
    for path, peek in peeked:
        if peek.format == "claude-code" and not path.name.startswith("agent-") and peek.session:
            sessions_by_folder.setdefault(path.parent, set()).add(peek.session)
    by_format: dict[str, list[Path]] = {}
    for path, peek in peeked:
        if peek.format is None:
            found.skipped.append((path, peek.reason or NOT_SESSION))
            continue
        if peek.format == "claude-code" and path.name.startswith("agent-"):
            if peek.session in sessions_by_folder.get(path.parent, set()):
                continue
        by_format.setdefault(peek.format, []).append(path)
    for name in session_names():
        found.sessions += [(name, path) for path in by_format.get(name, [])]
    return found


def session_format(path: Path) -> str | None:
    """The session format of one file, recognised from its first lines (None: not a session); a file
    that is no JSON (an aider history: its name, or Markdown) by the session format whose ``opens`` takes it."""
    from tokprof.formats.registry import formats

    path = Path(path)
    for found in formats():
        if found.sessions and found.opens is not None and (path.name in found.file_names or path.suffix == ".md"):
            if found.opens(str(path)):
                return found.name
    return _peek(path).format


def _task_companion(path: Path) -> bool:
    """Whether a file is one of a Cline-family task folder's other files (read with its history), or a
    Droid session's settings beside its transcript (read with it)."""
    from tokprof.formats.cline import COMPANIONS, HISTORY
    from tokprof.formats.droid import SETTINGS

    if path.name.endswith(SETTINGS):
        return path.with_name(path.name.removesuffix(SETTINGS) + ".jsonl").is_file()
    return path.name in COMPANIONS and (path.parent / HISTORY).is_file()


def _in_session_folder(root: Path, path: Path, cache: dict[Path, bool]) -> bool:
    """Whether a file is below a session's own folder (``<session>/`` beside ``<session>.jsonl``)."""
    parts = path.parent.relative_to(root).parts
    for i in range(len(parts)):
        folder = root.joinpath(*parts[: i + 1])
        if folder not in cache:
            cache[folder] = folder.with_name(folder.name + ".jsonl").is_file()
        if cache[folder]:
            return True
    return False


def _peek(path: Path, opener: Any = None) -> _Peek:
    """What a file is; ``opener`` opens it when it is not a local file (a URL: tokprof.formats.remote)."""
    try:
        with opener() if opener is not None else bounded.open_input(path) as f:
            head = f.read(HEAD_BYTES)
            if lookalike.is_blank(head):
                return _Peek(reason=f"{NOT_SESSION}: the file is empty")
            if opener is None and head.startswith(SQLITE_MAGIC):
                return _store(path)
            if not lookalike.starts_like_json(head):
                return _Peek(reason=_not_session(path, lookalike.of_text(path.name, head)))
            whole = len(head) < HEAD_BYTES
            named = _named_session(path)  # a session format's own file name (a Cline task's history): known by it
            if named is not None:
                return _Peek(format=named)
            f.seek(0)
            values = _first_values(f)
    except OSError as exc:
        return _Peek(reason=f"unreadable: {exc.strerror or exc}")
    if values:
        return _classify(path, Document(lines=Lines(values)))
    if whole:  # one JSON document, small enough that parsing it is peeking
        try:
            value = parse(head.decode("utf-8-sig"))
        except ValueError:  # not UTF-8, not JSON, nested too deeply
            return _Peek(reason=f"{NOT_SESSION}: not valid JSON in its first lines")
        return _classify(path, Document(value=value))
    if _large_trajectory(path, head):
        return _Peek(format="swe-agent")
    if _whole_document_is_a_session(path, head):
        try:
            return _classify(path, Document(value=parse(bounded.read_bytes(path, "log").decode("utf-8-sig"))))
        except (OSError, ValueError):
            return _Peek(reason=f"{NOT_SESSION}: not valid JSON")
    return _Peek(
        reason=_not_session(path, lookalike.of_json_head(path.name, head), "a JSON document (only its start was read)")
    )


def _store(path: Path) -> _Peek:
    """An agent's SQLite store (OpenCode's, Goose's, ...): the session format that opens it."""
    from tokprof.formats.registry import formats

    for found in formats():
        if found.sessions and found.opens is not None and found.opens(os.fspath(path)):
            return _Peek(format=found.name)
    return _Peek(reason=_not_session(path, lookalike.of_text(path.name, SQLITE_MAGIC)))


def _named_session(path: Path) -> str | None:
    """The session format whose JSON files have this name whatever their content (``LogFormat.file_names``:
    a Cline task's history, one JSON list often larger than a peek)."""
    from tokprof.formats.registry import formats

    return next((f.name for f in formats() if f.sessions and path.name in f.file_names), None)


def _large_trajectory(path: Path, head: bytes) -> bool:
    """A ``.traj`` file that starts like an SWE-agent trajectory, too large to peek at whole: 1.x
    trajectories record every step's whole query and often outgrow any peek. Its name and start are
    taken as enough; reading it says precisely what is wrong, if anything."""
    from tokprof.formats.swe_agent import starts_like_trajectory

    return path.suffix == ".traj" and starts_like_trajectory(head)


def _whole_document_is_a_session(path: Path, head: bytes) -> bool:
    """A JSON document that starts like a Gemini CLI session file, an SWE-agent trajectory or another
    session format's document (its ``LogFormat.starts``: an Amp thread, a Continue session, a Codebuff
    chat; one object written whole, often larger than the peek), at most :data:`PEEK_BYTES` long: it
    is parsed whole to be sure."""
    from tokprof.formats.gemini_cli import starts_like_session
    from tokprof.formats.registry import formats
    from tokprof.formats.swe_agent import starts_like_trajectory

    def starts_like_another(head: bytes) -> bool:
        return any(f.sessions and f.starts is not None and f.starts(head) for f in formats())

    try:
        known = starts_like_session(head) or starts_like_trajectory(head) or starts_like_another(head)
        return known and path.stat().st_size <= PEEK_BYTES
    except OSError:
        return False


def _first_values(f: Any) -> list[tuple[int, Any]]:
    """The values of the first lines that parse as JSON, when the file is JSON lines (its first line
    is a whole value; a pretty-printed document's is not, and none of its lines counts)."""
    values: list[tuple[int, Any]] = []
    budget = PEEK_BYTES
    for number in range(1, PEEK_LINES + 1):
        raw = f.readline(budget)
        if not raw:
            break
        budget -= len(raw)
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8").strip()
            if text:
                values.append((number, parse(text)))
        except ValueError:
            if not values:
                return []  # the first line is not a value of its own: not JSON lines
        if budget <= 0:
            break
    return values


def _classify(path: Path, doc: Document) -> _Peek:
    from tokprof.formats.registry import formats

    for found_format in formats():
        if found_format.sessions and sniffs(found_format, doc):
            name = found_format.name
            return _Peek(format=name, session=_first_session(doc) if name == "claude-code" else None)
    other = next((f.name for f in formats() if not f.sessions and sniffs(f, doc)), None)
    if other is not None:
        return _Peek(
            reason=f"{NOT_SESSION}: a log of format {other} (profile it on its own: tokprof profile FILE)".replace(
                "FILE", str(path)
            )
        )
    try:
        if doc.lines is not None:
            found = lookalike.of_lines(path.name, [value for _, value in doc.lines])
        else:
            found = lookalike.of_json(path.name, doc.value)
    except Exception:  # telling what a file looks like never fails
        found = None
    kind = "JSON lines" if path.suffix == ".jsonl" else "JSON"
    return _Peek(reason=_not_session(path, found, f"{kind} of no format tokprof reads"))


def _first_session(doc: Document) -> str | None:
    for _, value in doc.lines or ():
        if isinstance(value, dict) and isinstance(value.get("sessionId"), str):
            return value["sessionId"]
    return None


def _not_session(path: Path, found: Lookalike | None, otherwise: str = "") -> str:
    if found is not None:
        return f"{NOT_SESSION}: {found.phrase(os.fspath(path))}"
    return f"{NOT_SESSION}: looks like {otherwise}" if otherwise else NOT_SESSION


def _read_as(path: Path, name: str) -> bool:
    """Whether the named format recognises a file from its first lines (a location's own format)."""
    from tokprof.formats.registry import by_name

    try:
        with bounded.open_input(path) as f:
            values = _first_values(f)
    except OSError:
        return False
    return bool(values) and sniffs(by_name(name), Document(lines=Lines(values)))


def sniffs(found: LogFormat, doc: Document) -> bool:
    """A format's guess; a guess that fails on odd input is a no, never a traceback."""
    try:
        return bool(found.sniff(doc))
    except Exception:
        return False


@dataclass(frozen=True)
class SessionFile:
    agent: str
    format: str  # the format tokprof reads it as
    path: Path
    project: str


def local_session_files(
    agent: str | None = None, home: Path | None = None, environ: Mapping[str, str] | None = None
) -> list[SessionFile]:
    """Every agent's session files in its folder (or one agent's), recognised by content: a file in an
    agent's folder that is not a session of a format tokprof reads is not listed."""
    from tokprof.formats.registry import locations

    home = Path.home() if home is None else home
    environ = os.environ if environ is None else environ
    out: list[SessionFile] = []
    seen: set[Path] = set()
    for row in locations():
        if agent is not None and row.agent != agent:
            continue
        for root in row.roots(home, environ):
            if not root.is_dir() and not root.is_file():
                continue
            for pattern in row.patterns:  # a variable may name the session file itself (aider's)
                found = [root] if root.is_file() else sorted(root.glob(pattern))
                if row.index is not None:  # the files an index lists (Crush's projects.json)
                    found = [listed for index in found for listed in row.index(index.parent)]
                for path in found:
                    real = path.resolve()
                    if real in seen or not path.is_file() or path.name.startswith(row.skip or ("\0",)):
                        continue
                    seen.add(real)
                    kind = session_format(path)
                    if kind is None and row.format is not None and _read_as(path, row.format):
                        kind = row.format
                    if kind is not None:
                        out.append(SessionFile(row.agent, kind, path, row.project(path)))
    return out


def scan_url(url: str) -> Any:
    """The session files under a URL prefix, found by content, as :func:`tokprof.formats.scan_directory`
    finds them in a folder (URLs in place of paths; files beside a session are not looked for)."""
    from tokprof.formats.registry import session_names
    from tokprof.formats.remote import file_system, protocol_of, stream

    fs, root = file_system(url)
    try:
        keys = sorted(fs.find(root))
    except Exception as exc:  # no credentials, no bucket, no network: the store's own error, in one line
        raise InputError(url, None, f"cannot list: {type(exc).__name__}: {exc}") from None
    protocol = protocol_of(fs)
    found = Found()
    by_format: dict[str, list] = {}
    for key in keys:
        if PurePosixPath(key).suffix not in SUFFIXES:
            continue
        full = f"{protocol}://{key}" if protocol not in ("file", "local") else f"file://{key}"
        peek = _peek(PurePosixPath(full), lambda key=key: stream(fs.open(key, "rb")))  # type: ignore[arg-type]
        if peek.format is None:
            found.skipped.append((full, peek.reason or "not a session"))  # type: ignore[arg-type]
        else:
            by_format.setdefault(peek.format, []).append(full)
    for name in session_names():
        found.sessions += [(name, path) for path in by_format.get(name, [])]
    return found
