"""The explicit first pass of the Claude Code reader over a session's files, and where Claude Code
keeps them.

The reader (:mod:`tokprof.formats.claude_code.fold`) gives each call once its lines are read; what a
later line of the file would change is found here first, by a cheap pass over the file's bytes
before its lines are read (:func:`scan_file`):

* the model calls: every line that can be an assistant line (its bytes hold ``"assistant"``) is
  parsed, for its requestId, message id, prompt usage, uuid and time, and so is every
  ``compact_boundary`` and a progress line's copy of a subagent's response: each call's first and
  last line, which requestIds are reused (their calls told apart, as the rules say), which file
  counts a call found in several, and the order of every call (:func:`plan`);
* the links: where each ``"uuid"`` and ``"parentUuid"`` value is written (hashed, any depth), so that
  the reader waits for a line a call's chain needs that comes later in the file, and lets go of the
  lines before a compaction that no later line can reach;
* the session's id (its first ``sessionId``), which names the subagent transcripts beside it (2.0).

Lines are numbered as the reader numbers them; lines appended after the pass are not read. A response
the pass does not see (its type written with a JSON escape) is read all the same, and given last.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokprof.formats.jsonfile import lines_of, open_bytes, parse_or
from tokprof.formats.claude_code.lines import agent_copy_of, nested_key, prompt_usage
from tokprof.formats.neutral import parse_time

if TYPE_CHECKING:
    pass

#: Line types that mark a Claude Code transcript (for detection), with the fields that identify one.
SNIFF_TYPES = ("user", "assistant", "system", "summary", "progress", "file-history-snapshot", "queue-operation")
SNIFF_FIELDS = ("sessionId", "uuid")
SYNTHETIC_MODEL = "<synthetic>"


@dataclass(slots=True)
class Response:
    """An assistant line as the pass reads it."""

    number: int
    request: str | None
    message_id: str | None
    prompt_usage: tuple | None
    synthetic: bool
    uuid: str | None
    timestamp: Any  # as written (its time is read for a call's first line only)
    key: str = ""  # the call it belongs to (see :func:`plan`)


@dataclass(slots=True)
class Boundary:
    """A ``compact_boundary`` line."""

    number: int
    logical_parent: Any
    time: datetime | None


@dataclass(slots=True)
class Copy:
    """A progress line's copy of a subagent's response (``agent_progress``)."""

    number: int
    agent: str
    record: dict


class Links:
    """Where values of one field are written in a file, at any depth: the first and last line of each
    (by hash: two values that share a hash only make the reader wait longer)."""

    def __init__(self, flat: list[int] | None = None) -> None:
        import numpy as np  # only a session read whole needs it (not the status line)

        pairs = np.array(flat or [], dtype=np.int64).reshape(-1, 2)
        if len(pairs):
            order = np.lexsort((pairs[:, 1], pairs[:, 0]))
            pairs = pairs[order]
            keys = pairs[:, 0]
            starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
            ends = np.r_[starts[1:], len(keys)] - 1
            self.keys = keys[starts]
            self.first = pairs[starts, 1]
            self.last = pairs[ends, 1]
        else:
            self.keys = self.first = self.last = np.zeros(0, dtype=np.int64)

    def _at(self, value: str) -> int:
        h = hash(value)
        i = int(self.keys.searchsorted(h))
        return i if i < len(self.keys) and int(self.keys[i]) == h else -1

    def last_line(self, value: str | None) -> int:
        """The last line that may write ``value`` (0: none)."""
        if value is None:
            return 0
        i = self._at(value)
        return int(self.last[i]) if i >= 0 else 0

    def first_line(self, value: str | None) -> int:
        """The first line that may write ``value`` (0: none)."""
        if value is None:
            return 0
        i = self._at(value)
        return int(self.first[i]) if i >= 0 else 0


@dataclass
class FileScan:
    """What the pass found in one file."""

    path: str
    label: str  # the prefix of its places ("" for the session file)
    lines: int = 0  # the lines read (the reader reads no further)
    responses: list[Response] = field(default_factory=list)
    boundaries: list[Boundary] = field(default_factory=list)
    copies: list[Copy] = field(default_factory=list)
    session: str | None = None
    agent: str | None = None  # the first line's agentId
    uuids: Links = field(default_factory=Links)
    parents: Links = field(default_factory=Links)
    empty: bool = False  # no line at all (a subagent's file just created)


_UUID = b'"uuid"'
_PARENT = b'"parentUuid"'


_VALUES = {key: re.compile(re.escape(key) + rb'\s*:\s*"((?:[^"\\]|\\.)*)"') for key in (b'"uuid"', b'"parentUuid"')}


def _values(raw: bytes, key: bytes, number: int, out: list[int]) -> None:
    """The string values written after ``key`` in a line, as (hash, line) pairs in ``out``."""
    for token in _VALUES[key].findall(raw):
        if 92 in token:  # an escape: decoded as JSON decodes it
            value = parse_or('"' + token.decode("utf-8", "replace") + '"')
        else:
            value = token.decode("utf-8", "replace")
        if isinstance(value, str):
            out.append(hash(value))
            out.append(number)


def _wanted(raw: bytes) -> bool:
    return b'"assistant"' in raw or b"compact_boundary" in raw


def scan_file(path: str, label: str = "") -> FileScan:
    """One pass over a transcript's bytes (see the module's text); a file that cannot be read is
    found empty (the reader says what is wrong with it when it reads it)."""
    found = FileScan(path, label)
    uuids: list[int] = []
    parents: list[int] = []
    try:
        with open_bytes(path) as handle:
            number = 0
            for raw in lines_of(handle, path):
                number += 1
                if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]
                if _UUID in raw:
                    _values(raw, _UUID, number, uuids)
                if _PARENT in raw:
                    _values(raw, _PARENT, number, parents)
                if _wanted(raw) or (found.session is None and b'"sessionId"' in raw) or number == 1:
                    _read(found, number, raw)
            found.lines = number
    except Exception:  # noqa: BLE001 - the reader reports it, at its line
        pass
    found.empty = found.lines == 0
    found.uuids = Links(uuids)
    found.parents = Links(parents)
    return found


def _read(found: FileScan, number: int, raw: bytes) -> None:
    try:
        record = json.loads(raw)
    except Exception:  # noqa: BLE001 - not JSON (a line cut off, or too deep): the reader says so at its line
        return
    if not isinstance(record, dict):
        return
    if number == 1 and isinstance(record.get("agentId"), str):
        found.agent = record["agentId"]
    if found.session is None and isinstance(record.get("sessionId"), str):
        found.session = record["sessionId"]
    kind = record.get("type")
    if kind == "assistant":
        message = record.get("message")
        if not isinstance(message, dict):
            return
        request, message_id = record.get("requestId"), message.get("id")
        uuid = record.get("uuid")
        found.responses.append(
            Response(
                number,
                request if isinstance(request, str) and request else None,
                message_id if isinstance(message_id, str) and message_id else None,
                prompt_usage(message.get("usage")),
                message.get("model") == SYNTHETIC_MODEL or record.get("isApiErrorMessage") is True,
                uuid if isinstance(uuid, str) else None,
                record.get("timestamp"),
            )
        )
    elif kind == "system" and record.get("subtype") == "compact_boundary":
        found.boundaries.append(Boundary(number, record.get("logicalParentUuid"), parse_time(record.get("timestamp"))))
    elif kind == "progress":
        copied = agent_copy_of(record)
        if copied is not None and copied[2].get("type") == "assistant":
            found.copies.append(Copy(number, str(copied[0]), copied[2]))


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


# -- the plan: every call, its key, the file that counts it, and the order the calls are given -------
@dataclass(slots=True)
class Planned:
    """A call the reader gives: its file (0 the session, k the k-th transcript beside it, -t the t-th
    thread rebuilt from progress lines), key, first and last line, time and place in its file's order."""

    file: int
    key: str
    first: int
    last: int
    time: datetime | None
    position: float
    index: int = 0


