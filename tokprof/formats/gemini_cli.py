"""Gemini CLI session files: ``~/.gemini/tmp/<project-hash>/chats/session-*.json`` and ``.jsonl``.

Two forms, both read (checked against google-gemini/gemini-cli's
``packages/core/src/services/chatRecordingService.ts`` and ``chatRecordingTypes.ts``):

* ``.json`` (older versions): one ``ConversationRecord`` ``{sessionId, projectHash, startTime,
  lastUpdated, messages[], summary?, kind?}``, rewritten whole at every change;
* ``.jsonl`` (newer versions, append-only): a first metadata line ``{sessionId, projectHash,
  startTime, ...}``, then message records (a record is appended again, whole, each time its tool
  calls, results or tokens change: the last one written for an ``id`` is the message, in the place
  where the ``id`` first appeared; a metadata line holding ``messages``, a whole record on one line,
  adds them), ``{"$rewindTo": id}`` (the history loses that message and every
  later one; an unknown id clears it) and ``{"$set": {...}}`` metadata updates, whose ``messages``,
  when present, replace the history (Gemini CLI syncs compressed or masked history this way).

A message has ``id``, ``timestamp``, ``type`` (``user``, ``gemini``, ``info``, ``error``,
``warning``) and ``content`` (a string or a list of parts ``[{text}]``). ``gemini`` messages add
``thoughts`` (``[{subject, description}]``), ``toolCalls`` (``{id, name, args, result, status}``,
``result`` the ``functionResponse`` parts sent back), ``tokens`` and ``model``.

**Calls.** Each ``gemini`` message is one model response: one call, whose prompt is every ``user``
and ``gemini`` message before it in the history (``info``, ``error`` and ``warning`` entries are
the CLI's own and are neither calls nor sent). A ``user`` message becomes a user message (its text
parts joined); a ``gemini`` message becomes an assistant message (text; thoughts, ``subject:
description``, as ``reasoning_content``; tool calls with ``args`` as JSON arguments) followed by one
tool message per tool call that has a result (the ``functionResponse.response`` object's ``output``
string when it holds only that, else the object's JSON; text parts as they are). Calls rewound or
replaced later were still made: they stay, with the history they were made on.

**Usage** (``tokens``, per message): ``input`` is ``promptTokenCount`` (cached tokens included),
``cached`` is ``cachedContentTokenCount``, ``output`` is ``candidatesTokenCount``, ``thoughts``
``thoughtsTokenCount``, ``tool`` ``toolUsePromptTokenCount``. The call's prompt is ``input + tool``,
its cache reads ``cached``, its output ``output + thoughts`` (thinking is billed as output); no cache
writes are reported. A message with ``tokens`` null, or all zero (the first message of some
sessions), reports no usage (note ``no-usage``).

**A fold** (#43.1): a ``.jsonl`` file's lines are read as they are fed. A message's records are
appended while it is the newest message (its tokens, tool calls and results): a message is read, and
its call given, once a record of a newer message (not an ``info``, ``error`` or ``warning`` entry) is
read, or at the end; a record that updates an older message than that changes no call already given.
The reader holds the history (shared by the calls' prompts) and each message's converted form (a
``$set`` may list it again), not the calls. A ``.json`` file is one record, read whole.

**What is not recorded.** The system prompt and the tool definitions are not in the file:
:attr:`Trace.unrecorded` is ``("system", "tools")`` and they are inferred from usage. Gemini's
tokenizer and chat format are not public: the counts are a stand-in's, labelled estimates, scaled to
the reported tokens.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from tokprof.base.errors import InputError
from tokprof.formats.conversation import Conversation, function_response_text
from tokprof.formats.folds import Made, SessionFold
from tokprof.formats.fields import check_text, expect_list, expect_object, objects, optional_string, string
from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import Location
from tokprof.formats.reader import LogFormat, Record
from tokprof.formats.neutral import check_cached, check_count, parse_time
from tokprof.trace import Call, Trace, Usage

FORMAT = "gemini-cli"
DESCRIPTION = "Gemini CLI session file (~/.gemini/tmp/<project>/chats/session-*.json or .jsonl)"

TYPES = ("user", "gemini", "info", "error", "warning")
TOKEN_FIELDS = ("input", "output", "cached", "thoughts", "tool", "total")
NO_USAGE = "Gemini messages whose tokens are null or all zero report no usage: their counts are not scaled"
NO_RESULT = "a tool call without a recorded result (cancelled, or the session ended): no tool message follows it"
REPLACED = (
    "a $set.messages record replaced the history (Gemini CLI syncs compressed or masked history): "
    "later prompts start from it"
)
REWOUND = "a $rewindTo record dropped messages from the history: the calls they held stay, as they were made"


def _is_message(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("id"), str)
        and value.get("type") in TYPES
        and "role" not in value
        and "message" not in value
    )


def _is_metadata(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("sessionId"), str)
        and isinstance(value.get("projectHash"), str)
    )


def starts_like_session(head: bytes) -> bool:
    """Whether a JSON document's first bytes are a Gemini CLI session object's (its metadata keys come
    first), for directory scans that read only a file's start."""
    start = head[:1024]
    return start.lstrip()[:1] == b"{" and b'"sessionId"' in start and b'"projectHash"' in start


