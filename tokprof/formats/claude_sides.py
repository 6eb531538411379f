"""The transcripts beside a Claude Code session file (subagents' and compaction calls'), for the
session read as a stream (:mod:`tokprof.formats.claude_streamed`).

Each is scanned once before the session's lines are read, for what the stream must know as it goes:
its calls' keys (a key or requestId the session's lines share with it, or another transcript does,
is left to the whole read), when its first call was made (its calls are merged with the session's
in time order), and for a compaction transcript the main-thread line its call continues from (its
call goes where the ``compact_boundary`` naming that line is). The stream reads a transcript again
when its calls are due, and holds it only until they are made.

The scan leaves to the whole read a transcript with a compact boundary of its own, a requestId on
lines of different responses, or a compaction transcript with more than one call, or whose request
names no line it continues from (its boundary is then found by time, over the whole session).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from tokprof.base.text import visible
from tokprof.formats.claude_lines import Line, agent_copy, nested_key
from tokprof.formats.claude_reader import Reader
from tokprof.formats.neutral import check_text, parse_time
from tokprof.trace import Note, Trace


class Unstreamable(Exception):
    """The log holds what only a whole read gets right: read it whole."""


class Copies:
    """The subagent threads one transcript's ``agent_progress`` lines copy, gathered as
    :meth:`Reader.progress_calls` gathers them, keeping of each thread only the call keys copied:
    the whole read rebuilds a thread unless every key is of a call read from a file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.keys: dict[str, set[str]] = {}  # thread (agent id) -> keys of its copied responses
        self.seen: set[str] = set()  # uuids of the lines copied

    def add(self, line: Line) -> None:
        copied = agent_copy(line, self.seen)
        if copied is None:
            return
        agent, data, nested = copied
        keys = self.keys.get(str(agent))
        if keys is None:
            keys = self.keys[str(agent)] = set()
            prompt = data.get("prompt")
            if nested.get("type") == "assistant" and isinstance(prompt, str):  # as the whole read checks it
                check_text(self.path, f"line {line.number}: data.prompt", prompt)
        key = nested_key(nested)
        if key is not None:
            keys.add(key)

    def read_from_files(self, seen: set[str]) -> bool:
        """Whether every thread copied is one whose calls were all read (``seen``: every call's key)."""
        return all(keys and keys <= seen for keys in self.keys.values())


@dataclass
class Side:
    """A transcript beside the session, scanned."""

    path: Path
    compaction: bool
    keys: list[str]  # its calls', in order
    first_time: datetime | None  # when its first call was made
    anchor: str | None  # a compaction call's: the uuid of the main-thread line it continues from
    copies: Copies
    ids: set[str]  # its calls' keys and requestIds


def scan(session: Path, files: list[Path]) -> list[Side]:
    """The transcripts beside ``session``, scanned (see the module's text); raises
    :class:`Unstreamable` for one the stream leaves to the whole read, :class:`InputError` for a bad
    one (the whole read names it)."""
    scratch = Reader(Trace(path=str(session), format=""))
    sides: list[Side] = []
    ids: set[str] = set()
    for path in files:
        transcript = scratch.subagent_file(session, path)
        if any(line.boundary for line in transcript.lines):
            raise Unstreamable(f"{path.name}: a compact boundary in a subagent transcript")
        scratch.rekey([transcript])
        if scratch.reused:
            raise Unstreamable(f"{path.name}: a requestId on lines of different responses")
        groups = scratch.groups(transcript)
        own = set(groups) | {line.request for line in transcript.lines if line.request}
        if own & ids:
            raise Unstreamable(f"{path.name}: a call also in another subagent transcript")
        ids |= own
        copies = Copies(str(path))
        for line in transcript.lines:
            copies.add(line)
        anchor = None
        if transcript.compaction and groups:
            from tokprof.formats.claude_compaction import request_chain  # only for a compacted session

            if len(groups) > 1:
                raise Unstreamable(f"{path.name}: a compaction transcript of more than one call")
            first = next(iter(groups.values()))[0]
            chain = request_chain(transcript, first)
            anchor = (chain[-1] if chain else first).parent
            if anchor is None:
                raise Unstreamable(f"{path.name}: a compaction call that continues no line")
        first_time = parse_time(next(iter(groups.values()))[0].record.get("timestamp")) if groups else None
        sides.append(Side(path, transcript.compaction, list(groups), first_time, anchor, copies, own))
    anchors = Counter(side.anchor for side in sides if side.anchor is not None)
    if any(count > 1 for count in anchors.values()):
        raise Unstreamable("two compaction calls continue one line")
    return sides


@dataclass
class Events(Trace):
    """A trace that keeps its notes in the order they were made, each with the line type of a note
    made once per line type (:meth:`Reader.note_type`): a side transcript's parse, made when its calls
    are due, and joined when the session ends as if it were made after the session's."""

    events: list[tuple[str, str, str | None, str | None]] = field(default_factory=list)

    def note(self, code: str, message: str, place: str | None = None, line_type: str | None = None) -> None:
        self.events.append((code, message, visible(place) if place is not None else None, line_type))

    def joined_to(self, notes: list[Note], types_noted: set[str]) -> None:
        """Add the notes to ``notes`` (gathered by code), a line type's only where no earlier
        transcript noted that type (``types_noted``, updated)."""
        for code, message, place, line_type in self.events:
            if line_type is not None:
                if line_type in types_noted:
                    continue
                types_noted.add(line_type)
            join(notes, Note(code, message, [place] if place is not None else []))


def join(notes: list[Note], note: Note) -> None:
    """Add a note to ``notes``, with the places of the note of its code if there is one."""
    existing = next((n for n in notes if n.code == note.code), None)
    if existing is None:
        notes.append(Note(note.code, note.message, list(note.places)))
    else:
        existing.places.extend(note.places)


__all__ = ["Copies", "Events", "Side", "Unstreamable", "join", "scan"]