@dataclass(slots=True)
class Match:
    """A compaction transcript's call: its key, its boundary's line (None: none matched), the uuid of
    the session line it continues from (None: the line before its boundary) and its place among the
    session's calls."""

    key: str
    boundary: int | None
    anchor: str | None
    position: float


@dataclass
class Plan:
    order: list[Planned]  # every call, in the order given
    calls: dict[tuple[int, str], Planned]  # (file, key) -> the call
    owners: dict[str, int]  # key -> the file that counts it
    reused: dict[str, dict[str | None, set[tuple]]]  # as Prompts.reused
    keys: dict[tuple[str, int], str]  # (label, line) -> the key of a response line whose requestId is reused
    positional: set[str]
    reuse_notes: list[str]  # the places of the request-id-reused notes, in order
    threads: dict[tuple[int, str], int]  # (file, agent) of a thread rebuilt from progress -> its last copy's line
    matches: dict[int, list[Match] | None]  # compaction transcripts: their calls (None: read as a subagent)

    @property
    def thread_calls(self) -> dict[str, Planned]:
        """The calls of the threads rebuilt from progress lines, by key."""
        return {key: call for (file, key), call in self.calls.items() if file < 0}


def fallback_key(label: str, response: Response) -> str:
    """A response line's key when it has neither requestId nor message id (as ``lines.call_key``)."""
    return f"{label}line {response.number} ({response.uuid or '#' + str(response.number)})"


