"""Compaction calls (Claude Code 2.1's ``<session>/subagents/agent-acompact-*.jsonl``): where each
goes among the main thread's calls, and its prompt, the main conversation before its boundary (see
:mod:`tokprof.formats.claude_code`)."""

from __future__ import annotations

from tokprof.formats.claude_lines import MESSAGE_TYPES, Line, State, Transcript
from tokprof.formats.claude_reader import Reader
from tokprof.formats.neutral import parse_time
from tokprof.trace import Call


def compaction_calls(reader: Reader, main: Transcript, compact: Transcript) -> list[tuple[float, Call]] | None:
    """The calls of a compaction transcript, each with where it goes among the main thread's
    calls (its boundary's line); None when the transcript continues no line of the session and
    matches no boundary (it is then read as a subagent)."""
    plans = []
    on_chains: set[int] = set()
    for key, lines in reader.groups(compact).items():
        chain = request_chain(compact, lines[0])
        top = chain[-1] if chain else lines[0]
        anchor = main.by_uuid.get(top.parent) if top.parent else None
        boundary = boundary_of(reader, main, anchor, lines)
        if anchor is None and boundary is not None:
            anchor = line_before(main, boundary)
        if anchor is None:
            return None
        plans.append((key, lines, chain[::-1], anchor, boundary))
        on_chains.update(id(line) for line in chain + lines)
    # lines the transcript adds after main-thread lines (hook output the session file does not keep)
    inserts: dict[str, list[Line]] = {}
    for line in compact.lines:
        # (only a main-thread line's are read: those on the history)
        if line.type == "user" and id(line) not in on_chains and line.parent is not None:
            inserts.setdefault(line.parent, []).append(line)
    out: list[tuple[float, Call]] = []
    for key, lines, chain, anchor, boundary in plans:
        if boundary is not None:
            reader.recorded.add(id(boundary))
        if not reader.first_time(key, lines):
            continue
        state = compaction_state(reader, main, compact, anchor, chain, inserts, lines[0])
        call = reader.call(compact, lines, key, state=state, compaction=True)
        out.append((boundary.number if boundary is not None else anchor.number + 0.5, call))
    return out


def request_chain(compact: Transcript, first: Line) -> list[Line]:
    """The lines of a compaction transcript that its response's first line follows (the request),
    nearest first: the parent of the last one is the main-thread line the call continues from."""
    chain: list[Line] = []
    top = first
    while top.parent is not None and top.parent in compact.by_uuid and len(chain) <= len(compact.lines):
        top = compact.by_uuid[top.parent]
        chain.append(top)
    return chain


def boundary_of(reader: Reader, main: Transcript, anchor: Line | None, lines: list[Line]) -> Line | None:
    """The compact_boundary a compaction call made: the one whose ``logicalParentUuid`` is the
    line the call continued from, else the first one written after the call's last line."""
    free = [line for line in main.lines if line.boundary and id(line) not in reader.recorded]
    if anchor is not None:
        for line in free:
            if line.record.get("logicalParentUuid") == anchor.uuid:
                return line
        free = [line for line in free if not isinstance(line.record.get("logicalParentUuid"), str)]
    times = [t for t in (parse_time(line.record.get("timestamp")) for line in lines) if t is not None]
    if not times:
        return None
    end = max(times)
    for line in free:
        written = parse_time(line.record.get("timestamp"))
        if written is not None and written >= end:
            return line
    return None


def compaction_state(
    reader: Reader,
    main: Transcript,
    compact: Transcript,
    anchor: Line,
    chain: list[Line],
    inserts: dict[str, list[Line]],
    first: Line,
) -> State:
    """A compaction call's prompt: the main thread's history up to the line it continued from,
    with the lines its transcript adds after main-thread lines spliced in after them, then its own
    lines (the summarisation request)."""
    path: list[Line] = []
    current: Line | None = anchor
    while current is not None and len(path) <= len(main.lines):
        if current.type in MESSAGE_TYPES and current.sidechain:
            break
        path.append(current)
        if current.boundary:
            break
        current = reader.parent(main, current)
    path.reverse()
    spliced = [i for i, line in enumerate(path) if line.uuid is not None and line.uuid in inserts]
    if not spliced:
        state = reader.state_after(main, anchor, False, first)
    else:
        start = spliced[0]
        state = reader.state_after(main, path[start], False, first)
        for i in range(start, len(path)):
            if i > start:
                state = reader.extend(main, state, path[i])
            for extra in inserts.get(path[i].uuid or "", ()):
                state = reader.extend(compact, state, extra)
    for line in chain:
        state = reader.extend(compact, state, line)
    return state


def line_before(main: Transcript, boundary: Line) -> Line | None:
    """The main-thread line a compact boundary follows: its ``logicalParentUuid``, else the last
    conversation line before it."""
    parent = boundary.record.get("logicalParentUuid")
    if isinstance(parent, str) and parent in main.by_uuid:
        return main.by_uuid[parent]
    before = None
    for line in main.lines:
        if line is boundary:
            break
        if line.type in MESSAGE_TYPES and not line.sidechain:
            before = line
    return before
