"""GitHub Copilot CLI session state: ``~/.copilot/session-state/<session>/events.jsonl`` (before 1.0.11,
``~/.copilot/session-state/<session>.jsonl``; ``$COPILOT_HOME`` moves ``~/.copilot``).

Copilot CLI records a session as events ``{type, data, id, timestamp, parentId}``, one per line. The
ones read (their shapes as Copilot CLI 1.0.x writes them; ``github/copilot-sdk``'s session events):

* ``session.start`` / ``session.resume``: ``sessionId``, ``selectedModel``, ``context{cwd, branch,
  headCommit}``; ``session.model_change``: ``newModel``;
* ``system.message``: ``content``, the system prompt;
* ``user.message``: ``transformedContent`` (what the model is sent), else ``content``;
* ``assistant.message``: one model response (``messageId``): ``content``, ``toolRequests[{toolCallId,
  name, arguments}]``, ``reasoningText``, ``model``, ``outputTokens``; ``parentToolCallId`` marks a
  sub-agent's (its own thread);
* ``tool.execution_complete``: ``toolCallId``, ``result.content``: a tool's result;
* ``session.compaction_complete``: ``summaryContent`` (later prompts start from it) and
  ``compactionTokensUsed{model, inputTokens, outputTokens, cachedInput}``, the summarising call;
* ``session.shutdown``: ``modelMetrics{<model>: {requests{count}, usage{inputTokens, outputTokens,
  cacheReadTokens, cacheWriteTokens}}}``, the agent's totals since the session (or its resume) began.

**Calls and usage.** Each ``assistant.message`` is one model call, made on the history before it. Copilot
CLI records only its **output** (``outputTokens``): the call's prompt, cache reads and cache writes
are not recorded (never 0), so the prompts' sizes are computed from the rendered history and labelled
so. The input the agent billed is in ``session.shutdown``'s per-model totals, shown as they are in the
note ``session-totals`` (summed over the shutdowns of a resumed session; ``inputTokens`` includes the
cache reads and writes). A compaction's call (``compactionTokensUsed``) reports its input and output.
The system prompt is recorded when ``system.message`` is; the tool definitions never are.

**A fold** (#43.1): each line is read as it is fed; the calls of the main thread and the sub-agents'
are given in time order, each once a later call is made (:class:`~tokprof.formats.folds.TimeOrder`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokprof.formats.conversation import Conversation, tool_text
from tokprof.formats.folds import SessionFold, TimeOrder
from tokprof.formats.fields import check_text, expect_list, expect_object, optional_object, optional_string, string
from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import Location
from tokprof.formats.neutral import check_cached, check_count, parse_time
from tokprof.formats.reader import LogFormat
from tokprof.trace import Call, Trace, Usage

FORMAT = "copilot-cli"
DESCRIPTION = "GitHub Copilot CLI session state (~/.copilot/session-state/<session>/events.jsonl)"

ANCHORS = ("session.start", "session.resume", "user.message", "assistant.message", "assistant.turn_start")
TOTAL_FIELDS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
OUTPUT_ONLY = (
    "Copilot CLI records each call's output tokens only: the calls' input (prompt, cache reads and writes) is not "
    "recorded; the prompts' sizes here are computed from the rendered history"
)
TOTALS = (
    "the input and output Copilot CLI itself reported for the session, per model (session.shutdown modelMetrics, "
    "summed over its shutdowns; inputTokens includes cache reads and writes): the agent's own totals, not split "
    "into calls"
)
NO_SHUTDOWN = "the session has no session.shutdown record (still running, or ended abruptly): no input totals"
COMPACTION = "a compaction: later prompts start from its summaryContent"
SUBAGENT = (
    "a sub-agent's first prompt is not recorded: it starts from the arguments of the tool call that started it "
    "(its system prompt and tool definitions are not recorded)"
)


def sniff(doc: Document) -> bool:
    """Copilot CLI's event envelope ``{type, data, id, timestamp}`` on every line of the head, one of
    them a session, user or assistant event (the other types are many and grow: ``abort``,
    ``pending_messages.modified``, ...)."""
    if doc.lines is None:
        return False
    head = [value for _, value in doc.lines.head(8)]
    return (
        bool(head)
        and all(
            isinstance(v, dict)
            and isinstance(v.get("type"), str)
            and isinstance(v.get("data"), dict)
            and "id" in v
            and "timestamp" in v
            for v in head
        )
        and any(v["type"] in ANCHORS for v in head)
    )


class _Reader:
    def __init__(self, trace: Trace, order: TimeOrder) -> None:
        self.trace = trace
        self.order = order
        self.chats: dict[str, Conversation] = {}
        self.call_ids: set[str] = set()
        self.model: str | None = None
        self.cwd: str | None = None
        self.branch: str | None = None
        self.commit: str | None = None
        self.system = False
        self.totals: dict[str, dict[str, int]] = {}
        self.requests: dict[str, int] = {}
        self.shutdowns = 0
        self.details: dict[str, int] = {}  # session.shutdown tokenDetails: every model's tokens by kind
        self.seen: set[str] = set()
        self.arguments: dict[str, str] = {}  # tool call id -> its arguments (a sub-agent's task)

    def chat(self, thread: str, where: str = "") -> Conversation:
        if thread not in self.chats:
            chat = self.chats[thread] = Conversation(self.trace, self.order)
            chat.call_ids = self.call_ids
            self.order.thread(thread)
            if thread in self.arguments:  # a sub-agent starts from the task its parent's tool call gave it
                self.trace.note("subagent-task", SUBAGENT, where)
                chat.add({"role": "user", "content": self.arguments[thread]}, where)
        return self.chats[thread]

    def record(self, where: str, value: Any) -> None:
        path = self.trace.path
        value = expect_object(path, where, value, "a JSON object")
        kind = string(path, where + ": type", value.get("type"))
        data = expect_object(path, where + ": data", value.get("data"))
        at = where + ": data"
        thread = optional_string(path, at + ".parentToolCallId", data.get("parentToolCallId")) or ""
        if kind in ("session.start", "session.resume"):
            self._start(where, data)
        elif kind == "session.model_change":
            self.model = optional_string(path, at + ".newModel", data.get("newModel")) or self.model
        elif kind == "system.message":
            content = string(path, at + ".content", data.get("content"))
            chat = self.chat(thread)
            rest = [m for m in chat.messages if m.get("role") != "system"]
            chat.replace([chat.check({"role": "system", "content": check_text(path, at, content)}, where), *rest])
            self.system = self.system or not thread
        elif kind == "user.message":
            sent = data.get("transformedContent")
            text = sent if isinstance(sent, str) else string(path, at + ".content", data.get("content"))
            self.chat(thread).add({"role": "user", "content": check_text(path, at, text)}, where)
        elif kind == "assistant.message":
            self._assistant(where, data, thread, value.get("timestamp"))
        elif kind == "tool.execution_complete":
            self._result(where, data, thread)
        elif kind == "session.compaction_complete":
            self._compaction(where, data, thread, value.get("timestamp"))
        elif kind == "session.shutdown":
            self._shutdown(where, data)

    def _start(self, where: str, data: dict) -> None:
        path = self.trace.path
        if self.trace.session is None:
            self.trace.session = optional_string(path, where + ": data.sessionId", data.get("sessionId"))
        model = data.get("selectedModel")
        if isinstance(model, str) and model:
            self.model = model
        context = optional_object(path, where + ": data.context", data.get("context"))
        if context:
            self.cwd = optional_string(path, where + ": data.context.cwd", context.get("cwd")) or self.cwd
            self.branch = optional_string(path, where + ": data.context.branch", context.get("branch")) or self.branch
            self.commit = (
                optional_string(path, where + ": data.context.headCommit", context.get("headCommit")) or self.commit
            )

    def _assistant(self, where: str, data: dict, thread: str, time: Any) -> None:
        path, at = self.trace.path, where + ": data"
        calls: list[dict[str, Any]] = []
        for i, request in enumerate(expect_list(path, at + ".toolRequests", data.get("toolRequests") or [])):
            place = f"{at}.toolRequests[{i}]"
            request = expect_object(path, place, request)
            arguments = request.get("arguments", {})
            calls.append(
                {
                    "id": string(path, place + ".toolCallId", request.get("toolCallId")),
                    "type": "function",
                    "function": {
                        "name": string(path, place + ".name", request.get("name")),
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments, ensure_ascii=False),
                    },
                }
            )
        content = optional_string(path, at + ".content", data.get("content"))
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        reasoning = data.get("reasoningText")
        if isinstance(reasoning, str) and reasoning:
            message["reasoning_content"] = reasoning
        if calls:
            message["tool_calls"] = calls
        chat = self.chat(thread, where)
        clean = chat.check(message, where)
        for tool_call in calls:
            self.arguments[tool_call["id"]] = tool_call["function"]["arguments"]
        output = check_count(path, at + ".outputTokens", data.get("outputTokens"))
        usage = Usage(output=output) if output is not None else None
        self.trace.note("output-only", OUTPUT_ONLY)
        model = optional_string(path, at + ".model", data.get("model")) or self.model
        message_id = data.get("messageId")
        call = chat.call(
            where, model, usage, clean, parse_time(time), request_id=message_id if isinstance(message_id, str) else None
        )
        if call is not None:
            self._place(call, thread)
        chat.messages.append(clean)

    def _place(self, call: Call, thread: str) -> None:
        call.thread = thread
        call.cwd, call.git_branch, call.git_commit = self.cwd, self.branch, self.commit
        self.order.place(thread, call)

    def _result(self, where: str, data: dict, thread: str) -> None:
        path, at = self.trace.path, where + ": data"
        call_id = string(path, at + ".toolCallId", data.get("toolCallId"))
        if call_id in self.seen:
            return
        self.seen.add(call_id)
        result = data.get("result")
        content = result.get("content") if isinstance(result, dict) else result
        if content is None and isinstance(data.get("error"), dict):
            content = data["error"].get("message")
        text = content if isinstance(content, str) else tool_text(content)
        self.chat(thread).add({"role": "tool", "tool_call_id": call_id, "content": check_text(path, at, text)}, where)

    def _compaction(self, where: str, data: dict, thread: str, time: Any) -> None:
        path, at = self.trace.path, where + ": data"
        if data.get("success") is False:
            return
        self.trace.compactions += 1
        self.trace.note("compaction", COMPACTION, where)
        chat = self.chat(thread)
        used = optional_object(path, at + ".compactionTokensUsed", data.get("compactionTokensUsed"))
        if used:
            u = at + ".compactionTokensUsed"
            usage = check_cached(
                path,
                u,
                Usage(
                    prompt=check_count(path, u + ".inputTokens", used.get("inputTokens")),
                    cache_read=check_count(path, u + ".cachedInput", used.get("cachedInput")),
                    output=check_count(path, u + ".outputTokens", used.get("outputTokens")),
                ),
                "cachedInput",
            )
            summary = optional_string(path, at + ".summaryContent", data.get("summaryContent"))
            response = chat.check({"role": "assistant", "content": summary or None}, where)
            model = optional_string(path, u + ".model", used.get("model")) or self.model
            call = chat.call(where, model, usage, response, parse_time(time), kind="compaction")
            if call is not None:
                self._place(call, thread)
        summary = data.get("summaryContent")
        if isinstance(summary, str) and summary:
            system = [m for m in chat.messages if m.get("role") == "system"]
            chat.replace([*system, chat.check({"role": "user", "content": check_text(path, at, summary)}, where)])

    def _shutdown(self, where: str, data: dict) -> None:
        path, at = self.trace.path, where + ": data.modelMetrics"
        self.shutdowns += 1
        metrics = optional_object(path, at, data.get("modelMetrics")) or {}
        for model, entry in metrics.items():
            place = f"{at}.{model}"
            entry = expect_object(path, place, entry)
            usage = optional_object(path, place + ".usage", entry.get("usage"))
            if usage:
                sums = self.totals.setdefault(model, {})
                for key in TOTAL_FIELDS:
                    count = check_count(path, f"{place}.usage.{key}", usage.get(key))
                    if count is not None:
                        sums[key] = sums.get(key, 0) + count
            requests = entry.get("requests")
            count = requests.get("count") if isinstance(requests, dict) else requests
            count = check_count(path, place + ".requests.count", count)
            if count is not None:
                self.requests[model] = self.requests.get(model, 0) + count

        details = optional_object(path, where + ": data.tokenDetails", data.get("tokenDetails")) or {}
        for key, entry in details.items():
            place = f"{where}: data.tokenDetails.{key}"
            count = check_count(path, place + ".tokenCount", expect_object(path, place, entry).get("tokenCount"))
            if count is not None:
                self.details[key] = self.details.get(key, 0) + count

    def totals_note(self) -> None:
        if not self.shutdowns:
            if self.order.count:
                self.trace.note("no-session-totals", NO_SHUTDOWN)
            return
        parts = []
        for model in sorted(set(self.totals) | set(self.requests)):
            sums = self.totals.get(model, {})
            fields = [f"{key} {sums[key]:,}" for key in TOTAL_FIELDS if key in sums]
            if model in self.requests:
                fields.append(f"requests {self.requests[model]:,}")
            parts.append(f"{model}: {', '.join(fields) or 'no usage'}")
        if self.details:
            parts.append("all models: " + ", ".join(f"{key} {count:,}" for key, count in self.details.items()))
        self.trace.note("session-totals", TOTALS, "; ".join(parts) if parts else "no model metrics")


def session_totals(trace: Trace) -> str | None:
    """The agent's own per-model totals, as the note ``session-totals`` gives them."""
    note = next((n for n in trace.notes if n.code == "session-totals"), None)
    return note.places[0] if note and note.places else None


