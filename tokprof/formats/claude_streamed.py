"""A Claude Code session file read as a stream of calls, each given once its lines are read, so that
a caller can profile a call and drop its prompt before the next is read (:func:`tokprof.profile`
does): the reader keeps the lines of the conversation since its last compaction, not the file's.

The calls, their prompts, the notes and their order are those of :func:`tokprof.formats.claude_code.read`
(the same :class:`~tokprof.formats.claude_reader.Reader` builds them). What that read decides over
the whole file is decided here as the lines come, and where a later line would change what was
decided, the stream stops with :class:`Unstreamable` and the caller reads the log whole:

* a call is built once :data:`WINDOW` later calls have started (or the file ends), in the order of
  first lines; a line of a call already built (its requestId reused later) stops the stream, as
  does a requestId on lines of different responses (which the whole read tells apart, ``rekey``);
* a call's prompt is built from the lines read so far: a line that an earlier walk looked for and
  did not find (a parent, a tool call), or a tool result beside a line a walk passed, stops it;
* a sidechain in the file without an ``agentId`` stops it (its thread is named after its first
  line, found by a walk that the whole read bounds by the file's lines);
* the transcripts beside the file (:mod:`~tokprof.formats.claude_sides`) are scanned first, then
  read again when their calls are due: a subagent's calls are merged with the session's in time
  order (:func:`~tokprof.formats.neutral.in_time_order`, one session call ahead), a compaction
  call is made where the ``compact_boundary`` naming the line it continues from is, before the
  calls after it; a call of the session in a side transcript too, a compaction call that names
  no boundary, and a subagent known only from ``progress`` copies stop the stream;
* once every call before a ``compact_boundary`` is built (its compaction call included) and a call
  after it is, the lines before it are dropped (a later walk never passes a boundary); a walk that
  reaches a dropped line stops the stream.

Notes are gathered by phase (the lines' checks, the synthetic responses, the calls' prompts, the
unrecorded compactions; each side transcript's checks and calls apart) and joined in the whole
read's order when the file ends.
"""

from __future__ import annotations

import heapq
from array import array
from collections import Counter, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from tokprof.base.errors import InputError
from tokprof.base.text import visible
from tokprof.formats import call_shown_safely
from tokprof.formats.claude_blocks import ToolResult, ToolUse
from tokprof.formats.claude_lines import Line, State, Transcript, read_later
from tokprof.formats.claude_reader import SYNTHETIC, Reader
from tokprof.formats.claude_sessions import subagent_files
from tokprof.formats.claude_sides import Copies, Events, Side, Unstreamable, join, scan
from tokprof.formats.neutral import parse_time
from tokprof.formats.jsonfile import TRUNCATED_LAST_LINE, Document
from tokprof.trace import Call, Note, Trace

#: A call is built when this many later calls have started: the lines of one response come before
#: the next call's first line; a few calls of slack cover a subagent's lines written in between.
WINDOW = 4


class _Drops:
    """Whether lines were dropped, and the hash of every uuid and tool-call id given a line (a uuid or
    id given twice is a line, or a call, that repeats one dropped: found when the file ends)."""

    def __init__(self) -> None:
        self.any = False
        self.uuids = array("q")
        self.tool_ids = array("q")

    def repeated(self) -> bool:
        return any(len(np.unique(np.frombuffer(a, dtype=np.int64))) < len(a) for a in (self.uuids, self.tool_ids))


class _Watched(dict):
    """A transcript's index (uuid -> line, tool-call id -> line) that, while a call is built, remembers
    the keys looked for and not found; once lines were dropped, a key not found may be one of them,
    so the stream stops (a walk does not reach a line before a compaction unless the chain is broken)."""

    def __init__(self, drops: _Drops) -> None:
        super().__init__()
        self.watching = False
        self.absent: set[Any] = set()
        self.drops = drops

    def _missed(self, key: Any) -> None:
        if self.watching:
            if self.drops.any:
                raise Unstreamable("a walk looked for a line that is not in the lines kept")
            self.absent.add(key)

    def get(self, key: Any, default: Any = None) -> Any:
        found = dict.get(self, key, _MISSING)
        if found is _MISSING:
            self._missed(key)
            return default
        return found

    def __contains__(self, key: object) -> bool:
        found = dict.__contains__(self, key)
        if not found:
            self._missed(key)
        return found


_MISSING = object()


