"""What the later stages need of each call's prompt, taken while the call is attributed.

The analyses a profile carries (its computed prefix cache, its tool catalogue, the roles a call adds)
compare a call's prompt with the previous call of its thread, or read its tool definitions and tool
calls. :class:`PromptTracker` takes those facts during the attribution pass, from the call and the
previous call of its thread alone, into small per-call records (:class:`PromptFacts`,
:class:`PairFacts`) and a per-log one (:class:`ToolFacts`): after a call's pass nothing needs its
messages, so a stream of calls can be profiled keeping only the last prompt of each thread.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date

from tokprof.attribution.estimates import starts_with
from tokprof.trace import Call, PromptView, as_list

_SYSTEM = ("system", "developer")


def tools_key(tools: list[dict] | None) -> str:
    """The identity of a tool catalogue: its JSON with sorted keys (``null`` for none)."""
    return json.dumps(tools, sort_keys=True)


def first_difference(before: Sequence[dict], after: Sequence[dict]) -> int:
    """The index of the first message that differs (the shorter list's length when one starts the other)."""
    if isinstance(after, PromptView) and after.extends(before):
        return len(before)  # a longer view of the same list: O(1)
    k = 0
    while k < min(len(before), len(after)) and before[k] == after[k]:
        k += 1
    return k


def _reasoning_only(before: Sequence[dict], after: Sequence[dict], k: int) -> bool:
    """Whether message ``k`` of the two prompts differs only in its reasoning (dropped or rewritten)."""
    if k >= len(before) or k >= len(after) or before[k].get("role") != "assistant":
        return False
    if not before[k].get("reasoning_content"):
        return False
    strip = ("reasoning_content",)
    return {key: v for key, v in before[k].items() if key not in strip} == {
        key: v for key, v in after[k].items() if key not in strip
    }


def _system_at(before: Sequence[dict], after: Sequence[dict], k: int) -> bool:
    return (k < len(after) and after[k]["role"] in _SYSTEM) or (k < len(before) and before[k]["role"] in _SYSTEM)


def changed_part(before: Call, call: Call, k: int, tools_changed: bool) -> str:
    """Which part of the prompt a ``prefix-changed`` call changed (:data:`tokprof.pricing.billing.CHANGED_PARTS`)."""
    if tools_changed:
        return "tools"
    if call.kind == "compaction" or before.kind == "compaction":
        return "compaction"
    if _system_at(before.messages, call.messages, k):
        return "system"
    if _reasoning_only(before.messages, call.messages, k):
        return "reasoning"
    if k < len(call.messages) and len(call.messages) < len(before.messages):
        return "rewrite"
    return "message"


_REASONS = {
    "tools": "the tool catalogue changed",
    "compaction": "a compaction call",
    "system": "the system prompt changed (message {k})",
    "reasoning": "the reasoning of message {k} was dropped or rewritten",
    "rewrite": "the conversation was rewritten from message {k} (a compaction or a cut)",
    "message": "message {k} changed",
}


def change_reason(before: Call, call: Call, k: int, tools_changed: bool) -> str:
    """Why a prompt parts from the previous one of its thread, in words."""
    return _REASONS[changed_part(before, call, k, tools_changed)].format(k=k)


@dataclass(frozen=True, slots=True)
class PairFacts:
    """A call's prompt against the previous call of its thread: where they part, why, and what the
    computed cache's estimate of their shared prefix needs of the earlier prompt
    (:func:`tokprof.analyses.prefix_cache.estimate_shared`)."""

    changed_at: int  # the first message that differs (the earlier prompt's length when the call continues it)
    tools_changed: bool
    before_messages: int  # the earlier prompt's number of messages
    part: str | None = None  # which part changed (:func:`changed_part`), when the call does not continue it
    #: whether the earlier prompt's first message, and its message ``changed_at``, are a system prompt
    before_system_first: bool = False
    before_system_at_change: bool = False
    #: the JSON lengths of the earlier prompt's messages before ``changed_at``, and of all of them
    #: (taken only where the estimate splits the earlier prompt: else 0)
    head: int = 0
    whole: int = 0

    @property
    def continues(self) -> bool:
        """Whether the call's prompt is the earlier one plus what it adds, with the same tools."""
        return self.changed_at >= self.before_messages and not self.tools_changed

    @property
    def reason(self) -> str | None:
        """Why the prompts part, in words (:func:`change_reason`)."""
        return None if self.part is None else _REASONS[self.part].format(k=self.changed_at)


def pair_facts(before: Call, call: Call, tools_changed: bool, k: int | None = None) -> PairFacts:
    """The facts of ``call``'s prompt against ``before``'s (``k``: their first difference, when known)."""
    old, new = before.messages, call.messages
    if k is None:
        k = first_difference(old, new)
    continues = k >= len(old) and not tools_changed
    head = whole = 0
    system_at = k < len(old) and old[k]["role"] in _SYSTEM
    if not tools_changed and k < len(old) and not (k == 0 or (system_at and k <= 1)):
        whole = len(json.dumps(as_list(old), ensure_ascii=False))
        head = len(json.dumps(old[:k], ensure_ascii=False))
    return PairFacts(
        changed_at=k,
        tools_changed=tools_changed,
        before_messages=len(old),
        part=None if continues else changed_part(before, call, k, tools_changed),
        before_system_first=bool(old) and old[0]["role"] in _SYSTEM,
        before_system_at_change=system_at,
        head=head,
        whole=whole,
    )


@dataclass(frozen=True, slots=True)
class PromptFacts:
    """What the stages after the pass need of one call's prompt."""

    messages: int  # how many messages the prompt has
    catalogue: int  # which tool catalogue it carries: an index into :attr:`ToolFacts.keys`
    #: the roles of the messages it adds to the previous call of its thread (None when it is the
    #: thread's first call or does not start with that call's prompt)
    added: tuple[str, ...] | None = None
    pair: PairFacts | None = None  # against the previous call of its thread (None for its first call)


@dataclass
class CatalogueUse:
    """One distinct tool catalogue of a log: the first call that carried it and how many did."""

    tools: list[dict]
    system: str | None  # the first call's system prompt (what the catalogue is priced beside)
    day: date | None
    first_call: int  # that call's index
    requests: int = 0


@dataclass
class ToolFacts:
    """The log's tool catalogues and tool calls (what the tools analysis needs)."""

    keys: list[str] = field(default_factory=list)  # every distinct catalogue's key (:func:`tools_key`), "null" too
    tools: list[list[dict] | None] = field(default_factory=list)  # by the same index: the first call's tools
    catalogues: dict[str, CatalogueUse] = field(default_factory=dict)  # by key, the calls with tools, first use first
    called: Counter = field(default_factory=Counter)  # tool name -> the model's calls of it, each tool call once
    error: Exception | None = None  # a tool call without a function name (nothing is counted after it)


@dataclass
class PassFacts:
    """Everything the analyses take of a log's prompts, per call and for the log."""

    calls: list[PromptFacts] = field(default_factory=list)
    tools: ToolFacts = field(default_factory=ToolFacts)


@dataclass
class _Held:
    """The previous call of a thread, as a later call is compared with it."""

    call: Call
    catalogue: int


class PromptTracker:
    """Takes the facts of each call's prompt, in log order (:meth:`observe`), holding the prompt of
    the last call of each thread only (and the tool definitions of each distinct catalogue)."""

    def __init__(self) -> None:
        self.facts = PassFacts()
        self._last: dict[str, _Held] = {}
        self._index: dict[str, int] = {}  # catalogue key -> its index
        self._tools: tuple[object, int] = (object(), -1)  # the last tools object seen, and its index
        self._seen: set = set()  # tool calls counted: their ids, else (id(message), j)
        self._anonymous: dict[int, dict] = {}  # messages whose tool calls have no id (their ids stay theirs)

    def observe(self, call: Call) -> PromptFacts:
        catalogue = self._catalogue(call)
        held = self._last.get(call.thread)
        self._last[call.thread] = _Held(call, catalogue)
        added = pair = None
        extends_view = False
        if held is not None:
            before = held.call
            continues = starts_with(call.messages, before.messages)
            if continues:
                added = tuple(m["role"] for m in call.messages[len(before.messages) :])
            extends_view = isinstance(call.messages, PromptView) and call.messages.extends(before.messages)
            k = len(before.messages) if continues else None
            pair = pair_facts(before, call, held.catalogue != catalogue, k)
        self._count_tool_calls(call, len(held.call.messages) if extends_view and held is not None else 0)
        facts = PromptFacts(messages=len(call.messages), catalogue=catalogue, added=added, pair=pair)
        self.facts.calls.append(facts)
        return facts

    def _catalogue(self, call: Call) -> int:
        tools = call.tools
        if tools is self._tools[0]:
            found = self._tools[1]
        else:
            key = tools_key(tools)
            found = self._index.get(key, -1)
            if found < 0:
                found = self._index[key] = len(self.facts.tools.keys)
                self.facts.tools.keys.append(key)
                self.facts.tools.tools.append(tools)
            self._tools = (tools, found)
        if tools:
            key = self.facts.tools.keys[found]
            use = self.facts.tools.catalogues.get(key)
            if use is None:
                system = None
                if call.messages and call.messages[0]["role"] in _SYSTEM:
                    system = call.messages[0].get("content") or ""
                use = self.facts.tools.catalogues[key] = CatalogueUse(tools, system, call.day, call.index)
            use.requests += 1
        return found

    def _count_tool_calls(self, call: Call, start: int) -> None:
        """Every tool call of the prompt from message ``start`` on (the earlier ones are the same
        objects as the previous call's, counted then) and of the response, each once over the log:
        by its id, else by its message (the same object) and its place in it."""
        tools = self.facts.tools
        if tools.error is not None:
            return
        messages: Iterable[dict] = call.messages[start:] if start else call.messages
        try:
            for message in [*messages, call.response] if call.response else messages:
                for j, tool_call in enumerate(message.get("tool_calls") or []):
                    key = tool_call.get("id") or (id(message), j)
                    if key in self._seen:
                        continue
                    if isinstance(key, tuple):
                        self._anonymous[id(message)] = message  # its id is not given to another while counted
                    self._seen.add(key)
                    tools.called[tool_call["function"]["name"]] += 1
        except (KeyError, TypeError, AttributeError) as exc:
            tools.error = exc


def prompt_facts(calls: Iterable[Call]) -> PassFacts:
    """The facts of every call of a trace, as the pass takes them (for a profile made without them)."""
    tracker = PromptTracker()
    for call in calls:
        tracker.observe(call)
    return tracker.facts
