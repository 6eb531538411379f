"""Two runs compared (``tokprof diff A B``): two logs, two saved profiles, or a profile and its
baseline. Every figure is ``{a, b, change}`` (``change`` is b - a; None when either side does not
record it: "not recorded" is never 0): the run's figures, the buckets, each tool (its definition's
tokens per request, and its results' tokens), each cache-miss reason (dollars) and each part of the
cost. When both are runs of one conversation (their first user message is the same) and both are
logs, ``first_change`` says what changed first in the prompt: the system prompt, the tools, or a
message (its call and place).

A baseline (``tokprof check``'s) holds the metrics and each tool's tokens only: the other figures
of that side are None.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokprof.profiling import Profile
from tokprof.trace import Trace

SCHEMA_VERSION = 1
Number = int | float | None
#: The run's figures, in the order shown; a baseline's metric of the same name stands for each.
FIGURES = (
    "calls",
    "billed_input",
    "first_prompt",
    "largest_prompt",
    "output",
    "uncached_input",
    "cost",
    "cache_hit_rate",
    "cache_miss_cost",
)
COST_PARTS = ("input", "cache_write", "cache_read", "output", "other", "total")


@dataclass(frozen=True)
class Change:
    a: Number
    b: Number

    @property
    def change(self) -> Number:
        if self.a is None or self.b is None:
            return None
        value = self.b - self.a
        return round(value, 8) if isinstance(value, float) else value

    def to_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "change": self.change}


@dataclass(frozen=True)
class PromptStart:
    """What a run's prompts hold, for finding where two runs of one conversation part: each main-thread
    call's system text, tool names and definitions, and messages."""

    calls: tuple[tuple[str, tuple[str, ...], str, tuple[dict, ...]], ...]  # (system, tool names, tools, messages)


@dataclass(frozen=True)
class Side:
    """One run as a diff reads it."""

    path: str
    kind: str  # "log", "profile" or "baseline"
    model: str | None
    figures: dict[str, Number]
    # Each map is None when the side does not record it (a tool it lacks then has no value; in a map
    # it records, a tool it lacks is 0: the tool was not there).
    buckets: dict[str, Number] | None = None
    tools: dict[str, Number] | None = None  # a definition's tokens per request
    tool_results: dict[str, Number] | None = None  # tokens the tool's results added
    miss_reasons: dict[str, Number] | None = None  # dollars, by reason label
    cost_parts: dict[str, Number] | None = None
    prompts: PromptStart | None = None
    first_user: str | None = None

    def describe(self) -> dict:
        return {"path": self.path, "kind": self.kind, "model": self.model}


@dataclass(frozen=True)
class FirstChange:
    call: int  # the main thread's call, from 1
    part: str  # "system", "tools" or "message"
    detail: str
    message: int | None = None  # the message's place in the prompt, from 1

    def to_dict(self) -> dict:
        return {"call": self.call, "part": self.part, "message": self.message, "detail": self.detail}


@dataclass(frozen=True)
class RunDiff:
    a: Side
    b: Side
    figures: dict[str, Change]
    buckets: dict[str, Change]
    tools: dict[str, Change]
    tool_results: dict[str, Change]
    miss_reasons: dict[str, Change]
    cost_parts: dict[str, Change]
    same_conversation: bool | None  # None: not known (a side is no log)
    first_change: FirstChange | None

    def to_dict(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "diff",
            "a": self.a.describe(),
            "b": self.b.describe(),
            **{name: change.to_dict() for name, change in self.figures.items()},
            "buckets": {k: v.to_dict() for k, v in self.buckets.items()},
            "tools": {k: v.to_dict() for k, v in self.tools.items()},
            "tool_results": {k: v.to_dict() for k, v in self.tool_results.items()},
            "cache_miss_reasons": {k: v.to_dict() for k, v in self.miss_reasons.items()},
            "cost_parts": {k: v.to_dict() for k, v in self.cost_parts.items()},
            "same_conversation": self.same_conversation,
            "first_change": None if self.first_change is None else self.first_change.to_dict(),
        }


