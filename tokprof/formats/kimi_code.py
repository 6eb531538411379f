"""Kimi Code sessions: ``~/.kimi-code/sessions/<wd_…>/session_<uuid>/agents/<main|agent-N>/wire.jsonl``.

Kimi Code's wire protocol (``protocol_version`` 1.x in the ``metadata`` first line) writes one record
``{type, ..., time}`` per line (``time`` in milliseconds). The records read:

* ``config.update``: ``cwd``, ``modelAlias``, ``systemPrompt`` (the agent's system prompt);
* ``llm.tools_snapshot``: ``tools[{name, description, parameters}]``, the tool definitions sent;
* ``llm.request``: ``model``, the model of the step it starts;
* ``context.append_message``: a ``message{role, content[{type: text, text}]}`` added to the context
  (the user's prompt);
* ``context.append_loop_event``: ``event.type`` ``step.begin``, ``content.part`` (``part`` ``think``
  or ``text``), ``tool.call`` (``toolCallId``, ``name``, ``args``), ``tool.result`` (``toolCallId``,
  ``result.output``) and ``step.end`` (``usage``, ``messageId``);
* ``usage.record`` repeats a ``step.end``'s usage for Kimi Code's totals: it is not read (counting it
  would count each call twice).

**Calls.** Each step (``step.begin`` to ``step.end``) is one model call, made on the context before
it: the system prompt, the messages appended, and for each earlier step its assistant message
(text, thinking as reasoning, tool calls) and its tool results.

**Usage** (``step.end.usage``): Kimi's ``inputOther`` excludes the cache, so the prompt is
``inputOther + inputCacheRead + inputCacheCreation``; cache reads ``inputCacheRead``, writes
``inputCacheCreation``, output ``output``. A step that ends without usage is a call whose usage is not
recorded (note ``no-usage``).

**Sub-agents.** A session's agents each write their own ``agents/<name>/wire.jsonl``; profiling the
main agent's file reads the others beside it as threads (``agent-0``, ...), in time order. The
session's ``state.json`` gives the project (``workDir``).

**A fold** (#43.1): the main file's lines are read as they are fed, and the other agents' files beside
it are read along with them, each up to the time the main file has reached; every call is given in
time order once no record still to read can come before it
(:class:`~tokprof.formats.folds.TimeOrder`). The other agents' notes are kept apart and added
after the main file's when every file is read, as a whole read lists them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokprof.base.errors import InputError
from tokprof.formats.conversation import Conversation, tool_text
from tokprof.formats.folds import SessionFold, TimeOrder
from tokprof.formats.fields import check_text, expect_list, expect_object, optional_string, string
from tokprof.formats.jsonfile import Document, load
from tokprof.formats.locations import Location
from tokprof.formats.neutral import anthropic_usage, check_count, check_tools, parse_time
from tokprof.formats.reader import LogFormat, Record
from tokprof.trace import Call, Trace, Usage

FORMAT = "kimi-code"
DESCRIPTION = "Kimi Code wire log (~/.kimi-code/sessions/<wd>/session_<uuid>/agents/<agent>/wire.jsonl)"

WIRE = "wire.jsonl"
USAGE_FIELDS = ("inputOther", "output", "inputCacheRead", "inputCacheCreation")
NO_USAGE = "steps that ended without usage: their calls' usage is not recorded"
OPEN_STEP = "a step that began but did not end (the session was interrupted): not a call"
UNKNOWN = "record types this reader does not know were skipped"
KNOWN = (
    "metadata",
    "config.update",
    "tools.set_active_tools",
    "turn.prompt",
    "context.append_message",
    "context.append_loop_event",
    "llm.tools_snapshot",
    "llm.request",
    "usage.record",
    "permission.record_approval_result",
)


def sniff(doc: Document) -> bool:
    if doc.lines is None:
        return False
    head = [value for _, value in doc.lines.head(5)]
    if not head or not isinstance(head[0], dict):
        return False
    first = head[0]
    return (
        first.get("type") == "metadata"
        and "protocol_version" in first
        and any(isinstance(v, dict) and isinstance(v.get("type"), str) and "." in v["type"] for v in head[1:])
    )


class _Agent:
    """One agent's wire file, read into calls."""

    def __init__(self, trace: Trace, file: str, thread: str, order: TimeOrder) -> None:
        self.trace = trace
        self.file = file
        self.thread = thread
        self.order = order
        order.thread(thread)
        self.chat = Conversation(trace, order)
        self.tools: list[dict] | None = None
        self.model: str | None = None
        self.system_seen = False
        self.step: dict | None = None  # the step being read: its parts, tool calls and results

    def record(self, where: str, value: Any) -> None:
        value = expect_object(self.file, where, value, "a JSON object")
        kind = value.get("type")
        if kind == "config.update":
            self._config(where, value)
        elif kind == "llm.tools_snapshot":
            self._tools(where, value)
        elif kind == "llm.request":
            self.model = optional_string(self.file, where + ": model", value.get("model")) or self.model
        elif kind == "context.append_message":
            self._message(where, value)
        elif kind == "context.append_loop_event":
            self._event(where, expect_object(self.file, where + ": event", value.get("event")), value)
        elif kind not in KNOWN:
            self.trace.note("unknown-record", UNKNOWN, where)

    def _config(self, where: str, value: dict) -> None:
        alias = optional_string(self.file, where + ": modelAlias", value.get("modelAlias"))
        if alias and self.model is None:
            self.model = alias.rsplit("/", 1)[-1]
        system = optional_string(self.file, where + ": systemPrompt", value.get("systemPrompt"))
        if system is not None:
            message = self.chat.check({"role": "system", "content": check_text(self.file, where, system)}, where)
            rest = [m for m in self.chat.messages if m.get("role") != "system"]
            self.chat.replace([message, *rest])
            self.system_seen = True

    def _tools(self, where: str, value: dict) -> None:
        tools = []
        for i, tool in enumerate(expect_list(self.file, where + ": tools", value.get("tools"))):
            at = f"{where}: tools[{i}]"
            tool = expect_object(self.file, at, tool)
            function: dict[str, Any] = {"name": string(self.file, at + ".name", tool.get("name"))}
            if "description" in tool:
                function["description"] = tool.get("description")
            if "parameters" in tool:
                function["parameters"] = tool.get("parameters")
            tools.append({"type": "function", "function": function})
        self.tools = check_tools(self.file, where + ": ", tools)

    def _text(self, where: str, content: Any) -> str:
        if isinstance(content, str):
            return check_text(self.file, where, content)
        texts = []
        for i, part in enumerate(expect_list(self.file, where, content, "a string or a list of parts")):
            part = expect_object(self.file, f"{where}[{i}]", part, "a part object")
            if part.get("type") == "text":
                texts.append(string(self.file, f"{where}[{i}].text", part.get("text")))
            else:
                self.chat._skip(f"{where}[{i}]", str(part.get("type")))
        return "\n".join(texts)

    def _message(self, where: str, value: dict) -> None:
        message = expect_object(self.file, where + ": message", value.get("message"))
        role = message.get("role")
        text = self._text(where + ": message.content", message.get("content", ""))
        if role in ("user", "system"):
            self.chat.add({"role": role, "content": text}, where)
        elif role == "assistant":
            self.chat.add({"role": "assistant", "content": text}, where)
        else:
            raise InputError(self.file, where + ": message.role", f"unknown role {role!r}")

    def _event(self, where: str, event: dict, value: dict) -> None:
        kind = event.get("type")
        if kind == "step.begin":
            self.step = {"texts": [], "thoughts": [], "calls": [], "results": [], "where": where}
            return
        step = self.step
        if kind in ("content.part", "tool.call", "tool.result", "step.end") and step is None:
            step = self.step = {"texts": [], "thoughts": [], "calls": [], "results": [], "where": where}
        if step is None:
            return
        if kind == "content.part":
            part = expect_object(self.file, where + ": event.part", event.get("part"))
            if part.get("type") == "think":
                step["thoughts"].append(string(self.file, where + ": event.part.think", part.get("think")))
            elif part.get("type") == "text":
                step["texts"].append(string(self.file, where + ": event.part.text", part.get("text")))
            else:
                self.chat._skip(where + ": event.part", str(part.get("type")))
        elif kind == "tool.call":
            call_id = string(self.file, where + ": event.toolCallId", event.get("toolCallId"))
            name = string(self.file, where + ": event.name", event.get("name"))
            args = event.get("args", {})
            arguments = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            step["calls"].append(
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            )
        elif kind == "tool.result":
            call_id = string(self.file, where + ": event.toolCallId", event.get("toolCallId"))
            result = event.get("result")
            output = result.get("output") if isinstance(result, dict) and "output" in result else result
            text = output if isinstance(output, str) else tool_text(output)
            step["results"].append(
                (where, {"role": "tool", "tool_call_id": call_id, "content": check_text(self.file, where, text)})
            )
        elif kind == "step.end":
            self._end(where, event, value)

    def _end(self, where: str, event: dict, value: dict) -> None:
        step = self.step
        assert step is not None
        self.step = None
        message: dict[str, Any] = {"role": "assistant", "content": "".join(step["texts"]) or None}
        if step["thoughts"]:
            message["reasoning_content"] = "".join(step["thoughts"])
        if step["calls"]:
            message["tool_calls"] = step["calls"]
        clean = self.chat.check(message, where)
        usage = self._usage(where + ": event.usage", event.get("usage"))
        if usage is None:
            self.trace.note("no-usage", NO_USAGE, where)
        message_id = event.get("messageId")
        call = self.chat.call(
            where,
            self.model,
            usage,
            clean,
            parse_time(value.get("time")),
            request_id=message_id if isinstance(message_id, str) else None,
        )
        if call is not None:
            call.tools = self.tools
            call.thread = self.thread
            if self.thread:
                call.where = f"{Path(self.file).parent.name}: {where}"
            self.order.place(self.thread, call)
        self.chat.messages.append(clean)
        for at, result in step["results"]:
            self.chat.add(result, at)

    def _usage(self, where: str, usage: Any) -> Usage | None:
        if usage is None:
            return None
        usage = expect_object(self.file, where, usage)
        counts = {key: check_count(self.file, f"{where}.{key}", usage.get(key)) for key in USAGE_FIELDS}
        if all(count is None for count in counts.values()):
            return None
        return anthropic_usage(
            {
                "input_tokens": counts["inputOther"] or 0,
                "output_tokens": counts["output"],
                "cache_read_input_tokens": counts["inputCacheRead"] or 0,
                "cache_creation_input_tokens": counts["inputCacheCreation"] or 0,
            }
        )


