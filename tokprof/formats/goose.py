"""Goose sessions: its SQLite store ``sessions.db``.

Where (block/goose's ``Paths::data_dir()/sessions/sessions.db``; ccusage's and codeburn's Goose
readers look in the same places): ``~/.local/share/goose/sessions/sessions.db`` (Linux, and
``$XDG_DATA_HOME/goose/...``), ``~/Library/Application Support/goose/sessions/sessions.db`` (macOS),
``~/AppData/Roaming/Block/goose/data/sessions/sessions.db`` (Windows), and
``$GOOSE_PATH_ROOT/data/sessions/sessions.db`` when that variable is set.

Checked against block/goose's ``crates/goose/src/session/session_manager.rs`` (the schema) and
``crates/goose/src/conversation/message.rs`` (a message's JSON):

* ``sessions``: ``id``, ``working_dir``, ``created_at``, ``session_type`` (``user``,
  ``sub_agent``, ``scheduled``, ``hidden``), ``input_tokens``/``output_tokens``/``total_tokens`` (the
  latest call's) and ``accumulated_input_tokens``/``accumulated_output_tokens``/
  ``accumulated_total_tokens`` (the session's sums), and in newer versions ``model_config_json``
  (``model_name``) and ``provider_name``;
* ``messages``: ``id``, ``session_id``, ``role`` (``user``, ``assistant``), ``content_json`` (a list of
  ``{type, ...}`` items: ``text``, ``image``, ``toolRequest`` ``{id, toolCall: {status, value: {name,
  arguments}}}``, ``toolResponse`` ``{id, toolResult: {status, value}}``, ``thinking``,
  ``redactedThinking``, and items the agent shows but does not send), ``created_timestamp`` (seconds)
  and ``metadata_json`` (``{userVisible, agentVisible}``: a message that is not agent-visible is not
  sent).

**Calls.** The newest user session is profiled (the store's others are named in ``other-sessions``).
Each assistant message is a call; its prompt is the agent-visible messages before it.

**Usage.** Goose keeps no usage per call: only the session's accumulated input and output tokens, shown
as they are in the note ``session-totals`` (calls' usage is "not recorded", never 0). The system prompt
and tool definitions are not stored (``unrecorded``).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from tokprof.base.errors import InputError
from tokprof.formats import agent_db
from tokprof.formats.conversation import Conversation, tool_text
from tokprof.formats.fields import expect_object, objects, optional_object, string
from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import Location
from tokprof.formats.reader import LogFormat
from tokprof.trace import Trace

if TYPE_CHECKING:
    import sqlite3

FORMAT = "goose"
DESCRIPTION = "Goose sessions (sessions.db, SQLite): the newest session"
AGENT = "Goose"

SESSION_COLUMNS = ("id", "working_dir", "created_at")
MESSAGE_COLUMNS = ("id", "session_id", "role", "content_json", "created_timestamp")
TOTALS = ("accumulated_input_tokens", "accumulated_output_tokens", "accumulated_total_tokens")
SKIPPED_KINDS = ("toolConfirmationRequest", "actionRequired", "frontendToolRequest", "systemNotification")

SESSION_TOTALS = (
    "Goose records no usage per call, only the session's accumulated tokens (sessions.accumulated_*), "
    "shown as Goose stored them: the calls' usage is not recorded"
)
OTHER_SESSIONS = "the store holds other sessions: the newest user session is profiled"
HIDDEN = "messages Goose keeps but does not send to the model (agentVisible false) are left out"
NOT_SENT = "items Goose shows but does not send (confirmations, notifications) are left out"
FAILED_TOOL_CALL = "a tool request Goose could not parse (toolCall status error) is kept as its error text"


def sniff(doc: Document) -> bool:
    return False  # a store, not JSON: recognised by :func:`is_store`


def is_store(path: str) -> bool:
    tables = agent_db.tables(path)
    return "content_json" in tables.get("messages", set()) and "working_dir" in tables.get("sessions", set())


class GooseReader(agent_db.StoreFold):
    """Goose's store read as a fold over the newest session's message rows: each call given as its row
    is read."""

    format = FORMAT
    agent = "Goose"
    not_store = "expected Goose's sessions.db (SQLite)"

    def read(self, db: "sqlite3.Connection") -> Iterator[None]:
        path, trace = self.trace.path, self.trace
        found = agent_db.require(path, db, "sessions", SESSION_COLUMNS, AGENT)
        agent_db.require(path, db, "messages", MESSAGE_COLUMNS, AGENT)
        kind = "session_type" if "session_type" in found else "'user'"
        rows = db.execute(
            f"SELECT id FROM sessions WHERE {kind} IN ('user', 'scheduled') ORDER BY created_at DESC, id DESC"
        ).fetchall()
        if not rows:
            raise InputError(path, "sessions", "no session in the database")
        session_id = str(rows[0][0])
        wanted = ["working_dir", *(c for c in (*TOTALS, "model_config_json") if c in found)]
        row = db.execute(f"SELECT {', '.join(wanted)} FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise InputError(path, "sessions", f"no session {session_id!r}")
        session = dict(zip(wanted, row))
        trace.session = session_id
        cwd = session.get("working_dir")
        self.cwd = cwd if isinstance(cwd, str) else None
        model = _model(path, f"session {session_id}: model_config_json", session.get("model_config_json"))
        metadata = "metadata_json" if "metadata_json" in agent_db.columns(db, "messages") else "NULL"
        chat = Conversation(trace, self.made)
        query = (
            f"SELECT id, role, content_json, created_timestamp, {metadata} FROM messages WHERE session_id = ? "
            "ORDER BY id"
        )
        for message_id, role, content, created, meta in db.execute(query, (session_id,)):
            _message(chat, path, f"message {message_id}", role, content, created, meta, model)
            yield
        if not self.made.count:
            raise InputError(path, f"session {session_id}", "no model call (assistant message) in the session")
        _totals(trace, path, session_id, session)
        if len(rows) > 1:
            trace.note("other-sessions", OTHER_SESSIONS, f"{len(rows) - 1} other session(s)")


def _model(path: str, where: str, config: Any) -> str | None:
    if config is None or config == "":
        return None
    value = agent_db.json_object_column(path, where, config)
    name = value.get("model_name")
    return string(path, where + ".model_name", name) if name is not None else None


def _totals(trace: Trace, path: str, session_id: str, session: dict) -> None:
    counts = {
        name: agent_db.count_column(path, f"session {session_id}: {name}", session.get(name))
        for name in TOTALS
        if name in session
    }
    shown = [f"{name.removeprefix('accumulated_')} {value:,}" for name, value in counts.items() if value is not None]
    if shown:
        trace.note("session-totals", SESSION_TOTALS, f"session {session_id}: " + ", ".join(shown))


def _message(
    chat: Conversation, path: str, where: str, role: Any, content: Any, created: Any, meta: Any, model: str | None
) -> None:
    if meta is not None and meta != "":
        flags = agent_db.json_object_column(path, where + ": metadata_json", meta)
        if flags.get("agentVisible") is False:
            chat.trace.note("not-agent-visible", HIDDEN, where)
            return
    items = objects(path, where + ": content_json", agent_db.json_column(path, where + ": content_json", content))
    if role == "assistant":
        _assistant(chat, path, where, items, created, model)
    elif role == "user":
        _user(chat, path, where, items)
    else:
        raise InputError(path, where + ": role", f"expected user or assistant, found {role!r}")


def _user(chat: Conversation, path: str, where: str, items: list[tuple[str, dict]]) -> None:
    texts = []
    for at, item in items:
        kind = item.get("type")
        if kind == "text":
            texts.append(string(path, at + ".text", item.get("text")))
        elif kind == "toolResponse":
            call_id = string(path, at + ".id", item.get("id"))
            chat.add({"role": "tool", "tool_call_id": call_id, "content": _result(path, at, item)}, where)
        elif kind in SKIPPED_KINDS:
            chat.trace.note("not-sent", NOT_SENT, at)
        else:
            chat._skip(at, str(kind))
    if texts:
        chat.add({"role": "user", "content": "\n".join(texts)}, where)


def _result(path: str, at: str, item: dict) -> str:
    result = expect_object(path, at + ".toolResult", item.get("toolResult"))
    if result.get("status") == "error":
        return string(path, at + ".toolResult.error", result.get("error"))
    value = result.get("value")
    if isinstance(value, dict):  # a CallToolResult: {content: [...], isError}
        value = value.get("content", [])
    texts = []
    for place, part in objects(path, at + ".toolResult.value", value, "a content object"):
        if part.get("type") == "text":
            texts.append(string(path, place + ".text", part.get("text")))
        elif part.get("type") == "resource" and isinstance(part.get("resource"), dict):
            texts.append(tool_text(part["resource"].get("text", "")))
    return "\n".join(texts)


def _assistant(
    chat: Conversation, path: str, where: str, items: list[tuple[str, dict]], created: Any, model: str | None
) -> None:
    texts, thoughts, calls = [], [], []
    for at, item in items:
        kind = item.get("type")
        if kind == "text":
            texts.append(string(path, at + ".text", item.get("text")))
        elif kind == "thinking":
            thoughts.append(string(path, at + ".thinking", item.get("thinking")))
        elif kind == "toolRequest":
            call_id = string(path, at + ".id", item.get("id"))
            request = expect_object(path, at + ".toolCall", item.get("toolCall"))
            if request.get("status") == "error":
                chat.trace.note("failed-tool-call", FAILED_TOOL_CALL, at)
                texts.append(string(path, at + ".toolCall.error", request.get("error")))
                continue
            value = expect_object(path, at + ".toolCall.value", request.get("value"))
            name = string(path, at + ".toolCall.value.name", value.get("name"))
            arguments = optional_object(path, at + ".toolCall.value.arguments", value.get("arguments")) or {}
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
                }
            )
        elif kind in SKIPPED_KINDS:
            chat.trace.note("not-sent", NOT_SENT, at)
        else:
            chat._skip(at, str(kind))
    response: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) if texts else None}
    if thoughts:
        response["reasoning_content"] = "\n".join(thoughts)
    if calls:
        response["tool_calls"] = calls
    clean = chat.check(response, where)
    chat.call(where, model, None, clean, _time(created))
    chat.messages.append(clean)


def _time(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e11:
        return None
    return datetime.fromtimestamp(value, timezone.utc)


#: block/goose's data folder on each system (its ``Paths``, through the ``etcetera`` crate's app strategy).
LOCATIONS = (
    Location(
        "goose",
        ".local/share/goose/sessions",
        ("sessions.db",),
        env="GOOSE_PATH_ROOT",
        below_env="data/sessions",
        project_depth=0,
    ),
    Location("goose", "Library/Application Support/goose/sessions", ("sessions.db",), project_depth=0),
    Location("goose", "AppData/Roaming/Block/goose/data/sessions", ("sessions.db",), project_depth=0),
    Location("goose", "AppData/Roaming/Block/goose/sessions", ("sessions.db",), project_depth=0),
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    GooseReader,
    sessions=True,
    opens=is_store,
    locations=LOCATIONS,
    records_what="messages and the session's accumulated tokens; no usage per call, no system prompt or tools",
)