def results_only(line: Line) -> bool:
    """A user line of tool results only, with a parent: one :meth:`Reader.beside` places beside its siblings."""
    return (
        line.type == "user"
        and line.parent is not None
        and bool(line.parts)
        and all(isinstance(part, ToolResult) for part in line.parts)
    )


class _Reader(Reader):
    """The reader, remembering which lines a walk extended a prompt state with; while a side
    transcript is parsed (``side_parse``), its notes by line type go to its :class:`Events`."""

    def __init__(self, trace: Trace) -> None:
        super().__init__(trace)
        self.walked: set[int] = set()
        self.side_parse = False

    def extend(self, transcript: Transcript, state: State, line: Line) -> State:
        self.walked.add(id(line))
        return super().extend(transcript, state, line)

    def note_type(self, code: str, message: str, line: Line) -> None:
        if self.side_parse:
            assert isinstance(self.trace, Events)
            self.trace.note(code, message, f"{line.place} ({line.type})", line.type)
        else:
            super().note_type(code, message, line)


@dataclass
class _Compaction:
    """A compaction call due where its boundary is among the main thread's calls."""

    side: int
    boundary: Line


class _Sides:
    """The transcripts beside the session while it is streamed: each read when its calls are due
    and let go once they are made; its notes kept apart, joined after the session's when it ends."""

    def __init__(self, path: str, reader: _Reader, sides: list[Side]) -> None:
        from tokprof.formats.claude_code import FORMAT

        self.path = Path(path)
        self.reader = reader
        self.sides = sides
        self.parses = [Events(path=path, format=FORMAT) for _ in sides]
        self.builds = [Trace(path=path, format=FORMAT) for _ in sides]
        self.open: dict[int, Transcript] = {}
        self.read: set[int] = set()
        #: the subagent transcripts' calls merged by time (neutral.in_time_order): sequence s (1, 2, ...
        #: after the session's 0) is side ``merged[s - 1]``
        self.merged = [i for i, side in enumerate(sides) if not side.compaction]
        self.groups: dict[int, list[tuple[str, list[Line]]]] = {}
        self.carried: dict[int, tuple] = {}
        self.heads: list[tuple[tuple, int, int]] = []
        for s, i in enumerate(self.merged, start=1):
            if sides[i].keys:
                heapq.heappush(self.heads, (self.carry(s, sides[i].first_time), s, 0))

    def carry(self, s: int, time: Any) -> tuple:
        """The time order key of a sequence's next call (a call without a time goes where the one before it went)."""
        if time is not None:
            self.carried[s] = (1, time)
        return self.carried.get(s, (0,))

    def parse(self, i: int, calls: bool) -> Transcript:
        """Side ``i`` read, its parse noted apart; with ``calls``, its lines grouped into calls."""
        reader = self.reader
        reader.trace, reader.side_parse = self.parses[i], True
        try:
            transcript = reader.subagent_file(self.path, self.sides[i].path)
        finally:
            reader.side_parse = False
        self.read.add(i)
        self.open[i] = transcript
        reader.trace = self.builds[i]
        if calls:
            for line in transcript.lines:
                if line.type != "assistant":
                    line.record = read_later(line.record, line.type)
            self.groups[i] = list(reader.groups(transcript).items())
        return transcript

    def close(self, i: int) -> None:
        transcript = self.open.pop(i)
        self.groups.pop(i, None)
        self.reader.walked.difference_update(id(line) for line in transcript.lines)

    def due(self, limit: tuple) -> Iterator[Call]:
        """The subagents' calls made before the session's next call (time order key ``limit``)."""
        reader = self.reader
        while self.heads and self.heads[0][0] < limit:
            _, s, position = heapq.heappop(self.heads)
            i = self.merged[s - 1]
            transcript = self.open.get(i)
            if transcript is None:
                transcript = self.parse(i, calls=True)
                if [key for key, _ in self.groups[i]] != self.sides[i].keys:
                    raise Unstreamable(f"{self.sides[i].path.name} changed while it was read")
            groups = self.groups[i]
            key, lines = groups[position]
            reader.trace = self.builds[i]
            reader.seen.add(key)
            call = reader.call(transcript, lines, key)
            for line in lines:
                line.record, line.request, line.message_id, line.prompt_usage = {}, None, None, None
            if position + 1 < len(groups):
                time = parse_time(groups[position + 1][1][0].record.get("timestamp"))
                heapq.heappush(self.heads, (self.carry(s, time), s, position + 1))
            else:
                self.close(i)
            yield call

    def compaction(self, main: Transcript, due: _Compaction) -> Call:
        """The compaction call of side ``due.side``, whose boundary is ``due.boundary``."""
        from tokprof.formats.claude_compaction import compaction_calls

        compact = self.parse(due.side, calls=False)
        found = compaction_calls(self.reader, main, compact)
        self.close(due.side)
        if found is None or len(found) != 1 or found[0][0] != due.boundary.number:
            raise Unstreamable(f"{self.sides[due.side].path.name}: its call is not at the boundary expected")
        return found[0][1]

    def finish(self, seen: set[str], matched: set[int]) -> None:
        """Read for their notes the sides with no call made; raises :class:`Unstreamable` where the
        whole read would make a call the stream did not (a compaction call matched by time, a
        subagent rebuilt from progress lines)."""
        for i, side in enumerate(self.sides):
            if side.compaction and side.keys and i not in matched:
                raise Unstreamable(f"{side.path.name}: a compaction call matched to no boundary")
            if i not in self.read:
                self.parse(i, calls=True)
                self.close(i)
            if not side.copies.read_from_files(seen):
                raise Unstreamable(f"{side.path.name}: subagent lines copied in progress lines")

    def notes(self, notes: list[Note], types_noted: set[str]) -> None:
        for events in self.parses:
            events.joined_to(notes, types_noted)

    def build_notes(self, notes: list[Note]) -> None:
        for build in self.builds:
            for note in build.notes:
                join(notes, note)

    def live(self) -> list[Transcript]:
        return list(self.open.values())


