"""Cline, Roo Code and Kilo Code task folders: ``<globalStorage>/<extension id>/tasks/<task id>/``.

The three agents (Roo Code is a fork of Cline, Kilo Code a fork of Roo Code) keep a task in one folder
(checked against cline/cline's ``src/core/storage/disk.ts``, ``src/core/task/index.ts`` and
``src/shared/ExtensionMessage.ts`` before its SDK migration, and RooCodeInc/Roo-Code's
``src/core/task-persistence/`` and ``src/core/task/Task.ts``):

* ``api_conversation_history.json``: the messages sent to the model, Anthropic-shaped
  (``{role, content}``, content a string or blocks ``text``, ``image``, ``thinking``, ``tool_use``,
  ``tool_result``), each with ``ts`` (milliseconds) in newer versions; Cline adds ``modelInfo``
  (``modelId``, ``providerId``) and ``metrics`` to assistant messages, Roo Code adds ``condenseId`` /
  ``condenseParent``, ``truncationId`` / ``truncationParent`` (non-destructive condensing) and stored
  ``{type: "reasoning"}`` items. It is what tokprof reads: the path given, or the task folder;
* ``ui_messages.json``: what the chat panel shows, ``{ts, type: ask|say, say, ask, text, ...}``. A
  ``say == "api_req_started"`` entry is one API request; its ``text`` is JSON ``{request, tokensIn,
  tokensOut, cacheWrites, cacheReads, cost, cancelReason, streamingFailedMessage}`` (Roo Code adds
  ``apiProtocol``; very old versions put the counts in a following ``api_req_finished`` entry).
  Each entry records ``conversationHistoryDeletedRange``, the part of the history Cline's context
  truncation left out;
* ``task_metadata.json``: ``model_usage[{ts, model_id, model_provider_id, mode}]``,
  ``environment_history[{cline_version, ...}]``, ``files_in_context``.

**Calls.** Each ``api_req_started`` entry is one request. Its response is the assistant message
the history gained after it (the first assistant message whose ``ts`` is at or after the request's
and before the next request's; without timestamps, the k-th assistant message answers the k-th
request; a request without usage that left no message is passed over when that makes them pair),
and its prompt is the history before that response (without a response: the history
as it stood before the next request). A request whose counts are all zero or absent is not a billed
call and is left out (note ``not-billed``): a request that failed before its first chunk and was
retried (``error_retry``, ``api_req_failed``: the retry updates the same entry), one cancelled
before anything streamed, one the agent removed. A cancelled or failed request with usage is a
billed call. The prompt leaves out what the agent left out: Cline's truncation keeps the messages
before the deleted range (the first two; the first alone in older versions) and those after its end; Roo Code starts the prompt at the latest
condensing summary (``isSummary``) in it and hides a message whose ``condenseParent``
(``truncationParent``) names a summary (marker) in the prompt; tool results whose call was cut off
go too. Cline's in-place edits of earlier messages (``context_history.json``,
e.g. a file read replaced by a notice) are not applied (note ``context-edits``).

**Messages.** ``text`` blocks are text; a user message's ``tool_result`` blocks become tool
messages; an assistant message's ``tool_use`` blocks tool calls and ``thinking`` blocks reasoning;
images and documents are left out (note ``content-not-text``). A user text block that starts a tool's
result (``[read_file for 'x'] Result:``, any tool) answering a native ``tool_use`` call of the
assistant message before it (Cline 3.51) is that call's tool message, with the text blocks after it
up to the environment details. With no such call (Cline's and Roo Code's XML tool protocol, the call
written in the assistant's text) it is kept as the user text the model was sent, so it counts in
``conversation`` (note ``text-tool-results``).

**Usage.** ``tokensIn`` is the provider's input count less the cache in Cline (and in Roo Code
before 3.30), so the prompt is ``tokensIn + cacheWrites + cacheReads``; Roo Code since (and Cline's
generic OpenAI-compatible provider) writes the whole prompt, cache included, in ``tokensIn``. A file
in which every request with cache tokens has ``tokensIn`` at least its cache tokens is read the
second way (note ``usage-includes-cache``). Output is ``tokensOut``. ``cost`` is what the agent
computed (note ``log-cost``, beside tokprof's own priced cost); ``deleted_api_reqs`` entries (the
sums of requests whose messages were deleted) are named in a note, not profiled.

**Project.** A call's working directory is the one the first environment details in its prompt
name (``# Current Working Directory (/path) Files``; Roo Code: ``Workspace``).

**Models.** A call's model is its response's ``modelInfo.modelId``, else the ``task_metadata.json``
``model_usage`` entry in force at the request (an open model routed through OpenRouter, such as
``qwen/qwen3-coder``, is counted exactly where tokprof embeds it).

**What is not recorded.** The system prompt and the tool definitions: :attr:`Trace.unrecorded` is
``("system", "tools")``, inferred from usage as for Claude Code.
"""

