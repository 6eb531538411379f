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

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from tokprof.base.identity_cache import Recall
from tokprof.trace import Call, PromptView, Trace

#: The trace formats that come from captures of API requests (one reader each).
CAPTURE_FORMATS = ("anthropic", "openai-chat", "openai-responses")


@dataclass
class _Run:
    """The digests of a run of messages without a list of its own: ``digests[start:end]`` (the digests
    of a prompt that is a view of a longer list, :class:`tokprof.trace.PromptView`, are a run of the
    digests of that list, shared by every prompt of it)."""

    digests: list[bytes]
    start: int
    end: int

    def __len__(self) -> int:
        return self.end - self.start


@dataclass
class _Thread:
    system: bytes  # the digest of the JSON of the prompt's system (and developer) messages before the conversation
    tools: bytes  # the digest of the JSON of the tool definitions
    offers_tools: bool
    last: _Run  # the digest of the JSON of each conversation message of the thread's last prompt
    calls: int = 0


def is_capture(trace: Trace) -> bool:
    """Whether a trace comes from a capture of API requests (its calls carry no thread of their own)."""
    return trace.format.split("/", 1)[0] in CAPTURE_FORMATS and not any(call.thread for call in trace.calls)


def thread_by_content(trace: Trace) -> Trace:
    """Give each call of a capture-derived trace its thread (see the module's rule); other traces, and
    captures whose calls already have threads, are returned as they are."""
    if not is_capture(trace):
        return trace
    threader = Threader()
    found = [threader.observe(call) for call in trace.calls]
    names = threader.names()
    for call, thread in zip(trace.calls, found):
        call.thread = names[thread]
    return trace


class Threader:
    """The module's rule a call at a time, in log order: :meth:`observe` gives a call's thread as a
    number (threads in order of their first call), :meth:`names` their names once every call is
    seen (the main conversation is the one with the most calls). A thread keeps a digest of each
    message of its last prompt, not the messages, and a message of the call before is not encoded
    again (a prompt that shares its messages with that call's costs what it adds)."""

    def __init__(self) -> None:
        self._threads: list[_Thread] = []
        self._digests: Recall[bytes] = Recall()  # of the previous call's messages (a prompt that is a list)
        #: id(list) -> (the list, its messages' digests so far, the threads whose last prompt is a view of it)
        self._views: dict[int, tuple[list[dict], list[bytes], int]] = {}
        self._tools: tuple[object, bytes] | None = None  # the last tool list's digest, by identity

    def observe(self, call: Call) -> int:
        run = self._run(call.messages)
        digests = run.digests
        start = run.start
        while start < run.end and call.messages[start - run.start].get("role") in ("system", "developer"):
            start += 1
        system = _joined(digests[run.start : start])
        tools = self._tools_digest(call.tools)
        conversation = _Run(digests, start, run.end)
        at = _continued(self._threads, system, tools, conversation)
        if at is None:
            at = len(self._threads)
            self._threads.append(_Thread(system, tools, bool(call.tools), conversation))
            self._hold(conversation)
        thread = self._threads[at]
        if thread.last is not conversation:
            self._hold(conversation)
            self._let_go(thread.last)
            thread.last = conversation
        thread.calls += 1
        return at

    def _run(self, messages: Sequence[dict]) -> _Run:
        """The digests of a prompt's messages: of a view, those of its list, each message's made once
        over the run (a call pays for the messages it adds); of a list, each made again but for the
        messages of the previous call's list."""
        if isinstance(messages, PromptView):
            base = messages.base
            found = self._views.get(id(base))
            if found is None or found[0] is not base:
                found = (base, [], 0)
                self._views[id(base)] = found
            digests = found[1]
            for message in base[len(digests) : messages.length]:
                digests.append(_digest(message))
            return _Run(digests, 0, messages.length)
        self._digests.start()
        digests = [self._digests.get(message, _digest) for message in messages]
        return _Run(digests, 0, len(digests))

    def _hold(self, run: _Run) -> None:
        for key, (base, digests, held) in self._views.items():
            if digests is run.digests:
                self._views[key] = (base, digests, held + 1)
                return

    def _let_go(self, run: _Run) -> None:
        for key, (base, digests, held) in list(self._views.items()):
            if digests is run.digests:
                if held <= 1:
                    del self._views[key]  # no thread's last prompt is a view of it
                else:
                    self._views[key] = (base, digests, held - 1)
                return

    def _tools_digest(self, tools: list[dict] | None) -> bytes:
        value = tools or []
        if self._tools is None or self._tools[0] is not value:
            self._tools = (value, _digest(value))
        return self._tools[1]

    def names(self) -> list[str]:
        """Each thread's name, by its number."""
        threads = self._threads
        with_tools = [t for t in threads if t.offers_tools]
        main = max(with_tools or threads, key=lambda t: t.calls, default=None)
        out: list[str] = []
        counts = {"subagent": 0, "side": 0}
        for thread in threads:
            if thread is main:
                out.append("")
                continue
            role = "subagent" if thread.offers_tools else "side"
            counts[role] += 1
            out.append(f"{role}-{counts[role]}")
        return out


def _digest(value: object) -> bytes:
    """A digest of a value's JSON (keys sorted): two values with the same JSON have the same one."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _joined(digests: list[bytes]) -> bytes:
    """One digest of a run of messages' digests (the system messages before the conversation)."""
    return hashlib.blake2b(b"".join(digests), digest_size=16).digest()


def _shared(a: _Run, b: _Run) -> int:
    """How many first digests two runs have in common: of one list from one place, the shorter run's
    length (no digest compared); else compared one by one."""
    if a.digests is b.digests and a.start == b.start:
        return min(a.end, b.end) - a.start
    n = 0
    for i, j in zip(range(a.start, a.end), range(b.start, b.end)):
        if a.digests[i] != b.digests[j]:
            break
        n += 1
    return n


def _continued(threads: list[_Thread], system: bytes, tools: bytes, conversation: _Run) -> int | None:
    best: int | None = None
    best_shared = 0
    for at, thread in enumerate(threads):  # later threads win ties: the most recent conversation
        if thread.system != system:
            continue
        shared = _shared(thread.last, conversation)
        if shared >= 1 and shared >= best_shared:
            best, best_shared = at, shared
    if best is not None:
        return best
    same = [at for at, thread in enumerate(threads) if thread.system == system and thread.tools == tools]
    return same[-1] if same else None
