"""OpenHands trajectories and event streams.

OpenHands (All-Hands-AI/OpenHands, ``openhands/events/serialization``) records a conversation as
events, each a JSON object ``{id, timestamp, source, message, action | observation, args |
content+extras, cause, tool_call_metadata}``. Three layouts hold them:

* a **trajectory** (``save_trajectory_path``, the replay files of ``tests/runtime/trajs/``): one JSON
  list of every event;
* the **event stream** of a conversation: ``<file store>/sessions/<sid>/events/<id>.json``, one file
  per event (the file store is ``~/.openhands`` by default, ``$FILE_STORE_PATH`` when that is set).
  tokprof reads the stream from any of its event files: the folder's ``<id>.json`` files, in id order.
* a **conversation** of the OpenHands CLI 1.x (the software agent SDK):
  ``~/.openhands/conversations/<id>/base_state.json`` and its ``events/`` folder, read by
  :mod:`tokprof.formats.openhands_conversation` (usage from the state's metrics, by response id).

**Calls.** An action the agent took through a tool carries ``tool_call_metadata``: the tool call's id
and name and ``model_response``, the whole LiteLLM response it came from. Each response (its ``id``)
is one model call, made on the history before the first event that carries it: parallel tool calls
repeat one response on each of their actions and observations, and it is counted once. The call's
response is the response's own message (``choices[0].message``: content and every tool call), its
model ``model_response.model``.

**Usage** (LiteLLM's ``usage`` of the response): ``prompt_tokens`` includes the cache reads and
writes (LiteLLM adds Anthropic's back in), cache reads are ``cache_read_input_tokens`` (else
``prompt_tokens_details.cached_tokens``), cache writes ``cache_creation_input_tokens``, output
``completion_tokens``. A response without usage is a call whose usage is not recorded.

**The history.** A ``system`` action (newer versions) is the system prompt (``args.content``) and the
tool definitions (``args.tools``); without one both are unrecorded (:attr:`Trace.unrecorded`). A
user's ``message`` is user text (``args.content``); the agent's actions with ``tool_call_metadata``
are the assistant message of their response; an observation with ``tool_call_metadata`` is the tool
result of its call (``content``); an agent ``message`` without ``tool_call_metadata`` is assistant
text whose call's usage is not recorded. Other events (agent state changes, recalls, null
observations) are not sent to the model as such: they are left out (note ``not-sent``).

**A fold** (#43.1): a trajectory is one record, an event stream's files are read one at a time in id
order, and each call is given as it is made; the reader holds the history, not the calls.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tokprof.base.errors import InputError
from tokprof.formats.conversation import Conversation, tool_text
from tokprof.formats.folds import Made
from tokprof.formats.fields import check_text, expect_list, expect_object, optional_string, string
from tokprof.formats.jsonfile import Document, load
from tokprof.formats.locations import Location
from tokprof.formats.neutral import check_cached, check_count, check_tools, parse_time
from tokprof.formats.openhands_conversation import conversation_calls, is_state, model_name
from tokprof.formats.reader import LogFormat, Reader, Record
from tokprof.trace import Call, Trace, Usage

FORMAT = "openhands"
DESCRIPTION = (
    "OpenHands trajectory (a JSON list of events), event stream (sessions/<sid>/events/<id>.json), or CLI 1.x "
    "conversation (conversations/<id>/base_state.json)"
)

EVENT_FILE = re.compile(r"^(\d+)\.json$")
NOT_SENT = (
    "events OpenHands does not send to the model as they are (agent state changes, recalls, null "
    "observations) were left out of the prompts"
)
NO_USAGE = "agent messages without tool_call_metadata record no model response: their calls' usage is not recorded"
SKIPPED_ACTIONS = ("change_agent_state", "recall", "null")


def _is_event(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and "id" in value
        and value.get("source") in ("user", "agent", "environment")
        and ("action" in value or "observation" in value)
    )


def sniff(doc: Document) -> bool:
    value = doc.single_value()  # an event file written on one line is JSON lines of one line, as a peek sees it
    if isinstance(value, list):
        return bool(value) and all(_is_event(v) for v in value[:5])
    return _is_event(value) or is_state(value)


def _stream_files(path: str) -> list[tuple[int, Path]]:
    """The event files of the stream an event file belongs to, in id order."""
    folder = Path(path).parent
    out = []
    for entry in folder.iterdir():
        found = EVENT_FILE.match(entry.name)
        if found and entry.is_file():
            out.append((int(found.group(1)), entry))
    return sorted(out)


def _events(path: str, value: Any) -> Iterator[tuple[str, str, dict]]:
    """Every event as (file, place, event), an event stream's files read one at a time."""
    if isinstance(value, list):
        for i, e in enumerate(value):
            yield path, f"event {i}", expect_object(path, f"event {i}", e, "an event object")
        return
    if not EVENT_FILE.match(os.path.basename(path)):
        yield path, "event", expect_object(path, None, value, "an event object")
        return
    for number, file in _stream_files(path):
        name = str(file)
        if file.name == os.path.basename(path):  # the file opened: parsed once
            yield name, f"event {number}", expect_object(name, None, value, "an event object")
            continue
        with load(name) as event_doc:
            if event_doc.lines is not None:
                raise InputError(name, None, "expected one JSON event object")
            event = expect_object(name, None, event_doc.value, "an event object")
        yield name, f"event {number}", event


