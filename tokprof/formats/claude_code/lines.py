"""The lines of a Claude Code transcript once checked: their content blocks as the parts a prompt is
built from (:class:`Text`, :class:`Thinking`, :class:`ToolUse`, :class:`ToolResult`), the transcripts
that hold them, and the prompt states built along their ``parentUuid`` chains (the rules are in
:mod:`tokprof.formats.claude_code`)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any, Sequence, Union

from tokprof.base.errors import InputError
from tokprof.formats.fields import expect_object, objects, optional_string, string
from tokprof.formats.neutral import assistant_message, check_text

#: The format's name (the package declares it: :data:`tokprof.formats.claude_code.LOG_FORMAT`).
FORMAT = "claude-code"
TOOL_CALL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")


@dataclass(frozen=True, slots=True)
class Text:
    """A text block (user or assistant)."""

    text: str


@dataclass(frozen=True, slots=True)
class Thinking:
    """An assistant's thinking block: its ``reasoning_content``."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolUse:
    """An assistant's tool call, as the neutral trace has it (``{"id", "type", "function"}``)."""

    call: dict

    @property
    def id(self) -> str:
        return self.call["id"]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A user line's tool result: the call it answers and its text (text blocks joined by newlines)."""

    call_id: str
    text: str


Part = Union[Text, Thinking, ToolUse, ToolResult]


def blocks(path: str, where: str, content: Any) -> list[tuple[str, dict]]:
    """Content as (place, block) pairs; a string is one text block (none when empty)."""
    if isinstance(content, str):
        return [(where, {"type": "text", "text": content})] if content else []
    if content is None:
        raise InputError(path, where, "missing: expected a string or a list of content blocks")
    listed = objects(path, where, content, "a content block object", "a string or a list of content blocks")
    for at, block in listed:
        string(path, at + ".type", block.get("type"))
    return listed


def user_part(path: str, place: str, skipped: list[str], where: str, block: dict) -> Part | None:
    """A user line's block as a part; a block that is not text is named in ``skipped`` (None)."""
    kind = block["type"]
    if kind == "text":
        return Text(_text(path, where, block, "text"))
    if kind == "tool_result":
        return tool_result(path, place, skipped, where, block)
    if kind in TOOL_CALL_BLOCKS or kind == "thinking":
        raise InputError(path, where + ".type", f"a {kind} block belongs in an assistant message")
    skipped.append(f"{place} ({kind})")
    return None


def tool_result(path: str, place: str, skipped: list[str], where: str, block: dict) -> ToolResult:
    call_id = string(path, where + ".tool_use_id", block.get("tool_use_id"))
    content = block.get("content")
    texts = []
    if isinstance(content, str):
        texts.append(check_text(path, where + ".content", content))
    elif content is not None:
        for at, part in blocks(path, where + ".content", content):
            if part["type"] == "text":
                texts.append(_text(path, at, part, "text"))
            else:
                skipped.append(f"{place} ({part['type']} in a tool result)")
    return ToolResult(call_id, "\n".join(texts))


def assistant_part(path: str, place: str, skipped: list[str], where: str, block: dict) -> Part | None:
    """An assistant line's block as a part; a block that is not text is named in ``skipped`` (None)."""
    kind = block["type"]
    if kind == "text":
        return Text(_text(path, where, block, "text"))
    if kind == "thinking":
        return Thinking(_text(path, where, block, "thinking"))
    if kind in TOOL_CALL_BLOCKS:
        return ToolUse(_tool_call(path, where, block))
    if kind == "tool_result":
        raise InputError(path, where + ".type", "a tool_result block belongs in a user message")
    skipped.append(f"{place} ({kind})")
    return None


def _text(path: str, where: str, block: dict, key: str) -> str:
    return string(path, f"{where}.{key}", block.get(key))


def _tool_call(path: str, where: str, block: dict) -> dict:
    call_id = string(path, where + ".id", block.get("id"))
    name = string(path, where + ".name", block.get("name") or None)
    arguments = expect_object(path, where + ".input", block.get("input", {}))
    text = check_text(path, where + ".input", json.dumps(arguments, ensure_ascii=False))
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def assistant(parts: "tuple[Part, ...] | list[Part]") -> dict:
    """The assistant message of a response's parts: texts joined as content, thinking as reasoning."""
    texts = [p.text for p in parts if isinstance(p, Text)]
    thoughts = [p.text for p in parts if isinstance(p, Thinking)]
    calls = [p.call for p in parts if isinstance(p, ToolUse)]
    return assistant_message(texts, thoughts, calls)


