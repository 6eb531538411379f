"""Prompts held once when a log repeats them.

A log of request records (a proxy's capture, ``tokprof record``'s output, an Inspect log's model
events) holds every call's whole prompt: each request resends the conversation so far and adds to
it, so the file grows with the square of the conversation, and so would a trace that kept each
record's messages as parsed. :class:`SharedPrompts` makes a call's prompt a view
(:class:`~tokprof.trace.PromptView`) of the list of an earlier prompt it starts with, plus what it
adds, and gives a tool list equal to an earlier one that one's object: the trace then holds each
message and each catalogue once, as a log of agent sessions does, and a call's prompt is its new
messages. The comparison is of checked messages (normalised dicts), at C speed, once per call:
about what parsing the record cost. ``==`` takes ``1`` for ``1.0`` or ``True`` and ignores the
order of keys, which a template renders apart (``tojson``): the messages whose tool-call arguments
are JSON values rather than text are compared strictly too (their places are kept per list).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from tokprof.base.jsontext import same_json
from tokprof.trace import PromptView, extended

#: The recent prompts a new one is compared with, besides the last of its own conversation (told by
#: its first two messages): a subagent's beside its parent's, a retry.
RECENT = 4
#: The conversations whose last prompt is kept by how they start: a proxy's capture of many sessions
#: at once interleaves them; past this many, the least recently continued is let go.
STARTS = 1024
#: ... and the ones not continued in this many prompts, or past this many messages held in them (or
#: :data:`HELD_TIMES` times the largest prompt read, when more): a reader that gives each call as it
#: is read then holds a bounded part of the log, not every conversation it has seen (a day's capture of
#: one session after the other), while a capture of up to this many sessions at once keeps each one's.
STALE = 128
HELD_FLOOR = 1024
HELD_TIMES = 64


class SharedPrompts:
    """One reader's recent prompts and tool lists (see the module's docstring)."""

    def __init__(self) -> None:
        self._prompts: list[PromptView] = []  # most recent first
        self._by_start: dict[tuple, PromptView] = {}  # a conversation's first two messages -> its last prompt
        #: id of a prompt's list -> the list (kept: its id is not reused) and where ``==`` is not enough (see _lax)
        self._lax: dict[int, tuple[list[dict], list[int]]] = {}
        self._tools: list[tuple[list[dict], str]] = []  # most recent first, each with its JSON
        self._held = 0  # the messages of the prompts in _by_start
        self._used: dict[tuple, int] = {}  # when each conversation in _by_start was last continued
        self._read = 0  # the prompts read
        self._largest = 0  # the most messages of a prompt read

    def prompt(self, messages: list[dict]) -> PromptView:
        """``messages`` as a view: of an earlier prompt's list when they start with that prompt (the
        same messages, then more: the last prompt of the conversation that starts with the same two
        messages, else one of the last few), else of their own list, its messages that earlier
        prompt's objects where they are equal (a rewritten end, a sliding window, a compaction
        keeping the system prompt): the list is the call's own, the messages are held once."""
        found: PromptView | None = None
        start = tuple(_key(m) for m in messages[:2])
        own = self._by_start.pop(start, None)  # put back last: the most recently continued
        candidates = [own] if own is not None else []
        candidates += [p for p in self._prompts if own is None or p.base is not own.base]
        for earlier in candidates:
            n = len(earlier)
            lax = [k for k in self._lax[id(earlier.base)][1] if k < n]
            if _starts_with(messages, earlier) and all(same_json(messages[k], earlier.base[k]) for k in lax):
                found = extended(earlier, messages[n:])
                self._lax[id(found.base)] = (found.base, lax + [n + j for j, m in enumerate(messages[n:]) if _lax(m)])
                break
        if found is None:
            if candidates:
                _reuse(messages, candidates[0])
            found = PromptView(messages, len(messages))
            self._lax[id(messages)] = (messages, [k for k, m in enumerate(messages) if _lax(m)])
        self._by_start[start] = found
        self._read += 1
        self._used[start] = self._read
        self._held += len(found) - (len(own) if own is not None else 0)
        self._largest = max(self._largest, len(found))
        budget = max(HELD_FLOOR, HELD_TIMES * self._largest)
        while len(self._by_start) > 1:
            oldest = next(iter(self._by_start))  # the least recently continued
            if len(self._by_start) <= STARTS and self._held <= budget and self._used[oldest] > self._read - STALE:
                break
            self._held -= len(self._by_start.pop(oldest))
            del self._used[oldest]
        self._remember(found)
        if len(self._lax) > 2 * (len(self._by_start) + RECENT):  # let go of the lists no prompt kept here holds
            kept = {id(p.base) for p in self._prompts} | {id(p.base) for p in self._by_start.values()}
            self._lax = {key: value for key, value in self._lax.items() if key in kept}
        return found

    def tools(self, tools: list[dict] | None) -> list[dict] | None:
        """``tools``, or an earlier call's list that renders the same (the same catalogue sent with
        every request). Compared as JSON text, not with ``==``, which takes ``1`` for ``1.0`` or
        ``True`` and ignores the order of keys: a template renders those apart (``tojson``)."""
        if not tools:
            return tools
        text = json.dumps(tools)
        for i, (earlier, earlier_text) in enumerate(self._tools):
            if earlier_text == text:
                if i:
                    self._tools.insert(0, self._tools.pop(i))
                return earlier
        self._tools.insert(0, (tools, text))
        del self._tools[RECENT:]
        return tools

    def _remember(self, prompt: PromptView) -> None:
        kept = [p for p in self._prompts if p.base is not prompt.base]
        self._prompts = [prompt, *kept][:RECENT]


def _starts_with(messages: list[dict], prompt: PromptView) -> bool:
    n = len(prompt)
    if n == 0 or len(messages) < n:
        return False
    return messages[:n] == prompt.base[:n]  # two lists: compared at C speed, ``is`` first


def _reuse(messages: list[dict], earlier: Sequence[dict]) -> None:
    """Put the earlier prompt's objects in place of the messages of ``messages`` equal to one of them."""
    known = {_key(m): m for m in earlier}
    for k, new in enumerate(messages):
        old = known.get(_key(new))
        if old is not None and old is not new and same_json(old, new):
            messages[k] = old


def _lax(message: dict) -> bool:
    """Whether ``==`` may take another message for this one that renders apart: its tool calls'
    arguments are JSON values (numbers, booleans, objects), not text."""
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
            return True
    return False


def _key(message: dict) -> tuple:
    """What tells a message from the others of its prompt, cheaply (equality decides)."""
    calls = message.get("tool_calls")
    content = message.get("content")
    return (
        message["role"],
        content if isinstance(content, str) else None,
        message.get("tool_call_id"),
        calls[0].get("id") if calls else None,
    )
