"""Crush sessions: a project's ``.crush/crush.db`` (SQLite), the projects listed in Crush's
``projects.json``.

Crush (charmbracelet/crush) keeps each project's sessions in ``<project>/.crush/crush.db``
(``options.data_directory``), and lists the projects it has run in ``projects.json`` (``{projects:
[{path, data_dir, last_accessed}]}``) in its data folder: ``~/.local/share/crush/`` on Linux and macOS,
``%LOCALAPPDATA%\\crush\\`` on Windows, ``$XDG_DATA_HOME/crush``, or ``$CRUSH_GLOBAL_DATA``. Checked
against Crush's ``internal/db/migrations`` (tables ``sessions`` and ``messages``), ``internal/message``
(the parts' JSON), ``internal/projects`` and the agent's usage tracking, and against ``crush.db``
files committed in public repositories.

* ``sessions``: ``id``, ``parent_session_id`` (a sub-agent's task session names its parent),
  ``title``, ``prompt_tokens``, ``completion_tokens``, ``cost``, ``summary_message_id``,
  ``created_at``;
* ``messages``: ``session_id``, ``role`` (``user``, ``assistant``, ``tool``), ``parts`` (JSON:
  ``[{type, data}]`` with ``text{text}``, ``reasoning{thinking}``, ``tool_call{id, name, input}``,
  ``tool_result{tool_call_id, content, is_error}``, ``finish{reason, time}``, ``image_url``,
  ``binary``), ``model``, ``created_at``.

**Calls.** The newest main session (no ``parent_session_id``) is profiled, its task sessions as
threads; the store's other sessions are named in the note ``other-sessions``. Each assistant message is
one model call, made on the session's messages before it; the session's summary message
(``summary_message_id``) is the compaction call, and later prompts start from it, sent as user text, as
Crush does.

**Usage: none per call.** Crush stores no usage on its messages: every call's usage is **not
recorded** (never 0), and the prompts here are computed from the messages (estimates). Crush's own
figures for the session are shown as they are, in the note ``session-figures``: ``prompt_tokens`` and
``completion_tokens`` are its **last** call's (what its context gauge shows; which cache tokens
``prompt_tokens`` holds changed between Crush versions), and ``cost`` is the session's cost as Crush
added it up from its own price catalogue (0 for free and flat-rate models). The system prompt and the
tool definitions are not stored.

The store is read read-only (a ``mode=ro`` URI), never changed; one the running agent holds locked is
read from a copy of it and its write-ahead log.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import tokprof.base.bounded as bounded
from tokprof.base.errors import InputError
from tokprof.formats.conversation import Conversation
from tokprof.formats.folds import TimeOrder
from tokprof.formats.fields import check_text, expect_list, expect_object, string
from tokprof.formats import agent_db
from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import Location
from tokprof.formats.neutral import parse_time
from tokprof.formats.reader import LogFormat
from tokprof.trace import Call, Trace

if TYPE_CHECKING:
    import sqlite3

FORMAT = "crush"
DESCRIPTION = "Crush sessions (a project's .crush/crush.db, SQLite)"

FILE_NAME = "crush.db"
FIGURES = (
    "Crush's own figures for the session, as it stores them: prompt_tokens and completion_tokens are its last "
    "call's (not the session's totals), cost is what Crush added up from its own price catalogue; every call's "
    "usage is not recorded, and the billed input here is computed from the messages"
)
OTHER = "the store holds other sessions: the newest main session is profiled"
NOT_TEXT = "message parts that are not text (images, files) were left out of the prompt"


def opens(path: str) -> bool:
    """A SQLite file with Crush's ``sessions`` (with ``summary_message_id`` or ``message_count``),
    ``messages`` (with ``parts``) and ``files`` tables."""
    tables = agent_db.tables(path)
    return (
        "parts" in tables.get("messages", set())
        and "files" in tables
        and "message_count" in tables.get("sessions", set())
    )


def sniff(doc: Document) -> bool:
    return False  # a SQLite file, never JSON: found by opens()


class _Session:
    """One session's messages, read into calls."""

    def __init__(self, trace: Trace, session_id: str, thread: str, summary: str | None, order: TimeOrder) -> None:
        self.trace = trace  # the session's own notes: added to the log's in session order at the end
        self.id = session_id
        self.thread = thread
        self.summary = summary
        self.order = order
        order.thread(thread)
        self.chat = Conversation(trace, order)
        self.rows: Iterator[tuple] = iter(())  # its message rows still to read
        self.next: tuple | None = None

    def message(self, where: str, role: Any, parts: list, model: Any, time: Any, message_id: str) -> None:
        path = self.trace.path
        texts, thoughts, calls, results = [], [], [], []
        for i, part in enumerate(parts):
            at = f"{where}: parts[{i}]"
            part = expect_object(path, at, part, "a part object")
            kind = part.get("type")
            data = expect_object(path, at + ".data", part.get("data"))
            if kind == "text":
                texts.append(string(path, at + ".data.text", data.get("text")))
            elif kind == "reasoning":
                thoughts.append(string(path, at + ".data.thinking", data.get("thinking")))
            elif kind == "tool_call":
                arguments = data.get("input", "")
                calls.append(
                    {
                        "id": string(path, at + ".data.id", data.get("id")),
                        "type": "function",
                        "function": {
                            "name": string(path, at + ".data.name", data.get("name")),
                            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                        },
                    }
                )
            elif kind == "tool_result":
                call_id = string(path, at + ".data.tool_call_id", data.get("tool_call_id"))
                content = string(path, at + ".data.content", data.get("content", ""))
                results.append({"role": "tool", "tool_call_id": call_id, "content": check_text(path, at, content)})
            elif kind in ("image_url", "binary"):
                self.trace.note("content-not-text", NOT_TEXT, at)
        if message_id == self.summary:  # the summarising call; later prompts start from its summary, as user text
            self.trace.compactions += 1
            clean = self.chat.check({"role": "assistant", "content": "\n".join(texts) or None}, where)
            name = model if isinstance(model, str) and model else None
            call = self.chat.call(where, name, None, clean, parse_time(time), kind="compaction", request_id=message_id)
            if call is not None:
                call.thread = self.thread
                self.order.place(self.thread, call)
            self.chat.replace([])
            if texts:
                self.chat.add({"role": "user", "content": "\n".join(texts)}, where)
            return
        if role == "assistant":
            message: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) or None}
            if thoughts:
                message["reasoning_content"] = "\n".join(thoughts)
            if calls:
                message["tool_calls"] = calls
            clean = self.chat.check(message, where)
            name = model if isinstance(model, str) and model else None
            call = self.chat.call(where, name, None, clean, parse_time(time), request_id=message_id)
            if call is not None:
                call.thread = self.thread
                self.order.place(self.thread, call)
            self.chat.messages.append(clean)
        elif role == "tool":
            for result in results:
                self.chat.add(result, where)
        elif role in ("user", "system"):
            if texts:
                self.chat.add({"role": role, "content": "\n".join(texts)}, where)
        else:
            raise InputError(path, where + ": role", f"unknown role {role!r}")


