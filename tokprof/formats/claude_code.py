"""Claude Code session transcripts: ``~/.claude/projects/<project>/<session>.jsonl``.

Claude Code appends one JSON object per line. Each line has a ``type``; conversation lines
(``user``, ``assistant``) carry ``uuid``, ``parentUuid``, ``sessionId``, ``timestamp``,
``isSidechain`` and ``message``, an Anthropic Messages API message (``role``, ``content`` a string
or content blocks; assistant lines add ``model``, ``id``, ``usage`` and the line a ``requestId``).
Claude Code records neither its system prompt nor its tool definitions, so the trace says so
(``unrecorded = ("system", "tools")``) and no system message or tools are invented.

Model calls. Claude Code writes each content block of a response as its own ``assistant`` line, so
one model call is one ``requestId`` (``message.id`` when there is none): its lines are merged. The
lines of one response share their ``message.id`` and the prompt side of their usage (input,
cache-creation and cache-read tokens; only ``output_tokens`` grows), and their timestamps differ by
seconds: a ``requestId`` on lines with different message ids, or with different prompt usage under
one message id, is not one call (a sanitiser that writes one placeholder for every id does this,
turning a session into one call). Its lines are then keyed by ``message.id`` where that tells them
apart, else by the place of the first line with the same message id and prompt usage (warning
``request-id-reused``, naming the requestId and the first line of each call); such calls keep no
provider id, so they are not matched with copies in other files.
Usage is read from ``message.usage`` of those lines, keeping the largest value of each field
(``output_tokens`` grows across the lines of one response): ``prompt`` = ``input_tokens`` +
``cache_creation_input_tokens`` + ``cache_read_input_tokens``, ``cache_read`` =
``cache_read_input_tokens``, ``cache_write`` = ``cache_creation_input_tokens``, ``output`` =
``output_tokens``. When no line of a call has a ``stop_reason``, Claude Code wrote the usage as the
response stream started: its prompt counts are complete but ``output_tokens`` is a placeholder that
under-reports the output (warning ``usage-at-stream-start``). Assistant lines Claude Code writes
itself (model ``<synthetic>``, ``isApiErrorMessage``: API errors, "No response requested.") are not
model calls and are left out of later prompts (warning ``synthetic-message``).

The prompt of a call is the conversation that leads to its first line, followed back through
``parentUuid``: the conversation is a tree (a rewind or an edited message branches it), and the
parent chain is the branch the call was made on. Lines without a ``uuid`` or ``parentUuid`` (hand
edited or very old files) chain to the previous conversation line of the same thread in file order.
The chain passes through lines that are not messages (``progress``, ``system``, attachments) and
stops at a compaction boundary, at the start of a subagent's thread, or at a parent that is not in
the file (warning ``chain-broken``). Along the chain:

* consecutive ``user`` lines become one user message (Claude Code sends them merged), and the lines
  of one response become one assistant message, placed where its first line is (tool results
  written between two blocks of one response move after it, as Claude Code sends them);
* a user message becomes one ``tool`` message per ``tool_result`` block, in order (its text, or its
  text blocks joined by newlines), then one ``user`` message with the remaining text, if any. A tool
  result whose ``tool_use`` is not on the chain is kept as user text (warning ``orphan-tool-result``).
  A ``user`` line of tool results beside the chain (its parent is the parent of a chain line, and
  it is not on the chain itself: Claude Code 2.1 writes a parallel tool's result as its own branch
  while the chain goes on through another tool's ``progress`` lines) whose calls are on the chain
  and not answered yet is placed where that chain line is, before it (warning
  ``results-beside-chain``): the API takes a request only when every call is answered;
  ``toolUseResult`` is Claude Code's metadata, never sent to the model, and is ignored;
* an assistant message gets text blocks joined as ``content``, ``tool_use`` (and
  ``server_tool_use``/``mcp_tool_use``) blocks as ``tool_calls`` with ``arguments`` = the JSON of
  ``input``, ``thinking`` blocks joined as ``reasoning_content``;
* images, documents, ``redacted_thinking`` and other blocks that are not text are left out, with
  warning ``content-not-text`` (their tokens are not counted);
* what the model saw: every ``user`` line is sent as written, including ``isMeta`` lines (the
  local-command caveat, expanded slash-command and skill prompts: hidden in Claude Code's interface,
  sent to the model), ``<command-name>``/``<local-command-stdout>`` wrappers of local commands (the
  caveat before them exists because the model sees them), interrupt markers and the compact
  summary. A user line with no content is skipped. ``system`` lines (compaction boundaries, command
  output, durations, API errors) are Claude Code's own and are not sent; ``attachment`` lines carry
  context Claude Code may render into the prompt in a way the log does not show: they are left out
  (warning ``attachment-lines``; any tokens they add fall in the unrecorded part). Other line types
  (``summary``, ``file-history-snapshot``, ``queue-operation``, titles, ...) are not conversation;
  a type tokprof does not know is skipped with warning ``unknown-line-type``.

The call's ``response`` is its assistant lines merged into one assistant message.

Compaction. A ``system`` line with subtype ``compact_boundary`` starts the context again: later
prompts begin at the compact summary (a ``user`` line with ``isCompactSummary``). Messages a partial
compaction keeps verbatim (newer versions' ``compactMetadata.preservedSegment``) are in later prompts
when the ``parentUuid`` chain links them.

The compaction itself is a model call. Before 2.1 Claude Code writes no transcript of it (its usage
is in no line; ``compactMetadata.preTokens`` is the context size, not billed usage), so it is not
profiled: warning ``compaction``. Claude Code 2.1 writes it as ``<session>/subagents/
agent-acompact-<id>.jsonl`` (``agentId`` ``acompact-<id>``, ``isSidechain: true``), just before the
boundary: in the 2.1.39 session of the shared corpus, the summarisation request (a ``user`` line, the
"create a detailed summary of the conversation so far" instructions) is written 70 s before the
boundary and its ``parentUuid`` is the boundary's ``logicalParentUuid`` (the last main-thread line,
a tool result); the response (one ``assistant`` line, the ``<analysis>``/``<summary>`` text) is
written half a second before the boundary, and its prompt (169,910 tokens, 167,093 of them read
from the main conversation's cache) is about the boundary's ``preTokens`` (167,731) plus the
request. Before the request the file holds ``isMeta`` user lines (hook output,
``<system-reminder>`` text) whose ``parentUuid`` is a main-thread tool result and whose timestamps
are those of the main conversation: context the model saw after those results that the session file
does not keep. The rule:

* a subagent file named ``agent-acompact-*.jsonl`` (or whose first line's ``agentId`` starts with
  ``acompact-``) holds compaction calls: each of its model calls is one, ``Call.kind =
  "compaction"``, of the main thread (``thread = ""``: the main conversation's system prompt and
  tools, so it is bucketed from its own prompt with the main thread's inferred part), marked
  ``(compaction)`` in ``Call.where``;
* the line it continues from is the main-thread line named by the ``parentUuid`` of the first line
  of its own chain (the request); its boundary is the ``compact_boundary`` whose
  ``logicalParentUuid`` is that line, else (no such line, or a boundary without
  ``logicalParentUuid``) the first boundary not yet matched written at or after the response's last
  line; with no main-thread parent, the line it continues from is its boundary's
  ``logicalParentUuid`` (else the last conversation line before the boundary). A file that matches
  neither is read as a subagent (warning ``compaction-unmatched``);
* its prompt is the main thread's history after that line (the messages the main conversation had
  before the boundary), with the file's other ``user`` lines placed right after the main-thread line
  their ``parentUuid`` names, when that line is in the history, then the request; its response is
  the summary. It is numbered where its boundary is among the main thread's calls;
* a boundary whose call is recorded gets no ``compaction`` warning.
A ``microcompact_boundary`` (old tool results cleared from the context while the transcript keeps
them) gets warning ``microcompact``: later prompts may render tool results the model no longer saw.

Subagents. A subagent (Task/Agent tool) is a separate conversation with its own prompts: its calls
are marked in ``Call.where`` (``"line 40 (subagent)"``). Claude Code has written them three ways,
all read with the session file, each call counted once (by ``requestId``):

* ``isSidechain: true`` lines inside the session file (older versions): their own thread;
* ``<session>/subagents/agent-<id>.jsonl`` beside the session file (2.1 and later), and
  ``agent-<id>.jsonl`` files beside it whose ``sessionId`` is the session's (2.0);
* copies of the subagent's lines in the session's ``progress`` lines (``data.type ==
  "agent_progress"``, the line in ``data.message``): used only for calls no subagent transcript
  holds (its file is missing), rebuilt in file order per ``agentId`` (warning
  ``subagent-from-progress``). Every other ``progress`` line is ignored.

Every message passes ``neutral.check_messages`` once: a line's prompt state is built from its
parent's and kept, and prompts share the message objects they have in common.

Order. The calls of each file are in the order of their first lines (inline sidechains included),
a compaction call where its boundary is; the calls of the session file, of each subagent file and
of each thread rebuilt from progress lines are then merged in time order (``Call.time``, the
timestamp of the call's first line) and numbered: each file's calls keep their order, a call
without a timestamp stays after the one before it, and calls at the same moment keep the order of
their files (the session's first). The session is the first ``sessionId`` in the file; the trace's
model is the model of most main-thread calls. :func:`sessions` lists the session files of a
project folder.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from tokprof.errors import InputError
from tokprof.formats.jsonfile import TRUNCATED_LAST_LINE, Document, load, parse_or
from tokprof.formats.jsonfile import kind_of as _kind
from tokprof.formats.neutral import (
    anthropic_usage, assistant_message, cache_creation, check_count, check_messages, check_model, check_text, in_time_order, parse_day,
    parse_time,
)
from tokprof.trace import Call, Trace, Usage

FORMAT = "claude-code"
DESCRIPTION = "Claude Code session transcripts (~/.claude/projects/<project>/<session>.jsonl), subagents included"

MESSAGE_TYPES = ("user", "assistant")
#: Line types that are not conversation and need no warning.
QUIET_TYPES = (
    "system", "summary", "progress", "file-history-snapshot", "queue-operation", "custom-title",
    "last-prompt", "tag", "agent-name", "ai-title", "pr-link",
)
#: Line types that mark a Claude Code transcript (for detection), with the fields that identify one.
SNIFF_TYPES = ("user", "assistant", "system", "summary", "progress", "file-history-snapshot", "queue-operation")
SNIFF_FIELDS = ("sessionId", "uuid")
TOOL_CALL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")
USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
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


def _thread_name(transcript: "_Transcript", first: "_Line") -> str:
    """A subagent's thread: its agent id (the line's ``agentId``, else its transcript's name
    ``agent-<id>.jsonl``), else, for a sidechain of the session file with neither, ``sidechain`` and the
    start of the uuid of its first line: never a file's path."""
    agent = first.record.get("agentId")
    if isinstance(agent, str) and agent:
        return agent
    name = Path(transcript.path).name
    if name.startswith("agent-") and name.endswith(".jsonl") and transcript.path != "":
        return name[len("agent-"):-len(".jsonl")]
    line, seen = first, 0
    while line.parent is not None and line.parent in transcript.by_uuid and seen < len(transcript.by_uuid):
        parent = transcript.by_uuid[line.parent]
        if not parent.sidechain:
            break
        line, seen = parent, seen + 1
    return "sidechain " + (line.uuid or str(line.number))[:8]


