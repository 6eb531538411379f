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

from tokprof.base.errors import InputError
from tokprof.formats.agent_blocks import add_user, assistant
from tokprof.formats.conversation import Conversation, finish
from tokprof.formats.fields import expect_object
from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import Location
from tokprof.formats.reader import whole_read_format
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


def read(path: str, doc: Document) -> Trace:
    if doc.lines is None:
        raise InputError(path, None, "expected a Cursor agent transcript (JSON lines)")
    trace = Trace(path=path, format=FORMAT, unrecorded=("system", "tools"))
    chat = Conversation(trace)
    for number, value in doc.lines:
        where = f"line {number}"
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
    if not trace.calls:
        raise InputError(path, None, "no model call (assistant line) in the transcript")
    trace.note("no-usage", NO_USAGE)
    return finish(trace)


LOCATIONS = (Location("cursor", ".cursor/projects", ("*/agent-transcripts/*/*.jsonl",), project_depth=3),)

LOG_FORMAT = whole_read_format(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    read,
    sessions=True,
    locations=LOCATIONS,
    records_what="messages and tool calls; no usage, no times, no system prompt or tools",
)