class CrushReader(agent_db.StoreFold):
    """A Crush store read as a fold over its message rows: the main session's and its task sessions' rows
    read along with each other in time order, each session's calls given in time order once no row still
    to read can come before them. Each session's notes are kept apart and added in session order at the
    end, as a whole read lists them."""

    format = FORMAT
    agent = "Crush"
    not_store = "expected a Crush store (crush.db, SQLite), not JSON"

    def __init__(self, path: str, doc: Document | None) -> None:
        super().__init__(path, doc)
        self.made = self.order = TimeOrder()
        self.before: tuple | None = None  # the key no row still to read comes before

    def read(self, db: "sqlite3.Connection") -> Iterator[None]:
        import sqlite3

        try:
            yield from self._rows(db)
        except sqlite3.Error as exc:
            raise InputError(self.trace.path, None, f"not a Crush store this reader knows ({exc})") from None

    def _rows(self, db: "sqlite3.Connection") -> Iterator[None]:
        path, trace = self.trace.path, self.trace
        columns = agent_db.columns(db, "sessions")
        summary = "summary_message_id" if "summary_message_id" in columns else "NULL"
        rows = db.execute(
            "SELECT id, parent_session_id, title, prompt_tokens, completion_tokens, cost, created_at, "
            f"{summary} FROM sessions ORDER BY created_at, id"
        ).fetchall()
        mains = [row for row in rows if not row[1]]
        if not mains:
            raise InputError(path, None, "the store holds no session")
        main = mains[-1]
        trace.session = str(main[0])
        if len(mains) > 1:
            trace.note("other-sessions", OTHER, ", ".join(f"{row[0]} ({row[2]})" for row in mains[:-1]))
        project = Path(path).resolve().parent
        self.cwd = str(project.parent) if project.name == ".crush" else str(project)
        family = [main] + [row for row in rows if row[1] == main[0]]
        sessions = []
        for row in family:
            where = f"session {row[0]}"
            for index, name in ((3, "prompt_tokens"), (4, "completion_tokens")):
                if not isinstance(row[index], int) or isinstance(row[index], bool) or row[index] < 0:
                    raise InputError(path, f"{where}: {name}", f"expected a non-negative integer, found {row[index]!r}")
            if not isinstance(row[5], (int, float)) or row[5] < 0:
                raise InputError(path, f"{where}: cost", f"expected a non-negative number, found {row[5]!r}")
            thread = "" if row is main else str(row[2] or row[0])
            notes = Trace(path=path, format=FORMAT)
            session = _Session(notes, str(row[0]), thread, row[7], self.order)
            sessions.append(session)
            notes.note(
                "session-figures",
                FIGURES,
                f"{row[2] or row[0]}: prompt_tokens {row[3]:,} and completion_tokens {row[4]:,} (last call), "
                f"cost ${row[5]:.4f} (Crush's)",
            )
            session.rows = db.execute(
                "SELECT id, role, parts, model, created_at FROM messages WHERE session_id = ? "
                "ORDER BY created_at, rowid",
                (row[0],),
            )
            session.next = next(session.rows, None)
        while True:
            waiting = [(self._key(s), n) for n, s in enumerate(sessions) if s.next is not None]
            if not waiting:
                break
            session = sessions[min(waiting)[1]]
            assert session.next is not None
            message_id, role, parts, model, created = session.next
            place = f"message {message_id}"
            value = agent_db.json_column(path, place + ": parts", parts)
            session.message(place, role, expect_list(path, place + ": parts", value), model, created, str(message_id))
            session.next = next(session.rows, None)
            ahead = [self._key(s) for s in sessions if s.next is not None]
            self.before = min(ahead) if ahead else None
            yield
        for session in sessions:  # each session's notes, in session order, after the log's own
            trace.compactions += session.trace.compactions
            for note in session.trace.notes:
                if not note.places:
                    trace.note(note.code, note.message)
                for place in note.places:
                    trace.note(note.code, note.message, place)

    def _key(self, session: _Session) -> tuple:
        """The time key of a session's next row: its call's, were it one."""
        assert session.next is not None
        time = parse_time(session.next[4])
        return (1, time) if time is not None else self.order.carried[self.order.threads[session.thread]]

    def ready(self) -> list[Call]:
        return self.order.take(self.before) if self.before is not None else []

    def rest(self) -> list[Call]:
        return self.order.rest()