def _output_characters(lines: list) -> int:
    """The characters of a call's output over its lines: text, thinking, tool calls' names and arguments."""
    total = 0
    for line in lines:
        for part in line.parts:
            if part[0] in ("text", "thinking"):
                total += len(part[1])
            elif part[0] == "call":
                total += len(part[1]["function"]["name"]) + len(part[1]["function"]["arguments"])
    return total


def _placeholder(output: int | None, lines: list) -> bool:
    """Whether a call's output count (written before its stream ended) looks like a placeholder."""
    return output is None or output * PLACEHOLDER_CHARACTERS < _output_characters(lines)
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
UNKNOWN_TYPE = "lines of a type tokprof does not know are skipped (newer Claude Code versions add types)"
DUPLICATE_LINE = "a line repeats the uuid of an earlier line: the repeat is skipped"
DUPLICATE_CALL = "a model call (requestId) that appears in more than one transcript is counted once"
FROM_PROGRESS = (
    "these subagent calls are in no subagent transcript file (it is missing): they are rebuilt from "
    "the copies of the subagent's lines in the session's progress lines, in file order"
)


# -- detection and layout --------------------------------------------------------------------------
def sniff(doc: Document) -> bool:
    """True when the first lines are Claude Code transcript lines (a known type and a session id or uuid)."""
    if doc.lines is None:
        return False
    for _, record in doc.lines.head(20):
        if isinstance(record, dict) and record.get("type") in SNIFF_TYPES:
            if any(isinstance(record.get(key), str) for key in SNIFF_FIELDS):
                return True
    return False


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
    peeked = [(p, _peek(p)) for p in sorted(folder.glob("*.jsonl")) if p.is_file()]
    files = [(p, session) for p, (is_transcript, session) in peeked if is_transcript]
    known = {session for p, session in files if not p.name.startswith("agent-")} - {None}
    return [p for p, session in files if not p.name.startswith("agent-") or session not in known]