from __future__ import annotations

import bisect
import json
import math
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from collections.abc import Iterator
from typing import Any

from tokprof.base.errors import InputError
from tokprof.formats.conversation import Conversation
from tokprof.formats.folds import Made
from tokprof.formats.fields import (
    check_text,
    expect_list,
    expect_object,
    nonempty_string,
    object_or_string,
    objects,
    string,
)
from tokprof.formats.jsonfile import Document, load
from tokprof.formats.locations import CLINE_TASK, Location, vscode_tasks
from tokprof.formats.reader import LogFormat, Reader, Record, single_record
from tokprof.formats.jsonfile import kind_of as _kind
from tokprof.formats.jsonfile import parse
from tokprof.formats.neutral import assistant_message, check_count, parse_time
from tokprof.formats.shared_prompts import SharedPrompts
from tokprof.base.text import visible
from tokprof.trace import Call, PromptView, Trace, Usage, extended

FORMAT = "cline"
DESCRIPTION = "Cline, Roo Code or Kilo Code task (tasks/<task id>/api_conversation_history.json, or the task folder)"

HISTORY = "api_conversation_history.json"
UI_MESSAGES = "ui_messages.json"
METADATA = "task_metadata.json"
CONTEXT_HISTORY = "context_history.json"
#: The task folder's other files: read with the history, never sessions of their own.
COMPANIONS = (UI_MESSAGES, METADATA, CONTEXT_HISTORY, "history_item.json", "settings.json", "claude_messages.json")
MARKERS = ("<task>", "<environment_details>", "<user_message>", "<feedback>")
COUNTS = ("tokensIn", "tokensOut", "cacheWrites", "cacheReads")
#: The working directory in the environment details the agents add to user messages (Cline, Roo Code).
CWD = re.compile(r"# Current (?:Working|Workspace) Directory \((.{1,4096}?)\) Files")

NOT_BILLED = (
    "API requests with no usage (failed before the first chunk and retried, cancelled before anything "
    "streamed) are not billed calls: left out"
)
INCLUDES_CACHE = (
    "tokensIn includes the cache reads and writes in this file (every request with cache tokens has tokensIn "
    "at least those): the prompt is tokensIn"
)
TEXT_RESULTS = (
    "tool results sent as user text ([tool for 'x'] Result:) after a tool call written in the assistant's text "
    "(the XML tool protocol) are kept as that text and count in conversation, not tool_results"
)
#: A text block that starts a tool's result: ``[read_file for 'x'] Result:`` (any tool; MCP tools too).
RESULT_HEADER = re.compile(r"\[([A-Za-z0-9_.:-]{1,200})(?: for [^\]\n]{0,4096})?\] Result:")
CONTEXT_EDITS = (
    "context_history.json records the agent's edits of earlier messages in later prompts (file reads replaced "
    "by notices): not applied, so those prompts may count more than was sent"
)
NO_UI = "no ui_messages.json beside the history: the calls report no usage"
UNPAIRED = "the API requests and the history's assistant messages do not pair one to one: paired in order"
LOG_COST = "the cost the agent itself computed for these calls (its own cost field), beside the one tokprof computes"
DELETED = "requests whose messages were deleted from the task (deleted_api_reqs) are not profiled"
REASONING = "stored reasoning items (encrypted or summarised) are left out of the prompt: their tokens are in the usage"


