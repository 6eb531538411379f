"""The Claude Code reader: a fold over a session file's lines that gives each model call once its lines
are read, the calls of the transcripts beside it (subagents', compaction calls') merged in, in the
order the rules give (:mod:`tokprof.formats.claude_code`).

Before the lines are read, the reader asks for one cheap pass over the files
(:mod:`tokprof.formats.claude_code.scan`): it says where each call's last line is, which requestIds
are reused, which file counts a call found in several, where each compaction call goes and the
order of every call. The reader then holds only what a later line can still change:

* a call is built once its last line is read and every line its prompt's chain passes, and every
  tool result written beside that chain, is read (a line that names a parent written later makes
  it wait for that line);
* a call is given once every call before it in time order is: a subagent's transcript is read
  when its first call is due and let go once its calls are made; a thread rebuilt from ``progress``
  lines is made once its last copy is read;
* once every call before a ``compact_boundary`` is built (its compaction call included), the lines
  before it are let go, unless a later line of the file names one of them (a rewind across the
  compaction): the reader holds the conversation since the last compaction, not the file's.

Its notes are gathered by phase (the lines' checks, each file's calls, ...) and joined in the rules'
order when the file ends. A session being written (``follow``, for ``tokprof watch`` and
``tokprof statusline``) is read without the pass: a call is given at its first line, as the agent
writes it, and the transcripts beside it are not read.
"""

from __future__ import annotations

from collections import Counter, deque
from pathlib import Path
from typing import Any, Iterable, Iterator

from tokprof.base.errors import InputError
from tokprof.formats.claude_code.lines import (
    EMPTY,
    FORMAT,
    MESSAGE_TYPES,
    Line,
    Transcript,
    agent_copy,
    copy_line,
    read_later,
)
from tokprof.formats.claude_code.prompts import (
    COMPACT_AGENT,
    COMPACT_PREFIX,
    COMPACTION,
    COMPACTION_UNMATCHED,
    DUPLICATE_CALL,
    FROM_PROGRESS,
    REQUEST_REUSED,
    SYNTHETIC,
    Phase,
    Prompts,
    compaction_state,
    join_phases,
    line_before,
    request_chain,
)
from tokprof.formats.claude_code.scan import (
    FileScan,
    Match,
    Plan,
    match_compactions,
    plan,
    scan_file,
    subagent_files,
)
from tokprof.formats.jsonfile import Document
from tokprof.formats.neutral import check_text, parse_time
from tokprof.formats.reader import Reader, Record
from tokprof.trace import Call, Trace

UNRECORDED = ("system", "tools")
SIDE_EMPTY = (
    "a transcript beside the session is empty or holds only a line still being written (Claude Code "
    "creates a subagent's file when it starts): it holds no call yet"
)