def _peek(path: Path, lines: int = 50) -> tuple[bool, str | None]:
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


def _subagent_files(path: Path, session: str | None) -> list[Path]:
    """The subagent transcripts of a session file: ``<session>/subagents/*.jsonl`` beside it, and
    ``agent-*.jsonl`` files beside it with the same ``sessionId``."""
    if path.name.startswith("agent-") or path.parent.name == "subagents":
        return []  # a subagent transcript read on its own
    folder = path.parent / path.stem / "subagents"
    files = sorted(p for p in folder.glob("*.jsonl") if p.is_file()) if folder.is_dir() else []
    if session is not None:
        siblings = sorted(path.parent.glob("agent-*.jsonl"))
        files += [p for p in siblings if p.is_file() and _peek(p)[1] == session]
    return files


# -- lines and transcripts -------------------------------------------------------------------------
@dataclass
class _Line:
    """One transcript line, checked; conversation lines hold their content as parts."""

    number: int
    prefix: str  # error places of the line's fields: "line 7: " or "line 7: data.message."
    place: str  # the line in notes and Call.where: "line 7" or "<session>/subagents/agent-a.jsonl line 3"
    record: dict
    type: str
    uuid: str | None
    parent: str | None
    sidechain: bool
    key: str | None = None  # assistant lines: the model call they belong to
    request: str | None = None  # assistant lines: their requestId
    message_id: str | None = None  # assistant lines: their message.id
    prompt_usage: tuple | None = None  # assistant lines: input, cache-write and cache-read tokens, as written
    synthetic: bool = False
    boundary: bool = False  # a compact_boundary: the context restarts after it
    parts: list[tuple] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # places of blocks that are not text


@dataclass
class _Transcript:
    path: str  # the file, for errors
    lines: list[_Line] = field(default_factory=list)
    by_uuid: dict[str, _Line] = field(default_factory=dict)
    origin: str = ""  # ", from progress" for threads rebuilt from progress lines
    tool_uses: dict[str, _Line] = field(default_factory=dict)  # tool_use id -> the line that holds it
    states: dict[tuple[str, bool], _State] = field(default_factory=dict)  # (uuid, thread) -> prompt after it
    compaction: bool = False  # an agent-acompact-*.jsonl file: a compaction call's transcript
    _children: dict[str, list[_Line]] | None = None
    _children_of: int = 0  # how many lines the children were gathered from

    def children(self, uuid: str) -> list[_Line]:
        """The lines whose ``parentUuid`` is ``uuid``, in file order."""
        if self._children is None or self._children_of > len(self.lines):
            self._children, self._children_of = {}, 0
        if self._children_of < len(self.lines):  # lines added since: gathered alone (lines are only appended)
            for line in self.lines[self._children_of:]:
                if line.parent is not None:
                    self._children.setdefault(line.parent, []).append(line)
            self._children_of = len(self.lines)
        return self._children.get(uuid, [])


@dataclass(frozen=True)
class _Item:
    """A message being assembled from the lines of a chain: ``parts`` as the lines hold them."""

    role: str
    key: str | None
    parts: tuple

    def extended(self, parts: list[tuple]) -> _Item:
        return _Item(self.role, self.key, self.parts + tuple(parts))


@dataclass(frozen=True)
class _State:
    """The prompt after a line of a thread: messages no later line can change (checked, and shared by
    every state and call that follows), then the items later lines may still extend (the last
    response and the user lines after it)."""

    final: list[dict]  # never mutated: a state that adds messages makes a new list
    open: tuple[_Item, ...] = ()


def _answered(state: _State, call_id: str) -> bool:
    """Whether a tool call is answered in the state: in its open items, or in its last messages back
    to the assistant message that made the call."""
    for item in state.open:
        if any(part[0] == "result" and part[1] == call_id for part in item.parts):
            return True
    if any(part[0] == "call" and part[1].get("id") == call_id for item in state.open for part in item.parts):
        return False  # made by a response still open, and not answered after it
    for message in reversed(state.final):
        if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
            return True
        if any(c.get("id") == call_id for c in message.get("tool_calls") or ()):
            return False
    return False


EMPTY = _State([])


