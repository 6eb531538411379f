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

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tokprof.base.bounded as bounded
from tokprof.base.errors import InputError
from tokprof.formats.conversation import Conversation, finish
from tokprof.formats.fields import check_text, expect_list, expect_object, string
from tokprof.formats.jsonfile import Document, parse
from tokprof.formats.locations import Location
from tokprof.formats.neutral import in_time_order, parse_time
from tokprof.formats.reader import whole_read_format
from tokprof.trace import Call, Trace

if TYPE_CHECKING:
    import sqlite3

FORMAT = "crush"
DESCRIPTION = "Crush sessions (a project's .crush/crush.db, SQLite)"

FILE_NAME = "crush.db"
SQLITE_MAGIC = b"SQLite format 3\x00"
FIGURES = (
    "Crush's own figures for the session, as it stores them: prompt_tokens and completion_tokens are its last "
    "call's (not the session's totals), cost is what Crush added up from its own price catalogue; every call's "
    "usage is not recorded, and the billed input here is computed from the messages"
)
OTHER = "the store holds other sessions: the newest main session is profiled"
NOT_TEXT = "message parts that are not text (images, files) were left out of the prompt"


def _tables(path: str) -> set[str]:
    """The tables of a SQLite file, from a snapshot read that ignores the agent's lock (empty when none)."""
    import sqlite3

    try:
        db = sqlite3.connect("file:" + Path(path).resolve().as_posix() + "?mode=ro&immutable=1", uri=True)
    except sqlite3.Error:
        return set()
    try:
        return {str(row[0]) for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:
        return set()
    finally:
        db.close()


def opens(path: str) -> bool:
    """A SQLite file with Crush's ``sessions``, ``messages`` and ``files`` tables."""
    try:
        with bounded.open_input(path) as f:
            if f.read(16) != SQLITE_MAGIC:
                return False
    except OSError:
        return False
    return {"sessions", "messages", "files"} <= _tables(path)


def sniff(doc: Document) -> bool:
    return False  # a SQLite file, never JSON: found by opens()


def _idle_wal(path: Path) -> bool:
    """A store in write-ahead-log mode with no log beside it: nothing is writing it, and a read-only open
    would leave an empty ``-wal`` and ``-shm`` in the user's folder; it is read as immutable instead."""
    try:
        with bounded.open_input(path) as f:
            header = f.read(20)
    except OSError:
        return False
    return len(header) == 20 and header[18] == 2 and not os.path.exists(str(path) + "-wal")


def _connect(path: Path, read_only: bool) -> "sqlite3.Connection":
    import sqlite3

    mode = ("?mode=ro&immutable=1" if _idle_wal(path) else "?mode=ro") if read_only else ""
    db = sqlite3.connect("file:" + path.resolve().as_posix() + mode, uri=True, timeout=0.2)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except BaseException:
        db.close()
        raise
    return db


@contextlib.contextmanager
def _opened(path: str) -> Iterator["sqlite3.Connection"]:
    """The store read-only, or a copy of it (and its write-ahead log) when it cannot be read as it is."""
    import sqlite3

    folder: str | None = None
    try:
        try:
            db = _connect(Path(path), read_only=True)
        except sqlite3.OperationalError as why:  # locked by the running agent, or a log it cannot apply
            folder = tempfile.mkdtemp(prefix="tokprof-crush-")
            copy = Path(folder) / FILE_NAME
            try:
                shutil.copyfile(path, copy)
                if os.path.isfile(path + "-wal"):
                    shutil.copyfile(path + "-wal", str(copy) + "-wal")
                db = _connect(copy, read_only=False)
            except (OSError, sqlite3.Error) as exc:
                raise InputError(path, None, f"cannot read the database ({why}; a copy failed too: {exc})") from None
        except sqlite3.DatabaseError as exc:
            raise InputError(path, None, f"not a readable SQLite database ({exc})") from None
        try:
            yield db
        finally:
            db.close()
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _columns(db: "sqlite3.Connection", table: str) -> set[str]:
    return {str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}


class _Session:
    """One session's messages, read into calls."""

    def __init__(self, trace: Trace, session_id: str, thread: str, summary: str | None) -> None:
        self.trace = trace
        self.id = session_id
        self.thread = thread
        self.summary = summary
        self.chat = Conversation(trace)
        self.calls: list[Call] = []

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
                self.calls.append(call)
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
                self.calls.append(call)
            self.chat.messages.append(clean)
        elif role == "tool":
            for result in results:
                self.chat.add(result, where)
        elif role in ("user", "system"):
            if texts:
                self.chat.add({"role": role, "content": "\n".join(texts)}, where)
        else:
            raise InputError(path, where + ": role", f"unknown role {role!r}")


def read_db(path: str) -> Trace:
    """The newest main session of a Crush store, with its task sessions as threads."""
    import sqlite3

    with _opened(path) as db:
        try:
            return _read(path, db)
        except sqlite3.Error as exc:
            raise InputError(path, None, f"not a Crush store this reader knows ({exc})") from None


def _read(path: str, db: "sqlite3.Connection") -> Trace:
    columns = _columns(db, "sessions")
    summary = "summary_message_id" if "summary_message_id" in columns else "NULL"
    rows = db.execute(
        "SELECT id, parent_session_id, title, prompt_tokens, completion_tokens, cost, created_at, "
        f"{summary} FROM sessions ORDER BY created_at, id"
    ).fetchall()
    mains = [row for row in rows if not row[1]]
    if not mains:
        raise InputError(path, None, "the store holds no session")
    main = mains[-1]
    trace = Trace(path=path, format=FORMAT, unrecorded=("system", "tools"), session=str(main[0]))
    if len(mains) > 1:
        trace.note("other-sessions", OTHER, ", ".join(f"{row[0]} ({row[2]})" for row in mains[:-1]))
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
        session = _Session(trace, str(row[0]), thread, row[7])
        sessions.append(session)
        trace.note(
            "session-figures",
            FIGURES,
            f"{row[2] or row[0]}: prompt_tokens {row[3]:,} and completion_tokens {row[4]:,} (last call), "
            f"cost ${row[5]:.4f} (Crush's)",
        )
        messages = db.execute(
            "SELECT id, role, parts, model, created_at FROM messages WHERE session_id = ? ORDER BY created_at, rowid",
            (row[0],),
        )
        for message_id, role, parts, model, created in messages:
            place = f"message {message_id}"
            text = parts.decode("utf-8", "replace") if isinstance(parts, bytes) else parts
            if not isinstance(text, str):
                raise InputError(path, place + ": parts", "expected JSON text")
            try:
                value = parse(text)
            except ValueError as exc:
                raise InputError(path, place + ": parts", f"not JSON ({exc})") from None
            session.message(place, role, expect_list(path, place + ": parts", value), model, created, str(message_id))
    trace.calls = in_time_order([session.calls for session in sessions])
    project = Path(path).resolve().parent
    cwd = str(project.parent) if project.name == ".crush" else str(project)
    for call in trace.calls:
        call.cwd = cwd
    return finish(trace)


def read(path: str, doc: Document) -> Trace:
    raise InputError(path, None, "expected a Crush store (crush.db, SQLite), not JSON")


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

LOG_FORMAT = whole_read_format(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    read,
    opened=read_db,
    opens=opens,
    file_names=(FILE_NAME,),
    sessions=True,
    locations=LOCATIONS,
    records_what="messages only: no per-call usage; the session's last-call tokens and Crush's cost in a note",
)
