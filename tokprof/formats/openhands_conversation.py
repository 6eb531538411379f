"""OpenHands conversations of the software agent SDK (the OpenHands CLI 1.x):
``~/.openhands/conversations/<id>/base_state.json`` with its ``events/event-<n>-<id>.json``.

Read as part of the ``openhands`` format (:mod:`tokprof.formats.openhands`): the conversation's
``base_state.json`` is the session's file, its ``events/`` folder the events, one JSON object each, in
file-name order. Checked against OpenHands/software-agent-sdk's event and metrics models and the
conversation folders other tools read.

* ``SystemPromptEvent``: ``system_prompt.text`` (the system prompt) and ``tools`` (the tool
  definitions, when they are OpenAI-shaped ``{type: function, function}``);
* ``MessageEvent``: ``source`` ``user`` or ``agent``, ``llm_message{role, content[{type: text, text}]}``;
  an agent's names its ``llm_response_id``;
* ``ActionEvent``: an agent's tool call (``tool_call{id, name, arguments}``, ``thought`` text parts,
  ``reasoning_content``) and the ``llm_response_id`` of the response it came from: parallel tool calls
  are several actions of one response;
* ``ObservationEvent`` (``tool_call_id``, ``observation.content`` text parts), ``AgentErrorEvent``
  (``error``) and ``UserRejectObservation`` (``rejection_reason``): a tool's result.

**Calls.** Each response (``llm_response_id``) is one model call, made on the history before its first
event. **Usage:** ``base_state.json``'s ``stats.usage_to_metrics`` (``service_to_metrics`` in older
versions), each ``token_usages[]`` entry ``{prompt_tokens, completion_tokens, cache_read_tokens,
cache_write_tokens, response_id}``, matched to the call by ``response_id``; ``prompt_tokens`` includes
the cache reads and writes. A response with no usage entry is a call whose usage is not recorded.
Usage entries of no event's response (the condenser's summarising calls) are not calls here: their
sums are in the note ``other-usage``.

**A fold** (#43.1): the events are read one file at a time, each call given once the next event that
is not part of its response is read (or at the end); the reader holds the history, not the calls.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tokprof.base.errors import InputError
from tokprof.formats.conversation import Conversation, tool_text
from tokprof.formats.folds import Made
from tokprof.formats.fields import check_text, expect_list, expect_object, optional_string, string
from tokprof.formats.jsonfile import load
from tokprof.formats.neutral import check_cached, check_count, parse_time
from tokprof.trace import Call, Trace, Usage

STATE = "base_state.json"
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_write_tokens")
NO_USAGE = "responses with no usage entry in base_state.json: their calls' usage is not recorded"
OTHER_USAGE = (
    "usage entries of calls that are not in the events (the condenser's summaries, other services): not "
    "profiled, their sums as OpenHands recorded them"
)
NOT_SENT = "events that are not sent to the model as they are (state updates, condensations, pauses) were left out"


PROXY = "litellm_proxy/"
PROXIED = (
    "the model names the LiteLLM proxy OpenHands calls through (litellm_proxy/<model>): the call is counted and "
    "priced as the model behind it"
)


def model_name(trace: Trace, name: str | None) -> str | None:
    """The model a call went to: the one behind OpenHands' LiteLLM proxy prefix, when it has one."""
    if isinstance(name, str) and name.startswith(PROXY) and len(name) > len(PROXY):
        trace.note("proxied-model", PROXIED)
        return name[len(PROXY) :]
    return name


def is_state(value: Any) -> bool:
    """A conversation's ``base_state.json``: its ``stats`` hold the metrics of each service."""
    stats = value.get("stats") if isinstance(value, dict) else None
    return isinstance(stats, dict) and ("usage_to_metrics" in stats or "service_to_metrics" in stats)


