"""The Claude Code reader's machinery: lines checked as they are read, grouped into model calls, each
call's prompt built along the ``parentUuid`` chain, and compaction calls placed at their boundaries
(the rules are in :mod:`tokprof.formats.claude_code`; :mod:`tokprof.formats.claude_code.fold` feeds it)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from tokprof.base.text import visible

from tokprof.base.errors import InputError
from tokprof.formats.claude_code.lines import (
    EMPTY,
    MESSAGE_TYPES,
    USAGE_FIELDS,
    Item,
    Line,
    Part,
    State,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Transcript,
    agent_copy,
    answered,
    assistant,
    assistant_part,
    blocks,
    call_key,
    copy_line,
    kept,
    nested_key,
    place_text,
    prompt_usage,
    read_later,
    stand_in,
    user_part,
)
from tokprof.formats.jsonfile import TRUNCATED_LAST_LINE, load
from tokprof.formats.fields import expect_object, optional_string, string
from tokprof.formats.neutral import (
    anthropic_usage,
    cache_creation,
    check_count,
    check_messages,
    check_model,
    check_text,
    parse_day,
    parse_time,
)
from tokprof.trace import Call, Note, PromptView, Trace, Usage, extended

#: Line types that are not conversation and need no warning.
QUIET_TYPES = (
    "system",
    "summary",
    "progress",
    "file-history-snapshot",
    "queue-operation",
    "custom-title",
    "last-prompt",
    "tag",
    "agent-name",
    "ai-title",
    "pr-link",
)
SYNTHETIC_MODEL = "<synthetic>"
COMPACT_PREFIX = "agent-acompact-"  # the file name of a compaction call's transcript (2.1)
COMPACT_AGENT = "acompact-"  # the agentId of its lines

NOT_TEXT = (
    "content that is not text (images, documents, redacted thinking, server tool results) cannot be "
    "rendered by a chat template: it is left out of the prompt and its tokens are not counted"
)
STREAM_START = (
    "Claude Code wrote these calls' usage when the response stream started (no line of the call has a "
    "stop_reason, and its output_tokens is under one token per 10 characters of its output): the prompt "
    "counts are complete, but output_tokens is a placeholder that under-reports the output (the largest "
    "value seen is kept)"
)
#: An output count under one token per this many characters of the call's output (text, thinking, tool
#: calls' names and arguments) is a placeholder: final counts run at 1 to 7 characters a token on real
#: Claude Code 2.0 and 2.1 sessions, streaming-start placeholders at 23 and more.
PLACEHOLDER_CHARACTERS = 10


def thread_name(transcript: Transcript, first: Line) -> str:
    """A subagent's thread: its agent id (the line's ``agentId``, else its transcript's name
    ``agent-<id>.jsonl``), else, for a sidechain of the session file with neither, ``sidechain`` and the
    start of the uuid of its first line: never a file's path."""
    agent = first.record.get("agentId")
    if isinstance(agent, str) and agent:
        return agent
    name = Path(transcript.path).name
    if name.startswith("agent-") and name.endswith(".jsonl") and transcript.path != "":
        return name[len("agent-") : -len(".jsonl")]
    line, seen = first, 0
    while line.parent is not None and line.parent in transcript.by_uuid and seen < len(transcript.by_uuid):
        parent = transcript.by_uuid[line.parent]
        if not parent.sidechain:
            break
        line, seen = parent, seen + 1
    return "sidechain " + (line.uuid or str(line.number))[:8]


def output_characters(lines: list[Line]) -> int:
    """The characters of a call's output over its lines: text, thinking, tool calls' names and arguments."""
    total = 0
    for line in lines:
        for part in line.parts:
            if isinstance(part, (Text, Thinking)):
                total += len(part.text)
            elif isinstance(part, ToolUse):
                total += len(part.call["function"]["name"]) + len(part.call["function"]["arguments"])
    return total


def placeholder(output: int | None, lines: list[Line]) -> bool:
    """Whether a call's output count (written before its stream ended) looks like a placeholder."""
    return output is None or output * PLACEHOLDER_CHARACTERS < output_characters(lines)