def read(path: str, doc: Document) -> Trace:
    numbered: Iterable[tuple[int, Any]]
    if doc.lines is None:
        if not isinstance(doc.value, dict):
            raise InputError(path, None, "expected a JSONL transcript: one JSON object per line")
        numbered = [(1, doc.value)]
    else:
        numbered = doc.lines  # read as a stream: once
    trace = Trace(path=path, format=FORMAT, unrecorded=("system", "tools"))
    reader = _Reader(trace)
    main = reader.parse(path, "", ((n, record, "") for n, record in numbered))
    trace.session = _session(main)
    subs = [reader.subagent_file(Path(path), sub) for sub in _subagent_files(Path(path), trace.session)]
    reader.rekey([main, *subs])
    main_calls = reader.calls(main)
    sequences: list[list[Call]] = []
    for transcript in subs:
        if transcript.compaction:
            found = reader.compaction_calls(main, transcript)
            if found is not None:
                main_calls += found
                continue
            reader.trace.note("compaction-unmatched", COMPACTION_UNMATCHED, transcript.path)
        sequences.append([call for _, call in reader.calls(transcript)])
    for transcript in [main, *subs]:
        sequences += reader.progress_calls(transcript)
    reader.note_unrecorded_compactions()
    # a compaction call goes in the main thread where its boundary is (stable: ties keep file order)
    main_calls.sort(key=lambda item: item[0])
    trace.calls = in_time_order([[call for _, call in main_calls], *sequences])
    if not trace.calls:
        raise InputError(path, None, "no model call in the transcript (no assistant line)")
    trace.model = _main_model(trace.calls)
    return trace


class Incremental:
    """A Claude Code transcript read as it is written, one line at a time: :meth:`feed` returns the
    model call a line starts (a call's prompt is known at its first line), each call once. Prompt
    states are kept from line to line, so a line costs what it adds. Subagent files are not read."""

    def __init__(self, path: str):
        self.trace = Trace(path=path, format=FORMAT, unrecorded=("system", "tools"))
        self.reader = _Reader(self.trace)
        self.transcript = _Transcript(path=path)
        self.last: dict[bool, str | None] = {}

    def feed(self, number: int, record: Any) -> Call | None:
        """Add line ``number``; the call it starts, or None. Raises InputError for a bad line."""
        line = self.reader.add(self.transcript, "", number, record, "", "line", self.last)
        if line is None or line.type != "assistant" or line.synthetic:
            return None
        key = line.key or ""
        if key in self.reader.seen:
            return None
        self.reader.seen.add(key)
        call = self.reader.call(self.transcript, [line], key)
        if self.trace.session is None and isinstance(line.record.get("sessionId"), str):
            self.trace.session = line.record["sessionId"]
        return call


def _session(transcript: _Transcript) -> str | None:
    for line in transcript.lines:
        session = line.record.get("sessionId")
        if isinstance(session, str):
            return session
    return None


def _main_model(calls: list[Call]) -> str | None:
    main = [c.model for c in calls if c.model and "(subagent" not in c.where]
    models = Counter(main or [c.model for c in calls if c.model])
    return models.most_common(1)[0][0] if models else None


