"""Codex CLI session rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``.

A rollout is JSONL, one ``{"timestamp", "type", "payload"}`` line per record:

* ``session_meta``: the session ``id`` (:attr:`Trace.session`), ``instructions`` (the user's
  instructions, AGENTS.md; older Codex versions) and, in newer versions, ``base_instructions.text``
  (the system prompt);
* ``turn_context``: the ``model`` of the calls that follow (and ``base_instructions`` when the user
  overrode the system prompt);
* ``response_item``: one item of the conversation, as Codex sends it to the Responses API;
* ``event_msg``: UI events; ``token_count`` events carry usage, ``thread_rolled_back`` drops turns;
* ``compacted``: a compaction; the history restarts from ``replacement_history`` when it is
  recorded, else from a rebuilt one (below).

The legacy form (Codex before the envelope, mid-2025) is also read: a first line
``{"id", "timestamp", "instructions", "git"}``, ``{"record_type": "state"}`` lines (skipped), and bare
response items. Unknown line, event and item types are skipped (newer Codex versions add types);
item types the reader does not know are named in the note ``unknown-type``.

**Calls.** A model call is a ``token_count`` event whose ``info.total_token_usage`` differs from
the previous one: Codex repeats the count for rate-limit updates (``info`` null, or the same totals)
and after a compaction (same totals, re-estimated ``last_token_usage``); those are not calls (very
early versions wrote the usage itself as the event: each change is a call). Its
usage is ``info.last_token_usage``: ``prompt = input_tokens`` (cached tokens included),
``cache_read = cached_input_tokens``, ``output = output_tokens``; no cache writes are reported. A
file without any usage (the legacy form) has one call per run of model output items, with no
reported usage (note ``no-usage``; also for a rollout whose provider reported no usage).

**Which items a call produced, and its prompt.** The output items of a call (``reasoning``,
assistant ``message``, ``function_call``, ``custom_tool_call``, ``local_shell_call``,
``web_search_call``) are recorded next to its ``token_count``, with no input item (user, developer
or system message, tool output) between them: Codex 0.40 to 0.60 record them just *after* the
count (the whole turn is recorded when the response completes), newer versions record each item
as it completes, *before* the count. The count and its adjacent output items form a group; when a
group holds several counts (a call with no output of its own, such as a compaction, right after
another), its items are split between them in the order the file's unambiguous groups show. The
prompt of a call is every item recorded before the first of its count and its own output items,
from the last compaction on. Output items with no count of their own, recorded after only tool
outputs, continue the call before them when the count comes first (Codex 0.40 records parallel
tool calls each followed by its output). Without any usage, every run of output items is a call.

**Messages.** Items map to Chat Completions messages, in order:

* ``message``: its role (user, developer, system, assistant) and its text parts
  (``input_text``, ``output_text``; ``refusal`` text) joined by newlines; images and files are
  left out with the note ``content-not-text``. Environment context and AGENTS.md messages are real
  messages of the prompt and stay;
* ``function_call`` (``call_id``, ``name``, ``arguments``), ``custom_tool_call`` (``input`` as the
  arguments), ``local_shell_call`` (tool ``local_shell``, its ``action`` as JSON arguments) and
  ``web_search_call`` (tool ``web_search``, note ``web-search``: its results are not recorded)
  become tool calls of an assistant message; the output items of one call form one assistant
  message (a new one starts at reasoning or text after tool calls);
* ``function_call_output`` and ``custom_tool_call_output``: a ``tool`` message answering
  ``call_id`` (``output`` a string, or a list of text parts); an output whose call is not in the
  prompt is left out, as Codex does (note ``orphan-output``);
* ``reasoning``: its text (``content`` reasoning text, else the ``summary`` texts) becomes the
  ``reasoning_content`` of its assistant message. Its ``encrypted_content`` (when it carries no
  reasoning text) is resent as input and billed, but cannot be rendered: for every call, the
  reasoning items of earlier calls since the last user message of its prompt (the current user
  turn) are attributed by usage to the conversation bucket (:attr:`Call.unrendered`), each item
  counting the ``reasoning_output_tokens`` of the call that produced it (note
  ``encrypted-reasoning``). On a real Codex 0.40 rollout the input grows from one call to the next
  by the previous call's whole ``output_tokens`` (reasoning included) plus its tool output plus
  8 to 65 tokens of framing, with or without reasoning: within a turn the estimate is sound to
  those few tokens. Reasoning of earlier user turns is not attributed (the API may drop it);
* ``ghost_snapshot`` items are Codex's undo snapshots, never sent to the model: skipped;
  ``compaction`` items (a server-side compaction's encrypted summary) are in the prompt but cannot
  be rendered (note ``compaction-encrypted``).

**What is not recorded.** Codex does not record the tool definitions: ``Call.tools`` is None and
:attr:`Trace.unrecorded` holds ``"tools"``. The system prompt is recorded only by newer versions
(``session_meta.base_instructions.text``, or a ``turn_context.base_instructions`` override): it
becomes a leading ``system`` message; otherwise Codex used its built-in prompt and ``"system"`` is
unrecorded too. ``session_meta.instructions`` (the user's instructions) is also recorded as a
message in the history by the versions that write it; when no message holds it, the version sent
it after the built-in prompt, and it becomes a ``system`` message of its own.

**Compactions.** After a ``compacted`` line the history is its ``replacement_history``; without one
it is rebuilt as Codex replays it: the items before the first message the user typed (the
initial context: developer messages, environment context, AGENTS.md),
the earlier user messages (newest first, within 20,000 tokens counted as bytes / 4) and the summary
(``message``) as a user message (note ``compaction-rebuilt``: older Codex versions wrapped these in
a template that is not recorded). A call with no output items of its own right before a
``compacted`` line with a summary is the summarising call: ``kind = "compaction"``, its response
the summary; the instructions Codex adds to it are not recorded (note ``compaction-prompt``). A
server-side compaction (a replacement history and no summary) reports no usage: it is not a call.
``thread_rolled_back`` events drop the last user turns from the history, as Codex does.

:func:`sessions` lists the rollouts of a sessions tree: every ``rollout-*.jsonl`` below it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from tokprof.base.errors import InputError
from tokprof.formats.fields import check_text, expect_list, expect_object, optional_object, optional_string, string
from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import Location
from tokprof.formats.reader import LogFormat, Reader, Record, document_records, read_whole
from tokprof.formats.jsonfile import kind_of as _kind
from tokprof.formats.neutral import check_count, check_messages, parse_day, parse_time
from tokprof.formats.shared_prompts import SharedPrompts
from tokprof.trace import Call, Trace, Usage

FORMAT = "codex"
DESCRIPTION = "Codex CLI session rollout (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl)"

LINE_TYPES = ("session_meta", "turn_context", "response_item", "event_msg", "compacted")
CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call")
RESULT_TYPES = ("function_call_output", "custom_tool_call_output")
OPAQUE_TYPES = ("compaction", "compaction_summary")
SILENT_TYPES = ("ghost_snapshot", "other")
ITEM_TYPES = ("message", "reasoning", *CALL_TYPES, *RESULT_TYPES, *OPAQUE_TYPES, *SILENT_TYPES)
TEXT_PARTS = ("input_text", "output_text", "text")
MESSAGE_ROLES = ("user", "developer", "system", "assistant")
#: User messages Codex adds as context, not typed by the user: they do not start a user turn.
CONTEXT_PREFIXES = (
    "<environment_context",
    "<user_instructions",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<user_shell_command",
    "<turn_aborted",
    "<skill",
)
#: Codex keeps the most recent user messages within this many tokens (bytes / 4) after a compaction.
COMPACT_USER_TOKENS = 20_000

NOTES = {
    "unknown-type": "line, event or item types this reader does not know (newer Codex versions add types) were skipped",
    "content-not-text": "content that is not text (an image or a file) was left out: its tokens are in the reported "
    "usage, not in the buckets",
    "web-search": "a web_search_call is rendered as a tool call; its results are not recorded",
    "orphan-output": "a tool output whose call is not in the prompt was left out, as Codex does",
    "compaction-encrypted": "a compaction item's encrypted summary is in the prompt but cannot be rendered: its "
    "tokens are in the reported usage, not in the buckets",
    "compaction-rebuilt": "a compaction without a replacement history: the history after it was rebuilt as Codex "
    "replays it (initial context, earlier user messages, the summary as a user message); "
    "older Codex versions wrapped them in a template that is not recorded",
    "compaction-prompt": "a compaction call's summarising instructions are not recorded: its prompt here is the "
    "recorded history only",
    "remote-compaction": "a server-side compaction reports no usage in the log: it is not a call; later prompts "
    "start from its replacement history",
    "no-usage": "the rollout records no token usage (the legacy form, or a provider that reports none): one call "
    "per run of model output items, without reported usage",
    "empty-prompt": "a token count with no recorded prompt before it was skipped",
}
ENCRYPTED_NOTE = (
    "encrypted reasoning of earlier calls in the same user turn is resent as input but cannot be rendered: "
    "its tokens are attributed by usage (each reasoning item counts the reasoning_output_tokens of the call "
    "that produced it) and counted in the conversation bucket as unrendered ({tokens:,} tokens over {calls} "
    "calls); reasoning summaries are shown as reasoning_content"
)


@dataclass
class Item:
    """One response item, converted: a message, reasoning, a tool call, a tool result, or opaque."""

    kind: str  # "message", "reasoning", "call", "result", "opaque"
    where: str
    role: str | None = None  # a message's role
    text: str | None = None  # a message's, result's or reasoning's text
    call: dict | None = None  # a neutral tool call
    call_id: str | None = None  # the call a result answers
    #: a digest of a reasoning item's encrypted content, when its text is not the reasoning (the content
    #: itself, often half a rollout, is not kept: only what tells copies of one item apart)
    encrypted: str | None = None
    #: an encrypted reasoning item's usage: the reasoning_output_tokens of the call that produced it
    reasoning: int | None = None

    @property
    def output(self) -> bool:
        """Produced by the model (reasoning, assistant text, tool calls)."""
        return self.kind in ("reasoning", "call") or (self.kind == "message" and self.role == "assistant")


@dataclass
class Entry:
    """One line that matters: an item, a token count, a compaction, a rollback or a turn context."""

    kind: str  # "item", "count", "compacted", "rollback", "context"
    line: int
    timestamp: Any = None
    item: Item | None = None
    totals: str | None = None  # a count's total usage, to tell new calls from repeats
    usage: Usage | None = None
    reasoning: int = 0  # a count's reasoning_output_tokens
    summary: str = ""  # a compaction's summary
    replacement: list[Item] | None = None
    turns: int = 0  # a rollback's number of user turns
    model: str | None = None
    base: str | None = None  # a turn context's base instructions override

    @property
    def where(self) -> str:
        return f"line {self.line}"

    @property
    def breaks(self) -> bool:
        """Ends a group of output items: an input item, a compaction or a rollback."""
        if self.kind == "item":
            return not _item_of(self).output
        return self.kind in ("compacted", "rollback")


def _item_of(entry: Entry) -> Item:
    """The item of an ``"item"`` entry: the parser sets it on every entry of that kind."""
    assert entry.item is not None
    return entry.item


@dataclass
class Member:
    """A token count or an output item of a group, with the replay's state as it was read."""

    entry: Entry
    history: list[Item]  # the history before it (a view: its first ``length`` items)
    length: int
    model: str | None
    base: str | None