class CopilotReader(SessionFold):
    """A Copilot CLI session read as a fold over its events (see the module's docstring)."""

    expected = "expected a Copilot CLI events.jsonl (JSON lines)"

    def __init__(self, path: str, doc: Document | None) -> None:
        super().__init__(Trace(path=path, format=FORMAT))
        self.made = self.order = TimeOrder()
        self.reader = _Reader(self.trace, self.order)
        self.reader.chat("")

    def line(self, number: int, value: Any) -> None:
        self.reader.record(f"line {number}", value)

    def finish(self) -> list[Call]:
        trace, reader = self.trace, self.reader
        calls = self.order.rest()
        trace.unrecorded = ("tools",) if reader.system else ("system", "tools")
        reader.totals_note()
        if trace.session is None:
            file = Path(trace.path)
            trace.session = file.parent.name if file.name == "events.jsonl" else file.stem
        trace.model = self.order.model()
        return calls


LOCATIONS = (
    Location(
        "copilot-cli",
        ".copilot/session-state",
        ("*/events.jsonl", "*.jsonl"),
        env="COPILOT_HOME",
        below_env="session-state",
        project_depth=0,
    ),
    # its OpenTelemetry file export (read by the otel format): ~/.copilot/otel/, or the file the variable names
    Location(
        "copilot-cli",
        ".copilot/otel",
        ("*.jsonl",),
        env="COPILOT_OTEL_FILE_EXPORTER_PATH",
        project_depth=0,
        format="otel",
    ),
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    CopilotReader,
    sessions=True,
    locations=LOCATIONS,
    records_what="per-call output only; the session's per-model input totals at shutdown",
)