@dataclass(frozen=True)
class Request:
    """One ``api_req_started`` entry."""

    where: str
    ts: float | None
    counts: tuple[int | None, ...]  # tokensIn, tokensOut, cacheWrites, cacheReads
    cost: float | None
    deleted: tuple[int, int] | None  # conversationHistoryDeletedRange in force
    listed: bool = True  # from ui_messages.json (False: an assistant message of a task without it)

    @property
    def billed(self) -> bool:
        return any(self.counts)


# -- detection -------------------------------------------------------------------------------------
def history_file(path: str) -> str | None:
    """The history file of a task folder (None when ``path`` is not a folder holding one)."""
    candidate = os.path.join(path, HISTORY)
    return candidate if os.path.isdir(path) and os.path.isfile(candidate) else None


def _is_reasoning_item(message: Any) -> bool:
    return isinstance(message, dict) and message.get("type") == "reasoning" and "role" not in message


def _first_text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content[:20000]
    texts = [b.get("text") for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    return "\n".join(t for t in texts if isinstance(t, str))[:20000]


def sniff(doc: Document) -> bool:
    value = doc.single_value()
    if not isinstance(value, list) or not value:
        return False
    head = [m for m in value[:5] if not _is_reasoning_item(m)]
    if not head or not all(
        isinstance(m, dict) and m.get("role") in ("user", "assistant") and isinstance(m.get("content"), (str, list))
        for m in head
    ):
        return False
    if head[0]["role"] != "user":
        return False
    return any(isinstance(m.get("ts"), (int, float)) for m in head) or any(k in _first_text(head[0]) for k in MARKERS)


# -- reading ---------------------------------------------------------------------------------------
class ClineReader(Reader):
    """A Cline task read as a fold over its one record, the history (the folder's companion files read
    with it): each call is given as it is made, the reader holds the history and the requests, not the
    calls (#43.1)."""

    def __init__(self, path: str, doc: Document | None) -> None:
        folder = Path(path).parent
        self.trace = Trace(path=path, format=FORMAT, unrecorded=("system", "tools"), session=folder.name or None)
        self.made = Made()

    def feed(self, record: Record) -> Iterator[Call]:
        path, trace = self.trace.path, self.trace
        history = expect_list(path, None, record.value, f"a list of messages (a Cline task's {HISTORY})")
        folder = Path(path).parent
        converted = _convert(trace, history)
        ui_path = folder / UI_MESSAGES
        if ui_path.is_file():
            requests = _requests(trace, str(ui_path), _companion(str(ui_path), list))
        else:
            trace.note("no-usage", NO_UI)
            requests = [
                Request(f"[{i}]", None, (None,) * 4, None, None, listed=False)
                for i, m in enumerate(history)
                if isinstance(m, dict) and m.get("role") == "assistant"
            ]
        models = _model_usage(folder / METADATA)
        if (folder / CONTEXT_HISTORY).is_file() and _companion(str(folder / CONTEXT_HISTORY), (list, dict)):
            trace.note("context-edits", CONTEXT_EDITS)
        for call in _calls(trace, history, converted, requests, models):
            self.made.add(call)
            yield from self.made.take()

    def finish(self) -> Iterator[Call]:
        self.trace.model = self.made.model()
        return iter(())


def _companion(path: str, kinds: Any) -> Any:
    """A companion file's value (a list or object), or an error naming it."""
    with load(path) as doc:
        value = doc.single_value()
    if kinds is list:
        return expect_list(path, None, value)
    if kinds is dict:
        return expect_object(path, None, value)
    if not isinstance(value, kinds):
        raise InputError(path, None, f"expected a JSON list or object, found {_kind(value)}")
    return value


def _convert(trace: Trace, history: list) -> list[list[dict]]:
    """Each history entry's neutral messages, in order (none for stored reasoning items)."""
    chat = Conversation(trace)
    out: list[list[dict]] = []
    pending: dict[str, list[str]] = {}  # the last assistant message's tool_use ids not answered yet, by name
    for i, message in enumerate(history):
        where = f"[{i}]"
        if _is_reasoning_item(message):
            trace.note("reasoning-items", REASONING, where)
            out.append([])
            continue
        message = expect_object(trace.path, where, message, "a message object")
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise InputError(trace.path, where + ".role", f"expected user or assistant, found {role!r}")
        blocks = _blocks(trace.path, where + ".content", message.get("content"))
        if role == "user":
            out.append([chat.check(m, where) for m in _user(chat, blocks, pending)])
        else:
            clean = chat.check(_assistant(chat, blocks, message), where)
            pending = {}
            for call in clean.get("tool_calls") or ():
                if isinstance(call.get("id"), str):
                    pending.setdefault(call["function"]["name"], []).append(call["id"])
            out.append([clean])
    return out


def _blocks(path: str, where: str, content: Any) -> list[tuple[str, dict]]:
    if isinstance(content, str):
        return [(where, {"type": "text", "text": content})]
    if not isinstance(content, list):
        raise InputError(path, where, f"expected a string or a list of content blocks, found {_kind(content)}")
    out = []
    for j, block in enumerate(content):
        at = f"{where}[{j}]"
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise InputError(path, at, "expected a content block with a string type")
        out.append((at, block))
    return out


def _text(path: str, where: str, block: dict, key: str = "text") -> str:
    return string(path, f"{where}.{key}", block.get(key))


def _answered(pending: dict[str, list[str]], name: str) -> str | None:
    """The tool_use a text result answers: the first unanswered call of its tool, else of any tool."""
    calls = pending.get(name) or next((ids for ids in pending.values() if ids), None)
    return calls.pop(0) if calls else None


def _user(chat: Conversation, blocks: list[tuple[str, dict]], pending: dict[str, list[str]]) -> list[dict]:
    """A user message's tool messages, then its text. A text block that starts a tool's result
    (``[read_file for 'x'] Result:``, with the text blocks after it up to the next such block or the
    environment details) is the result of the tool_use it answers when the assistant called tools
    natively (Cline 3.51 sends its results so): a tool message (#48.2). With no such call (the XML
    tool protocol, the call in the assistant's text) it stays the user text it was sent as."""
    path = chat.trace.path
    results: list[dict] = []
    texts: list[str] = []
    pieces_of: dict[int, list[str]] = {}  # a text result's place in results -> its text blocks
    result: list[str] | None = None  # the text blocks of the text result being read
    for at, block in blocks:
        kind = block["type"]
        if kind == "text":
            text = _text(path, at, block)
            header = RESULT_HEADER.match(text)
            call_id = _answered(pending, header.group(1)) if header else None
            if call_id is not None:
                result = pieces_of[len(results)] = [text]
                results.append({"role": "tool", "tool_call_id": call_id, "content": ""})
                continue
            if result is not None and not header and not text.lstrip().startswith(MARKERS):
                result.append(text)
                continue
            result = None
            if header:
                chat.trace.note("text-tool-results", TEXT_RESULTS, at)
            texts.append(text)
        elif kind == "tool_result":
            result = None
            call_id = string(path, at + ".tool_use_id", block.get("tool_use_id"))
            for ids in pending.values():
                if call_id in ids:
                    ids.remove(call_id)
            content = block.get("content")
            parts = [] if content is None else _blocks(path, at + ".content", content)
            pieces = []
            for part_at, part in parts:
                if part["type"] == "text":
                    pieces.append(_text(path, part_at, part))
                else:
                    chat._skip(part_at, part["type"])
            results.append({"role": "tool", "tool_call_id": call_id, "content": "\n".join(pieces)})
        else:
            chat._skip(at, kind)
    for k, pieces in pieces_of.items():
        results[k]["content"] = "\n".join(pieces)
    if texts or not results:
        results.append({"role": "user", "content": "\n".join(texts)})
    return results


def _assistant(chat: Conversation, blocks: list[tuple[str, dict]], message: dict) -> dict:
    path = chat.trace.path
    texts, thoughts, calls = [], [], []
    for at, block in blocks:
        kind = block["type"]
        if kind == "text":
            texts.append(_text(path, at, block))
        elif kind == "thinking":
            thoughts.append(_text(path, at, block, "thinking"))
        elif kind == "tool_use":
            call_id = string(path, at + ".id", block.get("id"))
            name = nonempty_string(path, at + ".name", block.get("name"))
            arguments = object_or_string(path, at + ".input", block.get("input", {}))
            text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": check_text(path, at + ".input", text)},
                }
            )
        else:
            chat._skip(at, kind)
    if isinstance(message.get("reasoning_content"), str) and not thoughts:  # Roo Code's DeepSeek-style reasoning
        thoughts.append(check_text(path, "reasoning_content", message["reasoning_content"]))
    return assistant_message(texts, thoughts, calls)


