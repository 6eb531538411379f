"""Hermes Agent sessions: its SQLite store ``state.db``.

Where: ``$HERMES_HOME/state.db``, else ``~/.hermes/state.db`` (below the user's folder on Linux,
macOS and Windows), and each named profile's ``~/.hermes/profiles/<profile>/state.db``. Checked
against NousResearch/hermes-agent's ``hermes_state.py`` and ``hermes_state_common.py``
(``SCHEMA_SQL``); ccusage's and codeburn's Hermes readers read the same columns.

* ``sessions``: ``id``, ``source``, ``model``, ``system_prompt`` (or ``system_prompt_hash`` into
  ``system_prompts``), ``parent_session_id`` (a compression or sub-agent continuation),
  ``started_at`` (seconds), ``cwd``, and the session's sums: ``input_tokens``, ``output_tokens``,
  ``cache_read_tokens``, ``cache_write_tokens``, ``reasoning_tokens``, ``api_call_count``,
  ``estimated_cost_usd``, ``actual_cost_usd``;
* ``messages``: ``id``, ``session_id``, ``role`` (``system``, ``user``, ``assistant``, ``tool``),
  ``content``, ``tool_calls`` (the OpenAI JSON list), ``tool_call_id``, ``reasoning``/
  ``reasoning_content``, ``timestamp``, and in newer stores ``active`` (0: rewound away).

**Calls.** The newest root session (no ``parent_session_id``) is profiled; the store's others are named
in ``other-sessions``. Each assistant message is a call; its prompt is the session's system prompt,
then every message before it, in the order written (messages a rewind made inactive were sent before
it: they are kept, ``rewound``).

**Usage.** Hermes keeps no usage per call, only the session's sums, shown as they are in the note
``session-totals`` (the calls' usage is "not recorded", never 0). Tool definitions are not stored
(``unrecorded``: tools).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from tokprof.base.errors import InputError
from tokprof.formats import agent_db
from tokprof.formats.conversation import Conversation
from tokprof.formats.fields import check_text, expect_list
from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import Location
from tokprof.formats.reader import LogFormat
from tokprof.trace import Trace

if TYPE_CHECKING:
    import sqlite3

FORMAT = "hermes"
DESCRIPTION = "Hermes Agent sessions (~/.hermes/state.db, SQLite): the newest session"
AGENT = "Hermes Agent"

SESSION_COLUMNS = ("id", "started_at")
MESSAGE_COLUMNS = ("id", "session_id", "role", "content", "tool_calls", "tool_call_id", "timestamp")
TOTALS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "api_call_count",
)
COSTS = ("actual_cost_usd", "estimated_cost_usd")

SESSION_TOTALS = (
    "Hermes records no usage per call, only the session's sums (sessions.input_tokens, ...), shown as Hermes "
    "stored them: the calls' usage is not recorded"
)
OTHER_SESSIONS = "the store holds other sessions: the newest root session is profiled"
REWOUND = "messages a rewind made inactive were sent before it: they stay in the prompts of the calls before"
LOG_COST = "the cost Hermes itself recorded for the session"


def sniff(doc: Document) -> bool:
    return False  # a store, not JSON: recognised by :func:`is_store`


def is_store(path: str) -> bool:
    tables = agent_db.tables(path)
    sessions, messages = tables.get("sessions", set()), tables.get("messages", set())
    return {"started_at", "input_tokens"} <= sessions and {"tool_calls", "tool_call_id", "timestamp"} <= messages


class HermesReader(agent_db.StoreFold):
    """Hermes Agent's store read as a fold over the newest root session's message rows: each call given
    as its row is read."""

    format = FORMAT
    agent = "Hermes Agent"
    not_store = "expected Hermes Agent's state.db (SQLite)"

    def read(self, db: "sqlite3.Connection") -> Iterator[None]:
        path, trace = self.trace.path, self.trace
        found = agent_db.require(path, db, "sessions", SESSION_COLUMNS, AGENT)
        message_columns = agent_db.require(path, db, "messages", MESSAGE_COLUMNS, AGENT)
        root = "parent_session_id IS NULL" if "parent_session_id" in found else "1"
        rows = db.execute(f"SELECT id FROM sessions WHERE {root} ORDER BY started_at DESC, id DESC").fetchall()
        if not rows:
            raise InputError(path, "sessions", "no session in the database")
        session_id = str(rows[0][0])
        wanted = [c for c in ("model", "cwd", "system_prompt", "system_prompt_hash", *TOTALS, *COSTS) if c in found]
        row = db.execute(f"SELECT {', '.join(wanted) or 'id'} FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise InputError(path, "sessions", f"no session {session_id!r}")
        session = dict(zip(wanted, row))
        where = f"session {session_id}"
        system = _system_prompt(path, db, where, session)
        trace.unrecorded = ("tools",) if system is not None else ("system", "tools")
        trace.session = session_id
        cwd = session.get("cwd")
        self.cwd = cwd if isinstance(cwd, str) else None
        model = session.get("model") if isinstance(session.get("model"), str) else None
        chat = Conversation(trace, self.made)
        if system is not None:
            chat.add({"role": "system", "content": system}, where + ": system_prompt")
        reasoning = "reasoning_content" if "reasoning_content" in message_columns else "NULL"
        active = "active" if "active" in message_columns else "1"
        query = (
            f"SELECT id, role, content, tool_calls, tool_call_id, timestamp, {reasoning}, {active} FROM messages "
            "WHERE session_id = ? ORDER BY id"
        )
        for message_id, role, content, tool_calls, call_id, time, thought, live in db.execute(query, (session_id,)):
            at = f"message {message_id}"
            if live == 0:
                trace.note("rewound", REWOUND, at)
            _message(chat, path, at, role, content, tool_calls, call_id, time, thought, model)
            yield
        if not self.made.count:
            raise InputError(path, where, "no model call (assistant message) in the session")
        _totals(trace, path, where, session)
        if len(rows) > 1:
            trace.note("other-sessions", OTHER_SESSIONS, f"{len(rows) - 1} other root session(s)")


def _system_prompt(path: str, db: "sqlite3.Connection", where: str, session: dict) -> str | None:
    prompt = session.get("system_prompt")
    digest = session.get("system_prompt_hash")
    if prompt is None and isinstance(digest, str) and "prompt" in agent_db.columns(db, "system_prompts"):
        found = db.execute("SELECT prompt FROM system_prompts WHERE hash = ?", (digest,)).fetchone()
        prompt = found[0] if found else None
    if prompt is None or prompt == "":
        return None
    if not isinstance(prompt, str):
        raise InputError(path, where + ": system_prompt", "expected text")
    return check_text(path, where + ": system_prompt", prompt)


def _text(path: str, where: str, value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        raise InputError(path, where, "expected text")
    return check_text(path, where, value)


def _message(
    chat: Conversation,
    path: str,
    at: str,
    role: Any,
    content: Any,
    tool_calls: Any,
    call_id: Any,
    time: Any,
    thought: Any,
    model: str | None,
) -> None:
    text = _text(path, at + ": content", content)
    if role in ("user", "system"):
        chat.add({"role": role, "content": text or ""}, at)
    elif role == "tool":
        tool_id = _text(path, at + ": tool_call_id", call_id)
        if tool_id is None:
            raise InputError(path, at + ": tool_call_id", "missing: expected the id of the tool call")
        chat.add({"role": "tool", "tool_call_id": tool_id, "content": text or ""}, at)
    elif role == "assistant":
        response: dict[str, Any] = {"role": "assistant", "content": text}
        if tool_calls is not None and tool_calls != "":
            calls = expect_list(path, at + ": tool_calls", agent_db.json_column(path, at + ": tool_calls", tool_calls))
            if calls:
                response["tool_calls"] = [_tool_call(call) for call in calls]
        reasoning = _text(path, at + ": reasoning_content", thought)
        if reasoning:
            response["reasoning_content"] = reasoning
        clean = chat.check(response, at)
        chat.call(at, model, None, clean, _time(time))
        chat.messages.append(clean)
    else:
        raise InputError(path, at + ": role", f"expected system, user, assistant or tool, found {role!r}")


def _tool_call(call: Any) -> Any:
    """A tool call as Hermes stores it (OpenAI's shape), its arguments as JSON text."""
    if isinstance(call, dict) and isinstance(call.get("function"), dict):
        function = call["function"]
        arguments = function.get("arguments")
        if isinstance(arguments, (dict, list)):
            call = {**call, "function": {**function, "arguments": json.dumps(arguments, ensure_ascii=False)}}
        call.setdefault("type", "function")
    return call  # checked as any tool call is


def _totals(trace: Trace, path: str, where: str, session: dict) -> None:
    counts = {name: agent_db.count_column(path, f"{where}: {name}", session.get(name)) for name in TOTALS}
    shown = [f"{name} {value:,}" for name, value in counts.items() if value is not None]
    if shown:
        trace.note("session-totals", SESSION_TOTALS, f"{where}: " + ", ".join(shown))
    for name in COSTS:
        cost = session.get(name)
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and 0 < cost < 1e9:
            trace.note("log-cost", LOG_COST, f"{name} {cost:.6f} USD")
            break


def _time(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e11:
        return None
    return datetime.fromtimestamp(value, timezone.utc)


LOCATIONS = (
    Location("hermes", ".hermes", ("state.db",), env="HERMES_HOME", project_depth=0),
    Location("hermes", ".hermes", ("profiles/*/state.db",), env="HERMES_HOME", project_depth=1),
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    HermesReader,
    sessions=True,
    opens=is_store,
    locations=LOCATIONS,
    records_what="messages, the system prompt and the session's token sums; no usage per call, no tools",
)
