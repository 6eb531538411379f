"""Zed's agent threads: its SQLite store ``threads.db``.

Where (Zed's ``paths::data_dir()/threads/threads.db``): ``~/.local/share/zed/threads/threads.db``
(Linux; ``$XDG_DATA_HOME/zed``), ``~/Library/Application Support/Zed/threads/threads.db`` (macOS),
``~/AppData/Local/Zed/threads/threads.db`` (Windows' ``%LOCALAPPDATA%``). Checked against
zed-industries/zed's ``crates/agent/src/db.rs`` (``ThreadsDatabase``, ``DbThread``) and ``thread.rs``
(``Message``, ``UserMessageContent``, ``AgentMessageContent``); codeburn's Zed reader reads the same.

* ``threads``: ``id``, ``summary``, ``updated_at``, ``data_type`` (``zstd`` or ``json``), ``data`` (the
  thread's JSON, zstd-compressed), and in newer stores ``parent_id`` (a subagent's thread),
  ``folder_paths``, ``created_at``.
* The thread: ``{title, messages, updated_at, model: {provider, model}, cumulative_token_usage,
  request_token_usage: {<user message id>: usage}, imported, version}``; a message is ``{"User": {id,
  content: [{"Text": …} | {"Mention": {uri, content}} | {"Image": …}]}}``, ``{"Agent": {content:
  [{"Text": …} | {"Thinking": {text, signature}} | {"RedactedThinking": …} | {"ToolUse": {id, name,
  input, raw_input}}], tool_results: {<id>: {tool_use_id, tool_name, is_error, content, output}}}}``
  or ``"Resume"``.
* A usage: ``{input_tokens, output_tokens, cache_creation_input_tokens, cache_read_input_tokens}``
  (Anthropic's meaning: the input excludes the cache; a field that is 0 is left out).

**Calls.** The newest top-level thread that was not imported is profiled (the store's others are named
in ``other-threads``). Each agent message is a call (one request's response); its prompt is the thread
before it, its tool results the tool messages after it. Mentions are sent as their content (text).

**Usage.** Zed keeps one usage per user message, ``request_token_usage``: the usage of the turn's
latest request, which is the turn's last agent message's call; the turn's earlier calls (tool loops)
have no usage recorded (``no-usage``), never 0. The thread's ``cumulative_token_usage`` is shown as
Zed stored it in ``thread-totals``. The system prompt and tool definitions are not stored
(``unrecorded``).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import tokprof.base.bounded as bounded
from tokprof.base.errors import InputError
from tokprof.formats import agent_db
from tokprof.formats.conversation import Conversation, tool_text
from tokprof.formats.fields import expect_object, objects, optional_object, string
from tokprof.formats.jsonfile import Document, parse
from tokprof.formats.locations import Location
from tokprof.formats.neutral import anthropic_usage, assistant_message, check_count, parse_time
from tokprof.formats.reader import LogFormat
from tokprof.trace import Call, Usage

if TYPE_CHECKING:
    import sqlite3

FORMAT = "zed"
DESCRIPTION = "Zed agent threads (threads.db, SQLite): the newest thread"
AGENT = "Zed"
USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")

NO_USAGE = (
    "Zed records one usage per user message (the turn's latest request): the turn's earlier calls have no "
    "usage recorded"
)
THREAD_TOTALS = "the thread's cumulative_token_usage, as Zed stored it (every request, tool loops included)"
OTHER_THREADS = "the store holds other threads: the newest top-level thread is profiled"
MENTIONS = "mentions (files, symbols, threads) are sent as their content: rendered as text without Zed's wrapping"


def sniff(doc: Document) -> bool:
    return False  # a store, not JSON: recognised by :func:`is_store`


def is_store(path: str) -> bool:
    return {"data_type", "data", "summary"} <= agent_db.tables(path).get("threads", set())


class ZedReader(agent_db.StoreFold):
    """Zed's store read as a fold over the newest thread's messages (the thread is one row): a turn's
    calls are given when the next user message starts (the turn's usage is its last call's), or at the
    end."""

    format = FORMAT
    agent = "Zed"
    not_store = "expected Zed's threads.db (SQLite)"

    def __init__(self, path: str, doc: Document | None) -> None:
        super().__init__(path, doc)
        self.held: list[Call] = []  # the calls of the turn being read
        self.release = False  # whether the turn has ended: its calls are given

    def read(self, db: "sqlite3.Connection") -> Iterator[None]:
        path = self.trace.path
        found = agent_db.require(path, db, "threads", ("id", "updated_at", "data_type", "data"), AGENT)
        top = "parent_id IS NULL" if "parent_id" in found else "1"
        (total,) = db.execute(f"SELECT count(*) FROM threads WHERE {top}").fetchone()
        query = f"SELECT id, data_type, data FROM threads WHERE {top} ORDER BY updated_at DESC, id DESC"
        chosen: tuple[str, dict] | None = None
        for row_id, data_type, data in db.execute(query):
            thread = _thread(path, f"thread {row_id}", data_type, data)
            if thread.get("imported") is True:
                continue  # a thread shared with the user: its usage is not theirs
            chosen = (str(row_id), thread)
            break  # threads are read one at a time, newest first, until one is the user's own
        if chosen is None:
            raise InputError(path, "threads", "no thread in the database")
        yield from self._turns(*chosen)
        if int(total) - 1:
            self.trace.note("other-threads", OTHER_THREADS, f"{int(total) - 1} other thread(s)")

    def given(self, calls: list[Call]) -> list[Call]:
        self.held += calls
        if not self.release:
            return []
        self.release = False
        out, self.held = self.held, []
        return out

    def _turns(self, thread_id: str, thread: dict) -> Iterator[None]:
        path, trace = self.trace.path, self.trace
        where = f"thread {thread_id}"
        trace.session = thread_id
        model_info = optional_object(path, where + ": model", thread.get("model")) or {}
        model = model_info.get("model") if isinstance(model_info.get("model"), str) else None
        by_turn = optional_object(path, where + ": request_token_usage", thread.get("request_token_usage")) or {}
        time = parse_time(thread.get("updated_at"))
        chat = Conversation(trace, self.made)
        turn: str | None = None
        last: Call | None = None  # the latest call of the turn: the one the turn's usage belongs to
        missing: list[str] = []  # the places of calls whose usage is not recorded, noted at the end

        def close_turn() -> None:
            if turn is not None and last is not None and turn in by_turn:
                last.reported = _usage(path, f"{where}: request_token_usage.{turn}", by_turn[turn])
            missing.extend(call.where for call in self.held if call.reported is None)
            self.release = True

        for at, message in _messages(path, where, thread.get("messages")):
            if message == "Resume":
                continue
            message = expect_object(path, at, message, "a message object")
            if "User" in message:
                close_turn()
                last = None
                user = expect_object(path, at + ".User", message["User"])
                turn = user.get("id") if isinstance(user.get("id"), str) else None
                _user(chat, path, at + ".User", user)
            elif "Agent" in message:
                agent = expect_object(path, at + ".Agent", message["Agent"])
                last = _agent(chat, path, at + ".Agent", agent, model, time)
            else:
                raise InputError(path, at, "expected a User or Agent message")
            yield
        close_turn()
        if not self.made.count:
            raise InputError(path, where, "no model call (agent message) in the thread")
        for place in missing:
            trace.note("no-usage", NO_USAGE, place)
        total = thread.get("cumulative_token_usage")
        if isinstance(total, dict):
            counts = {
                key: check_count(path, f"{where}: cumulative_token_usage.{key}", total.get(key)) for key in USAGE_FIELDS
            }
            shown = ", ".join(f"{key} {value or 0:,}" for key, value in counts.items())
            trace.note("thread-totals", THREAD_TOTALS, f"{where}: {shown}")


def _thread(path: str, where: str, data_type: Any, data: Any) -> dict:
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if not isinstance(data, bytes):
        raise InputError(path, where + ": data", "expected the thread's bytes")
    if data_type == "zstd":
        import zstandard

        try:
            reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data))
            data = bounded.read_handle(reader, "log line")
        except zstandard.ZstdError as exc:
            raise InputError(path, where + ": data", f"not zstd data ({exc})") from None
        except OSError as exc:
            raise InputError(path, where + ": data", str(exc)) from None
    elif data_type != "json":
        raise InputError(path, where + ": data_type", f"expected zstd or json, found {data_type!r}")
    try:
        value = parse(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(path, where + ": data", f"invalid JSON: {exc}") from None
    return expect_object(path, where + ": data", value, "a thread object")


def _messages(path: str, where: str, messages: Any) -> list[tuple[str, Any]]:
    if not isinstance(messages, list):
        raise InputError(path, where + ": messages", "expected a list of messages")
    return [(f"{where}: messages[{j}]", message) for j, message in enumerate(messages)]


def _user(chat: Conversation, path: str, where: str, user: dict) -> None:
    texts = []
    for at, part in objects(path, where + ".content", user.get("content", []), "a content object"):
        if "Text" in part:
            texts.append(string(path, at + ".Text", part["Text"]))
        elif "Mention" in part:
            mention = expect_object(path, at + ".Mention", part["Mention"])
            texts.append(string(path, at + ".Mention.content", mention.get("content", "")))
            chat.trace.note("mentions", MENTIONS, at)
        else:
            chat._skip(at, next(iter(part), "?"))
    chat.add({"role": "user", "content": "\n".join(texts)}, where)


def _agent(chat: Conversation, path: str, where: str, agent: dict, model: str | None, time: Any) -> Call | None:
    texts, thoughts, calls = [], [], []
    for at, part in objects(path, where + ".content", agent.get("content", []), "a content object"):
        if "Text" in part:
            texts.append(string(path, at + ".Text", part["Text"]))
        elif "Thinking" in part:
            thinking = expect_object(path, at + ".Thinking", part["Thinking"])
            thoughts.append(string(path, at + ".Thinking.text", thinking.get("text")))
        elif "ToolUse" in part:
            use = expect_object(path, at + ".ToolUse", part["ToolUse"])
            call_id = string(path, at + ".ToolUse.id", use.get("id"))
            name = string(path, at + ".ToolUse.name", use.get("name"))
            arguments = use.get("input", {})
            text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
            calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": text}})
        else:
            chat._skip(at, next(iter(part), "?"))
    clean = chat.check(assistant_message(texts, thoughts, calls), where)
    call = chat.call(where, model, None, clean, time)
    chat.messages.append(clean)
    results = optional_object(path, where + ".tool_results", agent.get("tool_results")) or {}
    for key, result in results.items():
        at = f"{where}.tool_results.{key}"
        result = expect_object(path, at, result)
        call_id = string(path, at + ".tool_use_id", result.get("tool_use_id", key))
        chat.add({"role": "tool", "tool_call_id": call_id, "content": _result_text(chat, at, result)}, at)
    return call


def _result_text(chat: Conversation, at: str, result: dict) -> str:
    content = result.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        for key in ("Text", "text"):
            if isinstance(content.get(key), str):
                return str(content[key])
    if isinstance(content, list):  # older threads: a list of contents
        return "\n".join(_result_text(chat, at, {"content": part}) for part in content)
    if content is not None:
        chat._skip(at + ".content", "not text")
    return tool_text(result.get("output")) if result.get("output") is not None else ""


def _usage(path: str, where: str, usage: Any) -> Usage | None:
    usage = expect_object(path, where, usage)
    counts = {key: check_count(path, f"{where}.{key}", usage.get(key)) for key in USAGE_FIELDS}
    if not any(counts.values()):
        return None
    return anthropic_usage(
        {
            "input_tokens": counts["input_tokens"] or 0,
            "output_tokens": counts["output_tokens"] or 0,
            "cache_creation_input_tokens": counts["cache_creation_input_tokens"] or 0,
            "cache_read_input_tokens": counts["cache_read_input_tokens"] or 0,
        }
    )


STORE = ("threads/threads.db",)

LOCATIONS = (
    Location("zed", ".local/share/zed", STORE, env="XDG_DATA_HOME", below_env="zed", project_depth=0),
    Location("zed", "Library/Application Support/Zed", STORE, project_depth=0),
    Location("zed", "AppData/Local/Zed", STORE, project_depth=0),
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    ZedReader,
    sessions=True,
    opens=is_store,
    locations=LOCATIONS,
    records_what="messages, each turn's last request's usage and the thread's totals; no system prompt or tools",
)