def _usages(path: str, state: dict) -> tuple[dict[str, Usage], dict[str, list[Usage]], str | None]:
    """Usage by response id, the usages of no response id by service, and the agent's model."""
    stats = expect_object(path, "stats", state.get("stats"))
    key = "usage_to_metrics" if "usage_to_metrics" in stats else "service_to_metrics"
    services = expect_object(path, f"stats.{key}", stats.get(key))
    by_id: dict[str, Usage] = {}
    others: dict[str, list[Usage]] = {}
    model = None
    for service, metrics in services.items():
        at = f"stats.{key}.{service}"
        metrics = expect_object(path, at, metrics)
        for i, entry in enumerate(expect_list(path, at + ".token_usages", metrics.get("token_usages") or [])):
            place = f"{at}.token_usages[{i}]"
            entry = expect_object(path, place, entry)
            counts = {name: check_count(path, f"{place}.{name}", entry.get(name)) for name in USAGE_FIELDS}
            usage = check_cached(
                path,
                place,
                Usage(
                    prompt=counts["prompt_tokens"],
                    cache_read=counts["cache_read_tokens"],
                    cache_write=counts["cache_write_tokens"],
                    output=counts["completion_tokens"],
                ),
                "cache_read_tokens",
            )
            response_id = entry.get("response_id")
            if isinstance(response_id, str) and response_id:
                by_id[response_id] = usage
            else:
                others.setdefault(str(service), []).append(usage)
            name = entry.get("model") or metrics.get("model_name")
            if service == "agent" and isinstance(name, str) and name:
                model = name
    return by_id, others, model


def _texts(path: str, where: str, content: Any) -> str:
    if isinstance(content, str):
        return check_text(path, where, content)
    texts = []
    for i, part in enumerate(expect_list(path, where, content or [], "a string or a list of parts")):
        part = expect_object(path, f"{where}[{i}]", part, "a part object")
        if isinstance(part.get("text"), str):
            texts.append(part["text"])
    return check_text(path, where, "\n".join(texts))


