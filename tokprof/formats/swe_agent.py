"""SWE-agent trajectories: ``trajectories/<user>/<run>/<instance>/<instance>.traj`` (1.x),
``trajectories/<user>/<run>/<instance>.traj`` (0.x), one JSON object per task instance.

Checked against SWE-agent/SWE-agent's ``sweagent/types.py``, ``sweagent/agent/agents.py``
(``get_trajectory_data``, ``add_step_to_trajectory``, ``forward``), ``sweagent/agent/models.py``
(``_history_to_messages``, ``InstanceStats``) and ``tests/test_data/trajectories/``. The object holds:

* ``history``: the agent's messages, each ``{role, content, agent, ...}`` (``role`` system, user,
  assistant or tool; ``content`` a string or a list of parts). 0.x adds ``thought``/``action``/``is_demo``
  (a demonstration is a user message); 1.x adds ``message_type`` and, with function calling,
  ``tool_calls`` on assistant messages and ``tool_call_ids`` on tool messages;
* ``trajectory``: the steps (``response``, ``thought``, ``action``, ``observation``, ``state``); from
  1.1 each step's ``query`` is the messages sent for it, after SWE-agent's history processors;
* ``info.model_stats``: ``tokens_sent``, ``tokens_received``, ``api_calls``, ``instance_cost``
  (totals for the instance);
* ``replay_config`` (1.x, an object or its JSON text): the run's configuration, whose
  ``agent.model.name`` is the model.

**Calls.** When the steps record ``query`` (1.1 and later), each step with a query is one call and its
prompt is that query, as SWE-agent sent it: this includes requeries after format errors, which the
history does not keep. Otherwise each assistant message of the history is one call, made on the
history before it (of the same ``agent``: a second agent's calls are a thread of their own); the
history is the raw one, so when a history processor elides old observations (0.x ``Last5Observations``,
1.x ``last_n_observations``) the prompts are larger than what the model saw (note
``raw-history``). Messages map as SWE-agent sends them: ``role`` and ``content``, assistant
``tool_calls``, a tool message answering its ``tool_call_ids[0]``; a system message is a user message
when the model config sets ``convert_system_to_user``.

**Attempts.** A retry loop's trajectory (1.x ``RetryAgent``) lists every attempt in ``attempts``
(each a trajectory of its own; the top level copies the chosen one): every attempt's calls are read,
one after the other, and the copy is not read again (note ``attempts``).

**Usage.** SWE-agent records no per-call usage, only ``info.model_stats``, the instance's totals:
0.x adds up the provider's ``usage.prompt_tokens``/``input_tokens`` for OpenAI and Anthropic models
(a local count for some others), 1.x counts the messages with litellm's ``token_counter`` (tool
definitions not included). They are shown in the note ``run-totals`` and never split into per-call
numbers: calls have no reported usage.

**What is not recorded.** 0.x agents document their commands in the system prompt and send no tool
definitions. With function calling (1.x), the tool definitions sent are not in the file:
:attr:`Trace.unrecorded` is ``("tools",)``. A 0.x trajectory does not name its model (the run's
``args.yaml`` does): give it with ``--model``.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Iterable, Iterator

from tokprof.base.errors import InputError
from tokprof.formats.conversation import NOT_TEXT, ORPHAN
from tokprof.formats.fields import expect_list, expect_object
from tokprof.formats.jsonfile import Document
from tokprof.formats.reader import LogFormat, Reader, Record, read_whole
from tokprof.formats.jsonfile import kind_of as _kind
from tokprof.formats.neutral import check_content, check_count, check_text, check_tool_calls
from tokprof.formats.shared_prompts import SharedPrompts
from tokprof.trace import Call, PromptView, Trace

FORMAT = "swe-agent"
DESCRIPTION = "SWE-agent trajectory (trajectories/<user>/<run>/.../<instance>.traj), 0.x or 1.x"

ROLES = ("system", "user", "assistant", "tool")
STATS = ("tokens_sent", "tokens_received", "api_calls")
#: History processors that change no message's text (cache_control only marks messages).
KEEPS_TEXT = ("cache_control", "default", "DefaultHistoryProcessor")

RUN_TOTALS = (
    "SWE-agent records no per-call usage, only the instance's totals (info.model_stats: 0.x sums the provider's "
    "prompt tokens for OpenAI and Anthropic models, 1.x counts the messages with litellm's counter, tool "
    "definitions left out): calls have no reported usage"
)
RAW_HISTORY = (
    "the trajectory records the raw history, not each call's query: a history processor that elides old "
    "observations (Last5Observations, last_n_observations) makes the prompts here larger than what the model saw"
)
NO_QUERY = "trajectory steps without a query were not model calls (an autosubmission, an exit): not profiled"
NO_MODEL = "the trajectory does not name its model (0.x keeps it in the run's args.yaml): give it with --model"
UNCOUNTED = (
    "info.model_stats.api_calls differs from the calls the trajectory records: requeries after format "
    "errors are not kept in the history"
)
ATTEMPTS = (
    "the trajectory holds several attempts (a retry loop): every attempt's calls are profiled, one after the "
    "other; the reviewer's or chooser's calls are not recorded (info.rloop_model_stats counts them)"
)


def sniff(doc: Document) -> bool:
    value = doc.value
    if doc.lines is not None or not isinstance(value, dict):
        return False
    if "messages" in value or "events" in value:
        return False
    attempts = value.get("attempts")
    if isinstance(attempts, list) and attempts and isinstance(attempts[0], dict):
        value = attempts[0]  # a retry loop's trajectory: one entry per attempt
    history, steps = value.get("history"), value.get("trajectory")
    return isinstance(steps, list) and (isinstance(history, list) or isinstance(value.get("info"), dict))


def starts_like_trajectory(head: bytes) -> bool:
    """Whether a JSON document's first bytes are an SWE-agent trajectory's (``trajectory`` or
    ``attempts`` comes near the start), for directory scans that read only a file's start."""
    start = head[:1024]
    return start.lstrip()[:1] == b"{" and (b'"trajectory"' in start or b'"attempts"' in start)


