"""Continue sessions: ``~/.continue/sessions/<sessionId>.json``.

Where: ``$CONTINUE_GLOBAL_DIR/sessions``, else ``~/.continue/sessions`` (below the user's folder on
Linux, macOS and Windows). ``sessions.json`` beside them is the list of sessions, not one. Checked
against continuedev/continue's ``core/index.d.ts`` (``Session``, ``ChatHistoryItem``, ``ChatMessage``,
``PromptLog``):

* the session: ``{sessionId, title, workspaceDirectory, history[]}``;
* a history item: ``{message, contextItems[], promptLogs[], toolCallState, reasoning}``; its message
  ``{role: user | assistant | thinking | system | tool, content, toolCalls, toolCallId}``, ``content``
  a string or parts (``{type: "text", text}``, ``{type: "imageUrl"}``); a context item
  ``{name, description, content}``; a prompt log ``{modelTitle, completionOptions: {model}, prompt,
  completion}``.

**Calls.** Each assistant message is a call; its prompt is the session before it. A user message's
context items are sent with it: their content is rendered before the message's text
(``context-items``). A ``thinking`` message is the reasoning of the assistant message after it. The
call's model is its prompt log's ``completionOptions.model``, when it has one.

**Usage.** Continue's session files record no token usage: every call's usage is "not recorded"
(``no-usage``), never 0, and its counts are tokprof's own. The system prompt is recorded only when the
session holds a system message, and tool definitions are not (``unrecorded``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokprof.base.errors import InputError
from tokprof.formats.conversation import Conversation
from tokprof.formats.folds import DocumentFold
from tokprof.formats.fields import expect_object, objects, optional_object, string
from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import Location
from tokprof.formats.neutral import assistant_message, optional_text
from tokprof.formats.reader import LogFormat, single_record
from tokprof.trace import Call, Trace

FORMAT = "continue"
DESCRIPTION = "Continue sessions (~/.continue/sessions/<id>.json)"

NO_USAGE = "Continue's session files record no token usage: the calls' usage is not recorded"
CONTEXT = "context items are sent with their user message: rendered as text before it, without Continue's wrapping"


_STARTS = re.compile(rb'\A\s*\{\s*"sessionId"\s*:')


def starts_like_session(head: bytes) -> bool:
    """A file whose first bytes are a Continue session's (``sessionId`` first, ``workspaceDirectory`` near)."""
    head = head.lstrip(b"\xef\xbb\xbf")
    return _STARTS.match(head) is not None and b'"workspaceDirectory"' in head[:8192]


def sniff(doc: Document) -> bool:
    value = doc.single_value()
    return (
        isinstance(value, dict)
        and isinstance(value.get("sessionId"), str)
        and isinstance(value.get("history"), list)
        and "workspaceDirectory" in value
    )


class ContinueReader(DocumentFold):
    """A Continue session read as a fold over its one record (#43.1): each assistant item's call given as
    it is read."""

    def __init__(self, path: str, doc: Document | None) -> None:
        super().__init__(Trace(path=path, format=FORMAT))
        self.cwd: str | None = None

    def read(self, value: Any) -> Iterator[None]:
        path, trace = self.trace.path, self.trace
        session = expect_object(path, None, value, "a Continue session object")
        if not isinstance(session.get("history"), list):
            raise InputError(path, "history", "expected a list of history items")
        has_system = any(
            isinstance(item, dict) and isinstance(item.get("message"), dict) and item["message"].get("role") == "system"
            for item in session["history"]
        )
        trace.unrecorded = ("tools",) if has_system else ("system", "tools")
        trace.session = session.get("sessionId") if isinstance(session.get("sessionId"), str) else None
        cwd = session.get("workspaceDirectory")
        self.cwd = cwd.removeprefix("file://") if isinstance(cwd, str) and cwd else None
        chat = Conversation(trace, self.made)
        thoughts: list[str] = []
        for where, item in objects(path, "history", session["history"], "a history item"):
            message = expect_object(path, where + ".message", item.get("message"))
            role = message.get("role")
            at = where + ".message"
            if role == "user":
                _user(chat, path, where, item, message)
            elif role == "system":
                chat.add({"role": "system", "content": _text(chat, path, at + ".content", message.get("content"))}, at)
            elif role == "tool":
                call_id = string(path, at + ".toolCallId", message.get("toolCallId"))
                content = _text(chat, path, at + ".content", message.get("content"))
                chat.add({"role": "tool", "tool_call_id": call_id, "content": content}, at)
            elif role == "thinking":
                thoughts.append(_text(chat, path, at + ".content", message.get("content")))
            elif role == "assistant":
                _assistant(chat, path, where, item, message, thoughts)
                thoughts = []
            else:
                raise InputError(
                    path, at + ".role", f"expected user, assistant, thinking, system or tool, found {role!r}"
                )
            yield
        if not self.made.count:
            raise InputError(path, "history", "no model call (assistant message) in the session")
        trace.note("no-usage", NO_USAGE)

    def given(self, calls: list[Call]) -> list[Call]:
        for call in calls:
            call.cwd = self.cwd
        return calls


def _text(chat: Conversation, path: str, where: str, content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return string(path, where, content)
    texts = []
    for at, part in objects(path, where, content, "a message part", listed="a string or a list of parts"):
        if part.get("type") == "text":
            texts.append(string(path, at + ".text", part.get("text")))
        else:
            chat._skip(at, str(part.get("type")))
    return "\n".join(texts)


def _user(chat: Conversation, path: str, where: str, item: dict, message: dict) -> None:
    texts = []
    for at, context in objects(path, where + ".contextItems", item.get("contextItems") or [], "a context item"):
        texts.append(string(path, at + ".content", context.get("content", "")))
        chat.trace.note("context-items", CONTEXT, at)
    texts.append(_text(chat, path, where + ".message.content", message.get("content")))
    chat.add({"role": "user", "content": "\n\n".join(t for t in texts if t)}, where)


def _assistant(chat: Conversation, path: str, where: str, item: dict, message: dict, thoughts: list[str]) -> None:
    at = where + ".message"
    text = _text(chat, path, at + ".content", message.get("content"))
    calls = []
    for place, delta in objects(path, at + ".toolCalls", message.get("toolCalls") or [], "a tool call"):
        function = expect_object(path, place + ".function", delta.get("function"))
        calls.append(
            {
                "id": string(path, place + ".id", delta.get("id")),
                "type": "function",
                "function": {
                    "name": string(path, place + ".function.name", function.get("name")),
                    "arguments": string(path, place + ".function.arguments", function.get("arguments", "{}")),
                },
            }
        )
    clean = chat.check(assistant_message([text] if text else [], thoughts, calls), where)
    model = None
    for log_at, log in objects(path, where + ".promptLogs", item.get("promptLogs") or [], "a prompt log"):
        options = optional_object(path, log_at + ".completionOptions", log.get("completionOptions")) or {}
        model = optional_text(path, log_at + ".completionOptions.model", options.get("model")) or model
    chat.call(where, model, None, clean, None)
    chat.messages.append(clean)


LOCATIONS = (
    Location(
        "continue", ".continue/sessions", ("*.json",), env="CONTINUE_GLOBAL_DIR", below_env="sessions", project_depth=0
    ),
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    ContinueReader,
    records=single_record,
    sessions=True,
    locations=LOCATIONS,
    starts=starts_like_session,
    records_what="messages, context items and the model; no token usage, no tool definitions",
)
