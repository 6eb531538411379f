"""Kimi CLI sessions: ``~/.kimi/sessions/<work-dir hash>/<session>/wire.jsonl`` (``$KIMI_SHARE_DIR``
moves ``~/.kimi``; early versions kept them in ``~/.local/share/kimi/sessions``).

Kimi CLI (MoonshotAI/kimi-cli, ``src/kimi_cli/wire/file.py`` and ``types.py``) writes a ``{type:
"metadata", protocol_version}`` first line, then one ``{timestamp, message: {type, payload}}`` record
per wire message (``timestamp`` in seconds):

* ``TurnBegin`` / ``SteerInput`` (``user_input``: a string or content parts): the user's input;
* ``StepBegin`` (``n``) starts a step, one model call; ``StepInterrupted`` ends one early;
* ``ContentPart`` (``text`` or ``think`` parts, streamed: consecutive parts are joined), ``ToolCall``
  (``id``, ``function{name, arguments}``) and ``ToolCallPart`` (``arguments_part``, the rest of the
  arguments of the tool call before it): the step's response;
* ``ToolResult`` (``tool_call_id``, ``return_value.output``, else its ``message`` when the tool
  failed with no output): a tool's result;
* ``StatusUpdate`` (``token_usage{input_other, output, input_cache_read, input_cache_creation}``,
  ``message_id``): the step's usage (a repeated ``message_id`` updates it: counted once);
* ``CompactionBegin``/``CompactionEnd``: a compaction (the summary is not in the wire log);
* ``SubagentEvent`` (``agent_id``, ``event{type, payload}``): a sub-agent's event, its own thread.

**Calls.** Each step is one call, made on the history before it; its usage is its ``StatusUpdate``'s,
``prompt = input_other + input_cache_read + input_cache_creation`` (``input_other`` excludes the
cache). A step without usage is a call whose usage is not recorded (note ``no-usage``).

**Not recorded:** the system prompt, the tool definitions and the model (the wire log names none:
``--model`` sets it).

**A fold** (#43.1): each record is read as it is fed; a step's call is made when the step ends, and
the threads' calls are given in time order once no open step or later record can come before them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokprof.base.errors import InputError
from tokprof.formats.conversation import Conversation, tool_text
from tokprof.formats.folds import SessionFold, TimeOrder
from tokprof.formats.fields import check_text, expect_list, expect_object, optional_string, string
from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import Location
from tokprof.formats.neutral import anthropic_usage, check_count, parse_time
from tokprof.formats.reader import LogFormat, Record
from tokprof.trace import Call, Trace, Usage

FORMAT = "kimi-cli"
DESCRIPTION = "Kimi CLI wire log (~/.kimi/sessions/<work-dir hash>/<session>/wire.jsonl)"

USAGE_FIELDS = ("input_other", "output", "input_cache_read", "input_cache_creation")
NO_USAGE = "steps without a StatusUpdate token_usage: their calls' usage is not recorded"
COMPACTION = "a compaction: its summary is not in the wire log, so later prompts hold the history before it"
NO_MODEL = "the wire log names no model: give it with --model"


def sniff(doc: Document) -> bool:
    if doc.lines is None:
        return False
    head = [value for _, value in doc.lines.head(5)]
    if not head or not isinstance(head[0], dict):
        return False
    if head[0].get("type") == "metadata" and "protocol_version" in head[0]:
        head = head[1:]
    return bool(head) and all(
        isinstance(v, dict)
        and isinstance(v.get("message"), dict)
        and isinstance(v["message"].get("type"), str)
        and "timestamp" in v
        for v in head
    )


class _Thread:
    def __init__(self, trace: Trace, name: str, order: TimeOrder) -> None:
        self.trace = trace
        self.name = name
        self.order = order
        order.thread(name)
        self.chat = Conversation(trace, order)
        self.step: dict | None = None

    def open_step(self, where: str) -> dict:
        if self.step is None:
            self.step = {
                "texts": [],
                "thoughts": [],
                "calls": [],
                "results": [],
                "usage": None,
                "ids": [],
                "where": where,
                "time": None,
            }
        return self.step


class _Reader:
    def __init__(self, trace: Trace, order: TimeOrder) -> None:
        self.trace = trace
        self.order = order
        self.threads: dict[str, _Thread] = {"": _Thread(trace, "", order)}
        self.usage_ids: set[str] = set()

    def thread(self, name: str) -> _Thread:
        if name not in self.threads:
            self.threads[name] = _Thread(self.trace, name, self.order)
        return self.threads[name]

    def record(self, where: str, value: Any) -> None:
        path = self.trace.path
        value = expect_object(path, where, value, "a JSON object")
        if value.get("type") == "metadata":
            return
        message = expect_object(path, where + ": message", value.get("message"))
        self.message(self.threads[""], where, message, value.get("timestamp"))

    def message(self, thread: _Thread, where: str, message: dict, time: Any) -> None:
        path = self.trace.path
        kind = message.get("type")
        payload = message.get("payload", {})
        payload = expect_object(path, where + ": message.payload", payload if payload is not None else {})
        if kind in ("TurnBegin", "SteerInput"):
            self.end(thread)
            text = self.text(thread, where + ": message.payload.user_input", payload.get("user_input", ""))
            thread.chat.add({"role": "user", "content": text}, where)
        elif kind == "StepBegin":
            self.end(thread)
            thread.open_step(where)["time"] = time
        elif kind in ("StepInterrupted", "TurnEnd"):
            self.end(thread)
        elif kind == "ContentPart":
            step = thread.open_step(where)
            part_type = payload.get("type")
            if part_type == "text":
                step["texts"].append(string(path, where + ": message.payload.text", payload.get("text")))
            elif part_type == "think":
                step["thoughts"].append(string(path, where + ": message.payload.think", payload.get("think")))
            else:
                thread.chat._skip(where, str(part_type))
        elif kind == "ToolCall":
            step = thread.open_step(where)
            function = expect_object(path, where + ": message.payload.function", payload.get("function"))
            arguments = function.get("arguments") or ""
            step["calls"].append(
                {
                    "id": string(path, where + ": message.payload.id", payload.get("id")),
                    "type": "function",
                    "function": {
                        "name": string(path, where + ": message.payload.function.name", function.get("name")),
                        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                    },
                }
            )
        elif kind == "ToolCallPart":
            step = thread.open_step(where)
            piece = optional_string(path, where + ": message.payload.arguments_part", payload.get("arguments_part"))
            if step["calls"] and piece:
                step["calls"][-1]["function"]["arguments"] += piece
        elif kind == "ToolResult":
            step = thread.open_step(where)
            call_id = string(path, where + ": message.payload.tool_call_id", payload.get("tool_call_id"))
            value = payload.get("return_value")
            output = value.get("output") if isinstance(value, dict) else value
            if isinstance(output, list):
                output = self.text(thread, where + ": message.payload.return_value.output", output)
            text = output if isinstance(output, str) else tool_text(output)
            note = value.get("message") if isinstance(value, dict) else None
            if not text and isinstance(note, str):  # a failed tool: the model is sent its message
                text = note
            step["results"].append(
                (where, {"role": "tool", "tool_call_id": call_id, "content": check_text(path, where, text)})
            )
        elif kind == "StatusUpdate":
            usage = self.usage(where + ": message.payload.token_usage", payload.get("token_usage"))
            if usage is not None:
                step = thread.open_step(where)
                message_id = payload.get("message_id")
                if isinstance(message_id, str):
                    if message_id in self.usage_ids and message_id not in step["ids"]:
                        return  # an update of a step already counted
                    self.usage_ids.add(message_id)
                    step["ids"].append(message_id)
                step["usage"] = usage
        elif kind == "CompactionBegin":
            self.trace.compactions += 1
            self.trace.note("compaction", COMPACTION, where)
        elif kind == "SubagentEvent":
            agent = optional_string(path, where + ": message.payload.agent_id", payload.get("agent_id"))
            name = (
                agent
                or optional_string(
                    path, where + ": message.payload.parent_tool_call_id", payload.get("parent_tool_call_id")
                )
                or "subagent"
            )
            event = expect_object(path, where + ": message.payload.event", payload.get("event"))
            self.message(self.thread(name), where, event, time)

    def text(self, thread: _Thread, where: str, content: Any) -> str:
        path = self.trace.path
        if isinstance(content, str):
            return check_text(path, where, content)
        texts = []
        for i, part in enumerate(expect_list(path, where, content, "a string or a list of parts")):
            part = expect_object(path, f"{where}[{i}]", part, "a part object")
            if part.get("type") == "text":
                texts.append(string(path, f"{where}[{i}].text", part.get("text")))
            else:
                thread.chat._skip(f"{where}[{i}]", str(part.get("type")))
        return "\n".join(texts)

    def usage(self, where: str, usage: Any) -> Usage | None:
        if usage is None:
            return None
        usage = expect_object(self.trace.path, where, usage)
        counts = {key: check_count(self.trace.path, f"{where}.{key}", usage.get(key)) for key in USAGE_FIELDS}
        if all(count is None for count in counts.values()):
            return None
        return anthropic_usage(
            {
                "input_tokens": counts["input_other"] or 0,
                "output_tokens": counts["output"],
                "cache_read_input_tokens": counts["input_cache_read"] or 0,
                "cache_creation_input_tokens": counts["input_cache_creation"] or 0,
            }
        )

    def end(self, thread: _Thread) -> None:
        step, thread.step = thread.step, None
        if step is None:
            return
        if step["usage"] is None and not (step["texts"] or step["thoughts"] or step["calls"]):
            for at, result in step["results"]:
                thread.chat.add(result, at)
            return  # an interrupted step with nothing: no call
        message: dict[str, Any] = {"role": "assistant", "content": "".join(step["texts"]) or None}
        if step["thoughts"]:
            message["reasoning_content"] = "".join(step["thoughts"])
        if step["calls"]:
            message["tool_calls"] = step["calls"]
        where = step["where"]
        clean = thread.chat.check(message, where)
        if step["usage"] is None:
            self.trace.note("no-usage", NO_USAGE, where)
        call = thread.chat.call(
            where,
            None,
            step["usage"],
            clean,
            parse_time(step["time"]),
            request_id=step["ids"][-1] if step["ids"] else None,
        )
        if call is not None:
            call.thread = thread.name
            self.order.place(thread.name, call)
        thread.chat.messages.append(clean)
        for at, result in step["results"]:
            thread.chat.add(result, at)


class KimiCliReader(SessionFold):
    """A Kimi CLI wire log read as a fold over its records: a step's call is made when the step ends, and
    the calls of every thread are given in time order (their steps' begin times) once no step still
    open, and no record still to read, can come before them."""

    expected = "expected a Kimi CLI wire log (JSON lines)"

    def __init__(self, path: str, doc: Document | None) -> None:
        super().__init__(Trace(path=path, format=FORMAT, unrecorded=("system", "tools")))
        self.made = self.order = TimeOrder()
        self.reader = _Reader(self.trace, self.order)

    def feed(self, record: Record) -> list[Call]:
        if record.line is None:
            raise InputError(self.trace.path, None, self.expected)
        self.reader.record(f"line {record.line}", record.value)
        now = parse_time(record.value.get("timestamp")) if isinstance(record.value, dict) else None
        if now is None:
            return []
        before: tuple = (1, now)
        for thread in self.reader.threads.values():  # a step still open is a call to come, at its begin time
            if thread.step is not None:
                begun = parse_time(thread.step["time"])
                key = (1, begun) if begun is not None else self.order.carried[self.order.threads[thread.name]]
                before = min(before, key)
        return self.order.take(before)

    def finish(self) -> list[Call]:
        trace, reader = self.trace, self.reader
        for thread in reader.threads.values():
            reader.end(thread)
        calls = self.order.rest()
        if self.order.count:
            trace.note("no-model", NO_MODEL)
        if Path(trace.path).name == "wire.jsonl":
            trace.session = Path(trace.path).parent.name
        trace.model = self.order.model()
        return calls


LOCATIONS = (
    Location(
        "kimi-cli", ".kimi/sessions", ("*/*/wire.jsonl",), env="KIMI_SHARE_DIR", below_env="sessions", project_depth=2
    ),
    Location("kimi-cli", ".local/share/kimi/sessions", ("*/*/wire.jsonl",), project_depth=2),  # before 0.4x
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    KimiCliReader,
    sessions=True,
    locations=LOCATIONS,
    records_what="per-call usage; no system prompt, tool definitions or model",
)
