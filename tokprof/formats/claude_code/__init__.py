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

Reading. The reader is a fold over the session file's lines (:mod:`.fold`) that gives each call once
its lines are read, after one cheap pass over the files (:mod:`.scan`); the package's modules:
:mod:`.lines` (a line's content blocks, the prompt states), :mod:`.prompts` (lines checked, calls and
their prompts built), :mod:`.scan` (the pass, and where Claude Code keeps its files), :mod:`.fold`
(the reader).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Iterable

from tokprof.formats.claude_code.lines import FORMAT, MESSAGE_TYPES, TOOL_CALL_BLOCKS
from tokprof.formats.claude_code.scan import SNIFF_FIELDS, SNIFF_TYPES, sessions, subagent_files
from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import Location
from tokprof.formats.reader import LogFormat, Reader
from tokprof.trace import Call

if TYPE_CHECKING:
    from tokprof.formats.claude_code.fold import SessionReader

__all__ = [
    "FORMAT",
    "DESCRIPTION",
    "MESSAGE_TYPES",
    "TOOL_CALL_BLOCKS",
    "SNIFF_TYPES",
    "SNIFF_FIELDS",
    "SessionReader",
    "sniff",
    "sessions",
    "subagent_files",
    "main_model",
]

DESCRIPTION = "Claude Code session transcripts (~/.claude/projects/<project>/<session>.jsonl), subagents included"


def sniff(doc: Document) -> bool:
    """True when the first lines are Claude Code transcript lines (a known type and a session id or uuid)."""
    if doc.lines is None:
        return False
    for _, record in doc.lines.head(20):
        if isinstance(record, dict) and record.get("type") in SNIFF_TYPES:
            if any(isinstance(record.get(key), str) for key in SNIFF_FIELDS):
                return True
    return False


def reader(path: str, doc: Document | None) -> Reader:
    from tokprof.formats.claude_code.fold import SessionReader  # loaded when a session is read

    return SessionReader(path, doc)


def __getattr__(name: str) -> object:
    if name == "SessionReader":
        from tokprof.formats.claude_code.fold import SessionReader

        return SessionReader
    raise AttributeError(f"module 'tokprof.formats.claude_code' has no attribute {name!r}")


def main_model(calls: Iterable[Call]) -> str | None:
    """The model of most main-thread calls (of most calls when none is on the main thread)."""
    calls = list(calls)
    main = [c.model for c in calls if c.model and "(subagent" not in c.where]
    models = Counter(main or [c.model for c in calls if c.model])
    return models.most_common(1)[0][0] if models else None


LOCATIONS = (
    Location(
        "claude-code",
        ".claude/projects",
        ("*/*.jsonl",),
        env="CLAUDE_CONFIG_DIR",
        below_env="projects",
        skip=("agent-",),
        several=True,
    ),
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    reader,
    sessions=True,
    locations=LOCATIONS,
    records_what="per-call usage; no system prompt or tool definitions",
)
