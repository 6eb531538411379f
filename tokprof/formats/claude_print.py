"""Claude Code ``stream-json`` output: what ``claude -p --output-format stream-json --verbose`` prints,
the log CI jobs that run Claude Code save. (``--output-format json --verbose`` prints the same
messages as one JSON list: read too.)

One JSON object per line, the Agent SDK's messages:

* ``{"type": "system", "subtype": "init", "session_id", "model", "tools": [names], "cwd", ...}``:
  the session (:attr:`Trace.session`) and the model; ``tools`` are names only, not definitions;
* ``{"type": "assistant", "message", "parent_tool_use_id", "session_id", "uuid"}``: ``message`` is
  an Anthropic Messages API message (``id``, ``model``, ``content`` blocks, ``stop_reason``,
  ``usage``); like a transcript, each content block of a response is its own line with the same
  ``message.id``;
* ``{"type": "user", "message", "parent_tool_use_id", "session_id"}``: tool results (and any user
  text) sent back to the model;
* ``{"type": "result", "subtype": "success" | "error_max_turns" | "error_during_execution" | ...,
  "is_error", "duration_ms", "duration_api_ms", "num_turns", "result", "total_cost_usd", "usage",
  "modelUsage", "permission_denials", "session_id"}``: the run's totals, last;
* ``stream_event`` lines (``--include-partial-messages``) repeat what the assistant messages hold
  and are skipped; other ``system`` subtypes (hooks, status) are Claude Code's own and are not sent.

**Calls and prompts.** The lines are read as a Claude Code transcript
(:mod:`tokprof.formats.claude_code`: the same rules for content blocks, tool results, merged
response lines, usage and its stream-start placeholders): one call per assistant ``message.id``,
its prompt the conversation of its thread before it. The stream has no ``uuid``/``parentUuid`` tree:
each thread is its lines in order. The main thread is the lines with ``parent_tool_use_id`` null; a
subagent's lines carry the id of the Task (Agent) tool call it runs under, and are a thread of their
own (its own system prompt and tools, its own inferred fixed part); when its first line is a
response, its prompt starts with the ``prompt`` argument of that tool call. A ``compact_boundary``
system line restarts the main thread's context. The prompt given with ``-p`` is not echoed in the
stream: a prompt that does not start with a user message (the main thread starts with a response)
gets an empty user message first, standing for it, so that it renders as it was sent (warning
``prompt-not-recorded``; its tokens fall in the unrecorded part with the system prompt and tools,
which the stream does not record either).

**The result line.** Its ``usage`` totals (input, cache-creation, cache-read and output tokens),
``total_cost_usd``, ``num_turns`` and ``subtype`` are recorded in the note ``result-totals``. They
are reconciled with the sum of the usage of the calls before it (since the previous result line, or
from the start: a stream that takes several prompts has a result per prompt): when a field differs,
warning ``result-differs`` names both. They can differ because the result also counts what the
stream does not show (Claude Code's own calls to a small model, a compaction) and the final
``output_tokens``, while each assistant message carries the usage written as its response started.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from tokprof.base.errors import InputError
from tokprof.formats.claude_code import main_model
from tokprof.formats.claude_code.lines import MESSAGE_TYPES, TOOL_CALL_BLOCKS, Transcript
from tokprof.formats.claude_code.prompts import Prompts
from tokprof.formats.jsonfile import Document
from tokprof.formats.reader import LogFormat, Reader, Record
from tokprof.formats.fields import expect_object, optional_string, string
from tokprof.formats.jsonfile import kind_of as _kind
from tokprof.formats.neutral import MAX_COUNT, check_count, describe_number as _number, in_time_order
from tokprof.trace import Call, Trace

FORMAT = "claude-stream-json"
DESCRIPTION = "Claude Code stream-json output (claude -p --output-format stream-json --verbose), as CI jobs save it"

#: Line types that repeat or add nothing to the conversation, skipped without a word.
QUIET = ("stream_event", "keep_alive", "tool_progress", "auth_status", "rate_limit_event")
RESULT_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
RESULT_NAMES = {
    "input_tokens": "input",
    "cache_creation_input_tokens": "cache writes",
    "cache_read_input_tokens": "cache reads",
    "output_tokens": "output",
}

MAX_COST = 10**9  # USD: a larger total_cost_usd is not a cost

PROMPT_NOT_RECORDED = (
    "the prompt given to claude -p is not in stream-json output (it is not echoed): an empty user message "
    "stands for it in every prompt, and its tokens fall in the unrecorded part with the system prompt and tools"
)
UNRECORDED_PROMPT = {"role": "user", "content": ""}
RESULT_TOTALS = "the run's totals as the result line reports them (its usage, num_turns and total_cost_usd)"
RESULT_DIFFERS = (
    "the result line's usage totals differ from the sum of the calls' usage before it: the result also "
    "counts what the stream does not show (Claude Code's own calls to a small model, a compaction) and the "
    "final output_tokens, while each assistant message carries the usage written as its response started"
)


def sniff(doc: Document) -> bool:
    """True when the first values are Agent SDK messages (``session_id``, not a transcript's ``sessionId``)."""
    try:
        for value in _values(doc)[:20]:
            if not isinstance(value, dict):
                continue
            if "sessionId" in value or "parentUuid" in value:
                return False  # a transcript line
            kind = value.get("type")
            if "session_id" not in value:
                continue
            if kind == "system" and value.get("subtype") == "init":
                return True
            if kind == "result" and ("total_cost_usd" in value or "num_turns" in value):
                return True
            if kind in MESSAGE_TYPES and "parent_tool_use_id" in value and isinstance(value.get("message"), dict):
                return True
        return False
    except Exception:  # sniffing never fails
        return False


def _values(doc: Document) -> list:
    """The first values, for detection."""
    if doc.lines is not None:
        return [value for _, value in doc.lines.head(20)]
    return doc.value[:20] if isinstance(doc.value, list) else []


class PrintReader(Reader):
    """stream-json output read as a fold: each message converted to a transcript line and checked as
    it is fed; the calls are made once every line is read (a stream is one ``claude -p`` run: its
    requestIds may be reused across it, and its result lines are reconciled with the calls before
    them)."""

    def __init__(self, path: str, doc: Document | None) -> None:
        self.path = path
        self.trace = Trace(path=path, format=FORMAT, unrecorded=("system", "tools"))
        self.stream = _Stream()
        self.prompts = Prompts(self.trace)
        self.transcript = Transcript(path=path)
        self.last: dict[bool, str | None] = {}
        self.converter = _Converter(path, self.stream)
        self.at = "line"

    def feed(self, record: Record) -> Iterable[Call]:
        if record.line is None:
            if not isinstance(record.value, list):
                raise InputError(self.path, None, "expected stream-json output: one JSON object per line")
            self.at = "item"
            for number, value in enumerate(record.value):
                self._add(number, value)
        else:
            self._add(record.line, record.value)
        return ()

    def _add(self, number: int, value: Any) -> None:
        for n, line, inner in self.converter.convert(self.at, number, value):
            self.prompts.add(self.transcript, "", n, line, inner, self.at, self.last)

    def finish(self) -> Iterable[Call]:
        path, trace, reader, stream = self.path, self.trace, self.prompts, self.stream
        reader.rekey([self.transcript])
        calls = reader.calls(self.transcript)
        reader.note_unrecorded_compactions()
        ordered = in_time_order([[call for _, call in calls]])
        if not ordered:
            raise InputError(path, None, "no model call in the stream (no assistant message)")
        _opening_prompts(trace, ordered)
        trace.session = _text(stream.init.get("session_id")) or stream.session
        trace.model = main_model(ordered) or _text(stream.init.get("model"))
        _reconcile(path, self.at, trace, calls, stream.results)
        return ordered


def _opening_prompts(trace: Trace, calls: list[Call]) -> None:
    """A prompt that does not start with a user message started with one the stream does not show
    (the -p prompt): an empty user message stands for it, so that every prompt renders as sent."""
    noted: set[str] = set()
    for call in calls:
        if call.messages and call.messages[0]["role"] == "user":
            continue
        call.messages = [UNRECORDED_PROMPT, *call.messages]
        if call.thread not in noted:
            noted.add(call.thread)
            trace.note("prompt-not-recorded", PROMPT_NOT_RECORDED, call.where)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass
class _Stream:
    """What the stream says besides its conversation: the result lines, the init line, the session."""

    results: list[tuple[int, dict]] = field(default_factory=list)
    init: dict = field(default_factory=dict)
    session: str | None = None


class _Converter:
    """Transcript lines (for the Claude Code reader) from the stream's messages, chained per thread, as
    they are read; the result lines, the init line and the first session id go in ``stream``."""

    def __init__(self, path: str, stream: _Stream) -> None:
        self.path = path
        self.stream = stream
        self.last: dict[str | None, str | None] = {}  # thread -> the uuid of its last line
        self.task_prompts: dict[str, str] = {}  # tool call id -> its "prompt" argument (a subagent's opening prompt)

    def convert(self, at: str, number: int, value: Any) -> Iterator[tuple[int, Any, str]]:
        path, stream, last, task_prompts = self.path, self.stream, self.last, self.task_prompts
        where = f"{at} {number}"
        value = expect_object(path, where, value, "a stream-json message object")
        kind = string(path, f"{where}: type", value.get("type"))
        stream.session = stream.session or _text(value.get("session_id"))
        if kind == "result":
            stream.results.append((number, value))
            return
        if kind == "system" and value.get("subtype") == "init":
            stream.init = stream.init or value
            return
        if kind in QUIET:
            return
        thread = optional_string(path, f"{where}: parent_tool_use_id", value.get("parent_tool_use_id"))
        uuid = f"#{number}"
        record: dict = {"type": kind, "uuid": uuid, "isSidechain": thread is not None}
        if thread is not None:
            record["agentId"] = thread
        if kind in MESSAGE_TYPES:
            record["message"] = value.get("message")
            if thread is not None and thread not in last and kind == "assistant" and thread in task_prompts:
                opening_uuid = f"#{number}:prompt"
                opening = {
                    "type": "user",
                    "uuid": opening_uuid,
                    "parentUuid": None,
                    "isSidechain": True,
                    "agentId": thread,
                    "message": {"role": "user", "content": task_prompts[thread]},
                }
                yield number, opening, ""
                last[thread] = opening_uuid
            if kind == "assistant":
                task_prompts.update(_task_prompts(value.get("message")))
        elif kind == "system":
            record["subtype"] = value.get("subtype")
            if value.get("subtype") != "compact_boundary":
                return  # Claude Code's own messages: not conversation, and no link of the chain
        record["parentUuid"] = last.get(thread)
        last[thread] = uuid
        yield number, record, ""


def _task_prompts(message: Any) -> dict[str, str]:
    """The ``prompt`` argument of each tool call of a response (a Task/Agent call's is its subagent's prompt)."""
    out: dict[str, str] = {}
    content = message.get("content") if isinstance(message, dict) else None
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") in TOOL_CALL_BLOCKS and isinstance(block.get("id"), str):
            arguments = block.get("input")
            prompt = arguments.get("prompt") if isinstance(arguments, dict) else None
            if isinstance(prompt, str) and prompt:
                out[block["id"]] = prompt
    return out


def _reconcile(
    path: str, at: str, trace: Trace, calls: list[tuple[float, Call]], results: list[tuple[int, dict]]
) -> None:
    """Record each result line's totals and compare them with the calls' usage before it."""
    start = 0
    for number, result in results:
        where = f"{at} {number}"
        usage = result.get("usage")
        if usage is not None:
            expect_object(path, f"{where}: usage", usage)
        totals = {key: check_count(path, f"{where}: usage.{key}", (usage or {}).get(key)) for key in RESULT_FIELDS}
        turns = result.get("num_turns")
        cost = result.get("total_cost_usd")
        if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float))):
            raise InputError(path, f"{where}: total_cost_usd", f"expected a number, found {_kind(cost)}")
        if cost is not None and not 0 <= cost <= MAX_COST:  # NaN fails both
            raise InputError(
                path, f"{where}: total_cost_usd", f"expected a cost from 0 to {MAX_COST:,} USD, found {_number(cost)}"
            )
        before = [call for line, call in calls if start < line < number and call.reported is not None]
        segment = _sums(before)
        cumulative = _sums([call for line, call in calls if line < number and call.reported is not None])
        parts = [str(result.get("subtype") or "no subtype")]
        if isinstance(turns, int) and not isinstance(turns, bool) and 0 <= turns <= MAX_COUNT:
            parts.append(f"{turns:,} turns")
        parts += [f"{RESULT_NAMES[key]} {value:,}" for key, value in totals.items() if value is not None]
        if cost is not None:
            parts.append(f"total_cost_usd {cost:.4f}")
        trace.note("result-totals", RESULT_TOTALS, f"{where}: {', '.join(parts)}")
        differs = [key for key, value in totals.items() if value is not None and value != segment[key]]
        if differs and any(value is not None and value != cumulative[key] for key, value in totals.items()):
            shown = ", ".join(
                f"{RESULT_NAMES[key]} {totals[key]:,} vs {segment[key]:,} in the calls" for key in differs
            )
            trace.note("result-differs", RESULT_DIFFERS, f"{where}: {shown}")
        start = number


def _sums(calls: list[Call]) -> dict[str, int]:
    """The calls' usage in the result's terms (input_tokens excludes the cache tokens)."""
    sums = dict.fromkeys(RESULT_FIELDS, 0)
    for call in calls:
        used = call.reported
        assert used is not None
        read_, write = used.cache_read or 0, used.cache_write or 0
        sums["input_tokens"] += max(0, (used.prompt or 0) - read_ - write)
        sums["cache_creation_input_tokens"] += write
        sums["cache_read_input_tokens"] += read_
        sums["output_tokens"] += used.output or 0
    return sums


LOG_FORMAT = LogFormat(
    FORMAT, DESCRIPTION, "agent", sniff, PrintReader, sessions=True, records_what="per-call usage; tool names only"
)