class _Reader:
    def __init__(self, trace: Trace, system_role: str, model: str | None, prefix: str = "", first: int = 0) -> None:
        self.trace = trace
        self.first = first  # the index of the attempt's first call in the log
        self.calls: list[Call] = []  # the attempt's calls
        self.system_role = system_role
        self.model = model
        self.prefix = prefix  # "attempts[1]." for an attempt of a retry loop
        self.prompts = SharedPrompts()

    def skip(self, place: str, kind: str) -> None:
        self.trace.note("content-not-text", NOT_TEXT, place)

    def message(self, where: str, item: Any, call_ids: set[str]) -> dict:
        """One history item as SWE-agent sends it (role, content, tool calls, the tool call answered)."""
        path = self.trace.path
        item = expect_object(path, where, item, "a message object")
        role = item.get("role")
        if role not in ROLES:
            raise InputError(path, where + ".role", f"expected one of {', '.join(ROLES)}, found {role!r}")
        content = check_content(path, where + ".content", item.get("content"), role != "assistant", self.skip)
        if role == "system":
            return {"role": self.system_role, "content": content}
        if role == "tool":
            return self._tool(where, item, content or "", call_ids)
        if role == "user":
            return {"role": "user", "content": content}
        out: dict[str, Any] = {"role": "assistant", "content": content or ""}
        thinking = _thinking(path, where + ".thinking_blocks", item.get("thinking_blocks"))
        if thinking:
            out["reasoning_content"] = thinking
        if item.get("tool_calls"):
            out["tool_calls"] = check_tool_calls(path, where + ".tool_calls", item["tool_calls"], call_ids)
        return out

    def _tool(self, where: str, item: dict, content: str, call_ids: set[str]) -> dict:
        path = self.trace.path
        ids = expect_list(path, where + ".tool_call_ids", item.get("tool_call_ids"))
        if not ids or not isinstance(ids[0], str):
            raise InputError(path, where + ".tool_call_ids[0]", "missing: the id of the call this result answers")
        if ids[0] not in call_ids:
            self.trace.note("orphan-tool-result", ORPHAN, where)
            return {"role": "user", "content": content}
        return {
            "role": "tool",
            "tool_call_id": check_text(path, where + ".tool_call_ids[0]", ids[0]),
            "content": content,
        }

    def call(self, where: str, messages: list[dict] | PromptView, response: dict | None, thread: str) -> None:
        self.calls.append(
            Call(
                index=self.first + len(self.calls),
                messages=messages,
                tools=None,
                model=self.model,
                where=where,
                response=response,
                thread=thread,
            )
        )

    def from_history(self, history: list) -> None:
        """Each assistant message is a call on the history before it, of its own agent."""
        by_agent: dict[str, tuple[list[dict], set[str]]] = {}
        first: str | None = None
        for i, item in enumerate(history):
            where = f"{self.prefix}history[{i}]"
            agent = item.get("agent", "") if isinstance(item, dict) else ""
            if not isinstance(agent, str):
                raise InputError(self.trace.path, where + ".agent", f"expected a string, found {_kind(agent)}")
            first = agent if first is None else first
            messages, call_ids = by_agent.setdefault(agent, ([], set()))
            message = self.message(where, item, call_ids)
            if message["role"] == "assistant":
                if messages:
                    self.call(where, PromptView(messages, len(messages)), message, "" if agent == first else agent)
                else:
                    self.trace.note("empty-prompt", "an assistant message with nothing before it: not a call", where)
            messages.append(message)

    def from_queries(self, steps: list) -> None:
        """Each step with a query is a call on that query, as sent."""
        for i, step in enumerate(steps):
            where = f"{self.prefix}trajectory[{i}]"
            step = expect_object(self.trace.path, where, step, "a step object")
            query = step.get("query")
            if query is None or query == [] or query == [{}]:
                self.trace.note("no-query", NO_QUERY, where)
                continue
            query = expect_list(self.trace.path, where + ".query", query)
            call_ids: set[str] = set()
            messages = [self.message(f"{where}.query[{j}]", item, call_ids) for j, item in enumerate(query)]
            response = step.get("response")
            if response is not None and not isinstance(response, str):
                raise InputError(self.trace.path, where + ".response", f"expected a string, found {_kind(response)}")
            reply = {"role": "assistant", "content": check_text(self.trace.path, where + ".response", response or "")}
            self.call(where, self.prompts.prompt(messages), reply, "")  # each query resends the history: held once