class SessionReader(Reader):
    """A Claude Code session file read as a fold (see the module's text). ``doc`` is the loaded file
    (None: the lines are fed by a follower, ``follow``); ``prompts=False`` gives the calls without
    their prompts (``tokprof statusline``: no prompt state is built, and a line keeps only its place
    in the chain once its call is made)."""

    def __init__(self, path: str, doc: Document | None = None, *, follow: bool = False, prompts: bool = True):
        self.trace = Trace(path=path, format=FORMAT, unrecorded=UNRECORDED)
        self.path = path
        self.follow = follow
        self.prompts = prompts
        self.parsing = Phase(path=path, format=FORMAT)
        self.reader = Prompts(self.trace if follow else self.parsing)
        self.transcript = Transcript(path=path)
        self.last: dict[bool, str | None] = {}
        self.read_to = 0  # the last line read
        self.models: Counter[str] = Counter()
        self.main_models: Counter[str] = Counter()
        self.given = 0
        if follow:
            return
        # -- the pass, and what the reader keeps by phase
        self.synthetic = Phase(path=path, format=FORMAT)
        self.building = Phase(path=path, format=FORMAT)
        self.reuse = Phase(path=path, format=FORMAT)
        self.unrecorded_notes = Phase(path=path, format=FORMAT)
        self.side_parses: dict[int, Phase] = {}
        self.side_builds: dict[int, Phase] = {}
        self.threads: dict[tuple[int, str], _Thread] = {}
        self.pending: deque[str] = deque()  # keys of the session's calls not built, in first-line order
        self.lines_of: dict[str, list[Line]] = {}
        self.ready: dict[int, Call] = {}  # built, by their place in the order
        self.late: list[Call] = []  # calls the pass did not see (lines written after it)
        self.next = 0
        self.boundaries: list[Line] = []  # boundaries whose lines before them are held
        self.boundary_lines: list[int] = []  # every boundary of the session file, by line
        self.sub_boundaries: list[str] = []
        self.built_keys: list[str] = []
        self.compacted: set[int] = set()  # compaction transcripts whose calls are built
        self.sides_read: set[int] = set()  # transcripts beside the session whose calls are made
        self.single = doc is not None and doc.lines is None
        self._scan(doc)

    # -- the pass ----------------------------------------------------------------------------------
    def _scan(self, doc: Document | None) -> None:
        path = self.path
        main = scan_file(path) if not self.single else FileScan(path, "", lines=1)
        self.scan = main
        self.trace.session = main.session
        here = Path(path)
        self.side_paths = [] if "://" in path else subagent_files(here, main.session)
        scans = [main]
        compactions: dict[int, list[tuple[str, list, str | None]]] = {}
        self.compactions: dict[int, Transcript] = {}
        for k, side in enumerate(self.side_paths, start=1):
            label = _label(here, side)
            found = scan_file(str(side), label)
            scans.append(found)
            if side.name.startswith(COMPACT_PREFIX) or str(found.agent or "").startswith(COMPACT_AGENT):
                transcript = self._parse_side(k)
                if transcript is None:
                    continue
                transcript.compaction = True
                self.compactions[k] = transcript
                groups = self.reader.groups(transcript, note=False)
                compactions[k] = [
                    (
                        key,
                        [parse_time(line.record.get("timestamp")) for line in lines],
                        _top(transcript, lines[0]).parent,
                    )
                    for key, lines in groups.items()
                ]
        self.scans = scans
        matched = match_compactions(main, compactions)
        self.plan: Plan = plan(scans, matched)
        self.reader.reused = self.plan.reused
        self.reader.planned_keys = self.plan.keys
        self.reader.positional = self.plan.positional
        for place in self.plan.reuse_notes:
            self.reuse.note("request-id-reused", REQUEST_REUSED, place)
        self.triggers = {
            k: max((m.boundary or int(m.position) for m in matches), default=0)
            for k, matches in matched.items()
            if matches is not None
        }

    def _parse_side(self, k: int) -> Transcript | None:
        """Side transcript ``k`` read (its parse noted in its own phase); None when it holds nothing yet."""
        reader = self.reader
        phase = self.side_parses.setdefault(k, Phase(path=self.path, format=FORMAT))
        reader.trace = phase
        scan = self.scans[k] if k < len(getattr(self, "scans", [])) else None
        side = self.side_paths[k - 1]
        if scan is not None and scan.empty or _unwritten(side):
            phase.note("side-transcript-empty", SIDE_EMPTY, _label(Path(self.path), side).strip())
            return None
        try:
            return reader.subagent_file(Path(self.path), side)
        except InputError as exc:
            if "file is empty" in str(exc) or ("line 1" in str(exc) and "truncated JSON" in str(exc)):
                phase.note("side-transcript-empty", SIDE_EMPTY, _label(Path(self.path), side).strip())
                return None
            raise

    # -- the fold ----------------------------------------------------------------------------------
    def feed(self, record: Record) -> Iterable[Call]:
        number = record.line if record.line is not None else 1
        if record.line is None and not isinstance(record.value, dict):
            raise InputError(self.path, None, "expected a JSONL transcript: one JSON object per line")
        if self.follow:
            return self._follow(number, record.value)
        if number > self.scan.lines and not self.single:
            return ()  # written after the pass: read next time
        self.read_to = number
        reader = self.reader
        reader.trace = self.parsing
        line = reader.add(self.transcript, "", number, record.value, "", "line", self.last)
        if line is None:
            return self._give()
        if line.parent is not None:
            line.horizon = self.scan.parents.last_line(line.parent)
        if line.boundary:
            self.boundaries.append(line)
            self.boundary_lines.append(number)
        if line.type == "assistant":
            if line.synthetic:
                reader.trace = self.synthetic
                reader.note_once("synthetic-message", SYNTHETIC, line.place)
            else:
                key = line.key or ""
                if key not in self.lines_of:
                    self.pending.append(key)
                    self.lines_of[key] = []
                self.lines_of[key].append(line)
        else:
            if line.type == "progress":
                self._copy(0, line)
                line.record = {}
            else:
                line.record = read_later(line.record, line.type)
        return self._give()

    def finish(self) -> Iterable[Call]:
        if self.follow:
            return ()
        self.read_to = max(self.read_to, self.scan.lines) + 1  # every line read: nothing to wait for
        self._build_main()
        self._build_compactions()
        for k in range(1, len(self.side_paths) + 1):  # the transcripts whose calls are not made yet
            self._side_calls(k)
        for thread in list(self.threads.values()):
            self.late += self._thread_calls(thread)
        out = self._give(final=True)
        out += [self._numbered(call) for call in self.late]
        if not self.given:
            raise InputError(self.path, None, "no model call in the transcript (no assistant line)")
        self._header()
        return out

    def _header(self) -> None:
        trace = self.trace
        matched = {m.boundary for matches in self.plan.matches.values() if matches for m in matches}
        for number in self.boundary_lines:
            if number not in matched:
                self.unrecorded_notes.note("compaction", COMPACTION, f"line {number}")
        for place in self.sub_boundaries:
            self.unrecorded_notes.note("compaction", COMPACTION, place)
        trace.compactions = len(self.boundary_lines) + len(self.sub_boundaries)
        phases: list[Trace] = [self.parsing]
        phases += [self.side_parses[k] for k in sorted(self.side_parses)]
        phases += [self.reuse, self.synthetic, self.building]
        phases += [self.side_builds[k] for k in sorted(self.side_builds)]
        phases += [thread.phase for thread in sorted(self.threads.values(), key=lambda t: t.order)]
        phases.append(self.unrecorded_notes)
        join_phases(trace, phases)
        models = self.main_models or self.models
        trace.model = models.most_common(1)[0][0] if models else None

    # -- building ----------------------------------------------------------------------------------
    def _give(self, final: bool = False) -> list[Call]:
        """The calls due: those built whose turn in the order has come."""
        self._build_main()
        self._build_compactions()
        out: list[Call] = []
        order = self.plan.order
        while self.next < len(order):
            planned = order[self.next]
            call = self.ready.pop(planned.index, None)
            if call is None:
                if planned.file > 0 and planned.file not in self.sides_read and not self._compaction(planned.file):
                    self._side_calls(planned.file)
                    continue
                if not self._phantom(planned, final):
                    break
                self.next += 1
                continue
            self.next += 1
            out.append(self._numbered(call))
        self._drop()
        return out

    def _compaction(self, k: int) -> bool:
        return self.plan.matches.get(k) is not None

    def _phantom(self, planned: Any, final: bool) -> bool:
        """Whether a call the pass saw will never be built (its lines were repeats, its thread not rebuilt)."""
        if final:
            return True
        if planned.file == 0:
            return self.read_to > planned.last and planned.key not in self.lines_of
        if planned.file > 0:  # a side's calls are all built at once
            return planned.file in self.sides_read or (
                self._compaction(planned.file) and planned.file in self.compacted
            )
        return False

    def _numbered(self, call: Call) -> Call:
        call.index = self.given
        self.given += 1
        if call.model:  # counted as written, as main_model counts them before they are shown safely
            self.models[call.model] += 1
            if "(subagent" not in call.where:
                self.main_models[call.model] += 1
        return call

    def _build_main(self) -> None:
        reader = self.reader
        while self.pending:
            key = self.pending[0]
            planned = self.plan.calls.get((0, key))
            lines = self.lines_of[key]
            last = planned.last if planned is not None else self.scan.lines + 1
            if self.read_to < last or self.read_to < self._needs(lines[0]):
                return
            self.pending.popleft()
            del self.lines_of[key]
            reader.trace = self.building
            call = reader.call(self.transcript, lines, key)
            for line in lines:  # what the call read of its lines is read no more
                line.record, line.request, line.message_id, line.prompt_usage = {}, None, None, None
            self.built_keys.append(key)
            if planned is not None:
                self.ready[planned.index] = call
            else:
                self.late.append(call)

    def _needs(self, first: Line) -> int:
        """The last line of the file a call's prompt needs: the lines its chain passes, and the tool
        results written beside them (as :meth:`Prompts.state_after` walks it)."""
        transcript = self.transcript
        need = 0
        thread = first.sidechain
        line = first
        walked: set[int] = set()
        while line.parent is not None:
            parent = transcript.by_uuid.get(line.parent)
            if parent is None:
                if line.parent not in transcript.dropped_uuids:
                    need = max(need, self.scan.uuids.last_line(line.parent))
                break
            if (parent.uuid or "", thread) in transcript.states or id(parent) in walked:
                break
            if parent.type in MESSAGE_TYPES and parent.sidechain != thread:
                break
            walked.add(id(parent))
            need = max(need, parent.horizon)
            if parent.boundary:
                break
            line = parent
        return need

    def _build_compactions(self) -> None:
        for k, transcript in list(self.compactions.items()):
            if k in self.compacted or self.read_to < self.triggers.get(k, 0) or self.plan.matches.get(k) is None:
                continue
            if any(self.lines_of[key][0].number < self.triggers[k] for key in self.pending):
                continue  # built after the session's calls before it, as the rules build them
            self.compacted.add(k)
            self._compaction_calls(k, transcript)

    def _compaction_calls(self, k: int, compact: Transcript) -> None:
        reader = self.reader
        reader.trace = self.side_builds.setdefault(k, Phase(path=self.path, format=FORMAT))
        matches: list[Match] = self.plan.matches[k] or []
        groups = reader.groups(compact)
        plans = []
        on_chains: set[int] = set()
        main = self.transcript
        for match in matches:
            lines = groups[match.key]
            chain = request_chain(compact, lines[0])
            anchor = main.by_uuid.get(match.anchor) if match.anchor is not None else None
            if anchor is None and match.boundary is not None:
                boundary = next((b for b in self.boundaries if b.number == match.boundary), None)
                anchor = line_before(main, boundary) if boundary is not None else None
            plans.append((match, lines, chain[::-1], anchor))
            on_chains.update(id(line) for line in chain + lines)
        inserts: dict[str, list[Line]] = {}
        for line in compact.lines:
            if line.type == "user" and id(line) not in on_chains and line.parent is not None:
                inserts.setdefault(line.parent, []).append(line)
        for match, lines, chain, anchor in plans:
            if self.plan.owners.get(match.key) != k:
                reader.note_once("duplicate-call", DUPLICATE_CALL, lines[0].place)
                continue
            if anchor is None:
                continue
            state = compaction_state(reader, main, compact, anchor, chain, inserts, lines[0])
            call = reader.call(compact, lines, match.key, state=state, compaction=True)
            self._place(k, match.key, call)
        del self.compactions[k]

    def _place(self, file: int, key: str, call: Call) -> None:
        planned = self.plan.calls.get((file, key))
        if planned is not None:
            self.ready[planned.index] = call
        else:
            self.late.append(call)

    def _side_calls(self, k: int) -> None:
        """The calls of side transcript ``k`` (a subagent's; a compaction transcript that matched no
        boundary), read now that its first call is due; its transcript is let go after."""
        reader = self.reader
        if k in self.sides_read or self._compaction(k):
            return
        self.sides_read.add(k)
        build = self.side_builds.setdefault(k, Phase(path=self.path, format=FORMAT))
        if k in self.plan.matches:  # a compaction transcript read as a subagent
            transcript = self.compactions.pop(k, None) or self._parse_side(k)
            build.note("compaction-unmatched", COMPACTION_UNMATCHED, str(self.side_paths[k - 1]))
        else:
            transcript = self._parse_side(k)
        if transcript is None:
            return
        self._note_sub_boundaries(transcript)
        reader.trace = build
        for line in transcript.lines:
            if line.type != "assistant":
                line.record = read_later(line.record, line.type)
        for key, lines in reader.groups(transcript).items():
            if self.plan.owners.get(key) != k:
                reader.note_once("duplicate-call", DUPLICATE_CALL, lines[0].place)
                continue
            call = reader.call(transcript, lines, key)
            for line in lines:
                line.record, line.request, line.message_id, line.prompt_usage = {}, None, None, None
            self._place(k, key, call)
        for line in transcript.lines:
            if line.type == "progress":
                self._copy(k, line)
        for thread in [t for t in self.threads.values() if t.file == k and not t.built]:
            self._place_thread(thread)

    def _note_sub_boundaries(self, transcript: Transcript) -> None:
        self.sub_boundaries += [line.place for line in transcript.lines if line.boundary]

    # -- threads rebuilt from progress lines --------------------------------------------------------
    def _copy(self, file: int, line: Line) -> None:
        """A progress line's copy of a subagent's line, kept for its thread when that is rebuilt."""
        copied = agent_copy(line, self._copied(file))
        if copied is None:
            return
        agent, data, nested = copied
        key = (file, str(agent))
        thread = self.threads.get(key)
        if thread is None:
            scanned = {c.agent for c in self.scans[file].copies} if file < len(self.scans) else set()
            rebuilt = key in self.plan.threads or str(agent) not in scanned
            transcript = Transcript(path=self._path_of(file), origin=", from progress") if rebuilt else None
            self.threads[key] = thread = _Thread(file, str(agent), transcript, len(self.threads))
        if thread.transcript is None or thread.built:
            return
        prompt = data.get("prompt")
        inner = "data.message."
        if not thread.records and nested.get("type") == "assistant" and isinstance(prompt, str):
            check_text(thread.transcript.path, f"line {line.number}: data.prompt", prompt)
            opening = {"type": "user", "message": {"role": "user", "content": prompt}}
            self._thread_line(
                thread, line.number, copy_line(opening, None, f"progress:{line.number}:prompt", agent), "data."
            )
        parent = thread.last_uuid
        self._thread_line(thread, line.number, copy_line(nested, parent, f"progress:{line.number}", agent), inner)
        if file == 0 and line.number >= self.plan.threads.get(key, 1 << 62):
            self._place_thread(thread)

    def _copied(self, file: int) -> set[str]:
        if not hasattr(self, "_copies_seen"):
            self._copies_seen: dict[int, set[str]] = {}
        return self._copies_seen.setdefault(file, set())

    def _path_of(self, file: int) -> str:
        return self.path if file == 0 else str(self.side_paths[file - 1])

    def _thread_line(self, thread: "_Thread", number: int, record: dict, inner: str) -> None:
        reader = self.reader
        reader.trace = thread.phase
        assert thread.transcript is not None
        reader.planned_keys = {}
        line = reader.add(thread.transcript, "", number, record, inner, "line", thread.last)
        reader.planned_keys = self.plan.keys
        thread.records += 1
        if line is not None:
            line.sidechain = True
            thread.last_uuid = record["uuid"]
        else:
            thread.last_uuid = record["uuid"]

    def _place_thread(self, thread: "_Thread") -> None:
        for call in self._thread_calls(thread):
            self.late.append(call)  # not planned: given at the end (a thread the pass did not see)

    def _thread_calls(self, thread: "_Thread") -> list[Call]:
        """Build a rebuilt thread's calls into their places; the calls the plan does not hold are returned."""
        if thread.built or thread.transcript is None:
            thread.built = True
            return []
        thread.built = True
        reader = self.reader
        reader.trace = thread.phase
        transcript = thread.transcript
        reader.rekey_lines(transcript.lines, note=False)
        for line in transcript.lines:
            if line.type != "assistant":
                line.record = read_later(line.record, line.type)
        out = []
        for key, lines in reader.groups(transcript).items():
            owner = self.plan.owners.get(key)
            if owner is not None and owner >= 0:
                continue  # counted from a file (quietly: a copy)
            if key in thread.made or key in self._thread_keys():
                continue
            call = reader.call(transcript, lines, key)
            thread.made.add(key)
            reader.trace.note("subagent-from-progress", FROM_PROGRESS, call.where)
            planned = self.plan.thread_calls.get(key)
            if planned is not None:
                self.ready[planned.index] = call
            else:
                out.append(call)
        thread.transcript = None
        return out

    def _thread_keys(self) -> set[str]:
        return {key for thread in self.threads.values() for key in thread.made}

    # -- letting go --------------------------------------------------------------------------------
    def _drop(self) -> None:
        """Let go of the lines before the newest compaction whose calls are all built, when no later
        line of the file names one of them."""
        if not self.boundaries:
            return
        pending_first = self.lines_of[self.pending[0]][0].number if self.pending else None
        cut: Line | None = None
        for boundary in self.boundaries:
            if pending_first is not None and pending_first < boundary.number:
                break
            if any(trigger <= boundary.number and k in self.compactions for k, trigger in self.triggers.items()):
                break
            cut = boundary
        if cut is None:
            return
        transcript = self.transcript
        lines = transcript.lines
        end = next(i for i, line in enumerate(lines) if line is cut)
        region = lines[:end]
        if not region:
            self.boundaries = [b for b in self.boundaries if b.number > cut.number]
            return
        numbers = {id(line) for line in region}
        for line in region:
            if line.uuid is not None and self.scan.parents.last_line(line.uuid) > cut.number:
                return  # a later line names it: a rewind across the compaction
            if line.parent is not None:
                parent = transcript.by_uuid.get(line.parent)
                if parent is not None and id(parent) not in numbers:
                    return
                if parent is None and self.scan.uuids.last_line(line.parent) > line.number:
                    return
        for line in region:
            if line.uuid is not None and transcript.by_uuid.get(line.uuid) is line:
                del transcript.by_uuid[line.uuid]
                transcript.dropped_uuids.add(line.uuid)
            for part in line.parts:
                call_id = getattr(part, "id", None) if type(part).__name__ == "ToolUse" else None
                if call_id is not None:
                    if transcript.tool_uses.get(call_id) is line:
                        del transcript.tool_uses[call_id]
                    transcript.dropped_tools.add(call_id)
        del lines[:end]
        transcript._children = None
        states = transcript.states
        for state_key in [k for k in states if k[0] not in transcript.by_uuid]:
            del states[state_key]
        reader = self.reader
        live = list(states.values())
        kept = {(id(s.final), id(s.open)) for s in live}
        for made in [made for made in reader.lists if made not in kept]:
            del reader.lists[made]
        opened = {id(s.open) for s in live}
        for made_id in [i for i in reader.converted if i not in opened]:
            del reader.converted[made_id]
        for key in self.built_keys:
            reader.responses.pop(key, None)
        self.built_keys = []
        self.boundaries = [b for b in self.boundaries if b.number > cut.number]

    @property
    def lines_kept(self) -> int:
        """The lines the reader holds (about those since the last compaction)."""
        return len(self.transcript.lines)

    # -- following a session being written ----------------------------------------------------------
    def _follow(self, number: int, record: Any) -> list[Call]:
        reader = self.reader
        line = reader.add(self.transcript, "", number, record, "", "line", self.last)
        try:
            if line is None or line.type != "assistant" or line.synthetic:
                return []
            key = line.key or ""
            if key in reader.seen:
                return []
            reader.seen.add(key)
            call = reader.call(self.transcript, [line], key, None if self.prompts else EMPTY)
            if self.trace.session is None and isinstance(line.record.get("sessionId"), str):
                self.trace.session = line.record["sessionId"]
            call.index = self.given
            self.given += 1
            return [call]
        finally:
            if line is not None and not self.prompts:
                _slim(self.transcript, line)

    def forget(self, keep: int) -> None:
        """Keep only the newest ``keep`` prompt states, and the message lists made from them (a
        session followed for hours holds what the next lines need); a line whose parent's state was
        dropped (a rewind) rebuilds it from the chain, once. The caches keyed by object ids are
        cleared too: what is saved between runs (``tokprof statusline``) is the lines and states."""
        states = self.transcript.states
        if len(states) > keep:
            for key in list(states)[: len(states) - keep]:
                del states[key]
        kept = {(id(state.final), id(state.open)) for state in states.values()}
        lists = self.reader.lists
        for made in [made for made in lists if made not in kept]:
            del lists[made]