def stand_in(call_ids: list[str]) -> dict:
    """An assistant message declaring tool calls, so that results answering them pass the check."""
    calls = [{"id": i, "type": "function", "function": {"name": "_", "arguments": "{}"}} for i in call_ids]
    return {"role": "assistant", "content": None, "tool_calls": calls}


MESSAGE_TYPES = ("user", "assistant")
USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


@dataclass(slots=True)
class Line:
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
    horizon: int = 0  # the last line of the file that may name this line's parent as its own parent
    parts: tuple[Part, ...] = ()  # a tuple: the items of prompt states hold it as it is
    skipped: tuple[str, ...] = ()  # places of blocks that are not text


@dataclass(slots=True)
class Transcript:
    path: str  # the file, for errors
    lines: list[Line] = field(default_factory=list)
    by_uuid: dict[str, Line] = field(default_factory=dict)
    origin: str = ""  # ", from progress" for threads rebuilt from progress lines
    tool_uses: dict[str, Line] = field(default_factory=dict)  # tool_use id -> the line that holds it
    states: dict[tuple[str, bool], State] = field(default_factory=dict)  # (uuid, thread) -> prompt after it
    compaction: bool = False  # an agent-acompact-*.jsonl file: a compaction call's transcript
    #: the uuids and tool-call ids of the lines let go (before a compaction): a line repeating one is a repeat
    dropped_uuids: set[str] = field(default_factory=set)
    dropped_tools: set[str] = field(default_factory=set)
    _children: dict[str, list[Line]] | None = None
    _children_of: int = 0  # how many lines the children were gathered from

    def children(self, uuid: str) -> list[Line]:
        """The lines whose ``parentUuid`` is ``uuid``, in file order."""
        if self._children is None or self._children_of > len(self.lines):
            self._children, self._children_of = {}, 0
        if self._children_of < len(self.lines):  # lines added since: gathered alone (lines are only appended)
            for line in self.lines[self._children_of :]:
                if line.parent is not None:
                    self._children.setdefault(line.parent, []).append(line)
            self._children_of = len(self.lines)
        return self._children.get(uuid, [])


@dataclass(frozen=True, slots=True)
class Item:
    """A message being assembled from the lines of a chain: ``parts`` as the lines hold them."""

    role: str
    key: str | None
    parts: tuple[Part, ...]

    def extended(self, parts: "list[Part] | tuple[Part, ...]") -> Item:
        return Item(self.role, self.key, self.parts + tuple(parts))


@dataclass(frozen=True, slots=True)
class State:
    """The prompt after a line of a thread: messages no later line can change (checked, and shared by
    every state and call that follows), then the items later lines may still extend (the last
    response and the user lines after it)."""

    final: Sequence[dict]  # never changed: a list, or a view (tokprof.trace.PromptView) of a list that only grows
    open: tuple[Item, ...] = ()


def answered(state: State, call_id: str) -> bool:
    """Whether a tool call is answered in the state: in its open items, or in its last messages back
    to the assistant message that made the call."""
    for item in state.open:
        if any(isinstance(part, ToolResult) and part.call_id == call_id for part in item.parts):
            return True
    if any(isinstance(part, ToolUse) and part.id == call_id for item in state.open for part in item.parts):
        return False  # made by a response still open, and not answered after it
    for message in reversed(state.final):
        if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
            return True
        if any(c.get("id") == call_id for c in message.get("tool_calls") or ()):
            return False
    return False


EMPTY = State([])


#: The fields of a line kept once it is read (its content is in its parts by then), and of an
#: assistant line's message. The rest (``toolUseResult``, snapshots, progress output) is never read
#: again and is not held; ``cwd`` and ``gitBranch`` say where the agent worked (``Call.cwd``).
KEPT_FIELDS = (
    "type",
    "uuid",
    "parentUuid",
    "sessionId",
    "timestamp",
    "agentId",
    "subtype",
    "logicalParentUuid",
    "requestId",
    "isApiErrorMessage",
    "isSidechain",
    "parentToolUseID",
    "cwd",
    "gitBranch",
)
KEPT_MESSAGE_FIELDS = ("model", "usage", "stop_reason")
#: What a user line and a response line keep of those (the rest is on the line, as its uuid, parent,
#: thread, key, request and message ids): a user line's session and agent (the session's id, a
#: subagent file's agent), a response's where and when (its call's).
USER_FIELDS = ("sessionId", "agentId")
ASSISTANT_FIELDS = ("sessionId", "timestamp", "agentId", "cwd", "gitBranch")