class CallStream:
    """The calls of one Claude Code session file (``doc``, its JSONL lines unread), as they are read.

    Iterating gives each call once, numbered, in the order :func:`~tokprof.formats.claude_code.read`
    gives them; when it ends :attr:`trace` (no calls) holds the session, the model of most
    main-thread calls, the compactions and the notes. Raises :class:`Unstreamable` where the log must
    be read whole, and :class:`InputError` for a bad line or a file without calls: the first one the
    stream reaches, which may be a call's (its usage, its messages) before a bad line that the whole
    read, checking every line first, names instead (:func:`tokprof.profile` reads such a log whole,
    so it reports the whole read's)."""

    def __init__(self, path: str, doc: Document):
        from tokprof.formats.claude_code import FORMAT

        assert doc.lines is not None
        self.path = path
        self.doc = doc
        self.trace = Trace(path=path, format=FORMAT, unrecorded=("system", "tools"))
        # the notes of the lines' checks, the synthetic responses, the calls, the unrecorded compactions
        self._phases = [Trace(path=path, format=FORMAT) for _ in range(4)]
        self._transcript: Transcript | None = None
        self._sides: _Sides | None = None

    def close(self) -> None:
        self.doc.close()

    def __enter__(self) -> "CallStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def lines_kept(self) -> int:
        """The lines the reader holds (those since about the last compaction, and of the transcripts
        beside it whose calls are being made)."""
        kept = len(self._transcript.lines) if self._transcript is not None else 0
        return kept + (sum(len(t.lines) for t in self._sides.live()) if self._sides is not None else 0)

    @property
    def read(self) -> tuple[int, int]:
        """The bytes of the file read so far, and its size."""
        lines = self.doc.lines
        assert lines is not None
        return lines.offset, lines.size

    def __iter__(self) -> Iterator[Call]:
        parsing, synthetic, building, unrecorded = self._phases
        reader = _Reader(parsing)
        drops = _Drops()
        transcript = self._transcript = Transcript(path=self.path)
        transcript.by_uuid = by_uuid = _Watched(drops)
        transcript.tool_uses = tool_uses = _Watched(drops)
        last: dict[bool, str | None] = {}
        pending: deque[str | _Compaction] = deque()
        lines_of: dict[str, list[Line]] = {}
        usages: dict[str, dict[str | None, set[tuple]]] = {}
        boundaries: deque[Line] = deque()
        models: Counter[str] = Counter()
        main_models: Counter[str] = Counter()
        count = 0
        session_checked = False
        walked_parents: set[str] = set()  # kept lines with a dropped child a walk passed
        copies = Copies(self.path)
        here = Path(self.path)
        assert self.doc.lines is not None
        head = self.doc.lines.head()  # parsed already, to detect the format
        first_session = next(
            (r["sessionId"] for _, r in head if isinstance(r, dict) and isinstance(r.get("sessionId"), str)), None
        )
        files = subagent_files(here, first_session)  # checked again when the session's id is read
        sides = self._sides = _Sides(self.path, reader, scan(here, files))
        side_ids = set().union(*(side.ids for side in sides.sides))
        by_anchor = {side.anchor: i for i, side in enumerate(sides.sides) if side.anchor is not None}
        matched: set[int] = set()

        def build(item: str | _Compaction) -> tuple[Call, float]:
            """The call of a main-thread key or a compaction, and where it is among the main
            thread's lines (its first line's number, a compaction's just after its boundary)."""
            by_uuid.watching = tool_uses.watching = True
            try:
                if isinstance(item, _Compaction):
                    return sides.compaction(transcript, item), item.boundary.number + 0.5
                lines = lines_of.pop(item)
                usages.pop(item, None)
                reader.trace = building
                reader.seen.add(item)
                call = reader.call(transcript, lines, item)
            finally:
                by_uuid.watching = tool_uses.watching = False
            if call.thread.startswith("sidechain "):
                # named after the first line of its thread, found by a walk bounded by the lines read
                raise Unstreamable(f"{call.where}: a sidechain without an agentId")
            for line in lines:  # as Reader.calls: what the call read of its lines is read no more
                line.record, line.request, line.message_id, line.prompt_usage = {}, None, None, None
            return call, lines[0].number

        def given(call: Call) -> Call:
            nonlocal count
            call.index = count
            count += 1
            if call.model:  # counted as written, as main_model counts them before they are shown safely
                models[call.model] += 1
                if "(subagent" not in call.where:
                    main_models[call.model] += 1
            call_shown_safely(call)
            return call

        def main_call(item: str | _Compaction) -> Iterator[Call]:
            """The main thread's next call, after the subagents' calls made before it."""
            call, at = build(item)
            while boundaries and boundaries[0].number < at:
                drop_before(boundaries.popleft())
            for made in sides.due(sides.carry(0, call.time)):
                yield given(made)
            yield given(call)

        def drop_before(boundary: Line) -> None:
            """Forget the lines before a boundary every call before it is built from."""
            lines = transcript.lines
            cut = next((i for i, line in enumerate(lines) if line is boundary), 0)
            dropped = lines[:cut]
            gone = {line.uuid for line in dropped if line.uuid is not None}
            for line in dropped:
                if line.uuid is not None and dict.get(by_uuid, line.uuid) is line:
                    dict.__delitem__(by_uuid, line.uuid)
                for part in line.parts:
                    if isinstance(part, ToolUse) and dict.get(tool_uses, part.id) is line:
                        dict.__delitem__(tool_uses, part.id)
            for line in dropped:  # siblings (Reader.beside) the kept lines no longer show
                if line.parent is not None and line.parent not in gone:
                    if id(line) in reader.walked and dict.__contains__(by_uuid, line.parent):
                        walked_parents.add(line.parent)  # a later result beside it: beside a line walked
                    if results_only(line):
                        if dict.__contains__(by_uuid, line.parent):
                            raise Unstreamable(f"{line.place}: tool results beside a line kept, dropped")
                        by_uuid.absent.add(line.parent)  # its parent, read later, would show it
                reader.walked.discard(id(line))
            drops.any = drops.any or cut > 0
            del lines[:cut]
            transcript._children = None
            states = transcript.states
            for state_key in [k for k in states if not dict.__contains__(by_uuid, k[0])]:
                del states[state_key]
            live = [s for t in [transcript, *sides.live()] for s in t.states.values()]
            kept = {(id(s.final), id(s.open)) for s in live}
            for made in [made for made in reader.lists if made not in kept]:
                del reader.lists[made]
            opened = {id(s.open) for s in live}
            for made_id in [i for i in reader.converted if i not in opened]:
                del reader.converted[made_id]

        for number, record in self.doc.lines:
            reader.trace = parsing
            added = reader.add(transcript, "", number, record, "", "line", last)
            if added is None:
                continue
            line: Line = added
            if line.uuid is not None:
                if line.uuid in by_uuid.absent:
                    raise Unstreamable(f"line {number} is a line an earlier call looked for")
                drops.uuids.append(hash(line.uuid))
            for part in line.parts:
                if isinstance(part, ToolUse):
                    if part.id in tool_uses.absent:
                        raise Unstreamable(f"line {number} holds a tool call an earlier call looked for")
                    if dict.get(tool_uses, part.id) is line:  # the first line with the id
                        drops.tool_ids.append(hash(part.id))
            if line.type == "progress":
                copies.add(line)
            if not session_checked and isinstance(line.record.get("sessionId"), str):
                session_checked = True
                self.trace.session = line.record["sessionId"]
                if subagent_files(here, self.trace.session) != files:
                    raise Unstreamable("subagent transcripts beside the session not found before its id")
            parent = line.parent
            if (
                parent is not None
                and results_only(line)
                and (
                    any(id(s) in reader.walked for s in transcript.children(parent) if s is not line)
                    or parent in walked_parents  # beside a dropped line a walk passed
                    or (drops.any and not dict.__contains__(by_uuid, parent))  # its siblings may be dropped
                )
            ):
                raise Unstreamable(f"line {number}: tool results beside a line an earlier call's prompt passed")
            if line.boundary:
                boundaries.append(line)
                anchor = line.record.get("logicalParentUuid")
                if isinstance(anchor, str) and anchor in by_anchor and by_anchor[anchor] not in matched:
                    if not dict.__contains__(by_uuid, anchor):
                        raise Unstreamable(f"line {number}: a compaction's line not read before its boundary")
                    matched.add(by_anchor[anchor])
                    pending.append(_Compaction(by_anchor[anchor], line))
            if line.type == "assistant" and line.synthetic:
                reader.trace = synthetic
                reader.note_once("synthetic-message", SYNTHETIC, line.place)
            elif line.type == "assistant":
                key = line.key or ""
                if key in reader.seen:
                    raise Unstreamable(f"line {number} belongs to a call already given")
                if key in side_ids or line.request in side_ids:
                    raise Unstreamable(f"line {number}: a call also in a subagent transcript")
                if line.request:
                    found = usages.setdefault(key, {}).setdefault(line.message_id, set())
                    if line.prompt_usage is not None:
                        found.add(line.prompt_usage)
                    seen = usages[key]
                    if len([m for m in seen if m]) > 1 or any(len(u) > 1 for u in seen.values()):
                        raise Unstreamable(f"requestId {line.request} is on lines of different responses")
                if key not in lines_of:
                    pending.append(key)
                    lines_of[key] = []
                lines_of[key].append(line)
            elif line.type == "progress":
                line.record = {}  # its copy of a subagent's line is in ``copies``
            else:
                line.record = read_later(line.record, line.type)
            while len(lines_of) > WINDOW:
                yield from main_call(pending.popleft())
        while pending:
            yield from main_call(pending.popleft())
        for made in sides.due((2,)):  # after every time
            yield given(made)
        if not count:
            raise InputError(self.path, None, "no model call in the transcript (no assistant line)")
        if drops.repeated():
            raise Unstreamable("a line or a tool call repeats one dropped")
        if not copies.read_from_files(reader.seen):
            raise Unstreamable("subagent lines copied in progress lines")
        sides.finish(reader.seen, matched)
        reader.trace = unrecorded
        reader.note_unrecorded_compactions()
        self._finish(reader, parsing.compactions, main_models or models)

    def _finish(self, reader: _Reader, compactions: int, models: Counter[str]) -> None:
        trace = self.trace
        trace.compactions = compactions
        trace.model = visible(models.most_common(1)[0][0]) if models else None
        parsing, synthetic, building, unrecorded = self._phases
        sides = self._sides
        assert sides is not None
        # as the whole read makes them: the lines' checks (the session's, then each side's), the
        # session's synthetic responses and calls, each side's calls, the unrecorded compactions
        for note in parsing.notes:
            join(trace.notes, note)
        sides.notes(trace.notes, reader.types_noted)
        for phase in (synthetic, building):
            for note in phase.notes:
                join(trace.notes, note)
        sides.build_notes(trace.notes)
        for note in unrecorded.notes:
            join(trace.notes, note)
        if self.doc.truncated_line is not None:
            trace.note("truncated-line", TRUNCATED_LAST_LINE, f"line {self.doc.truncated_line}")
        trace.session = visible(trace.session) if isinstance(trace.session, str) else trace.session