def project_stores(root: Path) -> list[Path]:
    """The ``crush.db`` of every project ``projects.json`` lists (those that exist)."""
    index = root / "projects.json"
    try:
        value = json.loads(bounded.read_text(index, "log"))
    except (OSError, ValueError):
        return []
    projects = value.get("projects") if isinstance(value, dict) else None
    out = []
    for project in projects if isinstance(projects, list) else []:
        if not isinstance(project, dict):
            continue
        folder = project.get("data_dir") or (
            os.path.join(project["path"], ".crush") if isinstance(project.get("path"), str) else None
        )
        if isinstance(folder, str) and (Path(folder) / FILE_NAME).is_file():
            out.append(Path(folder) / FILE_NAME)
    return out


LOCATIONS = tuple(
    Location("crush", folder, ("projects.json",), env=env, below_env=below, project_depth=2, index=project_stores)
    for folder, env, below in (
        (".local/share/crush", "CRUSH_GLOBAL_DATA", ""),
        (".local/share/crush", "XDG_DATA_HOME", "crush"),
        ("AppData/Local/crush", None, ""),
    )
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    CrushReader,
    opens=opens,
    file_names=(FILE_NAME,),
    sessions=True,
    locations=LOCATIONS,
    records_what="messages only: no per-call usage; the session's last-call tokens and Crush's cost in a note",
)
