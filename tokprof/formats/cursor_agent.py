"""Cursor's agent transcripts: ``~/.cursor/projects/<project>/agent-transcripts/<id>/<id>.jsonl``.

Cursor's newer agent (Composer 2, and the ``cursor-agent`` command line) writes each conversation as
JSON lines ``{role: user | assistant, message: {content: [...]}}`` with Anthropic-like content blocks
(``text``, ``thinking``, ``tool_use`` ``{id, name, input}``, ``tool_result`` ``{tool_use_id,
content}``), below the user's folder on Linux, macOS and Windows. The shapes are those codeburn's
(``providers/cursor-agent.ts``, and its fixture of a real transcript) and cli-continues'
(``parsers/cursor.ts``) readers read. The user's text comes wrapped in ``<user_query>`` tags, as
Cursor sends it: kept as sent.

**Calls.** Each assistant line is a call; its prompt is the transcript before it.

**Usage.** The transcripts record no usage and no time: every call's usage is "not recorded"
(``no-usage``), never 0; Cursor's store (``state.vscdb``, format ``cursor``) holds what counts it keeps.
The system prompt and tool definitions are not recorded (``unrecorded``).
"""

from __future__ import annotations

from typing import Any

from tokprof.base.errors import InputError
from tokprof.formats.agent_blocks import add_user, assistant
from tokprof.formats.conversation import Conversation
from tokprof.formats.folds import SessionFold
from tokprof.formats.fields import expect_object
from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import Location
from tokprof.formats.reader import LogFormat
from tokprof.trace import Trace

FORMAT = "cursor-agent"
DESCRIPTION = "Cursor agent transcripts (~/.cursor/projects/<project>/agent-transcripts/<id>/<id>.jsonl)"
NO_USAGE = "Cursor's agent transcripts record no usage: the calls' usage is not recorded"


def _line(value: object) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {"role", "message"}
        and value["role"] in ("user", "assistant")
        and isinstance(value["message"], dict)
        and isinstance(value["message"].get("content"), list)
    )


def sniff(doc: Document) -> bool:
    if doc.lines is None:
        return False
    head = [value for _, value in doc.lines.head(5)]
    return bool(head) and all(_line(value) for value in head)


class CursorAgentReader(SessionFold):
    """A Cursor agent transcript read as a fold (#43.1): each line as it is fed, each assistant line's
    call given at once."""

    expected = "expected a Cursor agent transcript (JSON lines)"

    def __init__(self, path: str, doc: Document | None) -> None:
        super().__init__(Trace(path=path, format=FORMAT, unrecorded=("system", "tools")))
        self.chat = Conversation(self.trace, self.made)

    def line(self, number: int, value: Any) -> None:
        path, chat, where = self.trace.path, self.chat, f"line {number}"
        line = expect_object(path, where, value, "a JSON object")
        message = expect_object(path, where + ": message", line.get("message"))
        role = line.get("role")
        if role == "user":
            add_user(chat, path, where + ": message.content", message.get("content", []))
        elif role == "assistant":
            clean = assistant(chat, path, where + ": message.content", message.get("content", []))
            chat.call(where, None, None, clean, None)
            chat.messages.append(clean)
        else:
            raise InputError(path, where + ": role", f"expected user or assistant, found {role!r}")

    def end(self) -> None:
        if not self.made.count:
            raise InputError(self.trace.path, None, "no model call (assistant line) in the transcript")
        self.trace.note("no-usage", NO_USAGE)


LOCATIONS = (Location("cursor", ".cursor/projects", ("*/agent-transcripts/*/*.jsonl",), project_depth=3),)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    CursorAgentReader,
    sessions=True,
    locations=LOCATIONS,
    records_what="messages and tool calls; no usage, no times, no system prompt or tools",
)