class _Thread:
    """A subagent's thread rebuilt from the copies of its lines in ``progress`` lines."""

    def __init__(self, file: int, agent: str, transcript: Transcript | None, order: int) -> None:
        self.file = file
        self.agent = agent
        self.transcript = transcript  # None: its calls are read from a file (not rebuilt)
        self.order = order
        self.phase = Phase(path="", format=FORMAT)
        self.last: dict[bool, str | None] = {}
        self.last_uuid: str | None = None
        self.records = 0
        self.built = False
        self.made: set[str] = set()


def _slim(transcript: Transcript, line: Line) -> None:
    """What a line keeps once its call is made, when no prompt state is built: its place in the chain
    (uuid, parent, thread). Its content and fields, and the tool calls it holds, are read only to
    build prompt states or its own call."""
    line.parts, line.skipped, line.record = (), (), {}
    line.prefix = line.place = ""
    line.key = line.request = line.message_id = line.prompt_usage = None
    transcript.tool_uses.clear()


def _label(session: Path, side: Path) -> str:
    try:
        return side.relative_to(session.parent).as_posix() + " "
    except ValueError:
        return side.name + " "


def _top(transcript: Transcript, first: Line) -> Line:
    chain = request_chain(transcript, first)
    return chain[-1] if chain else first


def _unwritten(path: Path) -> bool:
    """A file with no whole line yet (empty, or its first line still being written)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return False
    return not head.strip() or (b"\n" not in head.rstrip(b"\r\n") and not head.rstrip().endswith(b"}"))


def records_of(doc: Document) -> Iterator[Record]:
    """The session file's lines (a JSON document: its one object)."""
    if doc.lines is not None:
        for line, value in doc.lines:
            yield Record(value, line)
    else:
        yield Record(doc.value)


__all__ = ["SessionReader", "records_of"]