class _Reader:
    def __init__(self, trace: Trace, usages: dict[str, Usage], model: str | None, made: Made) -> None:
        self.trace = trace
        self.chat = Conversation(trace, made)
        self.usages = usages
        self.used: set[str] = set()
        self.model = model
        self.tools: list[dict] | None = None
        self.pending: dict | None = None  # the response being read: its events so far

    def event(self, file: str, where: str, event: dict) -> None:
        kind = event.get("kind")
        response_id = event.get("llm_response_id")
        if kind in ("ActionEvent", "MessageEvent") and event.get("source") == "agent" and isinstance(response_id, str):
            self._response_part(file, where, kind, event, response_id)
            return
        self.flush()
        if kind == "SystemPromptEvent":
            prompt = expect_object(file, where + ": system_prompt", event.get("system_prompt"))
            text = string(file, where + ": system_prompt.text", prompt.get("text"))
            self.chat.add({"role": "system", "content": check_text(file, where, text)}, where)
            tools = event.get("tools")
            if isinstance(tools, list) and all(isinstance(t, dict) and "function" in t for t in tools):
                self.tools = tools
        elif kind == "MessageEvent":
            message = expect_object(file, where + ": llm_message", event.get("llm_message"))
            text = _texts(file, where + ": llm_message.content", message.get("content"))
            role = "user" if event.get("source") == "user" else "assistant"
            self.chat.add({"role": role, "content": text}, where)
        elif kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
            call_id = string(file, where + ": tool_call_id", event.get("tool_call_id"))
            if kind == "ObservationEvent":
                observation = expect_object(file, where + ": observation", event.get("observation"))
                content = observation.get("content")
                text = _texts(file, where + ": observation.content", content) if content is not None else ""
                if content is None:
                    text = tool_text({k: v for k, v in observation.items() if k != "kind"})
            else:
                text = str(event.get("error") or event.get("rejection_reason") or "")
            self.chat.add({"role": "tool", "tool_call_id": call_id, "content": check_text(file, where, text)}, where)
        else:
            self.trace.note("not-sent", NOT_SENT, where)

    def _response_part(self, file: str, where: str, kind: str, event: dict, response_id: str) -> None:
        if self.pending is not None and self.pending["id"] != response_id:
            self.flush()
        if self.pending is None:
            self.pending = {
                "id": response_id,
                "where": where,
                "time": event.get("timestamp"),
                "texts": [],
                "thoughts": [],
                "calls": [],
            }
        pending = self.pending
        if kind == "MessageEvent":
            message = expect_object(file, where + ": llm_message", event.get("llm_message"))
            pending["texts"].append(_texts(file, where + ": llm_message.content", message.get("content")))
            return
        thought = event.get("thought")
        if thought:
            pending["texts"].append(_texts(file, where + ": thought", thought))
        reasoning = optional_string(file, where + ": reasoning_content", event.get("reasoning_content"))
        if reasoning:
            pending["thoughts"].append(reasoning)
        call = expect_object(file, where + ": tool_call", event.get("tool_call"))
        arguments = call.get("arguments", "")
        pending["calls"].append(
            {
                "id": string(file, where + ": tool_call.id", call.get("id")),
                "type": "function",
                "function": {
                    "name": string(file, where + ": tool_call.name", call.get("name")),
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
        )

    def flush(self) -> None:
        pending, self.pending = self.pending, None
        if pending is None:
            return
        message: dict[str, Any] = {"role": "assistant", "content": "\n".join(t for t in pending["texts"] if t) or None}
        if pending["thoughts"]:
            message["reasoning_content"] = "\n".join(pending["thoughts"])
        if pending["calls"]:
            message["tool_calls"] = pending["calls"]
        clean = self.chat.check(message, pending["where"])
        usage = self.usages.get(pending["id"])
        if usage is None:
            self.trace.note("no-usage", NO_USAGE, pending["where"])
        else:
            self.used.add(pending["id"])
        call = self.chat.call(
            pending["where"], self.model, usage, clean, parse_time(pending["time"]), request_id=pending["id"]
        )
        if call is not None:
            call.tools = self.tools
        self.chat.messages.append(clean)


def conversation_calls(trace: Trace, state: dict, made: Made) -> Iterator[Call]:
    """A conversation's calls from its ``base_state.json`` (already loaded) and its ``events/`` folder,
    each given once it is read; ``trace`` (the header) is complete when they are all given."""
    path = trace.path
    usages, others, model = _usages(path, state)
    folder = Path(path).parent
    session = state.get("id")
    trace.session = session if isinstance(session, str) else folder.name
    workspace = state.get("workspace")
    cwd = workspace.get("working_dir") if isinstance(workspace, dict) else None
    reader = _Reader(trace, usages, model_name(trace, model), made)
    recorded: list[str] | None = None  # the roles of the first call's prompt

    def given() -> list[Call]:
        nonlocal recorded
        calls = made.take()
        for call in calls:
            call.cwd = cwd if isinstance(cwd, str) else None
            if recorded is None:
                recorded = [m["role"] for m in call.messages]
        return calls

    for file in sorted((folder / "events").glob("event-*.json")):
        name = str(file)
        with load(name) as doc:
            if doc.lines is not None:
                raise InputError(name, None, "expected one JSON event object")
            value = doc.value
        reader.event(name, file.stem, expect_object(name, None, value, "an event object"))
        yield from given()
    reader.flush()
    yield from given()
    unused = [usage for rid, usage in usages.items() if rid not in reader.used]
    for service, rows in sorted({**others, **({"unmatched": unused} if unused else {})}.items()):
        prompt = sum(u.prompt or 0 for u in rows)
        output = sum(u.output or 0 for u in rows)
        trace.note(
            "other-usage",
            OTHER_USAGE,
            f"{service}: {len(rows)} calls, prompt_tokens {prompt:,}, completion_tokens {output:,}",
        )
    roles = recorded or []
    trace.unrecorded = tuple(
        part for part, seen in (("system", "system" in roles), ("tools", reader.tools is not None)) if not seen
    )
