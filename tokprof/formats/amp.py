"""Amp threads: ``~/.local/share/amp/threads/T-<uuid>.json``, one JSON document per thread.

Where: ``$AMP_DATA_DIR/threads`` (a comma-separated list is read whole; ccusage's Amp reader), else
``$XDG_DATA_HOME/amp/threads``, else ``~/.local/share/amp/threads`` (the same on macOS; Windows:
``~/.local/share/amp`` below the user's folder, as Amp's CLI writes it), and the VS Code extension's
older store ``<editor storage>/sourcegraph.amp/threads3/``. Amp is closed source: the shapes below are
those the readers of ccusage (``adapter/amp``), agentsview (``parser/amp.go``) and casr
(``providers/amp.rs``) read from real threads.

* The thread: ``{v, id: "T-…", created (ms), title, env.initial.trees[{displayName, uri}],
  messages[], usageLedger.events[]}``.
* A message: ``{role: user | assistant | info, messageId, content[], state, usage, meta}``; content
  blocks are Anthropic-like: ``text``, ``thinking``, ``redacted_thinking``, ``image``, ``tool_use``
  ``{id, name, input}``, and ``tool_result`` ``{toolUseID, run: {status, result | progress | error}}``
  (``tool_use_id``/``content`` in Anthropic's own shape are read too).
* Usage, on each assistant message: ``usage{model, inputTokens, outputTokens,
  cacheCreationInputTokens, cacheReadInputTokens, totalInputTokens, timestamp, credits}``.
  ``inputTokens`` excludes the cache (``totalInputTokens`` is their sum): ``prompt`` = ``inputTokens +
  cacheCreationInputTokens + cacheReadInputTokens``. Older threads keep usage in
  ``usageLedger.events[{model, tokens{input, output}, toMessageId, credits}]`` instead: an event is
  the usage of the assistant message it names (its cache counts from that message, when it has them);
  a ``title-generation`` event is the call that titled the thread, not a turn: it is not read. A call's
  model is its usage's ``model``, else the thread's ``env.initial.tags`` ``model:<id>`` (the
  cli-continues reader reads it there).

**Calls.** Each assistant message is a call; its prompt is the thread before it (``info`` messages are
Amp's own, not sent: ``info-message``). An assistant message without usage is a call whose usage is
not recorded (``no-usage``). Amp records neither its system prompt nor its tool definitions
(``unrecorded``). Amp's credits are summed in the note ``log-credits``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokprof.base.errors import InputError
from tokprof.formats.agent_blocks import add_user, anthropic_result, assistant
from tokprof.formats.conversation import Conversation, tool_text
from tokprof.formats.folds import DocumentFold
from tokprof.formats.fields import expect_object, objects, optional_object, string
from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import EDITOR_STORAGE, Location
from tokprof.formats.neutral import anthropic_usage, check_count, optional_text, parse_time
from tokprof.formats.reader import LogFormat, single_record
from tokprof.trace import Call, Trace, Usage

FORMAT = "amp"
DESCRIPTION = "Amp threads (~/.local/share/amp/threads/T-*.json)"

USAGE_FIELDS = ("inputTokens", "outputTokens", "cacheCreationInputTokens", "cacheReadInputTokens")
NO_USAGE = "assistant messages without usage (cancelled, still running): calls whose usage is not recorded"
INFO = "info messages (summaries, notices) are Amp's own: not sent to the model"
CREDITS = "the credits Amp recorded for these calls"
LEDGER = "usage read from the thread's usageLedger events (older threads), matched to messages by toMessageId"


_STARTS = re.compile(rb'"id"\s*:\s*"T-[0-9A-Za-z-]{8,}"')


def starts_like_thread(head: bytes) -> bool:
    """A file whose first bytes are an Amp thread's (its ``id`` ``T-…`` among its first keys)."""
    return head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{" and _STARTS.search(head[:1024]) is not None


def sniff(doc: Document) -> bool:
    value = doc.single_value()
    return (
        isinstance(value, dict)
        and isinstance(value.get("id"), str)
        and value["id"].startswith("T-")
        and isinstance(value.get("messages"), list)
        and ("created" in value or "v" in value)
    )


class AmpReader(DocumentFold):
    """An Amp thread read as a fold over its one record (#43.1): each assistant message's call given as
    it is read."""

    def __init__(self, path: str, doc: Document | None) -> None:
        super().__init__(Trace(path=path, format=FORMAT, unrecorded=("system", "tools")))
        self.thread = doc is not None and sniff(doc)
        self.cwd: str | None = None

    def read(self, value: Any) -> Iterator[None]:
        path, trace = self.trace.path, self.trace
        if not self.thread:
            raise InputError(path, None, 'expected an Amp thread: {id: "T-…", created, messages: [...]}')
        thread = expect_object(path, None, value)
        trace.session = thread["id"]
        ledger = _ledger(path, thread)
        self.cwd = _cwd(thread)
        default_model = _tagged_model(thread)
        chat = Conversation(trace, self.made)
        credits: list[float] = []
        for where, message in objects(path, "messages", thread["messages"], "a message object"):
            role = message.get("role")
            if role == "user":
                add_user(chat, path, where + ".content", message.get("content", []), _result)
            elif role == "assistant":
                _assistant(chat, path, where, message, ledger, credits, default_model)
            elif role == "info":
                trace.note("info-message", INFO, where)
            else:
                raise InputError(path, where + ".role", f"expected user, assistant or info, found {role!r}")
            yield
        if not self.made.count:
            raise InputError(path, "messages", "no model call (assistant message) in the thread")
        if credits:
            trace.note("log-credits", CREDITS, f"{sum(credits):g} credits in all")

    def given(self, calls: list[Call]) -> list[Call]:
        for call in calls:
            call.cwd = self.cwd
        return calls


def _cwd(thread: dict) -> str | None:
    env = thread.get("env")
    initial = env.get("initial") if isinstance(env, dict) else None
    trees = initial.get("trees") if isinstance(initial, dict) else None
    if isinstance(trees, list) and trees and isinstance(trees[0], dict):
        uri = trees[0].get("uri")
        if isinstance(uri, str) and uri.startswith("file://"):
            return uri.removeprefix("file://")
    return None


def _ledger(path: str, thread: dict) -> dict[Any, tuple[str, dict]]:
    """The usage ledger's events by the message they answer (``toMessageId``)."""
    ledger = optional_object(path, "usageLedger", thread.get("usageLedger"))
    if ledger is None or ledger.get("events") is None:
        return {}
    out: dict[Any, tuple[str, dict]] = {}
    for where, event in objects(path, "usageLedger.events", ledger["events"], "an event object"):
        if event.get("operationType") == "title-generation":
            continue  # the call that titled the thread: not a turn of the conversation
        target = event.get("toMessageId")
        if isinstance(target, (int, str)) and not isinstance(target, bool):
            out[target] = (where, event)
    return out


def _result(path: str, at: str, block: dict) -> tuple[str, str]:
    """Amp's ``{toolUseID, run: {status, result | progress | error}}``, or Anthropic's own shape."""
    run = optional_object(path, at + ".run", block.get("run"))
    if run is None and "tool_use_id" in block:
        return anthropic_result(path, at, block)
    call_id = string(path, at + ".toolUseID", block.get("toolUseID"))
    for key in ("result", "progress", "error"):
        if run is not None and run.get(key) is not None:
            return call_id, tool_text(run[key])
    return call_id, ""


def _tagged_model(thread: dict) -> str | None:
    """The thread's model from its ``env.initial.tags`` (``model:<id>``), when it has one."""
    env = thread.get("env")
    initial = env.get("initial") if isinstance(env, dict) else None
    tags = initial.get("tags") if isinstance(initial, dict) else None
    for tag in tags if isinstance(tags, list) else []:
        if isinstance(tag, str) and tag.startswith("model:") and len(tag) > 6:
            return tag.removeprefix("model:")
    return None


def _assistant(
    chat: Conversation,
    path: str,
    where: str,
    message: dict,
    ledger: dict,
    credits: list[float],
    default_model: str | None = None,
) -> None:
    clean = assistant(chat, path, where + ".content", message.get("content", []))
    usage_object = optional_object(path, where + ".usage", message.get("usage"))
    usage, model, when = _usage(path, where + ".usage", usage_object)
    if usage is None and message.get("messageId") in ledger:
        usage, model = _event(path, ledger[message["messageId"]], usage_object)
        chat.trace.note("usage-ledger", LEDGER, where)
    if usage is None:
        chat.trace.note("no-usage", NO_USAGE, where)
    for source in (usage_object, ledger.get(message.get("messageId"), ("", {}))[1]):
        value = source.get("credits") if isinstance(source, dict) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e9:
            credits.append(float(value))
            break
    meta = message.get("meta")
    time = parse_time(when) or parse_time(meta.get("sentAt") if isinstance(meta, dict) else None)
    model = model or optional_text(path, where + ".model", message.get("model")) or default_model
    chat.call(where, model, usage, clean, time)
    chat.messages.append(clean)


def _usage(path: str, where: str, usage: dict | None) -> tuple[Usage | None, str | None, Any]:
    if usage is None:
        return None, None, None
    counts = {key: check_count(path, f"{where}.{key}", usage.get(key)) for key in USAGE_FIELDS}
    model = optional_text(path, where + ".model", usage.get("model"))
    if not any(counts.values()):
        return None, model, usage.get("timestamp")
    return (
        anthropic_usage(
            {
                "input_tokens": counts["inputTokens"] or 0,
                "output_tokens": counts["outputTokens"],
                "cache_creation_input_tokens": counts["cacheCreationInputTokens"] or 0,
                "cache_read_input_tokens": counts["cacheReadInputTokens"] or 0,
            }
        ),
        model,
        usage.get("timestamp"),
    )


def _event(path: str, found: tuple[str, dict], usage: dict | None) -> tuple[Usage | None, str | None]:
    where, event = found
    tokens = expect_object(path, where + ".tokens", event.get("tokens"))
    fresh = check_count(path, where + ".tokens.input", tokens.get("input"))
    output = check_count(path, where + ".tokens.output", tokens.get("output"))
    model = optional_text(path, where + ".model", event.get("model"))
    if not fresh and not output:
        return None, model
    usage = usage or {}
    write = check_count(path, "cacheCreationInputTokens", usage.get("cacheCreationInputTokens")) or 0
    read = check_count(path, "cacheReadInputTokens", usage.get("cacheReadInputTokens")) or 0
    return (
        anthropic_usage(
            {
                "input_tokens": fresh or 0,
                "output_tokens": output,
                "cache_creation_input_tokens": write,
                "cache_read_input_tokens": read,
            }
        ),
        model,
    )


LOCATIONS = (
    Location("amp", ".local/share/amp", ("threads/T-*.json",), env="AMP_DATA_DIR", project_depth=0, several=True),
    Location("amp", ".local/share/amp", ("threads/T-*.json",), env="XDG_DATA_HOME", below_env="amp", project_depth=0),
    Location(
        "amp", "", tuple(f"{storage}/sourcegraph.amp/threads3/T-*.json" for storage in EDITOR_STORAGE), project_depth=0
    ),
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    AmpReader,
    records=single_record,
    sessions=True,
    locations=LOCATIONS,
    starts=starts_like_thread,
    records_what="per-call usage (cache reads and writes) and credits; no system prompt or tool definitions",
)