def _responses(scan: FileScan) -> list[Response]:
    """A file's response lines that are model calls, each uuid once (a repeat is skipped)."""
    seen: set[str] = set()
    out = []
    for response in scan.responses:
        if response.uuid is not None:
            if response.uuid in seen:
                continue
            seen.add(response.uuid)
        if not response.synthetic:
            out.append(response)
    return out


def _copies(scan: FileScan) -> list[Copy]:
    seen: set[str] = set()
    out = []
    for copy in scan.copies:
        uuid = copy.record.get("uuid")
        if isinstance(uuid, str):
            if uuid in seen:
                continue
            seen.add(uuid)
        out.append(copy)
    return out


def plan(files: list[FileScan], compactions: dict[int, list[Match] | None]) -> Plan:
    """The calls of a session file (``files[0]``) and the transcripts beside it, as the rules make
    them: requestIds reused told apart, each call counted in the first file that has it, a
    compaction call at its boundary, every call merged in time order (:func:`neutral.in_time_order`)."""
    from tokprof.formats.neutral import in_time_order

    responses = [_responses(scan) for scan in files]
    # requestIds on lines of different responses (Prompts.rekey)
    usages_of: dict[str, dict[str | None, set[tuple]]] = {}
    for found in responses:
        for r in found:
            if r.request:
                usages = usages_of.setdefault(r.request, {}).setdefault(r.message_id, set())
                if r.prompt_usage is not None:
                    usages.add(r.prompt_usage)
    reused = {
        request: usages
        for request, usages in usages_of.items()
        if len([m for m in usages if m]) > 1 or any(len(u) > 1 for u in usages.values())
    }
    keys: dict[tuple[str, int], str] = {}
    positional: set[str] = set()
    notes: list[str] = []
    for scan, found in zip(files, responses):
        firsts: dict[tuple, str] = {}
        places: dict[str, dict[str, str]] = {}
        for r in found:
            if r.request is not None and r.request in reused:
                usages = reused[r.request].get(r.message_id, set())
                if r.message_id and len(usages) <= 1:
                    r.key = r.message_id
                else:
                    place = f"{scan.label}line {r.number}"
                    r.key = firsts.setdefault((r.request, r.message_id, r.prompt_usage), f"{r.request} at {place}")
                    positional.add(r.key)
                keys[(scan.label, r.number)] = r.key
                places.setdefault(r.request, {}).setdefault(r.key, f"{scan.label}line {r.number}")
            else:
                r.key = r.request or r.message_id or fallback_key(scan.label, r)
        for request, found_places in places.items():
            shown = list(found_places.values())
            more = f", and {len(shown) - 5} more" if len(shown) > 5 else ""
            notes.append(f"requestId {request} on {len(shown)} calls ({', '.join(shown[:5])}{more})")
    # each file's calls, in the order of their first lines
    grouped: list[dict[str, Planned]] = []
    for k, found in enumerate(responses):
        calls: dict[str, Planned] = {}
        for r in found:
            call = calls.get(r.key)
            if call is None:
                calls[r.key] = Planned(k, r.key, r.number, r.number, parse_time(r.timestamp), r.number)
            else:
                call.last = r.number
        grouped.append(calls)
    owners: dict[str, int] = {}
    for k, calls in enumerate(grouped):
        for key in calls:
            owners.setdefault(key, k)
    main = [call for call in grouped[0].values()]
    sequences: list[list[Planned]] = []
    for k in range(1, len(files)):
        matched = compactions.get(k, None) if k in compactions else None
        if k in compactions and matched is not None:
            for match in matched:
                call = grouped[k].get(match.key)
                if call is not None and owners.get(match.key) == k:
                    call.position = match.position
                    main.append(call)
            continue
        sequences.append([call for key, call in grouped[k].items() if owners.get(key) == k])
    main.sort(key=lambda call: call.position)
    # threads rebuilt from progress lines: those whose calls no file holds
    threads: dict[tuple[int, str], int] = {}
    thread = 0
    for k, scan in enumerate(files):
        by_agent: dict[str, list[Copy]] = {}
        for copy in _copies(scan):
            by_agent.setdefault(copy.agent, []).append(copy)
        for agent, copies in by_agent.items():
            wanted = {_copy_key(copy.record, reused) for copy in copies} - {None}
            if wanted and wanted <= owners.keys():
                continue
            thread += 1
            threads[(k, agent)] = copies[-1].number
            calls = {}
            told: dict[tuple, str] = {}
            for copy in copies:
                key = _rebuilt_key(copy, reused, told, positional)
                if key in calls:
                    calls[key].last = copy.number
                elif key not in owners:
                    calls[key] = Planned(
                        -thread, key, copy.number, copy.number, parse_time(copy.record.get("timestamp")), copy.number
                    )
            for key in calls:
                owners[key] = -thread
            sequences.append(list(calls.values()))
    order: list[Planned] = in_time_order([main, *sequences])  # type: ignore[list-item,assignment]
    by_key = {(call.file, call.key): call for call in order}
    return Plan(order, by_key, owners, reused, keys, positional, notes, threads, compactions)


