"""Kimi CLI sessions: ``~/.kimi/sessions/<work-dir hash>/<session>/wire.jsonl`` (``$KIMI_DATA_DIR``,
comma-separated folders, moves ``~/.kimi``).

Kimi CLI (MoonshotAI/kimi-cli, ``src/kimi_cli/wire/file.py`` and ``types.py``) writes a ``{type:
"metadata", protocol_version}`` first line, then one ``{timestamp, message: {type, payload}}`` record
per wire message (``timestamp`` in seconds):

* ``TurnBegin`` / ``SteerInput`` (``user_input``: a string or content parts): the user's input;
* ``StepBegin`` (``n``) starts a step, one model call; ``StepInterrupted`` ends one early;
* ``ContentPart`` (``text`` or ``think`` parts, streamed: consecutive parts are joined), ``ToolCall``
  (``id``, ``function{name, arguments}``) and ``ToolCallPart`` (``arguments_part``, the rest of the
  arguments of the tool call before it): the step's response;
* ``ToolResult`` (``tool_call_id``, ``return_value.output``): a tool's result;
* ``StatusUpdate`` (``token_usage{input_other, output, input_cache_read, input_cache_creation}``,
  ``message_id``): the step's usage (a repeated ``message_id`` updates it: counted once);
* ``CompactionBegin``/``CompactionEnd``: a compaction (the summary is not in the wire log);
* ``SubagentEvent`` (``agent_id``, ``event{type, payload}``): a sub-agent's event, its own thread.

**Calls.** Each step is one call, made on the history before it; its usage is its ``StatusUpdate``'s,
``prompt = input_other + input_cache_read + input_cache_creation`` (``input_other`` excludes the
cache). A step without usage is a call whose usage is not recorded (note ``no-usage``).

**Not recorded:** the system prompt, the tool definitions and the model (the wire log names none:
``--model`` sets it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokprof.base.errors import InputError
from tokprof.formats.conversation import Conversation, finish, tool_text
from tokprof.formats.fields import check_text, expect_list, expect_object, optional_string, string
from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import Location
from tokprof.formats.neutral import anthropic_usage, check_count, in_time_order, parse_time
from tokprof.formats.reader import whole_read_format
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
    def __init__(self, trace: Trace, name: str) -> None:
        self.trace = trace
        self.name = name
        self.chat = Conversation(trace)
        self.calls: list[Call] = []
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
    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.threads: dict[str, _Thread] = {"": _Thread(trace, "")}
        self.usage_ids: set[str] = set()

    def thread(self, name: str) -> _Thread:
        if name not in self.threads:
            self.threads[name] = _Thread(self.trace, name)
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
            thread.calls.append(call)
        thread.chat.messages.append(clean)
        for at, result in step["results"]:
            thread.chat.add(result, at)


def read(path: str, doc: Document) -> Trace:
    if doc.lines is None:
        raise InputError(path, None, "expected a Kimi CLI wire log (JSON lines)")
    trace = Trace(path=path, format=FORMAT, unrecorded=("system", "tools"))
    reader = _Reader(trace)
    for number, value in doc.lines:
        reader.record(f"line {number}", value)
    for thread in reader.threads.values():
        reader.end(thread)
    trace.calls = in_time_order([thread.calls for thread in reader.threads.values()])
    if trace.calls:
        trace.note("no-model", NO_MODEL)
    if Path(path).name == "wire.jsonl":
        trace.session = Path(path).parent.name
    return finish(trace)


LOCATIONS = (
    Location(
        "kimi-cli",
        ".kimi/sessions",
        ("*/*/wire.jsonl",),
        env="KIMI_DATA_DIR",
        below_env="sessions",
        project_depth=2,
        several=True,
    ),
)

LOG_FORMAT = whole_read_format(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    read,
    sessions=True,
    locations=LOCATIONS,
    records_what="per-call usage; no system prompt, tool definitions or model",
)