def sniff(doc: Document) -> bool:
    if doc.lines is None:
        value = doc.value
        if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
            return False
        messages = value["messages"]
        return _is_metadata(value) or (bool(messages) and all(_is_message(m) for m in messages[:5]))
    head = [value for _, value in doc.lines.head(5)]
    return (
        bool(head)
        and (_is_metadata(head[0]) or any(_is_message(v) for v in head))
        and not any(isinstance(v, dict) and ("uuid" in v or "role" in v) for v in head)
    )


class GeminiReader(SessionFold):
    """A Gemini CLI session read as a fold (see the module's docstring): a ``.json`` file's one
    document, or a ``.jsonl`` file's lines, each turned into events (add, rewind, replace) replayed on
    the history once no later record of the newest message can change them (:attr:`queue`)."""

    def __init__(self, path: str, doc: Document | None) -> None:
        super().__init__(Trace(path=path, format=FORMAT, unrecorded=("system", "tools")))
        self.history = _History(self.trace, self.made)
        self.latest: dict[str, tuple[str, dict]] = {}  # id -> its last record, until it is read
        self.queue: list[tuple[str, Any]] = []  # ("add", id) | ("rewind", id) | ("replace", [ids]), not replayed

    def feed(self, record: Record) -> Iterable[Call]:
        if record.line is None:
            return self._document(record.value)
        return super().feed(record)

    def _document(self, value: Any) -> Iterator[Call]:
        """A ``.json`` file's one record: each call given as its message is read."""
        path = self.trace.path
        value = expect_object(path, None, value, "a Gemini CLI session object")
        messages = value.get("messages")
        messages = expect_list(path, "messages", messages)
        self.trace.session = value.get("sessionId") if isinstance(value.get("sessionId"), str) else None
        chat = Conversation(self.trace, self.made)
        for i, message in enumerate(messages):
            where = f"messages[{i}]"
            message = expect_object(path, where, message, "a message object")
            chat.messages.extend(_message(chat, where, message))
            yield from self.made.take()

    def line(self, number: int, value: Any) -> None:
        """One line of the append-only form: the last record of each id, in its first place; rewinds, $set."""
        trace, where = self.trace, f"line {number}"
        value = expect_object(trace.path, where, value, "a JSON object")
        if isinstance(value.get("$rewindTo"), str):
            self.queue.append(("rewind", value["$rewindTo"]))
        elif isinstance(value.get("id"), str):
            self.record(value["id"], where, value)
        elif "$set" in value:
            update = value["$set"]
            update = expect_object(trace.path, where + ": $set", update)
            if "messages" in update:
                ids = []
                for at, message in objects(trace.path, where + ": $set.messages", update["messages"]):
                    message_id = string(trace.path, at + ".id", message.get("id"))
                    self.latest[message_id] = (at, message)
                    ids.append(message_id)
                self.queue.append(("replace", ids))
        elif _is_metadata(value):
            if trace.session is None:
                trace.session = value["sessionId"]
            listed = value.get("messages")  # a whole ConversationRecord on one line: its messages are added
            for i, message in enumerate(listed if isinstance(listed, list) else ()):
                at = f"{where}: messages[{i}]"
                message = expect_object(trace.path, at, message)
                message_id = string(trace.path, at + ".id", message.get("id"))
                self.record(message_id, at, message)
        else:
            raise InputError(trace.path, where, "not a Gemini CLI record (no id, $rewindTo, $set or sessionId)")

    def record(self, message_id: str, where: str, message: dict) -> None:
        """A message's record: a newer message's first record replays what came before it."""
        newer = message_id not in self.latest and message_id not in self.history.done
        if newer and message.get("type") not in ("info", "error", "warning"):
            self.flush()
        self.latest[message_id] = (where, message)
        self.queue.append(("add", message_id))

    def end(self) -> None:
        self.flush()

    def flush(self) -> None:
        queue, self.queue = self.queue, []
        for kind, arg in queue:
            self.history.apply(kind, arg, self.latest)