# -- ui_messages.json ------------------------------------------------------------------------------
def _requests(trace: Trace, ui_path: str, entries: list) -> list[Request]:
    requests: list[Request] = []
    deleted_sum = [0, 0, 0, 0]
    deleted_seen = False
    cost_sum, cost_seen = 0.0, False
    for i, entry in enumerate(entries):
        where = f"[{i}]"
        entry = expect_object(ui_path, where, entry, "a message object")
        deleted = _range(ui_path, where, entry.get("conversationHistoryDeletedRange"))
        if requests and deleted is not None:  # the range in force for the latest request
            requests[-1] = replace(requests[-1], deleted=deleted)
        say = entry.get("say")
        if say not in ("api_req_started", "api_req_finished", "deleted_api_reqs"):
            continue
        counts, cost = _info(ui_path, where, entry.get("text"))
        if say == "deleted_api_reqs":
            deleted_sum = [a + (b or 0) for a, b in zip(deleted_sum, counts)]
            deleted_seen = True
            continue
        if say == "api_req_finished":  # very old versions: the counts of the request before
            if requests and not any(c is not None for c in requests[-1].counts):
                last = requests[-1]
                requests[-1] = replace(last, counts=counts, cost=cost)
            continue
        ts = entry.get("ts")
        requests.append(
            Request(
                f"{UI_MESSAGES}{where}",
                ts if isinstance(ts, (int, float)) and not isinstance(ts, bool) else None,
                counts,
                cost,
                deleted,
            )
        )
    for request in requests:
        if request.billed and request.cost is not None:
            cost_sum += request.cost
            cost_seen = True
    if cost_seen:
        trace.note("log-cost", LOG_COST, f"{cost_sum:.6f} USD in all")
    if deleted_seen:
        trace.note(
            "deleted-requests", DELETED, "tokensIn {}, tokensOut {}, cacheWrites {}, cacheReads {}".format(*deleted_sum)
        )
    return requests


