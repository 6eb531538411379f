"""OpenCode sessions: its SQLite store, the older JSON storage, and ``opencode run --format json``.

OpenCode keeps its sessions in ``~/.local/share/opencode/`` (``$XDG_DATA_HOME/opencode``):

* current versions: ``opencode.db``, SQLite, tables ``session`` (``id``, ``parent_id``, ``title``,
  ``directory``, ``time_created``, ...), ``message`` (``id``, ``session_id``, ``time_created``,
  ``data``: the message info as JSON, without ``id``/``sessionID``) and ``part`` (``id``,
  ``message_id``, ``session_id``, ``time_created``, ``data``: the part as JSON). Read with the
  standard library's ``sqlite3``, never written (:func:`tokprof.formats.agent_db.opened`), in one read
  transaction (a consistent view while the agent writes). The newest main session (no ``parent_id``)
  is profiled; the others are named in the note ``other-sessions``;
* older versions: ``storage/session/<project>/<session>.json``, ``storage/message/<session>/
  <message>.json`` and ``storage/part/<message>/<part>.json``; tokprof reads the session file and
  finds its messages and parts from there, ids checked before they are folder names (#45.8);
* ``opencode run --format json``: one event per line, ``{type, timestamp, sessionID, part}`` with
  ``type`` ``step_start``, ``text``, ``reasoning``, ``tool_use`` (the call and its result in one
  ``tool`` part: ``part.tool``, ``part.callID``, ``part.state.input/output``) and ``step_finish``
  (``part.tokens``, ``part.cost``). The stream holds no user message and no model name.

Calls. An assistant message is one or more steps, each one model call, from a ``step-start`` part to
its ``step-finish`` part, whose ``tokens{input, output, reasoning, cache{read, write}}`` is the
call's usage (an assistant message without step parts is one call with the message's ``tokens``).
OpenCode's ``tokens.input`` excludes the cache reads and writes, so ``prompt`` = ``input +
cache.read + cache.write``; ``output`` = ``output + reasoning`` (OpenCode bills both at the output
rate). A step with all-zero tokens in a message with an ``error`` is not a billed call (warning
``error-response``).

The prompt of a call is the session so far: user messages (their ``text`` parts, synthetic ones
included: OpenCode sends them), then for each earlier step one assistant message (``text`` parts as
content, ``reasoning`` as reasoning, ``tool`` parts as tool calls with ``arguments`` = the JSON of
``state.input``) followed by one ``tool`` message per tool part (``state.output``, or
``state.error``). ``file`` parts and others that are not text are left out (warning
``content-not-text``). After an assistant message marked ``summary`` (a compaction) later prompts
start from its summary, and its calls are ``kind = "compaction"``.

A fold (#43.1): a run stream's lines are read as they are fed, each message's parts held until a
line of another message starts (a message's events are written together; a later event of a message
already read starts a message of its own), and its calls given then. A storage session reads its
messages' infos, then each message's parts as its calls are made; a store reads the session's message
rows one at a time, each with its parts, and gives each call as it is made. The reader never holds the calls.

What is not recorded: OpenCode records neither its system prompt nor its tool definitions
(``unrecorded = ("system", "tools")``), inferred from the first call's reported prompt as for
Claude Code. The run stream also lacks the user's messages: they fall in the same inferred part
(warning ``no-user-messages``). The cost OpenCode computed is in the note ``log-cost``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tokprof.base.bounded as bounded
from tokprof.base.errors import InputError
from tokprof.base.text import visible
from tokprof.formats.fields import expect_object, nonempty_string, optional_object, string
from tokprof.formats.jsonfile import Document, load, parse
from tokprof.formats.locations import Location
from tokprof.formats.folds import Made
from tokprof.formats.reader import LogFormat, Reader, Record
from tokprof.formats.jsonfile import kind_of as _kind
from tokprof.formats.neutral import assistant_message, check_count, check_messages, check_model, parse_time
from tokprof.trace import Call, PromptView, Trace, Usage

if TYPE_CHECKING:
    import sqlite3  # loaded where a store is read (6 ms at start-up otherwise)

FORMAT = "opencode"
DESCRIPTION = (
    "OpenCode sessions: opencode.db (SQLite), the older storage/ session files, and `opencode run --format json` "
    "event streams"
)

EVENTS = ("step_start", "step_finish", "text", "reasoning", "tool_use", "error")
SQLITE_MAGIC = b"SQLite format 3\x00"
DB_NAME = "opencode.db"
#: The longest id the storage/ layout takes as a folder name (OpenCode's are about 30 characters).
MAX_ID = 128
STORAGE_ID = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_ID}}}")

NOT_TEXT = (
    "message parts that are not text (files, images) cannot be rendered by a chat template: they are left out "
    "of the prompt and their tokens are not counted"
)
NO_USERS = (
    "an `opencode run --format json` stream holds no user message: the prompt the run started from is counted "
    "in the inferred 'unrecorded' part, with the system prompt and tool definitions"
)
ERROR_STEP = "an assistant message with an error and no tokens is not a billed call: it is skipped"
LOG_COST = "the cost OpenCode itself computed for these calls, beside the one tokprof computes from their usage"
OTHER_SESSIONS = "the store holds other sessions: the newest main session is profiled"


@dataclass
class Message:
    """One OpenCode message: its info (role, model, tokens, ...) and its parts, in order."""

    where: str
    info: dict
    parts: list[tuple[str, dict]] = field(default_factory=list)


# -- detection -------------------------------------------------------------------------------------
def sniff(doc: Document) -> bool:
    if doc.lines is not None:
        head = [value for _, value in doc.lines.head(20)]
        return any(_is_event(value) for value in head)
    value = doc.value
    return isinstance(value, dict) and _is_session_file(value)


def _is_event(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("type") in EVENTS
        and isinstance(value.get("part"), dict)
        and "sessionID" in value
    )


def _is_session_file(value: dict) -> bool:
    session = value.get("id")
    return isinstance(session, str) and session.startswith("ses_") and "projectID" in value and "time" in value


def is_sqlite(path: str) -> bool:
    try:
        with bounded.open_input(path) as f:
            return f.read(16) == SQLITE_MAGIC
    except OSError:
        return False


# -- reading ---------------------------------------------------------------------------------------
class OpenCodeReader(Reader):
    """An OpenCode log read as a fold (see the module's docstring): a run stream's lines, a storage
    session file's one record, or (no records) a store read when finished."""

    def __init__(self, path: str, doc: Document | None, name: str = FORMAT) -> None:
        self.path, self.name = path, name
        form = "sqlite" if doc is None else "run-json" if doc.lines is not None else "storage"
        self.trace = Trace(path=path, format=f"{name}/{form}", unrecorded=("system", "tools"))
        self.builder = _Builder(path, self.trace)
        self.message: tuple[str, Message] | None = None  # the run stream's message being read: (id, message)
        self.form = form
        self.stream = form == "run-json"

    def feed(self, record: Record) -> Iterable[Call]:
        if record.line is None:
            value = record.value
            if isinstance(value, dict) and _is_session_file(value):
                return _storage(self.path, value, self.builder)
            raise InputError(
                self.path, None, "expected an OpenCode session file (storage/session/...) or a run --format json stream"
            )
        return self.event(record.line, record.value)

    def event(self, n: int, event: Any) -> list[Call]:
        path, where = self.path, f"line {n}"
        event = expect_object(path, where, event, "an event object")
        if event.get("type") not in EVENTS:
            return []
        part = event.get("part")
        if not isinstance(part, dict) and event.get("type") == "error":
            return []
        part = expect_object(path, where + ": part", part)
        message_id = part.get("messageID")
        message_id = string(path, where + ": part.messageID", message_id)
        session = event.get("sessionID")
        if self.trace.session is None and session:
            self.trace.session = session if isinstance(session, str) else None
        calls: list[Call] = []
        if self.message is None or self.message[0] != message_id:
            calls = self.flush()
            info = {"role": "assistant", "time": {"created": event.get("timestamp")}}
            self.message = (message_id, Message(where, info))
        self.message[1].parts.append((f"{where}: part", part))
        return calls

    def flush(self) -> list[Call]:
        if self.message is None:
            return []
        message, self.message = self.message[1], None
        return list(self.builder.build([message]))

    def finish(self) -> Iterable[Call]:
        if self.form == "sqlite":
            return read_db(self.path, None, self.name, self.builder)
        calls = self.flush()
        self.builder.end()
        if self.stream:
            self.trace.note("no-user-messages", NO_USERS)
        return calls


def storage_id(path: str, where: str, value: Any) -> str:
    """An id the storage/ layout makes a folder name of, checked before it becomes a path (#45.8): one
    name of OpenCode's alphabet (``ses_…``, ``msg_…``), never ``..``, a separator or a name too long
    for a file system."""
    text = string(path, where, value)
    if not STORAGE_ID.fullmatch(text):
        shown = visible(text[:60]) + ("…" if len(text) > 60 else "")
        raise InputError(
            path, where, f"not an OpenCode id ({shown!r}): ids are up to {MAX_ID} letters, digits, '_' or '-'"
        )
    return text


def _inside(path: str, root: Path, file: Path) -> Path:
    """A file of the store, refused when a link takes it outside the storage folder."""
    if not file.resolve().is_relative_to(root):
        raise InputError(str(file), None, "a link out of the OpenCode storage folder: not read")
    return file


def _storage(path: str, session: dict, builder: "_Builder") -> Iterator[Call]:
    """A storage session's calls: its messages' infos read and ordered, then each message's parts read as
    its calls are made."""
    root = Path(path).resolve().parent.parent.parent  # storage/session/<project>/<session>.json
    session_id = storage_id(path, "id", session["id"])
    message_dir = root / "message" / session_id
    if not message_dir.is_dir():
        raise InputError(path, "id", f"no message folder for this session (looked for {message_dir})")
    _inside(path, root, message_dir)
    messages = []
    seen: dict[str, str] = {}  # message id -> the file that holds it
    for file in sorted(message_dir.glob("*.json")):
        info = expect_object(str(file), None, _json_file(_inside(path, root, file)), "a message object")
        message_id = storage_id(str(file), "id", info.get("id", file.stem))
        if message_id in seen:
            raise InputError(str(file), "id", f"repeats the message id of {seen[message_id]}")
        seen[message_id] = str(file)
        part_dir = root / "part" / message_id
        if part_dir.is_dir():
            _inside(path, root, part_dir)
        messages.append(Message(str(file), info))
    messages.sort(key=lambda m: (_created(m.info), m.info.get("id") or ""))
    builder.trace.session = session_id
    for message in messages:
        message_id = storage_id(message.where, "id", message.info.get("id", Path(message.where).stem))
        part_dir = root / "part" / message_id
        for part_file in sorted(part_dir.glob("*.json")) if part_dir.is_dir() else []:
            part = expect_object(str(part_file), None, _json_file(_inside(path, root, part_file)), "a part object")
            message.parts.append((str(part_file), part))
        yield from builder.build([message])
        message.parts = []  # read: its messages are in the history


def _json_file(file: Path) -> Any:
    with load(str(file)) as doc:
        if doc.lines is not None:
            raise InputError(str(file), None, "expected one JSON object")
        return doc.value


def read_db(path: str, session_id: str | None, name: str, builder: "_Builder") -> Iterator[Call]:
    """The calls of a session of OpenCode's SQLite store (or a fork's, ``name`` its format): the one named,
    else the newest main session, each given as it is made. Read-only, from a copy when the agent holds
    it locked (:mod:`agent_db`)."""
    import sqlite3

    from tokprof.formats.agent_db import opened

    with opened(path) as db:
        try:
            db.execute("BEGIN")  # one read transaction: every query sees the store as it was at the first
            yield from _db(path, db, session_id, name, builder)
        except sqlite3.DatabaseError as exc:
            raise InputError(path, None, f"not an OpenCode database ({exc})") from None


def sessions_in_db(path: str) -> list[tuple[str, int]]:
    """The main sessions of an OpenCode store, newest first: (id, time created in ms)."""
    from tokprof.formats.agent_db import opened

    with opened(path) as db:
        rows = db.execute("SELECT id, time_created FROM session WHERE parent_id IS NULL ORDER BY time_created DESC")
        return [(str(r[0]), int(r[1] or 0)) for r in rows]


def _db(path: str, db: sqlite3.Connection, session_id: str | None, name: str, builder: "_Builder") -> Iterator[Call]:
    rows = db.execute("SELECT id FROM session WHERE parent_id IS NULL ORDER BY time_created DESC, id DESC").fetchall()
    if session_id is None:
        if not rows:
            raise InputError(path, "session", "no session in the database")
        session_id = str(rows[0][0])
    builder.trace.session = session_id
    for message_id, created, data in db.execute(
        "SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id", (session_id,)
    ):
        where = f"message {message_id}"
        info = _row_json(path, where + ": data", data)
        info.setdefault("id", message_id)
        info.setdefault("time", {"created": created})
        message = Message(where, info)
        for part_id, part in db.execute(  # its parts (OpenCode indexes them by message_id)
            "SELECT id, data FROM part WHERE message_id = ? AND session_id = ? ORDER BY id", (message_id, session_id)
        ):
            at = f"part {part_id}"
            message.parts.append((at, _row_json(path, at + ": data", part)))
        yield from builder.build([message])
    builder.end()
    if len(rows) > 1:
        builder.trace.note("other-sessions", OTHER_SESSIONS, f"{len(rows) - 1} other main session(s)")


def _row_json(path: str, where: str, data: Any) -> dict:
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    if not isinstance(data, str):
        raise InputError(path, where, f"expected JSON text, found {_kind(data)}")
    try:
        value = parse(data)
    except ValueError as exc:
        raise InputError(path, where, f"invalid JSON: {exc}") from None
    value = expect_object(path, where, value)
    return value


def _created(info: dict) -> float:
    time = info.get("time")
    value = time.get("created") if isinstance(time, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


# -- messages to calls -----------------------------------------------------------------------------
class _Builder:
    def __init__(self, path: str, trace: Trace):
        self.path = path
        self.trace = trace
        #: the session so far: it only grows at its end (a compaction starts a new list), so that each
        #: call's prompt is a view of it and holds no list of its own (linear in the session, #45.4)
        self.history: list[dict] = []
        self.cost = 0.0
        self.cost_seen = False
        self.made = Made()
        self.models: set[str] = set()
        self.ended = False

    def fail(self, where: str, what: str) -> InputError:
        return InputError(self.path, where, what)

    def build(self, messages: list[Message]) -> Iterator[Call]:
        """The calls of these messages, each given once its step is read."""
        for message in messages:
            role = message.info.get("role")
            if role == "user":
                self.user(message)
            elif role == "assistant":
                self.assistant(message)
            else:
                raise self.fail(message.where + ": role", f"expected user or assistant, found {role!r}")
            calls = self.made.take()
            self.models.update(c.model for c in calls if c.model)
            yield from calls

    def end(self) -> None:
        """Every message read: the session's model (its one model) and the cost OpenCode computed."""
        if self.ended:
            return
        self.ended = True
        if not self.made.count:
            raise InputError(self.path, None, "no model call (assistant step) in the session")
        self.trace.model = self.models.pop() if len(self.models) == 1 else None
        if self.cost_seen:
            self.trace.note("log-cost", LOG_COST, f"{self.cost:.6f} USD in all")

    def user(self, message: Message) -> None:
        texts = []
        for where, part in message.parts:
            kind = part.get("type")
            if kind == "text":
                texts.append(self.text(where, part))
            elif kind in ("file", "image", "agent", "subtask"):
                self.trace.note("content-not-text", NOT_TEXT, f"{where} ({kind})")
        if texts:
            self.history.extend(
                check_messages(self.path, message.where + ": ", [{"role": "user", "content": "\n".join(texts)}])
            )

    def text(self, where: str, part: dict) -> str:
        return string(self.path, where + ".text", part.get("text"))

    def assistant(self, message: Message) -> None:
        info = message.info
        model = check_model(self.path, message.where + ": ", {"model": info.get("modelID")})
        steps: list[list[tuple[str, dict]]] = [[]]
        finishes: list[tuple[str, dict] | None] = []
        for where, part in message.parts:
            kind = part.get("type")
            if kind == "step-start" and steps[-1]:
                steps.append([])
                finishes.append(None)
            if kind == "step-finish":
                finishes.append((where, part))
                steps.append([])
                continue
            steps[-1].append((where, part))
        while len(finishes) < len(steps):
            finishes.append(None)
        summary = info.get("summary") is True
        has_steps = any(f is not None for f in finishes)
        for step, finish in zip(steps, finishes):
            if not step and finish is None:
                continue
            if finish is not None:
                usage = self.usage(finish[0] + ".tokens", finish[1].get("tokens"))
                self.add_cost(finish[1].get("cost"))
            elif not has_steps:
                usage = self.usage(message.where + ": tokens", info.get("tokens"))
                self.add_cost(info.get("cost"))
            else:
                usage = None  # a step cut off before its step-finish: no usage
            where = finish[0] if finish is not None else (step[0][0] if step else message.where)
            self.step(message, step, usage, model, where, summary)
        if summary:
            self.trace.compactions += 1
            self.history = [m for m in self.history[-1:] if m["role"] == "assistant"]

    def step(
        self,
        message: Message,
        parts: list[tuple[str, dict]],
        usage: Usage | None,
        model: str | None,
        where: str,
        summary: bool,
    ) -> None:
        if info_error(message.info) and (usage is None or not (usage.prompt or usage.output)):
            self.trace.note("error-response", ERROR_STEP, where)
            return
        texts, thoughts, calls, results = [], [], [], []
        for at, part in parts:
            kind = part.get("type")
            if kind == "text":
                texts.append(self.text(at, part))
            elif kind == "reasoning":
                thoughts.append(self.text(at, part))
            elif kind == "tool":
                tool_call, result = self.tool(at, part)
                calls.append(tool_call)
                results.append(result)
            elif kind in ("file", "image"):
                self.trace.note("content-not-text", NOT_TEXT, f"{at} ({kind})")
        time = parse_time(_created(message.info) or None)
        call = Call(
            index=0,
            messages=PromptView(self.history, len(self.history)),
            tools=None,
            model=model,
            reported=usage,
            day=time.date() if time else None,
            where=where,
            time=time,
            kind="compaction" if summary else "call",
        )
        self.made.add(call)
        if not (texts or thoughts or calls):
            return
        answer = assistant_message(texts, thoughts, calls)
        added = check_messages(self.path, where + ": ", [answer, *results])  # results answer this step's calls
        call.response = added[0]
        self.history.extend(added)

    def tool(self, where: str, part: dict) -> tuple[dict, dict]:
        call_id = string(self.path, where + ".callID", part.get("callID"))
        name = nonempty_string(self.path, where + ".tool", part.get("tool"))
        state = expect_object(self.path, where + ".state", part.get("state"))
        arguments = expect_object(self.path, where + ".state.input", state.get("input", {}))
        output = state.get("output") if state.get("status") != "error" else state.get("error")
        output = string(self.path, where + ".state.output", "" if output is None else output)
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
        }
        return call, {"role": "tool", "tool_call_id": call_id, "content": output}

    def usage(self, where: str, tokens: Any) -> Usage | None:
        tokens = optional_object(self.path, where, tokens)
        if tokens is None:
            return None
        cache = expect_object(self.path, where + ".cache", tokens.get("cache", {}))
        fresh = check_count(self.path, where + ".input", _whole(tokens.get("input")))
        output = check_count(self.path, where + ".output", _whole(tokens.get("output")))
        reasoning = check_count(self.path, where + ".reasoning", _whole(tokens.get("reasoning")))
        read = check_count(self.path, where + ".cache.read", _whole(cache.get("read")))
        write = check_count(self.path, where + ".cache.write", _whole(cache.get("write")))
        if fresh is None and output is None:
            return None
        prompt = None if fresh is None else fresh + (read or 0) + (write or 0)
        return Usage(
            prompt=prompt,
            cache_read=read,
            cache_write=write,
            output=None if output is None else output + (reasoning or 0),
        )

    def add_cost(self, cost: Any) -> None:
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and 0 <= cost < 1e9:
            self.cost += cost
            self.cost_seen = True


def info_error(info: dict) -> bool:
    return info.get("error") is not None


def _whole(value: Any) -> Any:
    """A count OpenCode wrote as a float with no fraction (JavaScript numbers) as an int."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def default_store() -> str:
    """Where OpenCode keeps its data: ``$XDG_DATA_HOME/opencode``, else ``~/.local/share/opencode``."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "opencode")


#: Its SQLite store (read for its newest main session), and the older storage/ files.
LOCATIONS = (
    Location(
        "opencode",
        ".local/share/opencode",
        ("opencode.db", "storage/session/*/*.json"),
        env="XDG_DATA_HOME",
        below_env="opencode",
        project_depth=0,
    ),
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    OpenCodeReader,
    sessions=True,
    opens=is_sqlite,
    file_names=(DB_NAME,),
    locations=LOCATIONS,
    records_what="per-step usage and cost; no system prompt or tool definitions",
)