class _Reader:
    """Turns transcripts into calls, gathering notes on the trace and the calls already counted."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.seen: set[str] = set()  # keys of the calls counted
        self.noted: set[tuple[str, str]] = set()
        self.types_noted: set[str] = set()
        self.converted: dict[int, tuple[tuple, list[dict]]] = {}  # id(items) -> (items, their messages)
        self.boundaries: list[_Line] = []  # compact_boundary lines, in reading order
        self.recorded: set[int] = set()  # id() of the boundaries whose compaction call is recorded
        self.reused: dict[str, dict[str | None, set[tuple]]] = {}  # reused requestId -> message.id -> prompt usages
        self.positional: set[str] = set()  # call keys made from a line's position: no provider id

    def note_once(self, code: str, message: str, place: str) -> None:
        if (code, place) not in self.noted:
            self.noted.add((code, place))
            self.trace.note(code, message, place)

    # -- parsing -----------------------------------------------------------------------------------
    def parse(self, path: str, label: str, items: Iterable[tuple[int, Any, str]], origin: str = "",
              unit: str = "line") -> _Transcript:
        """Check the lines of one file (or one thread rebuilt from progress lines), as they are read;
        ``unit`` names them in places ("item" for the values of a JSON list). Each line keeps only the
        fields read later (:func:`_kept`): a long session's tool metadata, snapshots and progress
        output are not held."""
        transcript = _Transcript(path=path, origin=origin)
        last: dict[bool, str | None] = {}  # the last conversation line of each thread, for the file-order fallback
        for number, record, inner in items:
            self.add(transcript, label, number, record, inner, unit, last)
        return transcript

    def add(self, transcript: _Transcript, label: str, number: int, record: Any, inner: str, unit: str,
            last: dict[bool, str | None]) -> _Line | None:
        """Check one line and add it to its transcript (None for a duplicate line)."""
        path = transcript.path
        at = f"{unit} {number}"
        if not isinstance(record, dict):
            raise InputError(path, at, f"expected a transcript line object, found {_kind(record)}")
        kind = record.get("type")
        if not isinstance(kind, str):
            raise InputError(path, f"{at}: {inner}type", "missing or not a string: every Claude Code line has a type")
        line = self.line(path, f"{at}: {inner}", f"{label}{at}", number, record, kind, last)
        if line.uuid is not None:
            if line.uuid in transcript.by_uuid:
                self.note_once("duplicate-line", DUPLICATE_LINE, line.place)
                return None
            transcript.by_uuid[line.uuid] = line
        if kind in MESSAGE_TYPES:
            last[line.sidechain] = line.uuid
        for part in line.parts:
            if part[0] == "call":
                transcript.tool_uses.setdefault(part[1]["id"], line)
        transcript.lines.append(line)
        return line

    def line(self, path: str, prefix: str, place: str, number: int, record: dict, kind: str,
             last: dict[bool, str | None]) -> _Line:
        uuid = record.get("uuid")
        if uuid is not None and not isinstance(uuid, str):
            raise InputError(path, prefix + "uuid", f"expected a string, found {_kind(uuid)}")
        sidechain = record.get("isSidechain") is True
        if uuid is None and kind in MESSAGE_TYPES:
            uuid = f"#{number}"  # no uuid: the line is still a link of the file-order chain
        if "parentUuid" in record:
            parent = record["parentUuid"]
            if parent is not None and not isinstance(parent, str):
                raise InputError(path, prefix + "parentUuid", f"expected a string or null, found {_kind(parent)}")
        else:
            parent = last.get(sidechain) if kind in MESSAGE_TYPES else None
        line = _Line(number, prefix, place, record, kind, uuid, parent, sidechain)
        if kind in MESSAGE_TYPES:
            self.message(path, line)
        elif kind == "system":
            self.system(line)
        elif kind == "attachment":
            self.note_type("attachment-lines", ATTACHMENTS, line)
        elif kind not in QUIET_TYPES:
            self.note_type("unknown-line-type", UNKNOWN_TYPE, line)
        line.record = _kept(record, kind)
        return line

    def note_type(self, code: str, message: str, line: _Line) -> None:
        if line.type not in self.types_noted:  # one place per type: a long session has thousands
            self.types_noted.add(line.type)
            self.trace.note(code, message, f"{line.place} ({line.type})")

    def system(self, line: _Line) -> None:
        subtype = line.record.get("subtype")
        if subtype == "compact_boundary":
            line.boundary = True
            self.trace.compactions += 1
            self.boundaries.append(line)  # noted at the end, unless its call is recorded
        elif subtype == "microcompact_boundary":
            self.trace.note("microcompact", MICROCOMPACT, line.place)

    def message(self, path: str, line: _Line) -> None:
        message = line.record.get("message")
        if not isinstance(message, dict):
            raise InputError(path, line.prefix + "message", f"expected the message, an object, found {_kind(message)}")
        where = line.prefix + "message.content"
        blocks = _blocks(path, where, message.get("content"))
        if line.type == "user":
            parts = [self.user_part(path, line, at, block) for at, block in blocks]
        else:
            check_model(path, line.prefix + "message.", message)
            line.synthetic = message.get("model") == SYNTHETIC_MODEL or line.record.get("isApiErrorMessage") is True
            line.key = _call_key(path, line, message)
            request, message_id = line.record.get("requestId"), message.get("id")
            line.request = request if isinstance(request, str) and request else None
            line.message_id = message_id if isinstance(message_id, str) and message_id else None
            line.prompt_usage = _prompt_usage(message.get("usage"))
            parts = [self.assistant_part(path, line, at, block) for at, block in blocks]
        line.parts = [part for part in parts if part is not None]

    def user_part(self, path: str, line: _Line, where: str, block: dict) -> tuple | None:
        kind = block["type"]
        if kind == "text":
            return ("text", _text(path, where, block, "text"))
        if kind == "tool_result":
            return self.tool_result(path, line, where, block)
        if kind in TOOL_CALL_BLOCKS or kind == "thinking":
            raise InputError(path, where + ".type", f"a {kind} block belongs in an assistant message")
        line.skipped.append(f"{line.place} ({kind})")
        return None

    def tool_result(self, path: str, line: _Line, where: str, block: dict) -> tuple:
        call_id = block.get("tool_use_id")
        if not isinstance(call_id, str):
            raise InputError(path, where + ".tool_use_id", f"expected a string, found {_kind(call_id)}")
        content = block.get("content")
        texts = []
        if isinstance(content, str):
            texts.append(check_text(path, where + ".content", content))
        elif content is not None:
            for at, part in _blocks(path, where + ".content", content):
                if part["type"] == "text":
                    texts.append(_text(path, at, part, "text"))
                else:
                    line.skipped.append(f"{line.place} ({part['type']} in a tool result)")
        return ("result", call_id, "\n".join(texts))

    def assistant_part(self, path: str, line: _Line, where: str, block: dict) -> tuple | None:
        kind = block["type"]
        if kind == "text":
            return ("text", _text(path, where, block, "text"))
        if kind == "thinking":
            return ("thinking", _text(path, where, block, "thinking"))
        if kind in TOOL_CALL_BLOCKS:
            return ("call", _tool_call(path, where, block))
        if kind == "tool_result":
            raise InputError(path, where + ".type", "a tool_result block belongs in a user message")
        line.skipped.append(f"{line.place} ({kind})")
        return None

    # -- calls -------------------------------------------------------------------------------------
    def groups(self, transcript: _Transcript) -> dict[str, list[_Line]]:
        """The lines of each model call of a transcript, in the order of their first lines."""
        groups: dict[str, list[_Line]] = {}
        for line in transcript.lines:
            if line.type == "assistant" and not line.synthetic:
                groups.setdefault(line.key or "", []).append(line)
            elif line.synthetic:
                self.note_once("synthetic-message", SYNTHETIC, line.place)
        return groups

    def first_time(self, key: str, lines: list[_Line], quiet_duplicates: bool = False) -> bool:
        """Whether a call is counted for the first time (a call in two transcripts is counted once)."""
        if key in self.seen:
            if not quiet_duplicates:
                self.note_once("duplicate-call", DUPLICATE_CALL, lines[0].place)
            return False
        self.seen.add(key)
        return True

    def calls(self, transcript: _Transcript, quiet_duplicates: bool = False) -> list[tuple[float, Call]]:
        """One call per model call of a transcript not counted yet, in the order of its first line,
        each with the line number of its first line."""
        out: list[tuple[float, Call]] = []
        for key, lines in self.groups(transcript).items():
            if not self.first_time(key, lines, quiet_duplicates):
                continue
            call = self.call(transcript, lines, key)
            out.append((lines[0].number, call))
            if transcript.origin:
                self.trace.note("subagent-from-progress", FROM_PROGRESS, call.where)
        return out

    def call(self, transcript: _Transcript, lines: list[_Line], key: str, state: _State | None = None,
             compaction: bool = False) -> Call:
        first = lines[0]
        prefix = f"{first.place}: "
        if state is None:
            state = self.state_before(transcript, first)
        messages = state.final + self.check(transcript.path, prefix, state.open)
        parts = [part for line in lines for part in line.parts]
        response = check_messages(transcript.path, prefix + "response ", [_assistant(parts)])[0]
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
            thread=_thread_name(transcript, first) if sidechain else "",
            request_id=None if not key or key in self.positional else key,
            time=parse_time(first.record.get("timestamp")),
            cwd=_place_text(transcript.path, first, "cwd"),
            git_branch=_place_text(transcript.path, first, "gitBranch"),
        )

    # -- prompts -----------------------------------------------------------------------------------
    def state_before(self, transcript: _Transcript, first: _Line) -> _State:
        """The prompt of a call: the state of its thread after the parent of its first line."""
        return self.state_after(transcript, self.parent(transcript, first), first.sidechain, first)

    def state_after(self, transcript: _Transcript, current: _Line | None, thread: bool, first: _Line) -> _State:
        """The state of a thread after a line (``first`` is the line whose prompt is wanted, for
        errors). States are built from the states of their parents and kept, so a long session costs
        one pass."""
        path: list[_Line] = []
        base = EMPTY
        while current is not None:
            memo = transcript.states.get((current.uuid or "", thread))
            if memo is not None:
                base = memo
                break
            if current.type in MESSAGE_TYPES and current.sidechain != thread:
                break  # the start of a subagent's thread: it does not see the parent's conversation
            path.append(current)
            if current.boundary:
                break  # a compaction: the context restarts after it
            if len(path) > len(transcript.lines):
                raise InputError(transcript.path, first.prefix + "parentUuid", "the parentUuid chain loops")
            current = self.parent(transcript, current)
        state = base
        for link in reversed(path):
            state = self.extend(transcript, state, link)
            if link.uuid is not None:
                transcript.states[(link.uuid, thread)] = state
        return state

    def parent(self, transcript: _Transcript, line: _Line) -> _Line | None:
        if line.parent is None:
            return None
        found = transcript.by_uuid.get(line.parent)
        if found is None:
            self.note_once("chain-broken", CHAIN_BROKEN, f"{line.place} (parent {line.parent})")
        return found

    def extend(self, transcript: _Transcript, state: _State, line: _Line) -> _State:
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
                return _State(state.final, open_[:-1] + (open_[-1].extended(parts),))
            return _State(state.final, open_ + (_Item("user", None, tuple(parts)),))
        if open_ and open_[0].role == "assistant" and open_[0].key == line.key:
            # another block of the same response: tool results written in between move after it
            return _State(state.final, (open_[0].extended(line.parts),) + open_[1:])
        final = state.final + self.check(transcript.path, f"{line.place}: ", open_) if open_ else state.final
        return _State(final, (_Item("assistant", line.key, tuple(line.parts)),))

    def beside(self, transcript: _Transcript, state: _State, line: _Line) -> _State:
        """The state with the tool results written beside ``line`` (its siblings: the other lines with
        its parent) that answer tool calls on the chain and are not answered yet: Claude Code writes
        a parallel tool's result as a branch of its own while the chain goes on through another
        tool's progress lines, and the API takes the next request only with every call answered."""
        if line.parent is None:
            return state
        for sibling in transcript.children(line.parent):
            if (sibling is line or sibling.type != "user" or sibling.sidechain != line.sidechain
                    or not sibling.parts or any(part[0] != "result" for part in sibling.parts)):
                continue
            ids = [part[1] for part in sibling.parts]
            if any(not self.on_chain(transcript, transcript.tool_uses.get(i), sibling) for i in ids):
                continue
            if any(_answered(state, i) for i in ids):
                continue
            self.note_once("results-beside-chain", BESIDE_CHAIN, f"{sibling.place}")
            parts = list(sibling.parts)
            open_ = state.open
            if open_ and open_[-1].role == "user":
                state = _State(state.final, open_[:-1] + (open_[-1].extended(parts),))
            else:
                state = _State(state.final, open_ + (_Item("user", None, tuple(parts)),))
        return state

    def resolve(self, transcript: _Transcript, line: _Line) -> list[tuple]:
        """A user line's parts, a tool result whose tool_use is not on the chain turned into text."""
        out = []
        for part in line.parts:
            if part[0] == "result" and not self.on_chain(transcript, transcript.tool_uses.get(part[1]), line):
                self.note_once("orphan-tool-result", ORPHAN_RESULT, f"{line.place} ({part[1]})")
                part = ("text", part[2])
            out.append(part)
        return out

    def on_chain(self, transcript: _Transcript, target: _Line | None, line: _Line) -> bool:
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

    def check(self, path: str, prefix: str, items: tuple[_Item, ...]) -> list[dict]:
        """Neutral messages for items, through check_messages. Tool results may answer a response
        before these items: stand-in assistant messages declare those calls, and are dropped. The
        items of a state are converted once: a call and the state after it share the messages."""
        cached = self.converted.get(id(items))
        if cached is not None and cached[0] is items:
            return cached[1]
        out: list[dict] = []
        declared: set[str] = set()
        earlier: list[str] = []
        for item in items:
            if item.role == "assistant":
                message = _assistant(list(item.parts))
                declared.update(call["id"] for call in message.get("tool_calls", []))
                out.append(message)
                continue
            results = [{"role": "tool", "tool_call_id": p[1], "content": p[2]} for p in item.parts if p[0] == "result"]
            earlier += [m["tool_call_id"] for m in results if m["tool_call_id"] not in declared]
            out.extend(results)
            texts = [p[1] for p in item.parts if p[0] == "text"]
            if texts:
                out.append({"role": "user", "content": "\n".join(texts)})
        stand_ins = [_stand_in(earlier)] if earlier else []
        checked = check_messages(path, prefix, stand_ins + out)[len(stand_ins):]
        self.converted[id(items)] = (items, checked)
        return checked

    def usage(self, path: str, lines: list[_Line]) -> Usage | None:
        """The largest value of each usage field over the call's lines (output grows across them)."""
        best: dict[str, int] = {}
        stopped = False
        for line in lines:
            message = line.record["message"]
            stopped = stopped or message.get("stop_reason") is not None
            usage = message.get("usage")
            if usage is None:
                continue
            if not isinstance(usage, dict):
                raise InputError(path, line.prefix + "message.usage", f"expected an object, found {_kind(usage)}")
            for key in USAGE_FIELDS:
                value = check_count(path, f"{line.prefix}message.usage.{key}", usage.get(key))
                if value is not None:
                    best[key] = max(best.get(key, 0), value)
            for key, value in cache_creation(path, f"{line.prefix}message.usage", usage).items():
                best[key] = max(best.get(key, 0), value)  # the cache writes by lifetime (5 min, 1 h)
        if not best:
            return None
        if not stopped and _placeholder(best.get("output_tokens"), lines):
            self.trace.note("usage-at-stream-start", STREAM_START, lines[0].place)
        return anthropic_usage(best)

    # -- subagents ---------------------------------------------------------------------------------
    def subagent_file(self, session: Path, sub: Path) -> _Transcript:
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

    def progress_calls(self, transcript: _Transcript) -> list[list[Call]]:
        """Calls of subagents known only from the copies in ``agent_progress`` lines, a list per thread."""
        threads: dict[str, list[tuple[int, Any, str]]] = {}
        seen_lines: set[str] = set()
        for line in transcript.lines:
            data = line.record.get("data") if line.type == "progress" else None
            if not isinstance(data, dict) or data.get("type") != "agent_progress":
                continue
            nested = data.get("message")
            if not isinstance(nested, dict) or nested.get("type") not in MESSAGE_TYPES:
                continue
            uuid = nested.get("uuid")
            if isinstance(uuid, str):
                if uuid in seen_lines:
                    continue
                seen_lines.add(uuid)
            agent = data.get("agentId") or line.record.get("parentToolUseID") or "?"
            thread = threads.setdefault(str(agent), [])
            prompt = data.get("prompt")
            if not thread and nested.get("type") == "assistant" and isinstance(prompt, str):
                check_text(transcript.path, f"line {line.number}: data.prompt", prompt)
                opening = {"type": "user", "message": {"role": "user", "content": prompt}}
                thread.append((line.number, _copy(opening, None, f"progress:{line.number}:prompt", agent), "data."))
            parent = thread[-1][1]["uuid"] if thread else None
            thread.append((line.number, _copy(nested, parent, f"progress:{line.number}", agent), "data.message."))
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
        key = _nested_key(record)
        request = record.get("requestId")
        if key is None or not isinstance(request, str) or request not in self.reused:
            return key
        message = record.get("message")
        message_id = message.get("id") if isinstance(message, dict) else None
        usages = self.reused[request].get(message_id if isinstance(message_id, str) else None, set())
        return message_id if isinstance(message_id, str) and message_id and len(usages) <= 1 else None

    # -- compaction calls --------------------------------------------------------------------------
    def compaction_calls(self, main: _Transcript, compact: _Transcript) -> list[tuple[float, Call]] | None:
        """The calls of a compaction transcript, each with where it goes among the main thread's
        calls (its boundary's line); None when the transcript continues no line of the session and
        matches no boundary (it is then read as a subagent)."""
        own = compact.by_uuid
        plans = []
        on_chains: set[int] = set()
        for key, lines in self.groups(compact).items():
            chain: list[_Line] = []  # the transcript's own lines the response follows: the request
            top = lines[0]
            while top.parent is not None and top.parent in own and len(chain) <= len(compact.lines):
                top = own[top.parent]
                chain.append(top)
            anchor = main.by_uuid.get(top.parent) if top.parent else None
            boundary = self.boundary_of(main, anchor, lines)
            if anchor is None and boundary is not None:
                anchor = _line_before(main, boundary)
            if anchor is None:
                return None
            plans.append((key, lines, chain[::-1], anchor, boundary))
            on_chains.update(id(line) for line in chain + lines)
        # lines the transcript adds after main-thread lines (hook output the session file does not keep)
        inserts: dict[str, list[_Line]] = {}
        for line in compact.lines:
            if line.type == "user" and id(line) not in on_chains and line.parent is not None and line.parent in main.by_uuid:
                inserts.setdefault(line.parent, []).append(line)
        out: list[tuple[float, Call]] = []
        for key, lines, chain, anchor, boundary in plans:
            if boundary is not None:
                self.recorded.add(id(boundary))
            if not self.first_time(key, lines):
                continue
            state = self.compaction_state(main, compact, anchor, chain, inserts, lines[0])
            call = self.call(compact, lines, key, state=state, compaction=True)
            out.append((boundary.number if boundary is not None else anchor.number + 0.5, call))
        return out

    def boundary_of(self, main: _Transcript, anchor: _Line | None, lines: list[_Line]) -> _Line | None:
        """The compact_boundary a compaction call made: the one whose ``logicalParentUuid`` is the
        line the call continued from, else the first one written after the call's last line."""
        free = [line for line in main.lines if line.boundary and id(line) not in self.recorded]
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

    def compaction_state(self, main: _Transcript, compact: _Transcript, anchor: _Line, chain: list[_Line],
                         inserts: dict[str, list[_Line]], first: _Line) -> _State:
        """A compaction call's prompt: the main thread's history up to the line it continued from,
        with the lines its transcript adds after main-thread lines spliced in after them, then its own
        lines (the summarisation request)."""
        path: list[_Line] = []
        current: _Line | None = anchor
        while current is not None and len(path) <= len(main.lines):
            if current.type in MESSAGE_TYPES and current.sidechain:
                break
            path.append(current)
            if current.boundary:
                break
            current = self.parent(main, current)
        path.reverse()
        spliced = [i for i, line in enumerate(path) if line.uuid is not None and line.uuid in inserts]
        if not spliced:
            state = self.state_after(main, anchor, False, first)
        else:
            start = spliced[0]
            state = self.state_after(main, path[start], False, first)
            for i in range(start, len(path)):
                if i > start:
                    state = self.extend(main, state, path[i])
                for extra in inserts.get(path[i].uuid or "", ()):
                    state = self.extend(compact, state, extra)
        for line in chain:
            state = self.extend(compact, state, line)
        return state

    def note_unrecorded_compactions(self) -> None:
        for line in self.boundaries:
            if id(line) not in self.recorded:
                self.trace.note("compaction", COMPACTION, line.place)

    # -- reused request ids ------------------------------------------------------------------------
    def rekey(self, transcripts: list[_Transcript]) -> None:
        """Tell apart the calls of a requestId shared by lines of different responses.

        The lines of one response share their ``message.id`` and the prompt side of their usage
        (only ``output_tokens`` grows); a requestId on lines with different message ids, or with
        different prompt usage under one message id, is not one call. Those lines' calls are keyed by
        ``message.id`` when it tells them apart, else by the place of their first line."""
        lines_of: dict[str, list[_Line]] = {}
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

    def rekey_lines(self, lines: list[_Line], note: bool = True) -> None:
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
            self.trace.note("request-id-reused", REQUEST_REUSED,
                            f"requestId {request} on {len(shown)} calls ({', '.join(shown[:5])}{more})")