def _range(path: str, where: str, value: Any) -> tuple[int, int] | None:
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
    ):
        raise InputError(path, where + ".conversationHistoryDeletedRange", "expected two non-negative integers")
    return value[0], value[1]


def _info(path: str, where: str, text: Any) -> tuple[tuple[int | None, ...], float | None]:
    """The counts and cost of an ``api_req_started`` entry's JSON text."""
    at = where + ".text"
    if text is None:
        return (None,) * 4, None
    if not isinstance(text, str):
        raise InputError(path, at, f"expected a JSON string, found {_kind(text)}")
    try:
        info = parse(text)
    except ValueError:
        raise InputError(path, at, "not valid JSON") from None
    if not isinstance(info, dict):
        raise InputError(path, at, f"expected a JSON object, found {_kind(info)}")
    counts = tuple(check_count(path, f"{at}.{key}", info.get(key)) for key in COUNTS)
    cost = info.get("cost")
    if cost is not None and (
        isinstance(cost, bool) or not isinstance(cost, (int, float)) or not math.isfinite(cost) or cost < 0
    ):
        raise InputError(path, f"{at}.cost", f"expected a non-negative number, found {_kind(cost)}")
    return counts, cost


def _includes_cache(requests: list[Request]) -> bool:
    cached = [r for r in requests if r.billed and (r.counts[2] or 0) + (r.counts[3] or 0) > 0]
    return bool(cached) and all((r.counts[0] or 0) >= (r.counts[2] or 0) + (r.counts[3] or 0) for r in cached)


