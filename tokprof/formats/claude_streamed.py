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
* subagent transcripts beside the file, and subagent lines copied in ``progress`` lines, are merged
  with the session's calls in time order: such a session is not streamed; nor is a sidechain in the
  file without an ``agentId`` (its thread is named after its first line, found by a walk that the
  whole read bounds by the file's lines);
* once every call before a ``compact_boundary`` is built and a call after it is, the lines before
  it are dropped (a later walk never passes a boundary); a walk that reaches a dropped line stops
  the stream.

Notes are gathered by phase (the lines' checks, the synthetic responses, the calls' prompts, the
unrecorded compactions) and joined in that order when the file ends, as the whole read writes them.
"""

from __future__ import annotations

from array import array
from collections import Counter, deque
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from tokprof.base.errors import InputError
from tokprof.base.text import visible
from tokprof.formats import call_shown_safely
from tokprof.formats.claude_blocks import ToolResult, ToolUse
from tokprof.formats.claude_lines import MESSAGE_TYPES, Line, State, Transcript, read_later
from tokprof.formats.claude_reader import SYNTHETIC, Reader
from tokprof.formats.claude_sessions import subagent_files
from tokprof.formats.jsonfile import TRUNCATED_LAST_LINE, Document
from tokprof.trace import Call, Note, Trace

#: A call is built when this many later calls have started: the lines of one response come before
#: the next call's first line; a few calls of slack cover a subagent's lines written in between.
WINDOW = 4


class Unstreamable(Exception):
    """The log holds what only a whole read gets right: read it whole."""


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
    """The reader, remembering which lines a walk extended a prompt state with."""

    def __init__(self, trace: Trace) -> None:
        super().__init__(trace)
        self.walked: set[int] = set()

    def extend(self, transcript: Transcript, state: State, line: Line) -> State:
        self.walked.add(id(line))
        return super().extend(transcript, state, line)


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
        self._phases = [Trace(path=path, format=FORMAT) for _ in range(3)]  # lines, synthetic, calls
        self._transcript: Transcript | None = None

    def close(self) -> None:
        self.doc.close()

    def __enter__(self) -> "CallStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def lines_kept(self) -> int:
        """The lines the reader holds (those since about the last compaction)."""
        return len(self._transcript.lines) if self._transcript is not None else 0

    @property
    def read(self) -> tuple[int, int]:
        """The bytes of the file read so far, and its size."""
        lines = self.doc.lines
        assert lines is not None
        return lines.offset, lines.size

    def __iter__(self) -> Iterator[Call]:
        parsing, synthetic, building = self._phases
        reader = _Reader(parsing)
        drops = _Drops()
        transcript = self._transcript = Transcript(path=self.path)
        transcript.by_uuid = by_uuid = _Watched(drops)
        transcript.tool_uses = tool_uses = _Watched(drops)
        last: dict[bool, str | None] = {}
        pending: deque[str] = deque()
        lines_of: dict[str, list[Line]] = {}
        usages: dict[str, dict[str | None, set[tuple]]] = {}
        boundaries: deque[Line] = deque()
        models: Counter[str] = Counter()
        main_models: Counter[str] = Counter()
        count = 0
        session_checked = False
        walked_parents: set[str] = set()  # kept lines with a dropped child a walk passed
        assert self.doc.lines is not None
        if subagent_files(Path(self.path), None):
            raise Unstreamable("subagent transcripts beside the session")

        def build(key: str) -> tuple[Call, int]:
            """The call of ``key``, and the number of its first line."""
            lines = lines_of.pop(key)
            usages.pop(key, None)
            reader.trace = building
            reader.seen.add(key)
            by_uuid.watching = tool_uses.watching = True
            try:
                call = reader.call(transcript, lines, key)
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
            kept = {(id(s.final), id(s.open)) for s in states.values()}
            for made in [made for made in reader.lists if made not in kept]:
                del reader.lists[made]
            opened = {id(s.open) for s in states.values()}
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
            if line.type == "progress" and isinstance(line.record.get("data"), dict):
                nested = line.record["data"].get("message")
                if isinstance(nested, dict) and nested.get("type") in MESSAGE_TYPES:
                    raise Unstreamable("subagent lines copied in progress lines")
            if not session_checked and isinstance(line.record.get("sessionId"), str):
                session_checked = True
                self.trace.session = line.record["sessionId"]
                if subagent_files(Path(self.path), self.trace.session):
                    raise Unstreamable("subagent transcripts beside the session")
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
            if line.type == "assistant" and line.synthetic:
                reader.trace = synthetic
                reader.note_once("synthetic-message", SYNTHETIC, line.place)
            elif line.type == "assistant":
                key = line.key or ""
                if key in reader.seen:
                    raise Unstreamable(f"line {number} belongs to a call already given")
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
            else:
                line.record = read_later(line.record, line.type)
            while len(pending) > WINDOW:
                call, first = build(pending.popleft())
                while boundaries and boundaries[0].number < first:
                    drop_before(boundaries.popleft())
                yield given(call)
        while pending:
            yield given(build(pending.popleft())[0])
        if not count:
            raise InputError(self.path, None, "no model call in the transcript (no assistant line)")
        if drops.repeated():
            raise Unstreamable("a line or a tool call repeats one dropped")
        reader.trace = building
        reader.note_unrecorded_compactions()
        self._finish(parsing.compactions, main_models or models)

    def _finish(self, compactions: int, models: Counter[str]) -> None:
        trace = self.trace
        trace.compactions = compactions
        trace.model = visible(models.most_common(1)[0][0]) if models else None
        for phase in self._phases:
            for note in phase.notes:
                existing = next((n for n in trace.notes if n.code == note.code), None)
                if existing is None:
                    trace.notes.append(Note(note.code, note.message, list(note.places)))
                else:
                    existing.places.extend(note.places)
        if self.doc.truncated_line is not None:
            trace.note("truncated-line", TRUNCATED_LAST_LINE, f"line {self.doc.truncated_line}")
        trace.session = visible(trace.session) if isinstance(trace.session, str) else trace.session