#: The fields of a line kept once it is read (its content is in its parts by then), and of an
#: assistant line's message. The rest (``toolUseResult``, snapshots, progress output) is never read
#: again and is not held; ``cwd`` and ``gitBranch`` say where the agent worked (``Call.cwd``).
KEPT_FIELDS = (
    "type", "uuid", "parentUuid", "sessionId", "timestamp", "agentId", "subtype", "logicalParentUuid",
    "requestId", "isApiErrorMessage", "isSidechain", "parentToolUseID", "cwd", "gitBranch",
)
KEPT_MESSAGE_FIELDS = ("id", "model", "usage", "stop_reason")


def _kept(record: dict, kind: str) -> dict:
    """The fields of a line read after it is parsed (see :data:`KEPT_FIELDS`); a progress line keeps
    its data only when it copies a subagent's line (``agent_progress``)."""
    kept = {key: record[key] for key in KEPT_FIELDS if key in record}
    message = record.get("message")
    if kind == "assistant" and isinstance(message, dict):
        kept["message"] = {key: message[key] for key in KEPT_MESSAGE_FIELDS if key in message}
    elif kind == "progress":
        data = record.get("data")
        if isinstance(data, dict) and data.get("type") == "agent_progress":
            kept["data"] = data
    return kept


def _copy(record: dict, parent: str | None, fallback_uuid: str, agent: object = None) -> dict:
    """A subagent line copied from a progress line, linked to the previous copy of its thread, with the
    progress line's agent id (its thread's name) when the copy has none."""
    out = dict(record)
    out["parentUuid"] = parent
    out["isSidechain"] = True
    if isinstance(agent, str) and agent and agent != "?" and not out.get("agentId"):
        out["agentId"] = agent
    if not isinstance(out.get("uuid"), str):
        out["uuid"] = fallback_uuid
    return out