def _usage(request: Request, includes_cache: bool) -> Usage | None:
    fresh, output, writes, reads = request.counts
    if not request.billed:
        return None
    prompt = (fresh or 0) if includes_cache else (fresh or 0) + (writes or 0) + (reads or 0)
    return Usage(prompt=prompt, cache_read=reads, cache_write=writes, output=output)  # absent: not recorded


# -- task_metadata.json ----------------------------------------------------------------------------
def _model_usage(path: Path) -> list[tuple[float | None, str]]:
    if not path.is_file():
        return []
    value = _companion(str(path), dict)
    out = []
    for where, entry in objects(str(path), "model_usage", value.get("model_usage") or []):
        model = string(str(path), where + ".model_id", entry.get("model_id"))
        ts = entry.get("ts")
        out.append((ts if isinstance(ts, (int, float)) and not isinstance(ts, bool) else None, model))
    return out


def _model_at(models: list[tuple[float | None, str]], ts: float | None) -> str | None:
    if not models:
        return None
    if ts is None:
        return models[-1][1]
    earlier = [model for when, model in models if when is None or when <= ts]
    return earlier[-1] if earlier else models[0][1]


# -- calls -----------------------------------------------------------------------------------------
def _pairs(trace: Trace, history: list, requests: list[Request]) -> list[tuple[int, int | None]]:
    """Each request's (prompt end, response index): the prompt is ``history[:end]``."""
    assistants = [i for i, m in enumerate(history) if isinstance(m, dict) and m.get("role") == "assistant"]
    stamps = [m.get("ts") if isinstance(m, dict) else None for m in history]
    timed = (
        bool(assistants)
        and all(isinstance(stamps[i], (int, float)) for i in assistants)
        and all(r.ts is not None for r in requests)
    )
    out: list[tuple[int, int | None]] = []
    if timed:
        known = 0.0
        filled = []
        for stamp in stamps:  # an entry without ts is as old as the one before it
            known = stamp if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) else known
            filled.append(known)
        ordered = all(a <= b for a, b in zip(filled, filled[1:]))  # as the agent writes them: found by bisection
        times = [filled[i] for i in assistants]
        for k, request in enumerate(requests):
            start = request.ts or 0.0
            stop = requests[k + 1].ts if k + 1 < len(requests) else None
            stop = math.inf if stop is None else stop
            if ordered:
                at = bisect.bisect_left(times, start)
                response = assistants[at] if at < len(assistants) and times[at] < stop else None
                end = response if response is not None else bisect.bisect_left(filled, stop)
            else:
                response = next((i for i in assistants if start <= filled[i] < stop), None)
                end = (
                    response
                    if response is not None
                    else next((i for i, t in enumerate(filled) if t >= stop), len(history))
                )
            out.append((end, response))
        return out
    answered = requests
    if len(assistants) != len(requests):
        billed = [r for r in requests if r.billed]
        if len(assistants) == len(billed):  # the requests without usage left no message
            answered = billed
        else:
            trace.note("unpaired-requests", UNPAIRED)
    responses = {r.where: i for r, i in zip(answered, assistants)}
    for request in requests:
        response = responses.get(request.where)
        out.append((response if response is not None else len(history), response))
    return out