@dataclass
class Group:
    """Output items and the token counts recorded with them, with no input in between."""

    members: list[Member] = field(default_factory=list)
    after_results: bool = False  # only tool outputs were recorded since the previous group


@dataclass
class Meta:
    session: str | None = None
    timestamp: Any = None
    instructions: str | None = None  # session_meta.instructions (the user's instructions)
    base: str | None = None  # session_meta.base_instructions.text (the system prompt)
    cwd: str | None = None  # session_meta.cwd (the project)
    git_branch: str | None = None  # session_meta.git.branch
    git_commit: str | None = None  # session_meta.git.commit_hash


@dataclass
class Pending:
    """A call whose prompt is known, given once its output items are all read."""

    entry: Entry  # the token count (or the first output, without usage)
    outputs: list[Item]
    history: list[Item]
    length: int
    model: str | None
    base: str | None
    compaction: str | None = None  # the summary, for a compaction call


def sniff(doc: Document) -> bool:
    try:
        if not doc.lines:
            return False
        values = [value for _, value in doc.lines.head(5)]
        if any(isinstance(v, dict) and ("messages" in v or "request" in v) for v in values):
            return False
        if any(_is_envelope(v) for v in values):
            return True
        return _is_legacy_header(values[0]) and (
            "instructions" in values[0] or any(_is_legacy_line(v) for v in values[1:])
        )
    except Exception:  # sniffing never fails
        return False