# -- content blocks ---------------------------------------------------------------------------------
def _blocks(path: str, where: str, content: Any) -> list[tuple[str, dict]]:
    """Content as (place, block) pairs; a string is one text block (none when empty)."""
    if isinstance(content, str):
        return [(where, {"type": "text", "text": content})] if content else []
    if content is None:
        raise InputError(path, where, "missing: expected a string or a list of content blocks")
    if not isinstance(content, list):
        raise InputError(path, where, f"expected a string or a list of content blocks, found {_kind(content)}")
    out = []
    for j, block in enumerate(content):
        at = f"{where}[{j}]"
        if not isinstance(block, dict):
            raise InputError(path, at, f"expected a content block object, found {_kind(block)}")
        if not isinstance(block.get("type"), str):
            raise InputError(path, at + ".type", "missing or not a string")
        out.append((at, block))
    return out


def _text(path: str, where: str, block: dict, key: str) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise InputError(path, f"{where}.{key}", f"expected a string, found {_kind(value)}")
    return check_text(path, f"{where}.{key}", value)


def _tool_call(path: str, where: str, block: dict) -> dict:
    call_id, name, arguments = block.get("id"), block.get("name"), block.get("input", {})
    if not isinstance(call_id, str):
        raise InputError(path, where + ".id", f"expected a string, found {_kind(call_id)}")
    if not isinstance(name, str) or not name:
        raise InputError(path, where + ".name", "missing or not a string")
    if not isinstance(arguments, dict):
        raise InputError(path, where + ".input", f"expected an object, found {_kind(arguments)}")
    text = check_text(path, where + ".input", json.dumps(arguments, ensure_ascii=False))
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def _assistant(parts: list[tuple]) -> dict:
    texts = [p[1] for p in parts if p[0] == "text"]
    thoughts = [p[1] for p in parts if p[0] == "thinking"]
    calls = [p[1] for p in parts if p[0] == "call"]
    return assistant_message(texts, thoughts, calls)