SYNTHETIC = (
    "assistant lines Claude Code wrote itself (model <synthetic> or isApiErrorMessage: API errors, "
    "'No response requested.') are not model calls: they are skipped and left out of later prompts"
)
COMPACTION = (
    "a compaction (compact_boundary) is a model call that summarised the conversation, but no transcript "
    "records it (Claude Code before 2.1 writes none; 2.1 writes <session>/subagents/agent-acompact-*.jsonl, "
    "missing here), so it is not profiled (compactMetadata.preTokens is the context size, not billed "
    "usage); later prompts start from the compact summary"
)
COMPACTION_UNMATCHED = (
    "a compaction transcript (agent-acompact-*.jsonl) continues no line of the session and matches no "
    "compact_boundary: it is read as a subagent of its own"
)
REQUEST_REUSED = (
    "a requestId is shared by lines of different responses (different message.id, or different prompt "
    "usage; a sanitiser that writes one placeholder for every id does this): counting them as one call "
    "would merge separate calls, so their calls are told apart by message.id, else by the line's position "
    "(and are not matched with copies in other files)"
)
MICROCOMPACT = (
    "Claude Code cleared old tool results from the context here (microcompact_boundary) but the "
    "transcript keeps them in full: later prompts may render tool results the model no longer saw"
)
CHAIN_BROKEN = (
    "a line's parentUuid names a line that is not in the file (the session was cut or resumed from "
    "elsewhere): the prompt starts after the missing line"
)
ORPHAN_RESULT = (
    "a tool_result answers a tool_use that is not in the prompt's conversation (a broken chain): its "
    "text is kept as user text"
)
BESIDE_CHAIN = (
    "tool results written beside the parentUuid chain (a parallel tool's result, on a branch of its own "
    "while the chain goes on through another tool's progress lines) answer calls on the chain: they are "
    "in the prompt, after those calls, as the API requires every call answered"
)
ATTACHMENTS = (
    "attachment lines carry context (hook output, reminders, queued prompts) that Claude Code may "
    "render into the prompt in a way the log does not show: they are left out of the rendered prompt "
    "(any tokens they add fall in the unrecorded part)"
)
LOOP = "the parentUuid chain loops (a line is its own ancestor)"
UNKNOWN_TYPE = "lines of a type tokprof does not know are skipped (newer Claude Code versions add types)"
DUPLICATE_LINE = "a line repeats the uuid of an earlier line: the repeat is skipped"
DUPLICATE_CALL = "a model call (requestId) that appears in more than one transcript is counted once"
FROM_PROGRESS = (
    "these subagent calls are in no subagent transcript file (it is missing): they are rebuilt from "
    "the copies of the subagent's lines in the session's progress lines, in file order"
)


@dataclass
class Phase(Trace):
    """The notes of one phase of a read (a file's lines, a thread's calls), kept in the order they were
    made, each with the line type of a note made once per type (:meth:`Prompts.note_type`): the
    reader joins the phases in the order the rules give, whatever order they were read in."""

    events: list[tuple[str, str, str | None, str | None]] = field(default_factory=list)
    typed: set[tuple[str, str]] = field(default_factory=set)

    def note(self, code: str, message: str, place: str | None = None, line_type: str | None = None) -> None:
        self.events.append((code, message, visible(place) if place is not None else None, line_type))


def join_phases(trace: Trace, phases: Iterable[Trace]) -> None:
    """Add the phases' notes to ``trace`` in order (gathered by code), a note made once per line type
    only where no earlier phase made it for that type."""
    typed: set[tuple[str, str]] = set()
    for phase in phases:
        if not isinstance(phase, Phase):
            for note in phase.notes:
                _join(trace, Note(note.code, note.message, list(note.places)))
            continue
        for code, message, place, line_type in phase.events:
            if line_type is not None:
                if (code, line_type) in typed:
                    continue
                typed.add((code, line_type))
            _join(trace, Note(code, message, [place] if place is not None else []))


def _join(trace: Trace, note: Note) -> None:
    existing = next((n for n in trace.notes if n.code == note.code), None)
    if existing is None:
        trace.notes.append(note)
    else:
        existing.places.extend(note.places)