def _kept(history: list, end: int, deleted: tuple[int, int] | None) -> tuple[list[int], set]:
    """The history entries a prompt ending at ``end`` was sent with, and the condensing and truncation
    ids that hide a later entry (its ``condenseParent`` or ``truncationParent``)."""
    indices = [i for i in range(end) if deleted is None or i < deleted[0] or i > deleted[1]]
    summaries = [i for i in indices if isinstance(history[i], dict) and history[i].get("isSummary") is True]
    if summaries:  # Roo Code's fresh start: the prompt starts at the latest summary
        indices = [i for i in indices if i >= summaries[-1]]
    entries = [history[i] if isinstance(history[i], dict) else {} for i in indices]
    ids = {m.get("condenseId") for m in entries if m.get("isSummary")} | {
        m.get("truncationId") for m in entries if m.get("isTruncationMarker")
    }
    ids.discard(None)
    return [
        i
        for i, m in zip(indices, entries)
        if m.get("condenseParent") not in ids and m.get("truncationParent") not in ids
    ], ids


def _starts_over(entry: Any) -> bool:
    """Whether a history entry changes what earlier entries a prompt keeps (a summary, a marker)."""
    return isinstance(entry, dict) and (entry.get("isSummary") is True or bool(entry.get("isTruncationMarker")))


class _Prompts:
    """Each request's prompt, built from the previous one when it only adds entries to it (the same
    truncation range, no summary or marker among the new entries, no tool result it dropped answered
    now): a view of the list the prompts share (:func:`~tokprof.trace.extended`), so that a task of n
    requests costs what its history adds, not n² (#45.4). Else it is built again from the history."""

    def __init__(self, history: list, converted: list[list[dict]], cwds: list[str | None]) -> None:
        self.history, self.converted, self.cwds = history, converted, cwds
        self.shared = SharedPrompts()  # a prompt built again: a view of the one it extends, where it does
        self.view: PromptView | None = None
        self.end = 0
        self.deleted: tuple[int, int] | None = None
        self.hidden: set = set()  # condensing and truncation ids in force
        self.ids: set[str] = set()  # the tool call ids in the prompt
        self.dropped: set = set()  # the call ids of tool results left out (their call is not in the prompt)
        self.cwd: str | None = None

    def at(self, end: int, deleted: tuple[int, int] | None) -> tuple[PromptView, str | None]:
        """The prompt of a request whose prompt is ``history[:end]`` less what the agent left out, and the
        working directory its first environment details name."""
        if self.view is not None and end >= self.end and deleted == self.deleted:
            added = self._extend(end, deleted)
            if added is not None:
                return added, self.cwd
        kept, self.hidden = _kept(self.history, end, deleted)
        messages = _prompt(self.converted, kept)
        self.ids = _call_ids(messages)
        self.dropped = {m.get("tool_call_id") for i in kept for m in self.converted[i] if m["role"] == "tool"}
        self.dropped -= self.ids
        self.view = self.shared.prompt(messages) if messages else PromptView([], 0)
        self.end, self.deleted = end, deleted
        self.cwd = next((self.cwds[i] for i in kept if self.cwds[i]), None)
        return self.view, self.cwd

    def _extend(self, end: int, deleted: tuple[int, int] | None) -> PromptView | None:
        assert self.view is not None
        new = range(self.end, end)
        if any(_starts_over(self.history[i]) for i in new):
            return None
        kept = []
        for i in new:
            entry = self.history[i] if isinstance(self.history[i], dict) else {}
            if deleted is not None and deleted[0] <= i <= deleted[1]:
                continue
            if entry.get("condenseParent") in self.hidden or entry.get("truncationParent") in self.hidden:
                continue
            kept.append(i)
        messages = [m for i in kept for m in self.converted[i]]
        calls = _call_ids(messages)
        if calls & self.dropped:  # an earlier tool result is answered now: built again
            return None
        self.ids |= calls
        added = []
        for m in messages:
            if m["role"] == "tool" and m.get("tool_call_id") not in self.ids:
                self.dropped.add(m.get("tool_call_id"))
            else:
                added.append(m)
        self.view = extended(self.view, added)
        self.end = end
        if self.cwd is None:
            self.cwd = next((self.cwds[i] for i in kept if self.cwds[i]), None)
        return self.view


