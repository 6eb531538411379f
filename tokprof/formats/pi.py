"""pi coding-agent sessions: ``~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl``
(``$PI_CODING_AGENT_DIR/sessions`` when that is set).

Checked against badlogic/pi-mono's ``packages/coding-agent/src/core/session-manager.ts`` and
``messages.ts``, and ``packages/ai``'s providers. Two layouts, both read:

* **v3 tree** (``version: 3`` in the header): a ``{type: "session", version, id, timestamp, cwd}``
  header, then entries ``{type, id, parentId, timestamp, ...}``: ``message`` (``message`` an agent
  message), ``model_change`` (``provider``, ``modelId``), ``thinking_level_change``,
  ``compaction`` (``summary``, ``firstKeptEntryId``, ``tokensBefore``), ``branch_summary``,
  ``custom_message``, and entries that are not context (``custom``, ``label``, ``session_info``).
  Entries form a tree through ``parentId`` (a branch starts where the user went back to);
* **older layout**: a header ``{type: "session", id, timestamp, cwd, provider, modelId}`` and
  entries without ``id``/``parentId``, one after the other (pi's migration chains them in file
  order; compactions name ``firstKeptEntryIndex``).

**Calls.** Each assistant message is one model call. Its prompt is the context pi builds for the
entry it answers (its ``parentId``, else the entry before it): the entries on the path from the root,
and after the latest compaction on that path, the compaction's summary (as a user message; pi wraps
it in a fixed preamble the file does not hold), then the entries from ``firstKeptEntryId`` up to the
compaction, then those after it. Messages map as pi sends them: ``user`` content (text parts; images
are left out with note ``content-not-text``); ``assistant`` ``text`` parts as content, ``thinking``
parts as reasoning, ``toolCall`` parts (``id``, ``name``, ``arguments``) as tool calls;
``toolResult`` (``toolCallId``, ``content``) as a tool message; ``bashExecution`` (the command and
its output), ``custom`` and branch summaries as user text. An assistant message that was aborted or
failed with no usage (``stopReason`` ``aborted``/``error``, every count 0) is not a call and is left out
of later prompts (note ``failed-call``).

**Usage** (``usage`` of the assistant message): pi's ``input`` excludes the cache (its providers
subtract cached tokens from OpenAI's and Google's prompt counts; Anthropic's is already so): the
prompt is ``input + cacheRead + cacheWrite``, cache reads ``cacheRead``, cache writes
``cacheWrite``, output ``output``. pi's own ``cost`` is not used: tokprof prices the counts.
A call's model is its message's ``model`` (else the latest ``model_change`` or the header's
``modelId``): a session that switches models is priced and counted per call.

**Compactions.** A ``compaction`` entry is a compaction (:attr:`Trace.compactions`); the call
that summarised the conversation is not recorded in the file (note ``compaction``).

**Project.** The header's ``cwd`` is every call's :attr:`Call.cwd`.

**Links** (#45.3, #45.4). An entry that repeats an earlier entry's ``id``, names itself as its
``parentId``, or whose ``parentId`` chain comes back to it (through a parent named before it appears)
is one line naming the entry, found in one pass over the entries. Contexts are built only for the
entries calls are made on, each a view of a list the contexts after it extend: linear in the file.

**A fold** (#43.1): each line is read as it is fed, and a call is given as soon as its assistant
message is read (no later entry changes it: a later branch or compaction starts a new context). The
reader holds each entry's own messages (the contexts share them), its parent and line, not the calls.

**What is not recorded.** pi's system prompt and tool definitions: :attr:`Trace.unrecorded` is
``("system", "tools")``; they are inferred from usage.
"""

from __future__ import annotations

import json
from typing import Any

from tokprof.base.errors import InputError
from tokprof.formats.conversation import Conversation
from tokprof.formats.folds import Made, SessionFold
from tokprof.formats.fields import check_text, expect_object, object_or_string, objects, optional_string, string
from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import Location
from tokprof.formats.reader import LogFormat
from tokprof.formats.neutral import anthropic_usage, check_count, optional_text, parse_time
from tokprof.base.text import visible
from tokprof.trace import PromptView, Trace, Usage, extended

FORMAT = "pi"
DESCRIPTION = "pi coding-agent session (~/.pi/agent/sessions/--<cwd>--/*.jsonl), v3 tree or older layout"

