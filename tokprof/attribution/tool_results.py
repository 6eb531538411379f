"""Which tool results cost most: the tokens each result added, and its carry cost.

A tool result enters a conversation once (the call whose prompt first holds it) and is then resent
with every later prompt of its thread that still holds it. Its **tokens** are what it added to the
first prompt (its own part of the rendered prompt: content and the scaffolding around it, exactly
as the attribution counts it in ``tool_results``); its **carry cost** is those tokens times the
number of later calls of the thread that resent it. A result is the same result in a later prompt
when its tool call id and its content are the same (a result the log rewrote, or a policy cut, is
a new one). What a user caps or elides first is at the top. The carry cost in US dollars
(``carry_dollars``) is priced once the calls are (:mod:`tokprof.analyses.carry_cost`), from the
tokens each call resent (``carried``: per call position, not saved).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tokprof.base.identity_cache import Recall

#: How many single results a profile keeps, by carry cost.
TOP = 10


@dataclass(frozen=True)
class ToolCost:
    """What one tool's results cost: how many, the tokens they added, their carry cost."""

    tool: str | None  # None when no assistant tool call in the prompt names the result's call id
    results: int
    tokens: int
    carry_cost: int
    carry_dollars: float | None = None  # the carry cost in US dollars (None: not priced)
    #: Per call position, the tokens of these results it resent (the calls' units): what the dollars are
    #: priced from; not saved.
    carried: dict[int, float] = field(default_factory=dict, compare=False, repr=False)

    def to_dict(self) -> dict:
        return {
            "tool": self.tool,
            "results": self.results,
            "tokens": self.tokens,
            "carry_cost": self.carry_cost,
            "carry_dollars": self.carry_dollars,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "ToolCost":
        _wholes(d, ("results", "tokens", "carry_cost"), "tool_result_costs.tools[]")
        return cls(
            tool=d.get("tool"),
            results=d["results"],
            tokens=d["tokens"],
            carry_cost=d["carry_cost"],
            carry_dollars=_dollars(d, "tool_result_costs.tools[]"),
        )


@dataclass(frozen=True)
class CarriedResult:
    """One tool result: the call that added it, its tool, its tokens, the later calls that resent it."""

    call: int
    tool: str | None
    tokens: int
    carried_by: int
    carry_cost: int
    thread: str | None = None  # None for the main conversation
    carry_dollars: float | None = None  # the carry cost in US dollars (None: not priced)
    carried: dict[int, float] = field(default_factory=dict, compare=False, repr=False)  # as ToolCost's

    def to_dict(self) -> dict:
        return {
            "call": self.call,
            "thread": self.thread,
            "tool": self.tool,
            "tokens": self.tokens,
            "carried_by": self.carried_by,
            "carry_cost": self.carry_cost,
            "carry_dollars": self.carry_dollars,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "CarriedResult":
        _wholes(d, ("call", "tokens", "carry_cost"), "tool_result_costs.top[]")
        if type(d.get("carried_by")) is not int:
            raise ValueError("tool_result_costs.top[].carried_by: expected a whole number")
        return cls(
            call=d["call"],
            tool=d.get("tool"),
            tokens=d["tokens"],
            carried_by=d["carried_by"],
            carry_cost=d["carry_cost"],
            thread=d.get("thread"),
            carry_dollars=_dollars(d, "tool_result_costs.top[]"),
        )


@dataclass(frozen=True)
class ToolResultCosts:
    """Per tool name, highest carry cost first, and the :data:`TOP` single results with the highest
    carry cost (``summary.tool_result_costs`` in the profile JSON)."""

    tools: tuple[ToolCost, ...]
    top: tuple[CarriedResult, ...]
    results: int  # every distinct result of the log
    tokens: int
    carry_cost: int
    carry_dollars: float | None = None  # the carry cost in US dollars (None: not priced)

    def to_dict(self) -> dict:
        return {
            "results": self.results,
            "tokens": self.tokens,
            "carry_cost": self.carry_cost,
            "carry_dollars": self.carry_dollars,
            "tools": [t.to_dict() for t in self.tools],
            "top": [r.to_dict() for r in self.top],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "ToolResultCosts":
        _wholes(d, ("results", "tokens", "carry_cost"), "tool_result_costs")
        return cls(
            tools=tuple(ToolCost.from_dict(t) for t in d["tools"]),
            top=tuple(CarriedResult.from_dict(r) for r in d["top"]),
            results=d["results"],
            tokens=d["tokens"],
            carry_cost=d["carry_cost"],
            carry_dollars=_dollars(d, "tool_result_costs"),
        )


class _Result:
    __slots__ = ("position", "call", "order", "tool", "tokens", "carried", "thread", "base", "spans", "singles")

    def __init__(self, position: int, call: int, order: int, tool: str | None, tokens: int, thread: str):
        self.position, self.call, self.order, self.tool = position, call, order, tool
        self.tokens, self.carried, self.thread = tokens, 0, thread
        self.base = 0  # the thread's extensions so far when it was last brought up to date (see _Thread)
        # Who resent it, for an estimate's per-call scaling: runs of the thread's extending calls
        # (indices into _Thread.extended) and the positions of the other calls that held it again.
        self.spans: list[tuple[int, int]] = []
        self.singles: list[int] = []

    def scaled(self, scale: dict[int, float] | None, extended: Sequence[float]) -> tuple[int, int]:
        """Its tokens and carry cost, each occurrence in the units of the call it is in (an estimate
        scales every call by its own factor, so that the results add up to the calls' buckets).
        ``extended``: the running sums of the scale over its thread's extending calls."""
        if not scale:
            return self.tokens, self.tokens * self.carried
        own = self.tokens * scale.get(self.position, 1.0)
        times = sum(extended[end] - extended[start] for start, end in self.spans)
        times += sum(scale.get(p, 1.0) for p in self.singles)
        return int(round(own)), int(round(own + self.tokens * times)) - int(round(own))


@dataclass
class _Thread:
    """What a thread's previous call held: the results in its messages (by key), and how many
    calls since then extended it (each holds every one of those results once more: ``carried`` is
    brought up to date from ``extensions`` and each result's ``base`` when the thread is not extended)."""

    seen: dict = field(default_factory=dict)  # key -> _Result, every result the thread has had
    present: dict = field(default_factory=dict)  # key -> _Result, the results the previous call held
    names: dict | None = None  # the previous call's tool names by call id (None: not made yet)
    extensions: int = 0
    extended: list[int] = field(default_factory=list)  # the position of each extending call, in order

    def settle(self) -> None:
        for r in self.present.values():
            if self.extensions > r.base:
                r.carried += self.extensions - r.base
                r.spans.append((r.base, self.extensions))
            r.base = self.extensions

    def running(self, scale: dict[int, float] | None) -> list[float]:
        """The running sums of ``scale`` over the extending calls (index i: the first i of them)."""
        out = [0.0]
        for p in self.extended:
            out.append(out[-1] + (scale or {}).get(p, 1.0))
        return out


def _tool_names(messages: Sequence[dict]) -> dict[str, str]:
    names: dict[str, str] = {}
    for m in messages:
        for tc in m.get("tool_calls") or ():
            if isinstance(tc, dict) and tc.get("id") is not None:
                name = (tc.get("function") or {}).get("name")
                if isinstance(name, str):
                    names[tc["id"]] = name
    return names


def _result_key(message: dict) -> tuple:
    """What makes a tool result the same one in a later prompt: its tool call id and a digest of its
    content (not the content itself, which a long log would then hold once per result to the end)."""
    content = message.get("content")
    text = content if isinstance(content, str) else repr(content)
    return message.get("tool_call_id"), hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class ResultTracker:
    """Follows the tool results through the calls of a trace, in log order, as they are attributed:
    :meth:`observe` after each call (with the attributor that just attributed it), :meth:`costs` at
    the end."""

    def __init__(self) -> None:
        self._threads: dict[str, _Thread] = {}
        self._results: list[_Result] = []
        self._keys: Recall[tuple] = Recall()  # of the last call's tool results

    def observe(self, position: int, call: Any, message_tokens: Callable[[int], int], continues: int | None) -> None:
        """``position``: the call's place in the trace; ``message_tokens(k)``: the tokens of its message k
        (:meth:`tokprof.attribution.attributor.Attributor.message_tokens`); ``continues``: the length of
        the previous prompt of its thread when the call's starts with it, else None (the pass's facts:
        :class:`tokprof.attribution.facts.PromptFacts`)."""
        thread = self._threads.setdefault(call.thread, _Thread())
        seen, messages = thread.seen, call.messages
        start = 0
        if continues is not None:
            thread.extensions += 1  # the same messages and more (equal: the same keys): each result held once more
            thread.extended.append(position)
            start = continues
            here = thread.present
            names = thread.names
            if names is not None:
                names.update(_tool_names(messages[start:]))
        else:
            thread.settle()
            here = {}
            names = None
        self._keys.start()
        for k in range(start, len(messages)):
            message = messages[k]
            if message.get("role") != "tool":
                continue
            key = self._keys.get(message, _result_key)
            if key in here:
                continue
            found = seen.get(key)
            if found is not None:
                found.carried += 1
                found.singles.append(position)
                found.base = thread.extensions
                here[key] = found
                continue
            if names is None:
                names = _tool_names(messages)
            result = _Result(
                position,
                call.index,
                len(self._results),
                names.get(key[0]) if key[0] else None,
                message_tokens(k),
                call.thread,
            )
            result.base = thread.extensions
            seen[key] = here[key] = result
            self._results.append(result)
        thread.present, thread.names = here, names

    def costs(self, scale: dict[int, float] | None = None) -> ToolResultCosts | None:
        """The costs, or None when no prompt holds a tool result. ``scale``: per call position, the
        factor that makes an estimate's raw counts its scaled ones (absent: 1)."""
        if not self._results:
            return None
        for thread in self._threads.values():
            thread.settle()
        running = {key: thread.running(scale) for key, thread in self._threads.items()} if scale else {}
        tokens: list[tuple[_Result, int, int]] = [
            (r, *r.scaled(scale, running.get(r.thread, [0.0]))) for r in self._results
        ]
        per_tool: dict[str | None, list[int]] = {}
        for r, n, carry in tokens:
            entry = per_tool.setdefault(r.tool, [0, 0, 0])
            entry[0] += 1
            entry[1] += n
            entry[2] += carry
        carried = self._carried_by_tool(scale)
        tools = sorted(
            (
                ToolCost(tool, results, added, carry, carried=carried.get(tool, {}))
                for tool, (results, added, carry) in per_tool.items()
            ),
            key=lambda t: (-t.carry_cost, -t.tokens, t.tool or ""),
        )
        ranked = sorted(tokens, key=lambda item: (-item[2], item[0].order))
        top = tuple(
            CarriedResult(r.call, r.tool, n, r.carried, carry, r.thread or None, carried=self._carried_by(r, scale))
            for r, n, carry in ranked[:TOP]
        )
        return ToolResultCosts(
            tools=tuple(tools),
            top=top,
            results=len(tokens),
            tokens=sum(n for _, n, _ in tokens),
            carry_cost=sum(carry for _, _, carry in tokens),
        )

    def _carried_by(self, result: _Result, scale: dict[int, float] | None) -> dict[int, float]:
        """Per call position, the tokens of one result that call resent (in its units)."""
        extended = self._threads[result.thread].extended
        positions = [extended[i] for start, end in result.spans for i in range(start, end)] + result.singles
        out: dict[int, float] = {}
        for p in positions:
            out[p] = out.get(p, 0.0) + result.tokens * ((scale or {}).get(p, 1.0))
        return out

    def _carried_by_tool(self, scale: dict[int, float] | None) -> dict[str | None, dict[int, float]]:
        """Per tool, per call position, the tokens of its results that call resent (in its units): the
        runs of a thread's extending calls added up with a difference array, so the work is the results'
        runs and the calls', not their product."""
        out: dict[str | None, dict[int, float]] = {}
        runs: dict[tuple[str, str | None], list[int]] = {}
        for r in self._results:
            if r.spans:
                steps = runs.setdefault((r.thread, r.tool), [0] * (len(self._threads[r.thread].extended) + 1))
                for start, end in r.spans:
                    steps[start] += r.tokens
                    steps[end] -= r.tokens
            mine = out.setdefault(r.tool, {})
            for p in r.singles:
                mine[p] = mine.get(p, 0.0) + r.tokens * ((scale or {}).get(p, 1.0))
        for (thread, tool), steps in runs.items():
            mine = out.setdefault(tool, {})
            held = 0
            for i, p in enumerate(self._threads[thread].extended):
                held += steps[i]
                if held:
                    mine[p] = mine.get(p, 0.0) + held * ((scale or {}).get(p, 1.0))
        return out


def _dollars(d: dict, where: str) -> float | None:
    value = d.get("carry_dollars")
    if value is not None and (type(value) not in (int, float) or value != value or value < 0):
        raise ValueError(f"{where}.carry_dollars: expected a number of dollars or null")
    return value


def _wholes(d: dict, keys: tuple[str, ...], where: str) -> dict:
    """``d``, once each of ``keys`` is a whole number (or null); ValueError naming the first not."""
    for key in keys:
        value = d.get(key)
        if value is not None and type(value) is not int:
            raise ValueError(f"{where}.{key}: expected a whole number")
    return d