def kept(record: dict, kind: str) -> dict:
    """The fields of a line read after it is parsed (see :data:`KEPT_FIELDS`; of a user line
    :data:`USER_FIELDS`, of a response :data:`ASSISTANT_FIELDS` and its message's
    :data:`KEPT_MESSAGE_FIELDS`); a progress line keeps its data only when it copies a subagent's
    line (``agent_progress``)."""
    fields = USER_FIELDS if kind == "user" else ASSISTANT_FIELDS if kind == "assistant" else KEPT_FIELDS
    out = {key: _shared(key, record[key]) for key in fields if key in record}
    message = record.get("message")
    if kind == "assistant" and isinstance(message, dict):
        out["message"] = {key: _shared(key, message[key]) for key in KEPT_MESSAGE_FIELDS if key in message}
    elif kind == "progress":
        data = record.get("data")
        if isinstance(data, dict) and data.get("type") == "agent_progress":
            out["data"] = data
    return out


def read_later(record: dict, kind: str) -> dict:
    """What is read of a line that is not a response once the calls are made from its transcript: a
    compact boundary's fields (its compaction call is matched to it by them), a progress line's
    copy of a subagent's line; a user line's fields are not read again (its content is in its parts)."""
    if kind == "system":
        return record
    return {"data": record["data"]} if "data" in record else {}


#: Fields whose few values repeat on every line (a session's id, its folder, the model): one string
#: each is held for all the lines, not a copy per line.
SHARED_FIELDS = frozenset(("type", "sessionId", "agentId", "subtype", "cwd", "gitBranch", "model", "stop_reason"))


def _shared(key: str, value: Any) -> Any:
    return sys.intern(value) if key in SHARED_FIELDS and type(value) is str else value


def agent_copy_of(record: dict) -> tuple[Any, dict, dict] | None:
    """A progress line's copy of a subagent's conversation line (``data.type == "agent_progress"``):
    its thread (the agent id, else the progress line's ``parentToolUseID``, else ``"?"``), the
    progress line's data and the copied line; None for any other line."""
    data = record.get("data")
    if not isinstance(data, dict) or data.get("type") != "agent_progress":
        return None
    nested = data.get("message")
    if not isinstance(nested, dict) or nested.get("type") not in MESSAGE_TYPES:
        return None
    return data.get("agentId") or record.get("parentToolUseID") or "?", data, nested


def agent_copy(line: Line, seen: set[str]) -> tuple[Any, dict, dict] | None:
    """A progress line's copy of a subagent's conversation line (:func:`agent_copy_of`); None for any
    other line, or a copy of a line already copied (its uuid in ``seen``, which gains it)."""
    copied = agent_copy_of(line.record) if line.type == "progress" else None
    if copied is None:
        return None
    uuid = copied[2].get("uuid")
    if isinstance(uuid, str):
        if uuid in seen:
            return None
        seen.add(uuid)
    return copied


def copy_line(record: dict, parent: str | None, fallback_uuid: str, agent: object = None) -> dict:
    """A subagent line copied from a progress line, linked to the previous copy of its thread, with the
    progress line's agent id (its thread's name) when the copy has none."""
    out = dict(record)
    if isinstance(agent, str) and agent and agent != "?" and not out.get("agentId"):
        out["agentId"] = agent
    out["parentUuid"] = parent
    out["isSidechain"] = True
    if not isinstance(out.get("uuid"), str):
        out["uuid"] = fallback_uuid
    return out


def call_key(path: str, line: Line, message: dict) -> str:
    """The model call an assistant line belongs to: its requestId, else its message id."""
    for value, name in ((line.record.get("requestId"), "requestId"), (message.get("id"), "message.id")):
        key = optional_string(path, line.prefix + name, value)
        if key:
            return key
    return f"{line.place} ({line.uuid})"


def prompt_usage(usage: Any) -> tuple | None:
    """The prompt side of a line's usage (input, cache-write, cache-read tokens), for telling calls apart."""
    if not isinstance(usage, dict):
        return None
    values = tuple(v if isinstance(v, int) else None for v in (usage.get(k) for k in USAGE_FIELDS[:3]))
    return values if any(v is not None for v in values) else None


def nested_key(record: dict) -> str | None:
    """The call key of an assistant line copied into a progress line: its requestId, else its message id."""
    if record.get("type") != "assistant":
        return None
    message = record.get("message")
    request = record.get("requestId")
    if isinstance(request, str) and request:
        return request
    msg_id = message.get("id") if isinstance(message, dict) else None
    return msg_id if isinstance(msg_id, str) and msg_id else None


def place_text(path: str, line: Line, key: str) -> str | None:
    """A line's ``cwd`` or ``gitBranch`` (where the agent worked), None when it is not recorded."""
    value = line.record.get(key)
    if value is None or value == "":
        return None
    return string(path, line.prefix + key, value)
