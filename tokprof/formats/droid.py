"""Droid (Factory) sessions: ``~/.factory/sessions/<workspace>/<session>.jsonl`` and the
``<session>.settings.json`` beside it.

Where: ``$FACTORY_DIR/sessions`` when that is set (codeburn's Droid reader), else
``~/.factory/sessions`` (Linux, macOS and Windows alike: below the user's folder), and newer versions'
``~/.factory/projects/<workspace>/<id>.jsonl`` (cli-continues reads both). Droid is closed
source: the shapes are those the readers of ccusage (``adapter/droid``) and codeburn
(``providers/droid.ts``) read, and sessions other projects commit as fixtures.

* The transcript, one record a line: ``{type: "session_start", id, title, cwd, ...}``, then
  ``{type: "message", id, timestamp, message: {role: user | assistant, content}}`` with
  Anthropic-like content (a string, or ``text``, ``thinking``, ``tool_use`` ``{id, name, input}``,
  ``tool_result`` ``{tool_use_id, content}``, ``image`` blocks). Other record types are skipped
  (``unknown-record``) but ``todo_state`` (the agent's own list); ``compaction_state`` (``summaryText``)
  is a compaction: later prompts start from its summary (``compaction``).
* The settings: ``{model, providerLock, providerLockTimestamp, tokenUsage{inputTokens,
  outputTokens, cacheCreationTokens, cacheReadTokens, thinkingTokens}}``.

**Calls.** Each assistant message is a call; its prompt is the transcript before it.

**Usage.** Droid keeps no usage per call, only the session's ``tokenUsage`` in the settings file,
shown as it is in the note ``session-totals`` (the calls' usage is "not recorded", never 0; no share of
it is made up per call). The calls' model is the settings' ``model``. The system prompt and tool
definitions are not recorded (``unrecorded``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tokprof.base.errors import InputError
from tokprof.formats.agent_blocks import add_user, assistant
from tokprof.formats.conversation import Conversation
from tokprof.formats.folds import SessionFold
from tokprof.formats.fields import expect_object, optional_object, optional_string, string
from tokprof.formats.jsonfile import Document, load
from tokprof.formats.locations import Location
from tokprof.formats.neutral import check_count, optional_text, parse_time
from tokprof.formats.reader import LogFormat
from tokprof.trace import Call, Trace

FORMAT = "droid"
DESCRIPTION = "Droid (Factory) sessions (~/.factory/sessions/<workspace>/<id>.jsonl and its .settings.json)"
SETTINGS = ".settings.json"
TOTALS = ("inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens", "thinkingTokens")

SESSION_TOTALS = (
    "Droid records no usage per call, only the session's tokenUsage (in <session>.settings.json), shown as "
    "Droid stored it: the calls' usage is not recorded"
)
NO_SETTINGS = "no <session>.settings.json beside the transcript: neither the model nor any usage is known"
UNKNOWN = "record types this reader does not know were skipped"
COMPACTION = (
    "a compaction (compaction_state): later prompts start from its summaryText, rendered as user text without "
    "Droid's wrapping; the call that summarised is not recorded"
)
QUIET = ("todo_state",)  # the agent's own state: not sent


def sniff(doc: Document) -> bool:
    if doc.lines is None:
        return False
    head = [value for _, value in doc.lines.head(5)]
    first = head[0] if head else None
    return (
        isinstance(first, dict)
        and first.get("type") == "session_start"
        and isinstance(first.get("id"), str)
        and any(
            isinstance(v, dict) and v.get("type") == "message" and isinstance(v.get("message"), dict) for v in head[1:]
        )
    )


class DroidReader(SessionFold):
    """A Droid session read as a fold (#43.1): the settings beside it first, then each line as it is fed,
    each assistant message's call given at once (its project the ``session_start`` line's ``cwd``)."""

    expected = "expected a Droid session (JSON lines)"

    def __init__(self, path: str, doc: Document | None) -> None:
        super().__init__(Trace(path=path, format=FORMAT, unrecorded=("system", "tools")))
        self.settings: dict | None = None
        self.model: str | None = None
        self.started = False
        self.chat = Conversation(self.trace, self.made)
        self.cwd: str | None = None

    def line(self, number: int, value: Any) -> None:
        path, trace, chat, where = self.trace.path, self.trace, self.chat, f"line {number}"
        if not self.started:  # the settings' notes come first, as the file's lines are read after them
            self.started = True
            self.settings = _settings(path, trace)
            settings = self.settings
            self.model = optional_text(str(_settings_path(path)), "model", settings.get("model")) if settings else None
        record = expect_object(path, where, value, "a JSON object")
        kind = record.get("type")
        if kind == "session_start":
            trace.session = trace.session or optional_string(path, where + ": id", record.get("id"))
            self.cwd = optional_text(path, where + ": cwd", record.get("cwd")) or self.cwd
        elif kind == "message":
            call = _message(chat, path, where, record, self.model)
            if call is not None:
                call.cwd = self.cwd
        elif kind == "compaction_state":
            summary = string(path, where + ": summaryText", record.get("summaryText"))
            trace.compactions += 1
            trace.note("compaction", COMPACTION, where)
            chat.replace([chat.check({"role": "user", "content": summary}, where)])
        elif kind in QUIET:
            return
        else:
            trace.note("unknown-record", UNKNOWN, where)

    def end(self) -> None:
        if not self.made.count:
            raise InputError(self.trace.path, None, "no model call (assistant message) in the session")


def _message(chat: Conversation, path: str, where: str, record: dict, model: str | None) -> Call | None:
    message = expect_object(path, where + ": message", record.get("message"))
    role = message.get("role")
    content = message.get("content", [])
    if role == "user":
        add_user(chat, path, where + ": message.content", content)
        return None
    if role == "assistant":
        clean = assistant(chat, path, where + ": message.content", content)
        call = chat.call(where, model, None, clean, parse_time(record.get("timestamp")))
        chat.messages.append(clean)
        return call
    raise InputError(path, where + ": message.role", f"expected user or assistant, found {role!r}")


def _settings_path(path: str) -> Path:
    transcript = Path(path)
    return transcript.with_name(transcript.name.removesuffix(".jsonl") + SETTINGS)


def _settings(path: str, trace: Trace) -> dict | None:
    """The settings beside the transcript, and the note of its totals."""
    settings_path = _settings_path(path)
    if not settings_path.is_file():
        trace.note("no-settings", NO_SETTINGS)
        return None
    where = str(settings_path)
    with load(where) as doc:
        if doc.lines is not None:
            raise InputError(where, None, "expected one JSON object")
        settings = expect_object(where, None, doc.value)
    usage = optional_object(where, "tokenUsage", settings.get("tokenUsage"))
    if usage is not None:
        counts: dict[str, Any] = {key: check_count(where, f"tokenUsage.{key}", usage.get(key)) for key in TOTALS}
        shown = ", ".join(f"{key} {value:,}" for key, value in counts.items() if value is not None)
        if shown:
            trace.note("session-totals", SESSION_TOTALS, f"{settings_path.name}: {shown}")
    return settings


LOCATIONS = tuple(
    Location("droid", f".factory/{folder}", ("*/*.jsonl", "*.jsonl"), env="FACTORY_DIR", below_env=folder)
    for folder in ("sessions", "projects")
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    DroidReader,
    sessions=True,
    locations=LOCATIONS,
    records_what="messages and the session's token totals; no usage per call, no system prompt or tools",
)