# -- the sides -------------------------------------------------------------------------------------
def side_of_profile(profile: Profile, kind: str, start: tuple[PromptStart, str | None] | None = None) -> Side:
    from tokprof.analyses.cache_loss import miss_cost

    summary = profile.summary()
    reported = summary.reported
    cost = summary.cost
    priced = cost is not None and cost.priced
    lost = miss_cost(profile)
    missing = set(profile.not_recorded)
    figures: dict[str, Number] = {
        "calls": summary.calls,
        "billed_input": summary.billed_input,
        "first_prompt": profile.calls[0].total if profile.calls else 0,
        "largest_prompt": summary.largest_prompt,
        "output": reported.output if reported else None,
        "uncached_input": reported.uncached_input if reported else None,
        "cost": cost.total if priced and cost else None,
        "cache_hit_rate": None if reported is None or reported.hit_rate is None else round(reported.hit_rate, 6),
        "cache_miss_cost": lost.total,
    }
    buckets: dict[str, Number] = {}
    for name, value in summary.buckets_billed.items():
        unrecorded = (name == "system" and "system_prompt" in missing) or (
            name == "tool_definitions" and "tool_definitions" in missing
        )
        buckets[name] = None if unrecorded and not value else value
    catalogue = profile.catalogue.catalogue if profile.catalogue else None
    tools: dict[str, Number] | None = (
        {t.name: t.marginal for t in catalogue.tools} if catalogue and "tool_definitions" not in missing else None
    )
    results = summary.tool_result_costs
    tool_results: dict[str, Number] | None = (
        {(t.tool or "(unnamed)"): t.tokens for t in results.tools} if results is not None else None
    )
    cost_parts: dict[str, Number] | None = (
        {part: getattr(cost, part) for part in COST_PARTS} if priced and cost else None
    )
    prompts, first_user = start if start is not None else (None, None)
    return Side(
        path=profile.source.path,
        kind=kind,
        model=profile.source.model,
        figures=figures,
        buckets=buckets,
        tools=tools,
        tool_results=tool_results,
        miss_reasons=None if lost.total is None else dict(lost.by_reason),
        cost_parts=cost_parts,
        prompts=prompts,
        first_user=first_user,
    )


def _number(value: object, path: str, where: str) -> Number:
    import math

    from tokprof.base.errors import TokprofError

    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TokprofError(f"{path}: {where}: expected a number, found {type(value).__name__}")
    return value


def side_of_baseline(baseline: Mapping[str, Any], path: str) -> Side:
    """A check baseline (``tokprof-baseline.json``): its metrics and each tool's tokens (a value that
    is not a number: an error naming the file and the field)."""
    from tokprof.base.text import visible

    metrics = baseline.get("metrics") or {}
    figures: dict[str, Number] = {name: _number(metrics.get(name), path, f"metrics.{name}") for name in FIGURES}
    tools = baseline.get("tools")
    if isinstance(tools, dict):
        for name, value in tools.items():
            _number(value, path, f"tools.{visible(str(name))[:80]}")
    return Side(
        path=path,
        kind="baseline",
        model=baseline.get("model") if isinstance(baseline.get("model"), str) else None,
        figures=figures,
        tools=dict(baseline.get("tools") or {}) if isinstance(baseline.get("tools"), dict) else None,
    )


def side_of_measurement(metrics: Mapping[str, Any], tools: Mapping[str, int], path: str, model: str | None) -> Side:
    """A check's measurement (what ``--update-baseline`` would write): its metrics and each tool's tokens."""
    return Side(
        path=path,
        kind="check",
        model=model,
        figures={name: metrics.get(name) for name in FIGURES},
        tools=dict(tools) if tools else None,
    )


#: How many calls of each run are compared to find the first change (a change later than this is
#: not looked for: the prompts' start is what decides the rest).
CALLS_COMPARED = 50