def _stand_in(call_ids: list[str]) -> dict:
    """An assistant message declaring tool calls, so that results answering them pass the check."""
    calls = [{"id": i, "type": "function", "function": {"name": "_", "arguments": "{}"}} for i in call_ids]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def _call_key(path: str, line: _Line, message: dict) -> str:
    """The model call an assistant line belongs to: its requestId, else its message id."""
    for value, name in ((line.record.get("requestId"), "requestId"), (message.get("id"), "message.id")):
        if value is not None and not isinstance(value, str):
            raise InputError(path, line.prefix + name, f"expected a string, found {_kind(value)}")
        if value:
            return value
    return f"{line.place} ({line.uuid})"


def _prompt_usage(usage: Any) -> tuple | None:
    """The prompt side of a line's usage (input, cache-write, cache-read tokens), for telling calls apart."""
    if not isinstance(usage, dict):
        return None
    values = tuple(v if isinstance(v, int) else None for v in (usage.get(k) for k in USAGE_FIELDS[:3]))
    return values if any(v is not None for v in values) else None


def _line_before(main: _Transcript, boundary: _Line) -> _Line | None:
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


def _nested_key(record: dict) -> str | None:
    if record.get("type") != "assistant":
        return None
    message = record.get("message")
    request = record.get("requestId")
    if isinstance(request, str) and request:
        return request
    msg_id = message.get("id") if isinstance(message, dict) else None
    return msg_id if isinstance(msg_id, str) and msg_id else None


def _place_text(path: str, line: "_Line", key: str) -> str | None:
    """A line's ``cwd`` or ``gitBranch`` (where the agent worked), None when it is not recorded."""
    value = line.record.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InputError(path, line.prefix + key, f"expected a string, found {_kind(value)}")
    return check_text(path, line.prefix + key, value)