class _Reader:
    def __init__(self, trace: Trace, made: Made) -> None:
        self.trace = trace
        self.chat = Conversation(trace, made)
        self.tools: list[dict] | None = None
        self.seen: set[str] = set()  # response ids already counted
        self.answered: set[str] = set()  # tool call ids whose result is in the history

    def event(self, file: str, where: str, event: dict) -> None:
        meta = event.get("tool_call_metadata")
        action, observation = event.get("action"), event.get("observation")
        place = where
        if meta is not None:
            meta = expect_object(file, where + ": tool_call_metadata", meta)
            self._response(file, where, event, meta)
            if observation is not None:
                self._result(file, where, event, meta)
            return
        if action == "system":
            self._system(file, where, event)
        elif action == "message":
            self._message(file, where, event)
        elif action is not None and action not in SKIPPED_ACTIONS and event.get("source") == "agent":
            self.trace.note("not-sent", NOT_SENT, place)
        elif observation is not None or action in SKIPPED_ACTIONS:
            self.trace.note("not-sent", NOT_SENT, place)

    def _system(self, file: str, where: str, event: dict) -> None:
        args = expect_object(file, where + ": args", event.get("args"))
        content = string(file, where + ": args.content", args.get("content"))
        self.chat.add({"role": "system", "content": check_text(file, where, content)}, where)
        tools = args.get("tools")
        if tools is not None:
            self.tools = check_tools(file, where + ": args.", tools)

    def _message(self, file: str, where: str, event: dict) -> None:
        args = expect_object(file, where + ": args", event.get("args"))
        content = args.get("content", event.get("message"))
        content = check_text(file, where, string(file, where + ": args.content", content))
        if event.get("source") == "user":
            self.chat.add({"role": "user", "content": content}, where)
            return
        clean = self.chat.check({"role": "assistant", "content": content}, where)
        self.trace.note("no-usage", NO_USAGE, where)
        self._call(where, None, None, clean, event)
        self.chat.messages.append(clean)

    def _response(self, file: str, where: str, event: dict, meta: dict) -> None:
        response = expect_object(file, where + ": tool_call_metadata.model_response", meta.get("model_response"))
        at = where + ": tool_call_metadata.model_response"
        response_id = string(file, at + ".id", response.get("id"))
        if response_id in self.seen:
            return
        self.seen.add(response_id)
        choices = expect_list(file, at + ".choices", response.get("choices"))
        if not choices:
            raise InputError(file, at + ".choices", "expected at least one choice")
        choice = expect_object(file, at + ".choices[0]", choices[0])
        message = expect_object(file, at + ".choices[0].message", choice.get("message"))
        calls = []
        for j, call in enumerate(
            expect_list(file, at + ".choices[0].message.tool_calls", message.get("tool_calls") or [])
        ):
            call_at = f"{at}.choices[0].message.tool_calls[{j}]"
            call = expect_object(file, call_at, call)
            function = expect_object(file, call_at + ".function", call.get("function"))
            arguments = function.get("arguments", "")
            calls.append(
                {
                    "id": string(file, call_at + ".id", call.get("id")),
                    "type": "function",
                    "function": {
                        "name": string(file, call_at + ".function.name", function.get("name")),
                        "arguments": arguments if isinstance(arguments, str) else tool_text(arguments),
                    },
                }
            )
        content = message.get("content")
        if isinstance(content, list):  # content parts: their text
            content = "\n".join(
                p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
            )
        content = optional_string(file, at + ".choices[0].message.content", content) or None
        reply: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            reply["tool_calls"] = calls
        clean = self.chat.check(reply, where)
        usage = self._usage(file, at + ".usage", response.get("usage"))
        model = model_name(self.trace, optional_string(file, at + ".model", response.get("model")))
        self._call(where, model, usage, clean, event, response_id)
        self.chat.messages.append(clean)

    def _call(
        self,
        where: str,
        model: str | None,
        usage: Usage | None,
        clean: dict,
        event: dict,
        request_id: str | None = None,
    ) -> Call | None:
        call = self.chat.call(where, model, usage, clean, parse_time(event.get("timestamp")), request_id=request_id)
        if call is not None:
            call.tools = self.tools
        return call

    def _result(self, file: str, where: str, event: dict, meta: dict) -> None:
        call_id = string(file, where + ": tool_call_metadata.tool_call_id", meta.get("tool_call_id"))
        if call_id in self.answered:
            return
        self.answered.add(call_id)
        content = event.get("content", "")
        text = content if isinstance(content, str) else tool_text(content)
        self.chat.add({"role": "tool", "tool_call_id": call_id, "content": check_text(file, where, text)}, where)

    def _usage(self, file: str, where: str, usage: Any) -> Usage | None:
        if usage is None:
            return None
        usage = expect_object(file, where, usage)
        prompt = check_count(file, where + ".prompt_tokens", usage.get("prompt_tokens"))
        output = check_count(file, where + ".completion_tokens", usage.get("completion_tokens"))
        write = check_count(file, where + ".cache_creation_input_tokens", usage.get("cache_creation_input_tokens"))
        read = check_count(file, where + ".cache_read_input_tokens", usage.get("cache_read_input_tokens"))
        details = usage.get("prompt_tokens_details")
        if read is None and isinstance(details, dict):
            read = check_count(file, where + ".prompt_tokens_details.cached_tokens", details.get("cached_tokens"))
        if prompt is None and output is None:
            return None
        return check_cached(
            file,
            where,
            Usage(prompt=prompt, cache_read=read, cache_write=write, output=output),
            "cache_read_input_tokens",
        )