def sessions(directory: Path) -> list[Path]:
    """The rollouts of a Codex sessions tree (``~/.codex/sessions``, or any folder below it): every
    ``rollout-*.jsonl`` file at any depth, sorted by path (so by day, then by start time)."""
    return sorted(p for p in Path(directory).rglob("rollout-*.jsonl") if p.is_file())


def _is_envelope(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") in LINE_TYPES and isinstance(value.get("payload"), dict)


def _is_legacy_header(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and "type" not in value
        and "record_type" not in value
        and isinstance(value.get("id"), str)
        and isinstance(value.get("timestamp"), str)
    )


def _is_legacy_line(value: Any) -> bool:
    return isinstance(value, dict) and (value.get("record_type") == "state" or value.get("type") in ITEM_TYPES)


def read(path: str, doc: Document) -> Trace:
    """A rollout read whole (:class:`RolloutReader` fed every line)."""
    return read_whole(RolloutReader(path, doc), document_records(doc))


class RolloutReader(Reader):
    """A rollout read as a fold: each line parsed as it is fed (:class:`_Parser`) and replayed
    (:class:`_Builder`), each call given once no later line can change it (its output items are all
    read: an input item, a compaction or a rollback came after them, or a later call). It holds the
    history as the next call will see it and the group of output items being read; a rollout without
    any usage (the legacy form) is held until it is all read (one call per run of output items)."""

    def __init__(self, path: str, doc: Document | None) -> None:
        self.path = path
        #: the tools are never recorded; the system prompt is said unrecorded too once a call lacks it
        self.trace = Trace(path=path, format=FORMAT, unrecorded=("tools",))
        self.parser = _Parser(path, self.trace)
        self.builder = _Builder(path, self.trace, self.parser.meta)
        self.legacy: bool | None = None  # known at the first line

    def feed(self, record: Record) -> Iterable[Call]:
        if record.line is None:
            raise InputError(self.path, None, "expected JSONL: a Codex rollout has one JSON object per line")
        number, value = record.line, record.value
        if self.legacy is None:
            self.legacy = _is_legacy_header(value)
            if self.legacy:
                self.parser.session_meta(number, value.get("timestamp"), value, prefix=f"line {number}: ")
                return ()
        parser = self.parser
        parser.line(number, value, self.legacy)
        self.trace.session = parser.meta.session
        if not parser.entries:
            return ()
        entries, parser.entries = parser.entries, []
        return [call for entry in entries for call in self.builder.add(entry, parser.instructions_in_text)]

    def finish(self) -> Iterable[Call]:
        self.trace.session = self.parser.meta.session
        return self.builder.finish(self.parser.instructions_in_text)


# --- parsing: lines into entries ------------------------------------------------------------------


class _Parser:
    def __init__(self, path: str, trace: Trace):
        self.path = path
        self.trace = trace
        self.meta = Meta()
        self.entries: list[Entry] = []  # the entries of the line being read
        #: whether a message read holds the user's instructions (then they are not added to the system prompt)
        self.instructions_in_text = False

    def line(self, number: int, value: Any, legacy: bool) -> None:
        where = f"line {number}"
        value = expect_object(self.path, where, value, "a JSON object")
        if legacy:
            self.legacy_line(number, value)
            return
        kind = value.get("type")
        if kind not in LINE_TYPES:
            self.note("unknown-type", f"{where} ({kind if isinstance(kind, str) else 'no type'})")
            return
        payload = value.get("payload")
        payload = expect_object(self.path, where + ": payload", payload)
        handler = getattr(self, kind)
        handler(number, value.get("timestamp"), payload)

    def legacy_line(self, number: int, value: dict) -> None:
        if value.get("record_type") is not None:
            return  # a state snapshot
        if value.get("type") in ITEM_TYPES:
            self.response_item(number, None, value, prefix="")
        else:
            kind = value.get("type")
            self.note("unknown-type", f"line {number} ({kind if isinstance(kind, str) else 'no type'})")

    def note(self, code: str, place: str) -> None:
        self.trace.note(code, NOTES[code], place)

    def message_text(self, item: Item) -> None:
        """Whether a message holds the user's instructions (read before it)."""
        instructions = self.meta.instructions.strip() if self.meta.instructions else None
        if item.kind == "message" and instructions and instructions in (item.text or ""):
            self.instructions_in_text = True

    def session_meta(self, number: int, timestamp: Any, payload: dict, prefix: str | None = None) -> None:
        prefix = prefix or f"line {number}: payload."
        session = optional_string(self.path, prefix + "id", payload.get("id"))
        if self.meta.session is None:
            self.meta.session = session
            self.meta.timestamp = payload.get("timestamp", timestamp)
        instructions = optional_string(self.path, prefix + "instructions", payload.get("instructions"))
        if instructions and instructions.strip():
            self.instructions_in_text = self.instructions_in_text and instructions == self.meta.instructions
            self.meta.instructions = instructions
        base = payload.get("base_instructions")
        if isinstance(base, dict):
            base = optional_string(self.path, prefix + "base_instructions.text", base.get("text"))
        else:
            base = optional_string(self.path, prefix + "base_instructions", base)
        if base and base.strip():
            self.meta.base = base
        self.meta.cwd = optional_string(self.path, prefix + "cwd", payload.get("cwd")) or self.meta.cwd
        git = optional_object(self.path, prefix + "git", payload.get("git"))
        if git:
            self.meta.git_branch = optional_string(self.path, prefix + "git.branch", git.get("branch")) or None
            self.meta.git_commit = (
                optional_string(self.path, prefix + "git.commit_hash", git.get("commit_hash")) or None
            )

    def turn_context(self, number: int, timestamp: Any, payload: dict) -> None:
        prefix = f"line {number}: payload."
        model = optional_string(self.path, prefix + "model", payload.get("model"))
        base = optional_string(self.path, prefix + "base_instructions", payload.get("base_instructions"))
        self.entries.append(Entry("context", number, timestamp, model=model, base=base or None))

    def response_item(self, number: int, timestamp: Any, payload: dict, prefix: str = "payload.") -> None:
        item = _item(self.path, self, f"line {number}", f"line {number}: {prefix}", payload)
        if item is not None:
            self.message_text(item)
            self.entries.append(Entry("item", number, timestamp, item=item))

    def event_msg(self, number: int, timestamp: Any, payload: dict) -> None:
        kind = payload.get("type")
        prefix = f"line {number}: payload."
        if kind == "token_count":
            entry = _count(self.path, number, timestamp, payload)
            if entry is not None:
                self.entries.append(entry)
        elif kind == "thread_rolled_back":
            turns = check_count(self.path, prefix + "num_turns", payload.get("num_turns"))
            self.entries.append(Entry("rollback", number, timestamp, turns=turns or 0))

    def compacted(self, number: int, timestamp: Any, payload: dict) -> None:
        prefix = f"line {number}: payload."
        summary = optional_string(self.path, prefix + "message", payload.get("message")) or ""
        replacement = payload.get("replacement_history")
        items = None
        if replacement is not None:
            replacement = expect_list(self.path, prefix + "replacement_history", replacement)
            items = []
            for i, value in enumerate(replacement):
                at = f"{prefix}replacement_history[{i}]"
                value = expect_object(self.path, at, value, "an item object")
                item = _item(self.path, self, f"line {number}", at + ".", value)
                if item is not None:
                    self.message_text(item)
                    items.append(item)
        self.entries.append(Entry("compacted", number, timestamp, summary=summary, replacement=items))
        self.trace.compactions += 1


def _count(path: str, number: int, timestamp: Any, payload: dict) -> Entry | None:
    """A token_count event, or None when it carries no usage (a rate-limit update)."""
    prefix = f"line {number}: payload."
    info = payload.get("info")
    if info is None and "input_tokens" in payload:  # early Codex: the event is the usage itself
        return _usage_entry(path, number, timestamp, prefix, payload, payload)
    if info is None:
        return None
    info = expect_object(path, prefix + "info", info)
    last = expect_object(path, prefix + "info.last_token_usage", info.get("last_token_usage"))
    total = info.get("total_token_usage", last)
    total = expect_object(path, prefix + "info.total_token_usage", total)
    return _usage_entry(path, number, timestamp, prefix + "info.last_token_usage.", last, total)


def _usage_entry(path: str, number: int, timestamp: Any, at: str, last: dict, total: dict) -> Entry:
    """A call's usage: ``input_tokens`` includes the cached tokens."""
    usage = Usage(
        prompt=check_count(path, at + "input_tokens", last.get("input_tokens")),
        cache_read=check_count(path, at + "cached_input_tokens", last.get("cached_input_tokens")),
        cache_write=None,
        output=check_count(path, at + "output_tokens", last.get("output_tokens")),
    )
    reasoning = check_count(path, at + "reasoning_output_tokens", last.get("reasoning_output_tokens")) or 0
    totals = json.dumps(total, sort_keys=True)
    return Entry("count", number, timestamp, totals=totals, usage=usage, reasoning=reasoning)


def _item(path: str, parser: _Parser, where: str, prefix: str, payload: dict) -> Item | None:
    """One response item as an :class:`Item`, or None when it is skipped."""
    kind = payload.get("type")
    kind = string(path, prefix + "type", kind)
    if kind == "message":
        role = payload.get("role")
        if role not in MESSAGE_ROLES:
            raise InputError(
                path, prefix + "role", f"unknown role {role!r} (expected one of {', '.join(MESSAGE_ROLES)})"
            )
        text = _content(path, parser, where, prefix + "content", payload.get("content"))
        return Item("message", where, role=role, text=text)
    if kind == "reasoning":
        encrypted = payload.get("encrypted_content")
        if encrypted is not None and not isinstance(encrypted, str):
            raise InputError(path, prefix + "encrypted_content", f"expected a string, found {_kind(encrypted)}")
        text, raw = _reasoning_text(path, prefix, payload)
        digest = (
            hashlib.blake2b(encrypted.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
            if encrypted
            else None
        )
        return Item("reasoning", where, text=text, encrypted=None if raw else digest)
    if kind in CALL_TYPES:
        if kind == "web_search_call":
            parser.note("web-search", where)
        return Item("call", where, call=_tool_call(path, prefix, kind, payload))
    if kind in RESULT_TYPES:
        call_id = string(path, prefix + "call_id", payload.get("call_id"))
        text = _output(path, parser, where, prefix + "output", payload.get("output"))
        return Item("result", where, call_id=call_id, text=text)
    if kind in OPAQUE_TYPES:
        parser.note("compaction-encrypted", where)
        return Item("opaque", where)
    if kind not in SILENT_TYPES:
        parser.note("unknown-type", f"{where} ({kind})")
    return None


def _parts(path: str, parser: _Parser, where: str, at: str, parts: Any) -> str:
    """Text parts joined by newlines; parts that are not text are left out with a note."""
    if isinstance(parts, str):
        return check_text(path, at, parts)
    parts = expect_list(path, at, parts, "a list of content parts")
    texts = []
    for j, part in enumerate(parts):
        part = expect_object(path, f"{at}[{j}]", part, "a content part object")
        kind = part.get("type")
        key = "text" if kind in TEXT_PARTS else "refusal" if kind == "refusal" else None
        if key is None:
            parser.note("content-not-text", f"{where} ({kind})")
            continue
        texts.append(string(path, f"{at}[{j}].{key}", part.get(key)))
    return "\n".join(texts)


def _content(path: str, parser: _Parser, where: str, at: str, content: Any) -> str:
    if content is None:
        raise InputError(path, at, "missing: a message needs content")
    return _parts(path, parser, where, at, content)


def _output(path: str, parser: _Parser, where: str, at: str, output: Any) -> str:
    """A tool output: a string, a list of content parts, or ``{"content": ...}``."""
    if isinstance(output, dict) and "content" in output:
        return _parts(path, parser, where, at + ".content", output["content"])
    if output is None:
        raise InputError(path, at, "missing: a tool output needs output")
    return _parts(path, parser, where, at, output)


def _reasoning_text(path: str, prefix: str, payload: dict) -> tuple[str, bool]:
    """The reasoning text when the item carries it (``content``: True), else its summary texts."""
    for key in ("content", "summary"):
        parts = payload.get(key)
        if parts is None:
            continue
        parts = expect_list(path, prefix + key, parts)
        texts = []
        for j, part in enumerate(parts):
            part = expect_object(path, f"{prefix}{key}[{j}]", part)
            texts.append(string(path, f"{prefix}{key}[{j}].text", part.get("text")))
        if texts:
            return "\n".join(texts), key == "content"
    return "", False


def _tool_call(path: str, prefix: str, kind: str, payload: dict) -> dict:
    call_id = optional_string(path, prefix + "call_id", payload.get("call_id") or payload.get("id"))
    if kind in ("function_call", "custom_tool_call"):
        if call_id is None:
            raise InputError(path, prefix + "call_id", "missing: a tool call needs its id")
        name = string(path, prefix + "name", payload.get("name"))
        key = "arguments" if kind == "function_call" else "input"
        arguments = payload.get(key)
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments, ensure_ascii=False)
        arguments = string(path, prefix + key, arguments)
    else:
        name = "local_shell" if kind == "local_shell_call" else "web_search"
        action = optional_object(path, prefix + "action", payload.get("action"))
        arguments = check_text(path, prefix + "action", json.dumps(action or {}, ensure_ascii=False))
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# --- building: entries into calls -----------------------------------------------------------------


#: When each note of the replay was first made in a whole read (the parser's notes first): a fold
#: gives them in that order once it is finished, so that a trace's notes are as they were.
NOTE_TIERS = {
    "no-usage": 1,
    "remote-compaction": 2,
    "compaction-rebuilt": 2,
    "orphan-output": 3,
    "empty-prompt": 3,
    "compaction-prompt": 3,
    "encrypted-reasoning": 4,
}


class _Builder:
    """Replays a rollout's entries as they are read: the history each call sees, the groups of output
    items and token counts, and each call once its group (and any continuation of it) is read."""

    def __init__(self, path: str, trace: Trace, meta: Meta):
        self.path = path
        self.trace = trace
        self.meta = meta
        self.with_usage: bool | None = None  # None until a call's token count is read (or the end)
        self.waiting: list[Entry] = []  # the entries read before that
        self.totals: str | None = None  # the last token count's totals (a repeat is no call)
        self.history: list[Item] = []
        self.model: str | None = None
        self.base: str | None = None
        self.group: Group | None = None
        self.results_only = False  # since the last group ended, only tool outputs were recorded
        self.votes = {"before": 0, "after": 0}  # groups with one count: outputs only before it, only after
        self.open: Pending | None = None  # the last group's last call: outputs after tool outputs continue it
        self.in_text = False  # whether a message read holds the user's instructions
        self.summaries: set[str] = set()
        #: the usage of reasoning items by encrypted content, for the copies a replacement history holds
        self.reasoning_tokens: dict[str, int] = {}
        self.orphans: set[str] = set()
        self.shared: dict[tuple, dict] = {}  # one checked message object per run of items, for every call
        self.prompts = SharedPrompts()  # each call's prompt a view of the one it extends
        self.last_checked: tuple[list, list[dict], list[dict]] = ([], [], [])  # the previous prompt, checked
        self.system_unrecorded = False  # a call without a recorded system prompt
        self.calls = 0
        self.models: set[str] = set()
        self.unrendered_tokens = 0
        self.unrendered_calls = 0

    # -- reading ------------------------------------------------------------------------------------
    def add(self, entry: Entry, instructions_in_text: bool) -> list[Call]:
        """The calls an entry completes."""
        self.in_text = instructions_in_text
        if entry.kind == "count":
            if entry.totals == self.totals:
                return []  # a repeat (rate limits, after a compaction): not a call
            self.totals = entry.totals
            if not self.with_usage:
                self.with_usage = True
                waiting, self.waiting = self.waiting, []
                return [call for earlier in waiting for call in self.replay(earlier)] + self.replay(entry)
        elif not self.with_usage:
            self.waiting.append(entry)
            return []
        return self.replay(entry)

    def finish(self, instructions_in_text: bool) -> list[Call]:
        self.in_text = instructions_in_text
        out: list[Call] = []
        if not self.with_usage:
            self.with_usage = False
            self.trace.note("no-usage", NOTES["no-usage"])
            waiting, self.waiting = self.waiting, []
            out += [call for entry in waiting for call in self.replay(entry)]
        if self.group is not None:
            out += self.close(None)
        out += self.settle()
        if not self.calls:
            raise InputError(
                self.path, None, "no model call in the rollout: no token_count with usage and no model output"
            )
        trace = self.trace
        trace.model = self.models.pop() if len(self.models) == 1 else None
        trace.unrecorded = ("system", "tools") if self.system_unrecorded else ("tools",)
        if self.unrendered_calls:
            tokens, calls = self.unrendered_tokens, self.unrendered_calls
            trace.note("encrypted-reasoning", ENCRYPTED_NOTE.format(tokens=tokens, calls=calls))
        trace.notes.sort(key=lambda note: NOTE_TIERS.get(note.code, 0))  # stable: each tier in its order
        return out

    def instructions(self) -> str | None:
        """The user's instructions, when no message read holds them (older Codex sent them with the
        system prompt)."""
        instructions = self.meta.instructions.strip() if self.meta.instructions else None
        return instructions if instructions and not self.in_text else None

    def replay(self, entry: Entry) -> list[Call]:
        """Add an entry to the history (or to the group being read) and give the calls it completes."""
        out: list[Call] = []
        if entry.kind == "count" or (entry.kind == "item" and _item_of(entry).output):
            if self.group is None:
                self.group = Group(after_results=self.results_only)
            self.group.members.append(Member(entry, self.history, len(self.history), self.model, self.base))
            if entry.kind == "item":
                self.history.append(_item_of(entry))
            return out
        if entry.breaks:
            if self.group is not None:
                out += self.close(entry)
                self.results_only = True
            self.results_only = self.results_only and entry.kind == "item" and _item_of(entry).kind == "result"
            if not self.results_only:
                out += self.settle()  # no later output continues the last call
        if entry.kind == "context":
            self.model = entry.model or self.model
            self.base = entry.base or self.base
        elif entry.kind == "item":
            self.history.append(_item_of(entry))
        elif entry.kind == "compacted":
            self.history = self.compact(self.history, entry)
        elif entry.kind == "rollback":
            self.history = _drop_turns(self.history, entry.turns)
        return out

    def close(self, ended_by: Entry | None) -> list[Call]:
        """The calls of the group just read (its last one held while later outputs may continue it)."""
        group, self.group = self.group, None
        assert group is not None
        members = group.members
        calls = [i for i, m in enumerate(members) if m.entry.kind == "count"]
        outputs = [i for i, m in enumerate(members) if m.entry.kind == "item"]
        if not self.with_usage:
            first = members[outputs[0]]
            items = [_item_of(members[i].entry) for i in outputs]
            return self.emit(Pending(first.entry, items, first.history, first.length, first.model, first.base))
        if len(calls) == 1:
            has_before = any(i < calls[0] for i in outputs)
            has_after = any(i > calls[0] for i in outputs)
            self.votes["before"] += has_before and not has_after
            self.votes["after"] += has_after and not has_before
        order = "before" if self.votes["before"] > self.votes["after"] else "after"
        if not calls:
            # Codex 0.40 records parallel tool calls each followed by its output: outputs after only
            # tool outputs, with no count of their own, continue the call before them
            if order == "after" and group.after_results and self.open is not None:
                self.open.outputs.extend(_item_of(members[i].entry) for i in outputs)
            return []
        out = self.settle()
        pending = []
        for call, own in _split(calls, outputs, order).items():
            start = members[min([call, *own])]
            items = [_item_of(members[i].entry) for i in own]
            pending.append(Pending(members[call].entry, items, start.history, start.length, start.model, start.base))
        last = pending[-1]
        last.compaction = self.compaction_summary(ended_by, last.outputs)
        for item in pending[:-1]:
            out += self.emit(item)
        self.open = last
        if order == "before":
            out += self.settle()  # outputs after tool outputs continue a call only when they follow its count
        return out

    def settle(self) -> list[Call]:
        """The held call, once no later output can continue it."""
        if self.open is None:
            return []
        pending, self.open = self.open, None
        return self.emit(pending)

    def compaction_summary(self, after: Entry | None, own: list[Item]) -> str | None:
        """The summary when the group's last call summarised the context before a compaction."""
        if after is None or after.kind != "compacted" or not after.summary:
            return None
        for item in own:
            if not (item.kind == "message" and item.role == "assistant" and (item.text or "").strip() in after.summary):
                return None
        return after.summary

    def compact(self, history: list[Item], entry: Entry) -> list[Item]:
        self.shared = {}  # the messages of the history before: later prompts start afresh
        if entry.summary:
            self.summaries.add(entry.summary)
        if entry.replacement is not None:
            if not entry.summary:
                self.trace.note("remote-compaction", NOTES["remote-compaction"], entry.where)
            return list(entry.replacement)
        self.trace.note("compaction-rebuilt", NOTES["compaction-rebuilt"], entry.where)
        return _rebuilt(history, entry, self.summaries)

    # -- calls --------------------------------------------------------------------------------------
    def emit(self, pending: Pending) -> list[Call]:
        self.count_reasoning(pending)
        call = self.add_call(pending)
        if call is None:
            return []
        self.calls += 1
        if call.model:
            self.models.add(call.model)
        if call.unrendered:
            self.unrendered_tokens += call.unrendered["conversation"]
            self.unrendered_calls += 1
        return [call]

    def count_reasoning(self, pending: Pending) -> None:
        """A call's reasoning tokens belong to its first encrypted reasoning item."""
        if pending.entry.kind != "count":
            return
        for item in pending.outputs:
            if item.kind == "reasoning" and item.encrypted:
                item.reasoning = pending.entry.reasoning
                self.reasoning_tokens.setdefault(item.encrypted, pending.entry.reasoning)
                return

    def add_call(self, pending: Pending) -> Call | None:
        entry = pending.entry
        items = pending.history[: pending.length]
        raw = self.system_messages(pending.base) + self.messages(items)
        if not raw:
            self.trace.note("empty-prompt", NOTES["empty-prompt"], entry.where)
            return None
        if not (pending.base or self.meta.base):
            self.system_unrecorded = True
            self.trace.unrecorded = ("system", "tools")  # said before the call is given
        prefix = f"{entry.where}: "
        call = Call(
            index=self.calls,
            messages=self.prompts.prompt(self.share(raw, self.check(prefix, raw))),
            tools=None,
            model=pending.model,
            reported=entry.usage,
            day=parse_day({"timestamp": entry.timestamp}) or parse_day({"timestamp": self.meta.timestamp}),
            where=entry.where,
            response=self.response(prefix, pending),
            kind="compaction" if pending.compaction is not None else "call",
            time=parse_time(entry.timestamp),
            cwd=self.meta.cwd,
            git_branch=self.meta.git_branch,
            git_commit=self.meta.git_commit,
        )
        unrendered = self.unrendered(items)
        if unrendered:
            call.unrendered = {"conversation": unrendered}
        if pending.compaction is not None:
            self.trace.note("compaction-prompt", NOTES["compaction-prompt"], entry.where)
        return call

    def check(self, prefix: str, raw: list[dict]) -> list[dict]:
        """Check a prompt's messages. Codex resends the whole history on every call: the messages
        that start the prompt as they started the previous one (same role, content and items) are
        not checked again, so a session is checked in time that grows with its length, not its square."""
        signatures = [(m["role"], id(m.get("content")), tuple(map(id, m["_items"]))) for m in raw]
        before, checked_before, _ = self.last_checked
        same = 0
        while same < min(len(signatures), len(before)) and signatures[same] == before[same]:
            same += 1
        known = {c["id"] for m in checked_before[:same] for c in m.get("tool_calls") or ()}
        checked = checked_before[:same] + check_messages(self.path, prefix, raw[same:], call_ids=known, first=same)
        self.last_checked = (signatures, checked, raw)  # raw keeps the ids in the signatures alive
        return checked

    def system_messages(self, override: str | None) -> list[dict]:
        parts = [text for text in (override or self.meta.base, self.instructions()) if text]
        return [{"role": "system", "content": "\n".join(parts), "_items": ()}] if parts else []

    def messages(self, items: list[Item]) -> list[dict]:
        """The neutral messages of a prompt's items, each with the items it came from (``_items``)."""
        out: list[dict] = []
        current: dict | None = None
        call_ids: set[str] = set()
        for item in items:
            if item.output:
                if current is None or _starts_message(current, item):
                    current = {"role": "assistant", "content": None, "_items": []}
                    out.append(current)
                _add_output(current, item, call_ids)
                continue
            current = None
            if item.kind == "message":
                out.append({"role": item.role, "content": item.text, "_items": [item]})
            elif item.kind == "result":
                if item.call_id not in call_ids:
                    if item.where not in self.orphans:
                        self.orphans.add(item.where)
                        self.trace.note("orphan-output", NOTES["orphan-output"], item.where)
                    continue
                out.append({"role": "tool", "tool_call_id": item.call_id, "content": item.text, "_items": [item]})
        return [
            m
            for m in out
            if m["role"] != "assistant" or m["content"] or m.get("tool_calls") or m.get("reasoning_content")
        ]

    def share(self, raw: list[dict], checked: list[dict]) -> list[dict]:
        """One checked message object for the same items in every call: Codex resends the whole
        history on every call, and long sessions would otherwise hold it once per call."""
        out = []
        for source, message in zip(raw, checked):
            key = (message["role"], message["content"]) if not source["_items"] else tuple(map(id, source["_items"]))
            known = self.shared.setdefault(key, message)
            out.append(known if known == message else message)
        return out

    def response(self, prefix: str, pending: Pending) -> dict | None:
        """The assistant message a call produced: its own output items, or a compaction's summary."""
        if pending.compaction is not None:
            return {"role": "assistant", "content": pending.compaction}
        if not pending.outputs:
            return None
        message: dict = {"role": "assistant", "content": None, "_items": []}
        for item in pending.outputs:
            _add_output(message, item, set())
        return check_messages(self.path, prefix + "response.", [message])[0]

    def unrendered(self, items: list[Item]) -> int:
        """The usage of the encrypted reasoning items of the prompt's current user turn."""
        tokens = 0
        for item in reversed(items):
            if item.kind == "message" and item.role == "user":
                break
            if item.kind == "reasoning" and item.encrypted:
                known = item.reasoning
                tokens += known if known is not None else self.reasoning_tokens.get(item.encrypted, 0)
        return tokens


def _split(calls: list[int], outputs: list[int], order: str) -> dict[int, list[int]]:
    """The output items of each count of a group."""
    own: dict[int, list[int]] = {call: [] for call in calls}
    if not calls:
        return own
    for i in outputs:
        if order == "after":
            owner = max((c for c in calls if c < i), default=calls[0])
        else:
            owner = min((c for c in calls if c > i), default=calls[-1])
        own[owner].append(i)
    return own


def _starts_message(current: dict, item: Item) -> bool:
    """Whether an output item starts a new assistant message (reasoning, or text, after text or calls)."""
    if item.kind == "call":
        return False
    return bool(current.get("content") or current.get("tool_calls"))


def _add_output(message: dict, item: Item, call_ids: set[str]) -> None:
    message["_items"].append(item)
    if item.kind == "reasoning":
        if item.text:
            previous = message.get("reasoning_content")
            message["reasoning_content"] = f"{previous}\n{item.text}" if previous else item.text
    elif item.kind == "call":
        call = item.call
        assert call is not None  # _item sets the call of every "call" item
        message.setdefault("tool_calls", []).append(call)
        if call.get("id"):
            call_ids.add(call["id"])
    else:
        message["content"] = f"{message['content']}\n{item.text}" if message["content"] else item.text


def _is_turn_start(item: Item) -> bool:
    """A message the user typed (not context Codex adds): it starts a user turn."""
    return (
        item.kind == "message" and item.role == "user" and not (item.text or "").lstrip().startswith(CONTEXT_PREFIXES)
    )


def _drop_turns(history: list[Item], turns: int) -> list[Item]:
    """The history without its last ``turns`` user turns (a rollback)."""
    starts = [i for i, item in enumerate(history) if _is_turn_start(item)]
    if turns <= 0 or not starts:
        return history
    cut = starts[0] if turns >= len(starts) else starts[-turns]
    return history[:cut]


def _rebuilt(history: list[Item], entry: Entry, summaries: set[str]) -> list[Item]:
    """The history after a compaction without replacement: initial context, user messages, summary."""
    starts = [i for i, item in enumerate(history) if _is_turn_start(item)]
    initial = history[: starts[0]] if starts else list(history)
    texts = [history[i].text or "" for i in starts if history[i].text not in summaries]
    kept: list[str] = []
    budget = COMPACT_USER_TOKENS
    for text in reversed(texts):
        tokens = -(-len(text.encode("utf-8")) // 4)
        if tokens > budget:
            break
        kept.append(text)
        budget -= tokens
    users = [Item("message", entry.where, role="user", text=text) for text in reversed(kept)]
    summary = Item("message", entry.where, role="user", text=entry.summary or "(no summary available)")
    return initial + users + [summary]


LOCATIONS = (
    Location(
        "codex", ".codex/sessions", ("**/rollout-*.jsonl",), env="CODEX_HOME", below_env="sessions", project_depth=0
    ),
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    RolloutReader,
    sessions=True,
    locations=LOCATIONS,
    records_what="per-call usage; the system prompt in newer versions, no tool definitions",
)