class _History:
    """The history as the events leave it, each call made on it as it stood. The history is one list
    that grows at its end (each call's prompt a view of it); a rewind or a replaced history starts a
    new list, so that the prompts of earlier calls stay as they were: the cost is linear in the file."""

    def __init__(self, trace: Trace, made: Made) -> None:
        self.trace = trace
        self.chat = Conversation(trace, made)
        self.at: dict[str, int] = {}  # the ids in the history -> their place in order
        self.order: list[str] = []  # the ids in the history, in order
        self.starts: list[int] = []  # where each one's messages start in chat.messages
        self.done: dict[str, list[dict]] = {}  # id -> its messages, once read (a $set may list it again)

    def add(self, message_id: str, latest: dict[str, tuple[str, dict]]) -> None:
        chat = self.chat
        if message_id in self.done:
            converted = self.done[message_id]
        else:
            where, message = latest.pop(message_id)
            converted = self.done[message_id] = _message(chat, where, message)
        self.at.setdefault(message_id, len(self.order))  # a rewind to it goes back to its first place
        self.order.append(message_id)
        self.starts.append(len(chat.messages))
        chat.messages.extend(converted)

    def apply(self, kind: str, arg: Any, latest: dict[str, tuple[str, dict]]) -> None:
        chat, at, order, starts = self.chat, self.at, self.order, self.starts
        if kind == "add":
            if arg not in at:
                self.add(arg, latest)
        elif kind == "rewind":
            keep = at.get(arg, 0)
            for message_id in order[keep:]:
                if at.get(message_id, -1) >= keep:
                    del at[message_id]
            chat.messages = chat.messages[: starts[keep]] if keep < len(starts) else list(chat.messages)
            del order[keep:], starts[keep:]
            self.trace.note("rewind", REWOUND)
        else:
            at.clear()
            order.clear()
            starts.clear()
            chat.messages = []
            for message_id in arg:
                self.add(message_id, latest)
            self.trace.note("history-replaced", REPLACED)


def _message(chat: Conversation, where: str, message: dict) -> list[dict]:
    """The neutral messages of one record (none for info/error entries); a gemini record is a call,
    made on the history as ``chat`` holds it."""
    path = chat.trace.path
    message = expect_object(path, where, message, "a message object")
    kind = message.get("type")
    if kind not in TYPES:
        raise InputError(path, _field(where, "type"), f"expected one of {', '.join(TYPES)}, found {kind!r}")
    if kind in ("info", "error", "warning"):
        return []
    text = _text(chat, _field(where, "content"), message.get("content"))
    if kind == "user":
        return [chat.check({"role": "user", "content": text}, where)]
    assistant: dict[str, Any] = {"role": "assistant", "content": text or None}
    thoughts = _thoughts(path, _field(where, "thoughts"), message.get("thoughts"))
    if thoughts:
        assistant["reasoning_content"] = thoughts
    calls, results = _tool_calls(chat, _field(where, "toolCalls"), message.get("toolCalls"))
    if calls:
        assistant["tool_calls"] = calls
    model = optional_string(path, _field(where, "model"), message.get("model"))
    usage = _usage(chat, _field(where, "tokens"), message.get("tokens"))
    clean = chat.check(assistant, where)
    chat.call(
        where,
        model,
        usage,
        clean,
        parse_time(message.get("timestamp")),
        request_id=message["id"] if isinstance(message.get("id"), str) else None,
    )
    out = [clean]
    for result in results:
        out.append(chat.check(result, where))
    return out


def _field(where: str, name: str) -> str:
    """A message field's place: ``messages[3].tokens`` in a ``.json`` file, ``line 4: tokens`` in a
    ``.jsonl`` one (the record is the message)."""
    return f"{where}: {name}" if where.startswith("line ") and ":" not in where else f"{where}.{name}"