class OpenHandsReader(Reader):
    """An OpenHands log read as a fold over its one record (a trajectory, an event file, a conversation's
    state), the events read and each call given as it is made (see the module's docstring)."""

    def __init__(self, path: str, doc: Document | None) -> None:
        self.trace = Trace(path=path, format=FORMAT)
        self.made = Made()

    def feed(self, record: Record) -> Iterable[Call]:
        path = self.trace.path
        if record.line is not None:
            raise InputError(path, None, "expected an OpenHands trajectory (a JSON list of events) or an event file")
        if is_state(record.value):  # a conversation of the software agent SDK (OpenHands CLI 1.x)
            return conversation_calls(self.trace, record.value, self.made)
        return self._events(record.value)

    def _events(self, value: Any) -> Iterator[Call]:
        trace = self.trace
        if not isinstance(value, list) and EVENT_FILE.match(os.path.basename(trace.path)):
            trace.session = Path(trace.path).resolve().parent.parent.name
        reader = _Reader(trace, self.made)
        has_system = False
        for file, where, event in _events(trace.path, value):
            has_system = has_system or event.get("action") == "system"
            reader.event(file, where, event)
            yield from self.made.take()
        trace.unrecorded = () if has_system else ("system", "tools")

    def finish(self) -> Iterable[Call]:
        self.trace.model = self.made.model()
        return ()


LOCATIONS = (
    Location(
        "openhands",
        ".openhands/sessions",
        ("*/events/0.json",),
        env="FILE_STORE_PATH",
        below_env="sessions",
        project_depth=0,
    ),
    Location("openhands", ".openhands/conversations", ("*/base_state.json",), project_depth=0),
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    OpenHandsReader,
    sessions=True,
    locations=LOCATIONS,
    records_what="per-call usage (LiteLLM's, once per response); the system prompt and tools in newer versions",
)