ENTRY_TYPES = (
    "message",
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom_message",
    "custom",
    "label",
    "session_info",
)
USAGE_FIELDS = ("input", "output", "cacheRead", "cacheWrite")
FAILED = (
    "assistant messages that were aborted or failed with no usage (stopReason aborted or error, every count 0) "
    "are not calls and are left out of later prompts"
)
COMPACTION = (
    "a compaction: the call that summarised the conversation is not recorded in the file (not profiled); "
    "later prompts start from its summary"
)
SUMMARY = "compaction and branch summaries are rendered as user text without pi's fixed preamble around them"
UNKNOWN = "entry types this reader does not know were skipped"


def sniff(doc: Document) -> bool:
    if doc.lines is None:
        return False
    head = [value for _, value in doc.lines.head(3)]
    first = head[0] if head else None
    return (
        isinstance(first, dict)
        and first.get("type") == "session"
        and isinstance(first.get("id"), str)
        and "payload" not in first
        and "sessionId" not in first
    )


class _Reader:
    """The entries read so far, as a tree: each entry's parent and own messages, and the context (the
    prompt pi would build after it) of the entries a call was made on, each a view of a list the
    contexts after it extend (:func:`~tokprof.trace.extended`): a session of n entries holds its
    messages once, and building every call's prompt costs what the entries add, not n²."""

    def __init__(self, trace: Trace, made: Made) -> None:
        self.trace = trace
        self.chat = Conversation(trace, made)
        self.own: dict[str, list[dict]] = {}  # entry id -> its own messages
        self.parent: dict[str, str | None] = {}
        self.depth: dict[str, int] = {}  # entries from the root
        self.line: dict[str, int] = {}  # entry id -> its line (repeated ids are named by it)
        self.named: dict[str, str] = {}  # entry id -> the parentId it names (cycles are checked on these)
        self.views: dict[str, PromptView] = {}  # entry id -> its context, for the entries one was built for
        self.compactions: dict[str, tuple[dict, str | None]] = {}  # entry id -> (summary, firstKeptEntryId)
        self.model: str | None = None
        self.cwd: str | None = None  # the session header's: the project the agent worked in

    def context(self, entry_id: str | None) -> PromptView:
        """The context after ``entry_id`` (empty for None): the nearest ancestor's whose context is
        built, extended by the own messages of the entries below it."""
        below: list[str] = []
        at = entry_id
        while at is not None and at not in self.views and at not in self.compactions:
            below.append(at)
            at = self.parent[at]
        if at is None:
            base = PromptView([], 0)
        elif at in self.views:
            base = self.views[at]
        else:
            base = self.views[at] = self._kept(at)
        if not below:
            return base
        view = extended(base, [m for kept in reversed(below) for m in self.own.get(kept, ())])
        self.views[below[0]] = view
        return view

    def _kept(self, compaction: str) -> PromptView:
        """A compaction's context: its summary, then the entries on its path from ``firstKeptEntryId``."""
        summary, first = self.compactions[compaction]
        parent = self.parent[compaction]
        out = [summary]
        if first is not None and first in self.depth and parent is not None:
            on_path: list[str] = []
            at: str | None = parent
            for _ in range(self.depth[parent] - self.depth[first] + 1):  # no further than first's depth
                if at is None:
                    break
                on_path.append(at)
                at = self.parent[at]
            if on_path and on_path[-1] == first:
                out += [m for kept in reversed(on_path) for m in self.own.get(kept, ())]
        return PromptView(out, len(out))

    def entry(self, number: int, value: Any, previous: str | None) -> str | None:
        path, where = self.trace.path, f"line {number}"
        value = expect_object(path, where, value, "a JSON object")
        kind = value.get("type")
        if kind == "session":
            if self.trace.session is None and isinstance(value.get("id"), str):
                self.trace.session = value["id"]
            self.model = self._model(where, value, "modelId") or self.model
            self.cwd = optional_text(path, where + ": cwd", value.get("cwd")) or self.cwd
            return previous
        entry_id = value.get("id")
        if entry_id is None:
            entry_id = f"#{number}"  # the older layout: entries chain in file order
            parent = previous
        else:
            entry_id = string(path, where + ": id", entry_id)
            parent = optional_string(path, where + ": parentId", value.get("parentId"))
        if entry_id in self.line:
            raise InputError(
                path, where + ": id", f"repeats the id of line {self.line[entry_id]} ({visible(entry_id)})"
            )
        if parent == entry_id:
            raise InputError(path, where + ": parentId", "names the entry itself: the tree has a cycle")
        if parent is not None:
            self.named[entry_id] = parent
        if parent is not None and parent not in self.parent:
            parent = None  # a parent not in the file (or later in it): the path starts here
        self.parent[entry_id] = parent
        self.depth[entry_id] = self.depth[parent] + 1 if parent is not None else 0
        self.line[entry_id] = number
        if kind == "compaction":
            self._compaction(where, value, entry_id)
            return entry_id
        if kind == "model_change":
            self.model = self._model(where, value, "modelId") or self.model
        elif kind == "message":
            self._message(where, value, parent, entry_id)
        elif kind in ("branch_summary", "custom_message"):
            self.own[entry_id] = [self._summary_or_custom(where, value)]
        elif kind not in ENTRY_TYPES:
            self.trace.note("unknown-entry-type", UNKNOWN, where)
        return entry_id

    def check_cycles(self) -> None:
        """A parentId chain that comes back to where it started (through parents named before they
        appear): one line naming its first entry, found in one pass over the entries."""
        done: set[str] = set()
        for start in self.named:
            walk: dict[str, None] = {}
            at: str | None = start
            while at is not None and at not in done and at not in walk:
                walk[at] = None
                at = self.named.get(at) if at in self.line else None
            if at is not None and at in walk:
                raise InputError(
                    self.trace.path, f"line {self.line[at]}: parentId", "its parentId chain comes back to it (a cycle)"
                )
            done.update(walk)

    def _model(self, where: str, value: dict, key: str) -> str | None:
        return optional_string(self.trace.path, f"{where}: {key}", value.get(key))

    def _compaction(self, where: str, value: dict, entry_id: str) -> None:
        self.trace.compactions += 1
        self.trace.note("compaction", COMPACTION, where)
        summary = value.get("summary")
        summary = string(self.trace.path, where + ": summary", summary)
        first = value.get("firstKeptEntryId")
        if first is None and isinstance(value.get("firstKeptEntryIndex"), int):
            index = value["firstKeptEntryIndex"]  # older layout: a line index (the header is line 0)
            first = f"#{index + 1}"
        self.trace.note("summary-wrapper", SUMMARY, where)
        message = self.chat.check({"role": "user", "content": check_text(self.trace.path, where, summary)}, where)
        self.compactions[entry_id] = (message, first if isinstance(first, str) else None)

    def _summary_or_custom(self, where: str, value: dict) -> dict:
        text = value.get("summary") if value.get("type") == "branch_summary" else value.get("content")
        if isinstance(text, list):
            text = self._text(where + ": content", text)
        if not isinstance(text, str):
            raise InputError(self.trace.path, where, "missing summary or content text")
        self.trace.note("summary-wrapper", SUMMARY, where)
        return self.chat.check({"role": "user", "content": text}, where)

    def _text(self, where: str, content: Any) -> str:
        path = self.trace.path
        if isinstance(content, str):
            return check_text(path, where, content)
        texts = []
        for at, part in objects(path, where, content, "a part object", listed="a string or a list of parts"):
            if part.get("type") == "text":
                texts.append(string(path, at + ".text", part.get("text")))
            else:
                self.chat._skip(at, str(part.get("type")))
        return "\n".join(texts)

    def _message(self, where: str, value: dict, parent: str | None, entry_id: str) -> None:
        path = self.trace.path
        message = value.get("message")
        message = expect_object(path, where + ": message", message)
        role = message.get("role")
        at = where + ": message"
        if role == "assistant":
            self._assistant(where, message, parent, entry_id)
        elif role in ("user", "custom"):
            text = self._text(at + ".content", message.get("content", ""))
            self.own[entry_id] = [self.chat.check({"role": "user", "content": text}, where)]
        elif role == "toolResult":
            call_id = message.get("toolCallId")
            call_id = string(path, at + ".toolCallId", call_id)
            text = self._text(at + ".content", message.get("content", ""))
            self.own[entry_id] = [self.chat.check({"role": "tool", "tool_call_id": call_id, "content": text}, where)]
        elif role == "bashExecution":
            if message.get("excludeFromContext"):
                return
            pieces = [message.get("command"), message.get("output")]
            text = "\n".join(p for p in pieces if isinstance(p, str))
            self.own[entry_id] = [self.chat.check({"role": "user", "content": text}, where)]
        elif role in ("branchSummary", "compactionSummary"):
            self.own[entry_id] = [self._summary_or_custom(where, {"type": "branch_summary", **message})]
        else:
            raise InputError(path, at + ".role", f"unknown role {role!r}")

    def _assistant(self, where: str, message: dict, parent: str | None, entry_id: str) -> None:
        path, at = self.trace.path, where + ": message"
        content = message.get("content", [])
        texts, thoughts, calls = [], [], []
        for place, part in objects(path, f"{at}.content", content, "a part object", listed="a list of parts"):
            kind = part.get("type")
            if kind == "text" and isinstance(part.get("text"), str):
                texts.append(check_text(path, place, part["text"]))
            elif kind == "thinking" and isinstance(part.get("thinking"), str):
                thoughts.append(check_text(path, place, part["thinking"]))
            elif kind == "toolCall":
                call_id = string(path, place + ".id", part.get("id"))
                name = string(path, place + ".name", part.get("name"))
                arguments = object_or_string(path, place + ".arguments", part.get("arguments", {}))
                if isinstance(arguments, dict):
                    arguments = json.dumps(arguments, ensure_ascii=False)
                calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
            else:
                self.chat._skip(place, str(kind))
        usage = self._usage(at + ".usage", message.get("usage"))
        if usage is None and message.get("stopReason") in ("aborted", "error"):
            self.trace.note("failed-call", FAILED, where)
            return
        response: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) if texts else None}
        if thoughts:
            response["reasoning_content"] = "\n".join(thoughts)
        if calls:
            response["tool_calls"] = calls
        clean = self.chat.check(response, where)
        self.own[entry_id] = [clean]
        model = self._model(at, message, "model") or self.model
        context = self.context(parent)  # a view of all of its list (no copy), unless a later entry extended it
        self.chat.messages = context.base if len(context.base) == len(context) else list(context)
        response_id = message.get("responseId")
        call = self.chat.call(
            where,
            model,
            usage,
            clean,
            parse_time(message.get("timestamp")),
            request_id=response_id if isinstance(response_id, str) else None,
        )
        if call is not None:
            call.cwd = self.cwd

    def _usage(self, where: str, usage: Any) -> Usage | None:
        if usage is None:
            return None
        usage = expect_object(self.trace.path, where, usage)
        counts = {key: check_count(self.trace.path, f"{where}.{key}", usage.get(key)) for key in USAGE_FIELDS}
        if not any(counts.values()):
            return None
        return anthropic_usage(
            {
                "input_tokens": counts["input"] or 0,
                "output_tokens": counts["output"],
                "cache_read_input_tokens": counts["cacheRead"] or 0,
                "cache_creation_input_tokens": counts["cacheWrite"] or 0,
            }
        )


