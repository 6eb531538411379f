"""Captures threaded by content: which conversation each captured call belongs to.

A capture (claude-trace, ``tokprof record``, any request/response log) holds every call an agent made,
in the order they were made: the main conversation, its subagents and its side calls (Claude Code's
haiku calls that title, summarise or check the topic) interleaved. Its records say nothing of which
conversation a call is part of, so without this every call would be compared with the call before it
in the file: cache prediction, ``whatif``, crossovers and "final prompt" would be wrong.

The rule, call by call in log order:

* a call *continues* the thread whose last prompt it shares the most messages with, counting only
  threads with the same system prompt, and only when it shares at least the thread's first
  conversation message (the prompt grows by the last answer and what came after it);
* a call that shares no message with any thread continues the latest thread with the same system
  prompt and the same tools (a compaction, or a conversation restarted with the same set-up);
* any other call starts a thread of its own.

Threads are then named by what their content shows: the thread with the most calls among those that
offer tools is the main conversation (``""``, as every reader names it); other threads with tools are
``subagent-1``, ``subagent-2``, … and threads without tools are side calls, ``side-1``, ``side-2``, …
(numbered in order of their first call).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from tokprof.trace import Call, Trace

#: The trace formats that come from captures of API requests (one reader each).
CAPTURE_FORMATS = ("anthropic", "openai-chat", "openai-responses")


@dataclass
class _Thread:
    system: str  # the JSON of the prompt's system (and developer) messages before the conversation
    tools: str  # the JSON of the tool definitions
    last: list[str]  # the JSON of each conversation message of the thread's last prompt
    calls: list[Call] = field(default_factory=list)


def is_capture(trace: Trace) -> bool:
    """Whether a trace comes from a capture of API requests (its calls carry no thread of their own)."""
    return trace.format.split("/", 1)[0] in CAPTURE_FORMATS and not any(call.thread for call in trace.calls)


def thread_by_content(trace: Trace) -> Trace:
    """Give each call of a capture-derived trace its thread (see the module's rule); other traces, and
    captures whose calls already have threads, are returned as they are."""
    if not is_capture(trace):
        return trace
    threads: list[_Thread] = []
    for call in trace.calls:
        system, conversation = _split(call)
        tools = _json(call.tools or [])
        thread = _continued(threads, system, tools, conversation)
        if thread is None:
            thread = _Thread(system, tools, conversation)
            threads.append(thread)
        thread.last = conversation
        thread.calls.append(call)
    for call, name in _names(threads):
        call.thread = name
    return trace


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _split(call: Call) -> tuple[str, list[str]]:
    """The prompt's leading system/developer messages (as one key) and its conversation messages."""
    start = 0
    while start < len(call.messages) and call.messages[start].get("role") in ("system", "developer"):
        start += 1
    return _json(call.messages[:start]), [_json(message) for message in call.messages[start:]]


def _shared(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _continued(threads: list[_Thread], system: str, tools: str, conversation: list[str]) -> _Thread | None:
    best: _Thread | None = None
    best_shared = 0
    for thread in threads:  # later threads win ties: the most recent conversation
        if thread.system != system:
            continue
        shared = _shared(thread.last, conversation)
        if shared >= 1 and shared >= best_shared:
            best, best_shared = thread, shared
    if best is not None:
        return best
    same = [thread for thread in threads if thread.system == system and thread.tools == tools]
    return same[-1] if same else None


def _names(threads: list[_Thread]) -> list[tuple[Call, str]]:
    with_tools = [t for t in threads if t.tools != "[]"]
    main = max(with_tools or threads, key=lambda t: len(t.calls), default=None)
    out: list[tuple[Call, str]] = []
    counts = {"subagent": 0, "side": 0}
    for thread in threads:
        if thread is main:
            name = ""
        else:
            role = "subagent" if thread.tools != "[]" else "side"
            counts[role] += 1
            name = f"{role}-{counts[role]}"
        out += [(call, name) for call in thread.calls]
    return out