def read(path: str, doc: Document) -> Trace:
    """A trajectory read whole (:class:`TrajectoryReader` fed every attempt)."""
    return read_whole(TrajectoryReader(path, doc), attempt_records(doc))


def attempt_records(doc: Document) -> Iterator[Record]:
    """A trajectory's attempts, one record each (the document is parsed whole, as JSON is): a retry
    loop's ``attempts``, else the trajectory itself."""
    value = doc.value
    attempts = value.get("attempts") if isinstance(value, dict) else None
    if attempts is None:
        yield Record(value)
    elif isinstance(attempts, list):
        for attempt in attempts:
            yield Record(attempt)


class TrajectoryReader(Reader):
    """A trajectory read as a fold over its attempts: each attempt's calls given once it is read."""

    def __init__(self, path: str, doc: Document | None) -> None:
        self.path = path
        self.value = doc.value if doc is not None else None
        self.trace = Trace(path=path, format=FORMAT)
        self.attempts = 0
        self.calls = 0
        self.threads: Counter[str] = Counter()  # the calls of each thread
        self.models: Counter[str] = Counter()
        self.checked: dict | None = None

    def top(self) -> dict:
        """The trajectory object, checked (and its list of attempts, when it has one)."""
        if self.checked is None:
            self.checked = expect_object(self.path, None, self.value, "an SWE-agent trajectory object")
            if self.checked.get("attempts") is not None:
                expect_list(self.path, "attempts", self.checked["attempts"])
        return self.checked

    def feed(self, record: Record) -> Iterable[Call]:
        value = self.top()
        if value.get("attempts") is None:
            prefix, attempt = "", value
        else:  # a retry loop: every attempt's calls were made; the top level copies the chosen one
            prefix = f"attempts[{self.attempts}]."
            attempt = expect_object(self.path, f"attempts[{self.attempts}]", record.value, "an attempt object")
        self.attempts += 1
        calls = _read_attempt(self.trace, prefix, attempt, self.calls)
        self.calls += len(calls)
        self.threads.update(call.thread for call in calls)
        self.models.update(call.model for call in calls if call.model)
        return calls

    def finish(self) -> Iterable[Call]:
        value, trace = self.top(), self.trace
        attempts = value.get("attempts")
        if attempts is not None and len(attempts) > 1:
            trace.note("attempts", ATTEMPTS, f"attempts: {len(attempts)}")
        _totals(trace, value.get("info"), self.threads)
        trace.model = self.models.most_common(1)[0][0] if self.models else None  # the model of most calls
        if trace.model is None:
            trace.note("no-model", NO_MODEL)
        return ()