def _copy_key(record: dict, reused: dict) -> str | None:
    """The call key of a copied response, as the rules tell a thread's calls from those read (Prompts.nested_key)."""
    key = nested_key(record)
    request = record.get("requestId")
    if key is None or not isinstance(request, str) or request not in reused:
        return key
    message = record.get("message")
    message_id = message.get("id") if isinstance(message, dict) else None
    usages = reused[request].get(message_id if isinstance(message_id, str) else None, set())
    return message_id if isinstance(message_id, str) and message_id and len(usages) <= 1 else None


def _rebuilt_key(copy: Copy, reused: dict, firsts: dict, positional: set[str]) -> str:
    """The key of a copied response once its thread is rebuilt (its line's call key, told apart as rekey does)."""
    record = copy.record
    found = record.get("message")
    message: dict = found if isinstance(found, dict) else {}
    request, message_id = record.get("requestId"), message.get("id")
    request = request if isinstance(request, str) and request else None
    message_id = message_id if isinstance(message_id, str) and message_id else None
    if request is not None and request in reused:
        usages = reused[request].get(message_id, set())
        if message_id and len(usages) <= 1:
            return message_id
        key = firsts.setdefault(
            (request, message_id, prompt_usage(message.get("usage"))), f"{request} at line {copy.number}"
        )
        positional.add(key)
        return key
    uuid = record.get("uuid")
    return (
        request or message_id or f"line {copy.number} ({uuid if isinstance(uuid, str) else f'progress:{copy.number}'})"
    )


def match_compactions(
    main: FileScan, sides: dict[int, list[tuple[str, list[datetime | None], str | None]]]
) -> dict[int, list[Match] | None]:
    """The boundary of each call of each compaction transcript (``sides``: transcript -> its calls'
    keys, their lines' times and the uuid of the session line the request names), in the order of
    the transcripts, as the rules give: the boundary that names that line, else the first one not
    matched written after the call, else the first after that line in the file; None for a
    transcript that continues no line and matches no boundary."""
    recorded: set[int] = set()
    out: dict[int, list[Match] | None] = {}
    for k, calls in sides.items():
        matches: list[Match] | None = []
        for key, times, anchor in calls:  # each against the boundaries earlier transcripts matched
            if anchor is not None and not main.uuids.first_line(anchor):
                anchor = None
            boundary = _boundary_of(main, recorded, anchor, times)
            if anchor is None and boundary is None:
                matches = None
                break
            assert matches is not None
            if boundary is not None:
                position = float(boundary.number)
            else:
                position = main.uuids.first_line(anchor) + 0.5
            matches.append(Match(key, boundary.number if boundary is not None else None, anchor, position))
        if matches is not None:
            recorded |= {m.boundary for m in matches if m.boundary is not None}
        out[k] = matches
    return out


def _boundary_of(main: FileScan, recorded: set[int], anchor: str | None, times: list) -> Boundary | None:
    free = [b for b in main.boundaries if b.number not in recorded]
    if anchor is not None:
        for b in free:
            if b.logical_parent == anchor:
                return b
        after = main.uuids.first_line(anchor)
        named = [b for b in free if not isinstance(b.logical_parent, str)]
    else:
        named, after = free, 0
    known = [t for t in times if t is not None]
    if known:
        end = max(known)
        for b in named:
            if b.time is not None and b.time >= end:
                return b
    if anchor is not None:  # the first boundary after the line it continues from: its call is recorded
        for b in free:
            if b.number > after:
                return b
    return None