class Prompts:
    """Turns transcripts into calls, gathering notes on the trace and the calls already counted."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.seen: set[str] = set()  # keys of the calls counted
        self.noted: set[tuple[str, str]] = set()
        self.types_noted: set[str] = set()
        self.converted: dict[int, tuple[tuple, list[dict]]] = {}  # id(items) -> (items, their messages)
        #: (id(final), id(open)) of a state -> (final, open, its messages as one list, taken by a call)
        self.lists: dict[tuple[int, int], tuple[Sequence[dict], tuple, PromptView, bool]] = {}
        #: call key -> its response, until a prompt holds it: the prompt's message is then that object
        self.responses: dict[str, dict] = {}
        self.boundaries: list[Line] = []  # compact_boundary lines, in reading order
        self.recorded: set[int] = set()  # id() of the boundaries whose compaction call is recorded
        self.reused: dict[str, dict[str | None, set[tuple]]] = {}  # reused requestId -> message.id -> prompt usages
        self.positional: set[str] = set()  # call keys made from a line's position: no provider id
        #: (place prefix, line) -> the call key of a response line whose requestId is reused, decided
        #: before the lines are read (:func:`tokprof.formats.claude_code.scan.plan`)
        self.planned_keys: dict[tuple[str, int], str] = {}

    def note_once(self, code: str, message: str, place: str) -> None:
        if (code, place) not in self.noted:
            self.noted.add((code, place))
            self.trace.note(code, message, place)

    # -- parsing -----------------------------------------------------------------------------------
    def parse(
        self, path: str, label: str, items: Iterable[tuple[int, Any, str]], origin: str = "", unit: str = "line"
    ) -> Transcript:
        """Check the lines of one file (or one thread rebuilt from progress lines), as they are read;
        ``unit`` names them in places ("item" for the values of a JSON list). Each line keeps only the
        fields read later (:func:`kept`): a long session's tool metadata, snapshots and progress
        output are not held."""
        transcript = Transcript(path=path, origin=origin)
        last: dict[bool, str | None] = {}  # the last conversation line of each thread, for the file-order fallback
        for number, record, inner in items:
            self.add(transcript, label, number, record, inner, unit, last)
        return transcript

    def add(
        self,
        transcript: Transcript,
        label: str,
        number: int,
        record: Any,
        inner: str,
        unit: str,
        last: dict[bool, str | None],
    ) -> Line | None:
        """Check one line and add it to its transcript (None for a duplicate line)."""
        path = transcript.path
        at = f"{unit} {number}"
        record = expect_object(path, at, record, "a transcript line object")
        kind = sys.intern(string(path, f"{at}: {inner}type", record.get("type")))
        line = self.line(path, f"{at}: {inner}", f"{label}{at}", number, record, kind, last)
        if line.parent is not None and line.parent in transcript.by_uuid:
            line.parent = transcript.by_uuid[line.parent].uuid  # one string for the uuid and the links to it
        if line.uuid is not None:
            if line.uuid in transcript.by_uuid or line.uuid in transcript.dropped_uuids:
                self.note_once("duplicate-line", DUPLICATE_LINE, line.place)
                return None
            if line.uuid == line.parent:
                raise InputError(path, f"{at}: {inner}parentUuid", "names the line itself: the parentUuid chain loops")
            transcript.by_uuid[line.uuid] = line
        if kind in MESSAGE_TYPES:
            last[line.sidechain] = line.uuid
        for part in line.parts:
            if isinstance(part, ToolUse) and part.id not in transcript.dropped_tools:
                transcript.tool_uses.setdefault(part.id, line)
        transcript.lines.append(line)
        return line

    def line(
        self, path: str, prefix: str, place: str, number: int, record: dict, kind: str, last: dict[bool, str | None]
    ) -> Line:
        uuid = optional_string(path, prefix + "uuid", record.get("uuid"))
        sidechain = record.get("isSidechain") is True
        if uuid is None and kind in MESSAGE_TYPES:
            uuid = f"#{number}"  # no uuid: the line is still a link of the file-order chain
        if "parentUuid" in record:
            parent = optional_string(path, prefix + "parentUuid", record["parentUuid"])
        else:
            parent = last.get(sidechain) if kind in MESSAGE_TYPES else None
        line = Line(number, prefix, place, record, kind, uuid, parent, sidechain)
        if kind in MESSAGE_TYPES:
            self.message(path, line)
        elif kind == "system":
            self.system(line)
        elif kind == "attachment":
            self.note_type("attachment-lines", ATTACHMENTS, line)
        elif kind not in QUIET_TYPES:
            self.note_type("unknown-line-type", UNKNOWN_TYPE, line)
        line.record = kept(record, kind)
        return line

    def note_type(self, code: str, message: str, line: Line) -> None:
        """A note made once per line type (a long session has thousands of each): in a phase of the
        fold's notes (:class:`Phase`), gathered there and kept for the first line of its type when
        the phases are joined; else at once."""
        if isinstance(self.trace, Phase):
            if (code, line.type) not in self.trace.typed:
                self.trace.typed.add((code, line.type))
                self.trace.note(code, message, f"{line.place} ({line.type})", line.type)
        elif line.type not in self.types_noted:
            self.types_noted.add(line.type)
            self.trace.note(code, message, f"{line.place} ({line.type})")

    def system(self, line: Line) -> None:
        subtype = line.record.get("subtype")
        if subtype == "compact_boundary":
            line.boundary = True
            self.trace.compactions += 1
            self.boundaries.append(line)  # noted at the end, unless its call is recorded
        elif subtype == "microcompact_boundary":
            self.trace.note("microcompact", MICROCOMPACT, line.place)

    def message(self, path: str, line: Line) -> None:
        message = expect_object(path, line.prefix + "message", line.record.get("message"), "the message, an object")
        where = line.prefix + "message.content"
        found = blocks(path, where, message.get("content"))
        parts: list[Part | None]
        skipped: list[str] = []
        if line.type == "user":
            parts = [user_part(path, line.place, skipped, at, block) for at, block in found]
        else:
            check_model(path, line.prefix + "message.", message)
            line.synthetic = message.get("model") == SYNTHETIC_MODEL or line.record.get("isApiErrorMessage") is True
            line.key = self.planned_keys.get((line.place[: -len(f"line {line.number}")], line.number)) or call_key(
                path, line, message
            )
            request, message_id = line.record.get("requestId"), message.get("id")
            line.request = request if isinstance(request, str) and request else None
            line.message_id = message_id if isinstance(message_id, str) and message_id else None
            line.prompt_usage = prompt_usage(message.get("usage"))
            parts = [assistant_part(path, line.place, skipped, at, block) for at, block in found]
        line.parts = tuple(part for part in parts if part is not None)
        line.skipped = tuple(skipped)  # most lines: the empty tuple, one for all

    # -- calls -------------------------------------------------------------------------------------
    def groups(self, transcript: Transcript, note: bool = True) -> dict[str, list[Line]]:
        """The lines of each model call of a transcript, in the order of their first lines."""
        groups: dict[str, list[Line]] = {}
        for line in transcript.lines:
            if line.type == "assistant" and not line.synthetic:
                groups.setdefault(line.key or "", []).append(line)
            elif line.synthetic and note:
                self.note_once("synthetic-message", SYNTHETIC, line.place)
        return groups

    def first_time(self, key: str, lines: list[Line], quiet_duplicates: bool = False) -> bool:
        """Whether a call is counted for the first time (a call in two transcripts is counted once)."""
        if key in self.seen:
            if not quiet_duplicates:
                self.note_once("duplicate-call", DUPLICATE_CALL, lines[0].place)
            return False
        self.seen.add(key)
        return True

    def calls(self, transcript: Transcript, quiet_duplicates: bool = False) -> list[tuple[float, Call]]:
        """One call per model call of a transcript not counted yet, in the order of its first line,
        each with the line number of its first line."""
        out: list[tuple[float, Call]] = []
        for line in transcript.lines:
            if line.type != "assistant":
                line.record = read_later(line.record, line.type)
        for key, lines in self.groups(transcript).items():
            if not self.first_time(key, lines, quiet_duplicates):
                continue
            call = self.call(transcript, lines, key)
            for line in lines:  # what the call read of its lines (telling calls apart: rekey) is read no more
                line.record, line.request, line.message_id, line.prompt_usage = {}, None, None, None
            out.append((lines[0].number, call))
            if transcript.origin:
                self.trace.note("subagent-from-progress", FROM_PROGRESS, call.where)
        return out

    def call(
        self, transcript: Transcript, lines: list[Line], key: str, state: State | None = None, compaction: bool = False
    ) -> Call:
        first = lines[0]
        prefix = f"{first.place}: "
        if state is None:
            state = self.state_before(transcript, first)
        messages = self.joined(transcript.path, prefix, state, for_call=True)
        parts = [part for line in lines for part in line.parts]
        response = check_messages(transcript.path, prefix + "response ", [assistant(parts)])[0]
        if messages:  # a prompt may hold it later (none does where no prompts are built: the status line)
            self.responses[key] = response
        model = next((m for m in (line.record["message"].get("model") for line in lines) if isinstance(m, str)), None)
        if compaction:
            where = first.place + " (compaction)"
        else:
            where = first.place + (f" (subagent{transcript.origin})" if first.sidechain else transcript.origin)
        sidechain = first.sidechain and not compaction
        return Call(
            index=0,  # numbered once every call is read, in time order
            messages=messages,
            tools=None,
            model=model,
            reported=self.usage(transcript.path, lines),
            day=parse_day({"timestamp": first.record.get("timestamp")}),
            where=where,
            response=response,
            kind="compaction" if compaction else "call",
            # a subagent has its own system prompt and tools: its own inferred fixed part
            thread=thread_name(transcript, first) if sidechain else "",
            request_id=None if not key or key in self.positional else key,
            time=parse_time(first.record.get("timestamp")),
            cwd=place_text(transcript.path, first, "cwd"),
            git_branch=place_text(transcript.path, first, "gitBranch"),
        )

    # -- prompts -----------------------------------------------------------------------------------
    def state_before(self, transcript: Transcript, first: Line) -> State:
        """The prompt of a call: the state of its thread after the parent of its first line."""
        return self.state_after(transcript, self.parent(transcript, first), first.sidechain, first)

    def state_after(self, transcript: Transcript, current: Line | None, thread: bool, first: Line) -> State:
        """The state of a thread after a line (``first`` is the line whose prompt is wanted, for
        errors). States are built from the state kept for the nearest line up the chain, and the
        state asked for is kept, so a long session costs one pass (a branch from a line between two
        calls walks back to the last call's: the lines between calls)."""
        path: list[Line] = []
        base = EMPTY
        walked: set[int] = set()
        while current is not None:
            if id(current) in walked:
                raise InputError(transcript.path, f"{current.place}: parentUuid", LOOP)
            walked.add(id(current))
            memo = transcript.states.get((current.uuid or "", thread))
            if memo is not None:
                base = memo
                break
            if current.type in MESSAGE_TYPES and current.sidechain != thread:
                break  # the start of a subagent's thread: it does not see the parent's conversation
            path.append(current)
            if current.boundary:
                break  # a compaction: the context restarts after it
            current = self.parent(transcript, current)
        state = base
        for link in reversed(path):
            state = self.extend(transcript, state, link)
        if path and path[0].uuid is not None:
            # kept for the line asked about alone: the next call's walk stops here, so reading stays one
            # pass (a walk covers the lines since the last call), without a state per line
            transcript.states[(path[0].uuid, thread)] = state
        return state

    def parent(self, transcript: Transcript, line: Line) -> Line | None:
        if line.parent is None:
            return None
        found = transcript.by_uuid.get(line.parent)
        if found is None:
            self.note_once("chain-broken", CHAIN_BROKEN, f"{line.place} (parent {line.parent})")
        return found

    def extend(self, transcript: Transcript, state: State, line: Line) -> State:
        """The state after one more line of the chain."""
        if line.boundary:
            return EMPTY
        state = self.beside(transcript, state, line)
        if line.type not in MESSAGE_TYPES or line.synthetic:
            return state
        for place in line.skipped:
            self.note_once("content-not-text", NOT_TEXT, place)
        open_ = state.open
        if line.type == "user":
            parts = self.resolve(transcript, line)
            if not parts:
                return state
            if open_ and open_[-1].role == "user":  # consecutive user lines are sent as one message
                return State(state.final, open_[:-1] + (open_[-1].extended(parts),))
            return State(state.final, open_ + (Item("user", None, tuple(parts)),))
        if open_ and open_[0].role == "assistant" and open_[0].key == line.key:
            # another block of the same response: tool results written in between move after it
            return State(state.final, (open_[0].extended(line.parts),) + open_[1:])
        final = self.joined(transcript.path, f"{line.place}: ", state) if open_ else state.final
        return State(final, (Item("assistant", line.key, tuple(line.parts)),))

    def beside(self, transcript: Transcript, state: State, line: Line) -> State:
        """The state with the tool results written beside ``line`` (its siblings: the other lines with
        its parent) that answer tool calls on the chain and are not answered yet: Claude Code writes
        a parallel tool's result as a branch of its own while the chain goes on through another
        tool's progress lines, and the API takes the next request only with every call answered."""
        if line.parent is None:
            return state
        for sibling in transcript.children(line.parent):
            if (
                sibling is line
                or sibling.type != "user"
                or sibling.sidechain != line.sidechain
                or not sibling.parts
                or any(not isinstance(part, ToolResult) for part in sibling.parts)
            ):
                continue
            ids = [part.call_id for part in sibling.parts if isinstance(part, ToolResult)]
            if any(not self.on_chain(transcript, transcript.tool_uses.get(i), sibling) for i in ids):
                continue
            if any(answered(state, i) for i in ids):
                continue
            self.note_once("results-beside-chain", BESIDE_CHAIN, f"{sibling.place}")
            parts = list(sibling.parts)
            open_ = state.open
            if open_ and open_[-1].role == "user":
                state = State(state.final, open_[:-1] + (open_[-1].extended(parts),))
            else:
                state = State(state.final, open_ + (Item("user", None, tuple(parts)),))
        return state

    def resolve(self, transcript: Transcript, line: Line) -> list[Part]:
        """A user line's parts, a tool result whose tool_use is not on the chain turned into text."""
        out = []
        for part in line.parts:
            if isinstance(part, ToolResult) and not self.on_chain(
                transcript, transcript.tool_uses.get(part.call_id), line
            ):
                self.note_once("orphan-tool-result", ORPHAN_RESULT, f"{line.place} ({part.call_id})")
                part = Text(part.text)
            out.append(part)
        return out

    def on_chain(self, transcript: Transcript, target: Line | None, line: Line) -> bool:
        """Is ``target`` an ancestor of ``line`` in its context (usually a step or two up)?"""
        current = transcript.by_uuid.get(line.parent) if line.parent else None
        steps = 0
        while target is not None and current is not None and steps <= len(transcript.lines):
            if current is target:
                return True
            if current.boundary or (current.type in MESSAGE_TYPES and current.sidechain != line.sidechain):
                return False
            current = transcript.by_uuid.get(current.parent) if current.parent else None
            steps += 1
        return False

    def joined(self, path: str, prefix: str, state: State, for_call: bool = False) -> PromptView:
        """A state's messages: its final messages, then its open items converted, as a view of one
        list that the states and calls of a stretch of the conversation share (:func:`extended`: the
        list grows at its end), so a long session holds its messages' pointers once, not once per
        call. A call's prompt and the final messages of the state after the call's first line read
        the same messages; each call has its own view."""
        key = (id(state.final), id(state.open))
        found = self.lists.get(key)
        if found is not None and found[0] is state.final and found[1] is state.open:
            _, _, messages, taken = found
        else:
            messages, taken = extended(state.final, self.check(path, prefix, state.open)), False
        if for_call and taken:
            return PromptView(messages.base, messages.length)
        self.lists[key] = (state.final, state.open, messages, taken or for_call)
        return messages

    def check(self, path: str, prefix: str, items: tuple[Item, ...]) -> list[dict]:
        """Neutral messages for items, through check_messages. Tool results may answer a response
        before these items: stand-in assistant messages declare those calls, and are dropped. The
        items of a state are converted once: a call and the state after it share the messages."""
        cached = self.converted.get(id(items))
        if cached is not None and cached[0] is items:
            return cached[1]
        out: list[dict] = []
        declared: set[str] = set()
        earlier: list[str] = []
        responses: list[tuple[int, str | None]] = []  # where each assistant message is, and its call
        for item in items:
            if item.role == "assistant":
                message = assistant(list(item.parts))
                declared.update(call["id"] for call in message.get("tool_calls", []))
                responses.append((len(out), item.key))
                out.append(message)
                continue
            results = [
                {"role": "tool", "tool_call_id": p.call_id, "content": p.text}
                for p in item.parts
                if isinstance(p, ToolResult)
            ]
            earlier += [m["tool_call_id"] for m in results if m["tool_call_id"] not in declared]
            out.extend(results)
            texts = [p.text for p in item.parts if isinstance(p, Text)]
            if texts:
                out.append({"role": "user", "content": "\n".join(texts)})
        stand_ins = [stand_in(earlier)] if earlier else []
        checked = check_messages(path, prefix, stand_ins + out)[len(stand_ins) :]
        for at, key in responses:  # a response the prompt holds as it was made: one object for both
            response = self.responses.pop(key or "", None)
            if response is not None and response == checked[at]:
                checked[at] = response
        self.converted[id(items)] = (items, checked)
        return checked

    def usage(self, path: str, lines: list[Line]) -> Usage | None:
        """The largest value of each usage field over the call's lines (output grows across them)."""
        best: dict[str, int] = {}
        stopped = False
        for line in lines:
            message = line.record["message"]
            stopped = stopped or message.get("stop_reason") is not None
            usage = message.get("usage")
            if usage is None:
                continue
            expect_object(path, line.prefix + "message.usage", usage)
            for key in USAGE_FIELDS:
                value = check_count(path, f"{line.prefix}message.usage.{key}", usage.get(key))
                if value is not None:
                    best[key] = max(best.get(key, 0), value)
            for key, value in cache_creation(path, f"{line.prefix}message.usage", usage).items():
                best[key] = max(best.get(key, 0), value)  # the cache writes by lifetime (5 min, 1 h)
        if not best:
            return None
        if not stopped and placeholder(best.get("output_tokens"), lines):
            self.trace.note("usage-at-stream-start", STREAM_START, lines[0].place)
        return anthropic_usage(best)

    # -- subagents ---------------------------------------------------------------------------------
    def subagent_file(self, session: Path, sub: Path) -> Transcript:
        """A subagent transcript beside the session, parsed (its calls are made once every file is)."""
        try:
            label = sub.relative_to(session.parent).as_posix() + " "
        except ValueError:
            label = sub.name + " "
        with load(str(sub)) as doc:
            numbered: Iterable[tuple[int, Any]]
            if doc.lines is not None:
                numbered = doc.lines  # read as a stream: once
            elif isinstance(doc.value, dict):
                numbered = [(1, doc.value)]
            else:
                raise InputError(str(sub), None, "expected a JSONL transcript: one JSON object per line")
            transcript = self.parse(str(sub), label, ((n, record, "") for n, record in numbered))
        for line in transcript.lines:
            line.sidechain = True  # a subagent's own file: every line is the subagent's
        transcript.compaction = sub.name.startswith(COMPACT_PREFIX) or any(
            str(line.record.get("agentId") or "").startswith(COMPACT_AGENT) for line in transcript.lines[:1]
        )
        if doc.truncated_line is not None:
            self.trace.note("truncated-line", TRUNCATED_LAST_LINE, f"{label}line {doc.truncated_line}")
        return transcript

    def progress_calls(self, transcript: Transcript) -> list[list[Call]]:
        """Calls of subagents known only from the copies in ``agent_progress`` lines, a list per thread."""
        threads: dict[str, list[tuple[int, Any, str]]] = {}
        seen_lines: set[str] = set()
        for line in transcript.lines:
            copied = agent_copy(line, seen_lines)
            if copied is None:
                continue
            agent, data, nested = copied
            thread = threads.setdefault(str(agent), [])
            prompt = data.get("prompt")
            if not thread and nested.get("type") == "assistant" and isinstance(prompt, str):
                check_text(transcript.path, f"line {line.number}: data.prompt", prompt)
                opening = {"type": "user", "message": {"role": "user", "content": prompt}}
                thread.append((line.number, copy_line(opening, None, f"progress:{line.number}:prompt", agent), "data."))
            parent = thread[-1][1]["uuid"] if thread else None
            thread.append((line.number, copy_line(nested, parent, f"progress:{line.number}", agent), "data.message."))
        out: list[list[Call]] = []
        for records in threads.values():
            keys = {self.nested_key(record) for _, record, _ in records} - {None}
            if keys and keys <= self.seen:
                continue  # the subagent's own transcript was read
            rebuilt = self.parse(transcript.path, "", records, origin=", from progress")
            for line in rebuilt.lines:
                line.sidechain = True
            self.rekey_lines(rebuilt.lines, note=False)
            out.append([call for _, call in self.calls(rebuilt, quiet_duplicates=True)])
        return out

    def nested_key(self, record: dict) -> str | None:
        """The call key of a line copied into a progress line, as :meth:`rekey` gives it."""
        key = nested_key(record)
        request = record.get("requestId")
        if key is None or not isinstance(request, str) or request not in self.reused:
            return key
        message = record.get("message")
        message_id = message.get("id") if isinstance(message, dict) else None
        usages = self.reused[request].get(message_id if isinstance(message_id, str) else None, set())
        return message_id if isinstance(message_id, str) and message_id and len(usages) <= 1 else None

    def note_unrecorded_compactions(self) -> None:
        for line in self.boundaries:
            if id(line) not in self.recorded:
                self.trace.note("compaction", COMPACTION, line.place)

    # -- reused request ids ------------------------------------------------------------------------
    def rekey(self, transcripts: list[Transcript]) -> None:
        """Tell apart the calls of a requestId shared by lines of different responses.

        The lines of one response share their ``message.id`` and the prompt side of their usage
        (only ``output_tokens`` grows); a requestId on lines with different message ids, or with
        different prompt usage under one message id, is not one call. Those lines' calls are keyed by
        ``message.id`` when it tells them apart, else by the place of their first line."""
        lines_of: dict[str, list[Line]] = {}
        for transcript in transcripts:
            for line in transcript.lines:
                if line.type == "assistant" and line.request and not line.synthetic:
                    lines_of.setdefault(line.request, []).append(line)
        for request, lines in lines_of.items():
            usages: dict[str | None, set[tuple]] = {}
            for line in lines:
                found = usages.setdefault(line.message_id, set())
                if line.prompt_usage is not None:
                    found.add(line.prompt_usage)
            if len([m for m in usages if m]) > 1 or any(len(u) > 1 for u in usages.values()):
                self.reused[request] = usages
        for transcript in transcripts:
            self.rekey_lines(transcript.lines)

    def rekey_lines(self, lines: list[Line], note: bool = True) -> None:
        """The fallback keys of the lines whose requestId is reused (see :meth:`rekey`)."""
        firsts: dict[tuple, str] = {}
        calls: dict[str, dict[str, str]] = {}  # requestId -> call key -> the place of its first line
        for line in lines:
            if line.type != "assistant" or line.request is None or line.request not in self.reused or line.synthetic:
                continue
            usages = self.reused[line.request].get(line.message_id, set())
            if line.message_id and len(usages) <= 1:
                line.key = line.message_id
            else:
                signature = (line.request, line.message_id, line.prompt_usage)
                line.key = firsts.setdefault(signature, f"{line.request} at {line.place}")
                self.positional.add(line.key)
            calls.setdefault(line.request, {}).setdefault(line.key, line.place)
        for request, found in calls.items() if note else ():
            shown = list(found.values())
            more = f", and {len(shown) - 5} more" if len(shown) > 5 else ""
            self.trace.note(
                "request-id-reused",
                REQUEST_REUSED,
                f"requestId {request} on {len(shown)} calls ({', '.join(shown[:5])}{more})",
            )


# -- compaction calls ------------------------------------------------------------------------------
def request_chain(compact: Transcript, first: Line) -> list[Line]:
    """The lines of a compaction transcript that its response's first line follows (the request),
    nearest first: the parent of the last one is the main-thread line the call continues from."""
    chain: list[Line] = []
    top = first
    while top.parent is not None and top.parent in compact.by_uuid and len(chain) <= len(compact.lines):
        top = compact.by_uuid[top.parent]
        chain.append(top)
    return chain


def compaction_state(
    reader: Prompts,
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