def _text(chat: Conversation, where: str, content: Any) -> str:
    """``content``: a string, a part, or a list of parts (text parts joined; other parts noted)."""
    path = chat.trace.path
    if content is None:
        return ""
    if isinstance(content, str):
        return check_text(path, where, content)
    parts = content if isinstance(content, list) else [content]
    texts = []
    for j, part in enumerate(parts):
        at = f"{where}[{j}]" if isinstance(content, list) else where
        if isinstance(part, str):
            texts.append(check_text(path, at, part))
            continue
        part = expect_object(path, at, part, "a part object")
        if "text" not in part:
            chat._skip(at, "part")
            continue
        text = string(path, at + ".text", part["text"])
        if not part.get("thought"):
            texts.append(text)
    return "\n".join(texts)


def _thoughts(path: str, where: str, thoughts: Any) -> str:
    if thoughts is None:
        return ""
    thoughts = expect_list(path, where, thoughts)
    out = []
    for j, thought in enumerate(thoughts):
        thought = expect_object(path, f"{where}[{j}]", thought)
        pieces = [optional_string(path, f"{where}[{j}].{key}", thought.get(key)) for key in ("subject", "description")]
        out.append(": ".join(p for p in pieces if p))
    return "\n".join(out)


def _tool_calls(chat: Conversation, where: str, calls: Any) -> tuple[list[dict], list[dict]]:
    path = chat.trace.path
    if calls is None:
        return [], []
    out, results = [], []
    for at, call in objects(path, where, calls, "a tool call object"):
        name, call_id = call.get("name"), call.get("id")
        name = string(path, at + ".name", name)
        call_id = string(path, at + ".id", call_id)
        args = call.get("args", {})
        args = expect_object(path, at + ".args", args)
        out.append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
            }
        )
        result = call.get("result")
        if result is None:
            chat.trace.note("tool-result-missing", NO_RESULT, at)
            continue
        results.append({"role": "tool", "tool_call_id": call_id, "content": _result(chat, at + ".result", result)})
    return out, results


def _result(chat: Conversation, where: str, result: Any) -> str:
    """A tool call's ``result`` parts: each ``functionResponse.response`` (its lone ``output`` string,
    else its JSON), text parts as they are."""
    path = chat.trace.path
    parts = result if isinstance(result, list) else [result]
    texts = []
    for j, part in enumerate(parts):
        at = f"{where}[{j}]" if isinstance(result, list) else where
        if isinstance(part, str):
            texts.append(check_text(path, at, part))
            continue
        part = expect_object(path, at, part, "a part object")
        if "functionResponse" in part:
            response = part["functionResponse"]
            response = expect_object(path, at + ".functionResponse", response)
            texts.append(
                check_text(path, at + ".functionResponse.response", function_response_text(response.get("response")))
            )
        elif isinstance(part.get("text"), str):
            texts.append(check_text(path, at + ".text", part["text"]))
        else:
            chat._skip(at, "part")
    return "\n".join(texts)


def _usage(chat: Conversation, where: str, tokens: Any) -> Usage | None:
    path = chat.trace.path
    if tokens is None:
        chat.trace.note("no-usage", NO_USAGE, where)
        return None
    tokens = expect_object(path, where, tokens)
    counts = {key: check_count(path, f"{where}.{key}", tokens.get(key)) for key in TOKEN_FIELDS}
    if not any(counts.values()):
        chat.trace.note("no-usage", NO_USAGE, where)
        return None
    if counts["input"] is None:
        raise InputError(path, where + ".input", "missing: the prompt's token count")
    return check_cached(
        path,
        where,
        Usage(
            prompt=counts["input"] + (counts["tool"] or 0),
            cache_read=counts["cached"],
            cache_write=None,
            output=(counts["output"] or 0) + (counts["thoughts"] or 0),
        ),
        "cached",
    )


LOCATIONS = (
    Location(
        "gemini-cli",
        ".gemini/tmp",
        ("*/chats/session-*.json", "*/chats/session-*.jsonl", "*/chats/*/*.jsonl"),
        env="GEMINI_CLI_HOME",
        below_env=".gemini/tmp",
        project_depth=2,
    ),
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    GeminiReader,
    sessions=True,
    locations=LOCATIONS,
    records_what="per-message usage; no system prompt or tool definitions",
)