class _Other:
    """Another agent's wire file, read along with the main one: its lines one at a time, its notes in a
    trace of its own (added to the log's after the main file's)."""

    def __init__(self, path: str, file: Path, order: TimeOrder) -> None:
        self.doc = load(str(file))
        if self.doc.lines is None:
            self.doc.close()
            raise InputError(str(file), None, "expected a Kimi Code wire log (JSON lines)")
        self.notes = Trace(path=path, format=FORMAT)
        self.agent = _Agent(self.notes, str(file), file.parent.name, order)
        self.lines = iter(self.doc.lines)
        self.next: tuple[int, Any] | None = next(self.lines, None)

    def read_to(self, time: Any) -> None:
        """Its lines up to ``time`` (milliseconds; every line when None)."""
        while self.next is not None:
            number, value = self.next
            at = value.get("time") if isinstance(value, dict) else None
            if time is not None and _ms(at) is not None and _ms(at) > time:
                return
            self.agent.record(f"line {number}", value)
            self.next = next(self.lines, None)
        self.doc.close()  # read to its end

    def close(self) -> None:
        self.doc.close()


def _ms(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _session_folder(path: str) -> Path | None:
    """``session_<uuid>/`` when the file is ``agents/<name>/wire.jsonl`` inside one."""
    file = Path(path)
    if file.name != WIRE or file.parent.parent.name != "agents":
        return None
    return file.parent.parent.parent


def _work_dir(session: Path) -> str | None:
    state = session / "state.json"
    if not state.is_file():
        return None
    try:
        with load(str(state)) as doc:
            value = doc.value if doc.lines is None else None
    except InputError:
        return None  # the state file is Kimi Code's, not the log: a damaged one leaves the project unknown
    work_dir = value.get("workDir") if isinstance(value, dict) else None
    return work_dir if isinstance(work_dir, str) else None


class KimiReader(SessionFold):
    """A Kimi Code session read as a fold over the main agent's wire file, the other agents' files read
    along with it (see the module's docstring)."""

    expected = "expected a Kimi Code wire log (JSON lines)"

    def __init__(self, path: str, doc: Document | None) -> None:
        super().__init__(Trace(path=path, format=FORMAT))
        self.made = self.order = TimeOrder()
        self.main = _Agent(self.trace, path, "", self.order)
        self.others: list[_Other] = []
        self.session = _session_folder(path)
        self.time: float | None = None  # the latest time the main file has reached
        self.cwd = _work_dir(self.session) if self.session is not None else None
        if self.session is not None and Path(path).parent.name == "main":
            for other in sorted((self.session / "agents").glob(f"*/{WIRE}")):
                if other.parent.name != "main" and other.is_file():
                    self.others.append(_Other(path, other, self.order))

    def feed(self, record: Record) -> list[Call]:
        if record.line is None:
            raise InputError(self.trace.path, None, self.expected)
        self.main.record(f"line {record.line}", record.value)
        at = record.value.get("time") if isinstance(record.value, dict) else None
        if _ms(at) is not None:
            self.time = max(self.time or 0.0, _ms(at) or 0.0)
        for other in self.others:
            other.read_to(self.time if self.time is not None else -1.0)
        reached = parse_time(self.time) if self.time is not None else None
        return self._placed(self.order.take((1, reached))) if reached is not None else []

    def finish(self) -> list[Call]:
        trace, main = self.trace, self.main
        if main.step is not None:
            trace.note("open-step", OPEN_STEP, main.step["where"])
        try:
            for other in self.others:
                other.read_to(None)
                if other.agent.step is not None:
                    other.notes.note("open-step", OPEN_STEP, other.agent.step["where"])
                for note in other.notes.notes:  # after the main file's, as a whole read lists them
                    if not note.places:
                        trace.note(note.code, note.message)
                    for place in note.places:
                        trace.note(note.code, note.message, place)
        finally:
            for other in self.others:
                other.close()
        if self.session is not None and self.session.name.startswith("session_"):
            trace.session = self.session.name.removeprefix("session_")
        trace.unrecorded = tuple(
            part for part, seen in (("system", main.system_seen), ("tools", main.tools is not None)) if not seen
        )
        calls = self._placed(self.order.rest())
        trace.model = self.order.model()
        return calls

    def _placed(self, calls: list[Call]) -> list[Call]:
        for call in calls:
            call.cwd = self.cwd
        return calls


LOCATIONS = (Location("kimi-code", ".kimi-code/sessions", ("*/session_*/agents/main/wire.jsonl",), project_depth=4),)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    KimiReader,
    sessions=True,
    locations=LOCATIONS,
    records_what="per-call usage, the system prompt and tool definitions; sub-agents as threads",
)