class PiReader(SessionFold):
    """A pi session read as a fold over its lines (see the module's docstring)."""

    expected = "expected a pi session (JSON lines)"

    def __init__(self, path: str, doc: Document | None) -> None:
        super().__init__(Trace(path=path, format=FORMAT, unrecorded=("system", "tools")))
        self.tree = _Reader(self.trace, self.made)
        self.previous: str | None = None

    def line(self, number: int, value: Any) -> None:
        self.previous = self.tree.entry(number, value, self.previous)

    def end(self) -> None:
        self.tree.check_cycles()


#: OpenClaw runs pi's agent and writes pi's v3 session files: ``~/.openclaw/agents/<agent>/sessions/<id>.jsonl``
#: (``$OPENCLAW_STATE_DIR`` moves ``~/.openclaw``; older installs' ``~/.clawdbot`` and ``~/.moltbot``), and the
#: transcripts a reset or a delete archives beside them (``<id>.jsonl.reset.<time>``, ``.deleted.<time>``).
OPENCLAW = ("agents/*/sessions/*.jsonl", "agents/*/sessions/*.jsonl.reset.*", "agents/*/sessions/*.jsonl.deleted.*")

LOCATIONS = (
    Location("pi", ".pi/agent/sessions", ("*/*.jsonl",), env="PI_CODING_AGENT_DIR", below_env="sessions"),
    *(
        Location(
            "openclaw", folder, OPENCLAW, env="OPENCLAW_STATE_DIR" if folder == ".openclaw" else None, project_depth=2
        )
        for folder in (".openclaw", ".clawdbot", ".moltbot")
    ),
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    PiReader,
    sessions=True,
    locations=LOCATIONS,
    records_what="per-call usage and cost; no system prompt or tool definitions",
)