def prompt_start(trace: Trace) -> tuple[PromptStart, str | None]:
    """A log's prompts as :func:`first_change` compares them, and its first user message."""
    import json

    calls: list[tuple[str, tuple[str, ...], str, tuple[dict, ...]]] = []
    for call in trace.calls:
        if call.thread or len(calls) >= CALLS_COMPARED:
            continue
        messages = tuple(call.messages)
        system = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") in ("system", "developer"))
        rest = tuple(m for m in messages if m.get("role") not in ("system", "developer"))
        tools = call.tools or []
        names = tuple(str((t.get("function") or t).get("name", "")) for t in tools if isinstance(t, dict))
        calls.append((system, names, json.dumps(tools, sort_keys=True, default=str), rest))
    first_user = next(
        (str(m.get("content") or "") for _, _, _, rest in calls[:1] for m in rest if m.get("role") == "user"), None
    )
    return PromptStart(tuple(calls)), first_user


def _said(message: dict) -> tuple:
    """What a message says, without the ids a run gives its tool calls (two runs never share them)."""
    calls = tuple(
        (str((c.get("function") or {}).get("name")), str((c.get("function") or {}).get("arguments")))
        for c in message.get("tool_calls") or ()
        if isinstance(c, dict)
    )
    return (message.get("role"), message.get("content"), calls)


def first_change(a: PromptStart, b: PromptStart) -> FirstChange | None:
    """Where two runs of one conversation's prompts first differ: the first call whose system prompt,
    tools or messages differ (compared in that order), None when the shorter run's prompts are the
    longer's."""
    for number, (one, two) in enumerate(zip(a.calls, b.calls), 1):
        if one[0] != two[0]:
            return FirstChange(
                number, "system", f"the system prompt changed ({len(one[0]):,} to {len(two[0]):,} characters)"
            )
        if one[2] != two[2]:
            added = [n for n in two[1] if n not in one[1]]
            removed = [n for n in one[1] if n not in two[1]]
            said = "; ".join(
                part
                for part in (
                    f"added {', '.join(added[:5])}" if added else "",
                    f"removed {', '.join(removed[:5])}" if removed else "",
                    "definitions changed" if not added and not removed else "",
                )
                if part
            )
            return FirstChange(number, "tools", f"the tools changed: {said}")
        for place, (m, n) in enumerate(zip(one[3], two[3]), 1):
            if _said(m) != _said(n):
                role = n.get("role") or "?"
                return FirstChange(number, "message", f"message {place} ({role}) differs", place)
    return None


# -- the diff --------------------------------------------------------------------------------------
def _changes(
    a: Mapping[str, Number] | None,
    b: Mapping[str, Number] | None,
    keys: Sequence[str] | None = None,
    absent: Number = 0,
) -> dict[str, Change]:
    """Each name's change; a name one recorded map lacks is ``absent`` there (None: the map is not recorded)."""
    names = list(keys) if keys is not None else list(dict.fromkeys([*(a or {}), *(b or {})]))
    return {
        name: Change(None if a is None else a.get(name, absent), None if b is None else b.get(name, absent))
        for name in names
    }


def _ranked(changes: dict[str, Change]) -> dict[str, Change]:
    """Largest change first (by size), then by name; unknown changes last."""
    return dict(
        sorted(
            changes.items(),
            key=lambda kv: (kv[1].change is None, -abs(kv[1].change or 0), kv[0]),
        )
    )


def diff(a: Side, b: Side) -> RunDiff:
    """The two runs' figures side by side, and where the second's prompts first depart from the first's."""
    same = None
    change = None
    if a.prompts is not None and b.prompts is not None:
        same = a.first_user is not None and a.first_user == b.first_user
        if same:
            change = first_change(a.prompts, b.prompts)
    return RunDiff(
        a=a,
        b=b,
        figures=_changes(a.figures, b.figures, FIGURES, absent=None),
        buckets=_changes(a.buckets, b.buckets) if a.buckets is not None or b.buckets is not None else {},
        tools=_ranked(_changes(a.tools, b.tools)),
        tool_results=_ranked(_changes(a.tool_results, b.tool_results)),
        miss_reasons=_ranked(_changes(a.miss_reasons, b.miss_reasons, absent=0.0)),
        cost_parts=_changes(a.cost_parts, b.cost_parts, COST_PARTS, absent=None)
        if a.cost_parts is not None or b.cost_parts is not None
        else {},
        same_conversation=same,
        first_change=change,
    )
