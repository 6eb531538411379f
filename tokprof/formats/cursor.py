"""Cursor's agent conversations (composers): its global store ``state.vscdb``.

Where: ``<Cursor's user folder>/globalStorage/state.vscdb``, the user folder being
``~/.config/Cursor/User`` (Linux), ``~/Library/Application Support/Cursor/User`` (macOS) and
``~/AppData/Roaming/Cursor/User`` (Windows' ``%APPDATA%``). Cursor is closed source: the shapes are
those codeburn's (``providers/cursor.ts``) and agentsview's (``parser/cursor.go``) Cursor readers read
from real stores.

* Table ``cursorDiskKV(key, value)``: ``composerData:<composerId>`` holds a conversation's
  ``{composerId, name, createdAt, lastUpdatedAt, fullConversationHeadersOnly: [{bubbleId, type}]}``
  (older builds keep the bubbles inline in ``conversation``); ``bubbleId:<composerId>:<bubbleId>``
  holds one bubble: ``{type: 1 (user) | 2 (AI), text, createdAt, tokenCount: {inputTokens,
  outputTokens}, modelInfo: {modelName}, thinking: {text}, toolFormerData: {toolCallId, name,
  rawArgs, result}, requestId}``.

**Calls.** The newest conversation is profiled (the store's others are named in ``other-composers``).
Cursor records bubbles, not requests: each AI bubble is a call here (``bubbles-not-requests``), its
prompt the conversation's bubbles before it (a tool bubble's result follows its call as a tool
message).

**Usage**, as far as Cursor records it: an AI bubble's ``tokenCount`` (``prompt`` = ``inputTokens``,
``output`` = ``outputTokens``; the cache is not recorded). Current builds leave it at 0 and 0: such a
call's usage is "not recorded" (``no-usage``), never 0. Cursor does not store the context it sends
(system prompt, tool definitions, retrieved code): ``unrecorded``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from tokprof.base.errors import InputError
from tokprof.formats import agent_db
from tokprof.formats.conversation import Conversation, tool_text
from tokprof.formats.fields import objects, optional_object, string
from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import Location
from tokprof.formats.neutral import assistant_message, check_count, optional_text, parse_time
from tokprof.formats.reader import LogFormat
from tokprof.trace import Usage

if TYPE_CHECKING:
    import sqlite3

FORMAT = "cursor"
DESCRIPTION = "Cursor conversations (User/globalStorage/state.vscdb, SQLite): the newest conversation"
AGENT = "Cursor"
USER, AI = 1, 2

BUBBLES = "Cursor records bubbles, not requests: each AI bubble is a call here"
NO_USAGE = "AI bubbles whose tokenCount is absent or 0 and 0 (current builds): their usage is not recorded"
OTHER = "the store holds other conversations: the newest is profiled"


def sniff(doc: Document) -> bool:
    return False  # a store, not JSON: recognised by :func:`is_store`


def is_store(path: str) -> bool:
    return {"key", "value"} <= agent_db.tables(path).get("cursorDiskKV", set())


def _row(path: str, where: str, value: Any) -> dict:
    return agent_db.json_object_column(path, where, value)


class CursorReader(agent_db.StoreFold):
    """Cursor's store read as a fold over the newest conversation's bubbles (rows of its own, or inline in
    older builds): each call given as its bubble is read."""

    format = FORMAT
    agent = "Cursor"
    not_store = "expected Cursor's state.vscdb (SQLite)"

    def read(self, db: "sqlite3.Connection") -> Iterator[None]:
        path, trace = self.trace.path, self.trace
        agent_db.require(path, db, "cursorDiskKV", ("key", "value"), AGENT)
        # the conversations' times and sizes, read without parsing their (large) values in Python
        rows = db.execute(
            "SELECT key, CASE WHEN json_valid(value) THEN coalesce(json_extract(value, '$.lastUpdatedAt'),"
            " json_extract(value, '$.createdAt'), 0) END, CASE WHEN json_valid(value) THEN"
            " coalesce(json_array_length(value, '$.fullConversationHeadersOnly'), 0)"
            " + coalesce(json_array_length(value, '$.conversation'), 0) END"
            " FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;'"
        ).fetchall()
        composers = [
            (stamp if isinstance(stamp, (int, float)) else 0, str(key))
            for key, stamp, size in rows
            if size != 0  # an empty conversation (a new tab); an invalid one (None) is read to say what is wrong
        ]
        if not composers:
            raise InputError(path, "cursorDiskKV", "no conversation in the database")
        composers.sort(reverse=True)
        key = composers[0][1]
        found = db.execute("SELECT value FROM cursorDiskKV WHERE key = ?", (key,)).fetchone()
        if found is None:
            raise InputError(path, "cursorDiskKV", f"no conversation {key!r}")
        data = _row(path, key, found[0])
        conversation = key.removeprefix("composerData:")
        trace.session = conversation
        trace.note("bubbles-not-requests", BUBBLES)
        chat = Conversation(trace, self.made)
        for where, bubble in _bubbles(path, db, conversation, key, data):
            _bubble(chat, path, where, bubble)
            yield
        if not self.made.count:
            raise InputError(path, key, "no model call (AI bubble) in the conversation")
        if len(composers) > 1:
            trace.note("other-composers", OTHER, f"{len(composers) - 1} other conversation(s)")


def _bubbles(
    path: str, db: "sqlite3.Connection", conversation: str, key: str, data: dict
) -> Iterator[tuple[str, dict]]:
    """The conversation's bubbles in order: inline (older builds) or by its headers' ids, each row read
    (by its key) when its turn comes."""
    if isinstance(data.get("conversation"), list) and data["conversation"]:
        yield from objects(path, key + ": conversation", data["conversation"], "a bubble object")
        return
    prefix = f"bubbleId:{conversation}:"
    for at, header in objects(
        path, key + ": fullConversationHeadersOnly", data["fullConversationHeadersOnly"], "a header"
    ):
        bubble_id = string(path, at + ".bubbleId", header.get("bubbleId"))
        row = db.execute("SELECT key, value FROM cursorDiskKV WHERE key = ?", (prefix + bubble_id,)).fetchone()
        if row is not None:
            yield str(row[0]), _row(path, str(row[0]), row[1])


def _bubble(chat: Conversation, path: str, where: str, bubble: dict) -> None:
    kind = bubble.get("type")
    text = bubble.get("text") or ""
    text = string(path, where + ".text", text)
    if kind == USER:
        chat.add({"role": "user", "content": text}, where)
        return
    if kind != AI:
        raise InputError(path, where + ".type", f"expected 1 (user) or 2 (AI), found {kind!r}")
    thoughts = []
    thinking = optional_object(path, where + ".thinking", bubble.get("thinking"))
    if thinking is not None and isinstance(thinking.get("text"), str) and thinking["text"]:
        thoughts.append(string(path, where + ".thinking.text", thinking["text"]))
    calls, results = [], []
    tool = optional_object(path, where + ".toolFormerData", bubble.get("toolFormerData"))
    if tool is not None and tool.get("name") is not None:
        call_id = string(path, where + ".toolFormerData.toolCallId", tool.get("toolCallId"))
        name = string(path, where + ".toolFormerData.name", tool.get("name"))
        arguments = tool.get("rawArgs", tool.get("params", "{}"))
        arguments = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
        result = tool.get("result")
        results.append({"role": "tool", "tool_call_id": call_id, "content": tool_text(result) if result else ""})
    clean = chat.check(assistant_message([text] if text else [], thoughts, calls), where)
    model_info = optional_object(path, where + ".modelInfo", bubble.get("modelInfo")) or {}
    model = optional_text(path, where + ".modelInfo.modelName", model_info.get("modelName"))
    usage = _usage(path, where + ".tokenCount", bubble.get("tokenCount"))
    if usage is None:
        chat.trace.note("no-usage", NO_USAGE, where)
    request = bubble.get("requestId")
    chat.call(
        where,
        model,
        usage,
        clean,
        parse_time(bubble.get("createdAt")),
        request_id=request if isinstance(request, str) else None,
    )
    chat.messages.append(clean)
    for result in results:
        chat.add(result, where)


def _usage(path: str, where: str, count: Any) -> Usage | None:
    count = optional_object(path, where, count)
    if count is None:
        return None
    prompt = check_count(path, where + ".inputTokens", count.get("inputTokens"))
    output = check_count(path, where + ".outputTokens", count.get("outputTokens"))
    if not prompt and not output:
        return None  # 0 and 0: not recorded (current builds), not a free call
    return Usage(prompt=prompt, output=output)


STORE = "globalStorage/state.vscdb"

LOCATIONS = tuple(
    Location("cursor", folder, (STORE,), project_depth=0)
    for folder in (".config/Cursor/User", "Library/Application Support/Cursor/User", "AppData/Roaming/Cursor/User")
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    CursorReader,
    sessions=True,
    opens=is_store,
    locations=LOCATIONS,
    records_what="bubbles, with tokenCount where Cursor filled it in (older builds); no context, system prompt or tools",
)