def _call_ids(messages: list[dict]) -> set[str]:
    return {c["id"] for m in messages for c in m.get("tool_calls") or () if isinstance(c.get("id"), str)}


def _prompt(converted: list[list[dict]], kept: list[int]) -> list[dict]:
    messages = [m for i in kept for m in converted[i]]
    ids = _call_ids(messages)
    return [m for m in messages if m["role"] != "tool" or m.get("tool_call_id") in ids]


def _cwd(messages: list[dict]) -> str | None:
    for message in messages:
        if message["role"] == "user" and isinstance(message.get("content"), str):
            found = CWD.search(message["content"])
            if found:  # shown and used as a key, never tokenized: escaped as the names a trace shows are
                return visible(found.group(1))
    return None


def _calls(
    trace: Trace,
    history: list,
    converted: list[list[dict]],
    requests: list[Request],
    models: list[tuple[float | None, str]],
) -> Iterator[Call]:
    """Each request's call, in order (numbered by the reader)."""
    includes_cache = _includes_cache(requests)
    prompts = _Prompts(history, converted, [_cwd(messages) for messages in converted])
    if includes_cache:
        trace.note("usage-includes-cache", INCLUDES_CACHE)
    for request, (end, response) in zip(requests, _pairs(trace, history, requests)):
        usage = _usage(request, includes_cache)
        if usage is None and request.listed:
            trace.note("not-billed", NOT_BILLED, request.where)
            continue
        messages, cwd = prompts.at(end, request.deleted)
        if not messages:
            trace.note("empty-prompt", "a request with no recorded message before it was skipped", request.where)
            continue
        answer = history[response] if response is not None else None
        info = answer.get("modelInfo") if isinstance(answer, dict) else None
        model = info.get("modelId") if isinstance(info, dict) and isinstance(info.get("modelId"), str) else None
        request_id = answer.get("id") if isinstance(answer, dict) and isinstance(answer.get("id"), str) else None
        time = parse_time(request.ts)
        yield (
            Call(
                index=0,
                messages=messages,
                tools=None,
                model=model or _model_at(models, request.ts),
                reported=usage,
                day=time.date() if time is not None else None,
                where=request.where,
                response=converted[response][0] if response is not None and converted[response] else None,
                request_id=request_id,
                time=time,
                cwd=cwd,
            )
        )


LOCATIONS = (
    *(
        Location(agent, "", vscode_tasks(extension), project_depth=0)
        for agent, extension in (
            ("cline", "saoudrizwan.claude-dev"),
            ("roo", "rooveterinaryinc.roo-cline"),
            ("kilo", "kilocode.kilo-code"),
        )
    ),
    # Cline's CLI data folder: CLINE_DATA_DIR, else CLINE_DIR/data, else ~/.cline/data
    Location("cline", ".cline/data/tasks", (CLINE_TASK,), env="CLINE_DATA_DIR", below_env="tasks", project_depth=0),
    Location("cline", ".cline/data/tasks", (CLINE_TASK,), env="CLINE_DIR", below_env="data/tasks", project_depth=0),
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    ClineReader,
    records=single_record,
    sessions=True,
    file_names=(HISTORY,),
    locations=LOCATIONS,
    records_what="per-request usage in ui_messages.json; no system prompt or tool definitions",
)