def _read_attempt(trace: Trace, prefix: str, value: dict, first: int) -> list[Call]:
    """One attempt's calls (a trajectory without a retry loop is one attempt, ``prefix`` "")."""
    path = trace.path
    config = _replay_config(path, prefix + "replay_config", value.get("replay_config"))
    model_config = _at(config, "agent", "model")
    model = _model(path, prefix + "replay_config.agent.model.name", model_config)
    system_role = "user" if model_config.get("convert_system_to_user") is True else "system"
    history = expect_list(path, prefix + "history", value.get("history", []))
    steps = expect_list(path, prefix + "trajectory", value.get("trajectory"))
    reader = _Reader(trace, system_role, model, prefix, first)
    if any(isinstance(step, dict) and step.get("query") not in (None, [], [{}]) for step in steps):
        reader.from_queries(steps)
    else:
        reader.from_history(history)
        if reader.calls and _elides(path, prefix, config):
            trace.note("raw-history", RAW_HISTORY)
    if _function_calling(history, config):
        trace.unrecorded = ("tools",)
    return reader.calls


def _at(value: Any, *keys: str) -> dict:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def _replay_config(path: str, where: str, config: Any) -> dict:
    """``replay_config``: an object, or (newer 1.x) its JSON text; {} when absent."""
    if config is None:
        return {}
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except ValueError as exc:
            raise InputError(path, where, f"not valid JSON: {exc}") from None
    return expect_object(path, where, config)


def _model(path: str, where: str, model_config: dict) -> str | None:
    name = model_config.get("name", model_config.get("model_name"))
    if name is None:
        return None
    if not isinstance(name, str):
        raise InputError(path, where, f"expected a string, found {_kind(name)}")
    return name


def _elides(path: str, prefix: str, config: dict) -> bool:
    """Whether the run's history processors may change what the model saw (unknown in 0.x: yes)."""
    if not config:
        return True
    processors = _at(config, "agent").get("history_processors", [])
    if not isinstance(processors, list):
        where = prefix + "replay_config.agent.history_processors"
        raise InputError(path, where, f"expected a list, found {_kind(processors)}")
    return any(not isinstance(p, dict) or p.get("type") not in KEEPS_TEXT for p in processors)


def _function_calling(history: list, config: dict) -> bool:
    parse = _at(config, "agent", "tools", "parse_function").get("type")
    if isinstance(parse, str):
        return parse == "function_calling"
    return any(isinstance(item, dict) and item.get("tool_calls") for item in history)


def _thinking(path: str, where: str, blocks: Any) -> str:
    if not blocks:
        return ""
    texts = []
    for j, block in enumerate(expect_list(path, where, blocks)):
        block = expect_object(path, f"{where}[{j}]", block, "a thinking block object")
        if isinstance(block.get("thinking"), str):
            texts.append(check_text(path, f"{where}[{j}].thinking", block["thinking"]))
    return "\n".join(texts)


def _totals(trace: Trace, info: Any, threads: Counter[str]) -> None:
    """``info.model_stats``, shown as it is: SWE-agent's own totals for the instance."""
    if info is None:
        return
    info = expect_object(trace.path, "info", info)
    stats = info.get("model_stats")
    if stats is None:
        return
    where = "info.model_stats"
    stats = expect_object(trace.path, where, stats)
    counts = {key: check_count(trace.path, f"{where}.{key}", stats.get(key)) for key in STATS}
    parts = [f"{key} {value:,}" for key, value in counts.items() if value is not None]
    cost = stats.get("instance_cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0:
        parts.append(f"instance_cost {cost:.4f}")
    if not parts:
        return
    trace.note("run-totals", RUN_TOTALS, f"{where}: {', '.join(parts)}")
    calls = threads
    if counts["api_calls"] and counts["api_calls"] != sum(calls.values()):
        trace.note("api-calls-differ", UNCOUNTED, f"api_calls {counts['api_calls']:,} vs {sum(calls.values()):,} calls")


LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    TrajectoryReader,
    records=attempt_records,
    sessions=True,
    records_what="run totals only (0.x), per-step usage (1.x)",
)
