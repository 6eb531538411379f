"""Which prefix of each prompt a provider's prompt cache could have reused, and why a cache missed.

For each call, the prompt it shares with the previous call of its thread (their longest common
prefix) is what a prefix cache could reuse. The provider's rules turn it into a predicted cache read,
shown beside the reported one:

* **Anthropic**: cache reads come from cache breakpoints (``cache_control``). The logs tokprof reads
  do not keep them, so breakpoints are assumed where Claude Code puts them: at the end of the fixed
  part (tools and system prompt) and at the end of each prompt. A prefix shorter than the model's
  minimum (1,024 tokens; 2,048 or 4,096 for some models) is not cached; an entry lives 5 minutes (or
  1 hour when the call wrote a 1-hour entry) from its last use.
* **OpenAI**: automatic, for prompts from 1,024 tokens, in steps of 128 tokens; prefixes are evicted
  after 5 to 10 minutes idle (at most an hour).

A call that could not reuse the previous prompt gets a *miss* code with why: ``first-call`` (nothing
to reuse), ``prefix-changed`` (the prompt differs from message *k* on: a system prompt edit, a tool
catalogue change, a compaction), ``idle-gap`` (longer than the lifetime since the previous call),
``below-minimum`` (too short to be cached), ``below-prediction`` (the provider read less than the
rules give: an entry evicted early, breakpoints elsewhere, another server).

The shared prefix in tokens needs the rendered prompts' tokens, which the attributor has; until it
reports them (``SharedTokens``), it is estimated from the messages the two prompts share, and says
so (``shared_basis``). Lifetimes need each call's time, which the trace gives only when a reader
sets ``Call.time``: without it they are not checked, and the profile says so.
"""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import datetime
from typing import Callable, Sequence

from tokprof.analyses.cost import FIXED_FIRST, find_model
from tokprof.base.billing import CallCache
from tokprof.attribution.estimates import UNRECORDED
from tokprof.profiling import CallRow, Profile
from tokprof.trace import Call, PromptView, Trace, as_list

#: ``shared(position)``: the tokens the call's rendered prompt shares with the previous render of its
#: thread (the longest common token prefix, in the counter's tokens), or None when it cannot tell.
SharedTokens = Callable[[int], "int | None"]

ANTHROPIC, OPENAI = "anthropic", "openai"
SHORT_TTL, LONG_TTL = 300.0, 3600.0
OPENAI_MIN, OPENAI_STEP, OPENAI_IDLE = 1024, 128, 600.0
#: Anthropic's minimum cacheable prompt by model (the first pattern that matches the model's name).
ANTHROPIC_MINIMUM = (
    (re.compile(r"opus-4-[56]|opus-4\.[56]|haiku-4-5|haiku-4\.5"), 4096),
    (re.compile(r"sonnet-4-6|sonnet-4\.6|haiku-3|3-5-haiku|3-haiku"), 2048),
)
ANTHROPIC_DEFAULT_MINIMUM = 1024

NOTE_BREAKPOINTS = (
    "Anthropic: the log does not record the requests' cache_control, so cache breakpoints are "
    "assumed where Claude Code sets them (after the tools and system prompt, and at the end of each "
    "prompt)"
)
NOTE_OPENAI = (
    "OpenAI: prefixes from 1,024 tokens are cached automatically, in steps of 128 tokens, and evicted "
    "after 5 to 10 minutes idle"
)
NOTE_NO_TIMES = "the log does not give the calls' times: cache lifetimes (5 minutes, 1 hour) are not checked"
NOTE_MESSAGES = (
    "shared prefixes are estimated from the messages two prompts share (the previous prompt's count "
    "when a call continues it), not from their tokens"
)


def rules_for(name: str | None) -> str | None:
    """The prefix-cache rules of the provider that serves a log's model name."""
    if not name:
        return None
    if "claude" in name.lower():
        return ANTHROPIC
    try:
        provider, model = find_model(name)
    except LookupError:
        return None
    if provider.id == ANTHROPIC or model.id.startswith("claude"):
        return ANTHROPIC
    if provider.id in (OPENAI, "azure"):
        return OPENAI
    return None


def anthropic_minimum(name: str | None) -> int:
    for pattern, minimum in ANTHROPIC_MINIMUM:
        if name and pattern.search(name.lower()):
            return minimum
    return ANTHROPIC_DEFAULT_MINIMUM


def call_times(trace: Trace) -> list[datetime | None]:
    """Each call's time, when the reader set one (``Call.time``)."""
    return [getattr(call, "time", None) for call in trace.calls]


def _tools_key(tools: list[dict] | None) -> str:
    return json.dumps(tools, sort_keys=True)


def first_difference(before: Sequence[dict], after: Sequence[dict]) -> int:
    """The index of the first message that differs (the shorter list's length when one starts the other)."""
    if isinstance(after, PromptView) and after.extends(before):
        return len(before)  # a longer view of the same list: O(1)
    k = 0
    while k < min(len(before), len(after)) and before[k] == after[k]:
        k += 1
    return k


def change_reason(before: Call, call: Call, k: int, tools_changed: bool) -> str:
    """Why a prompt parts from the previous one of its thread, in words."""
    if tools_changed:
        return "the tool catalogue changed"
    if call.kind == "compaction" or before.kind == "compaction":
        return "a compaction call"
    if (
        k < len(call.messages)
        and call.messages[k]["role"] in ("system", "developer")
        or (k < len(before.messages) and before.messages[k]["role"] in ("system", "developer"))
    ):
        return f"the system prompt changed (message {k})"
    if _reasoning_only(before.messages, call.messages, k):
        return f"the reasoning of message {k} was dropped or rewritten"
    if k < len(call.messages) and len(call.messages) < len(before.messages):
        return f"the conversation was rewritten from message {k} (a compaction or a cut)"
    return f"message {k} changed"


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


def changed_part(before: Call, call: Call, k: int, tools_changed: bool) -> str:
    """Which part of the prompt a ``prefix-changed`` call changed (:data:`tokprof.base.billing.CHANGED_PARTS`)."""
    if tools_changed:
        return "tools"
    if call.kind == "compaction" or before.kind == "compaction":
        return "compaction"
    if (
        k < len(call.messages)
        and call.messages[k]["role"] in ("system", "developer")
        or (k < len(before.messages) and before.messages[k]["role"] in ("system", "developer"))
    ):
        return "system"
    if _reasoning_only(before.messages, call.messages, k):
        return "reasoning"
    if k < len(call.messages) and len(call.messages) < len(before.messages):
        return "rewrite"
    return "message"


def _fixed(row: CallRow) -> int:
    return sum(row.buckets.get(name, 0) for name in FIXED_FIRST)


def estimate_shared(before_row: CallRow, before: Call, call: Call, k: int, tools_changed: bool) -> int:
    """The tokens two prompts share, from their messages: all of the earlier prompt when the call
    continues it; else its fixed part and the share of its messages' text before message ``k``. When
    they part at the first message (or at the system prompt), what comes before it: the tool
    definitions, the part the log does not record (:data:`UNRECORDED`, the inferred system prompt and
    tools) unless the first message is a system prompt that changed, and when the first message is not
    a system prompt, the system prompt the chat template adds itself (all of the fixed part)."""
    if tools_changed:
        return 0
    if k >= len(before.messages):
        return before_row.total
    fixed = _fixed(before_row)
    if k == 0 or (before.messages[k]["role"] in ("system", "developer") and k <= 1):
        system_first = before.messages[0]["role"] in ("system", "developer")
        if k == 0 and not system_first:
            return fixed
        unrecorded = 0 if k == 0 else before_row.buckets.get(UNRECORDED, 0)
        return before_row.buckets.get("tool_definitions", 0) + unrecorded
    whole = len(json.dumps(as_list(before.messages), ensure_ascii=False))
    head = len(json.dumps(before.messages[:k], ensure_ascii=False))
    return fixed + round((before_row.total - fixed) * head / whole) if whole else fixed


def _units(row: CallRow, call: Call) -> float:
    """Reported tokens per token of the row's buckets: the provider's units, in which the rules apply."""
    prompt = call.reported.prompt if call.reported else None
    return prompt / row.total if prompt and row.total else 1.0


def _gap(times: Sequence[datetime | None], a: int, b: int) -> float | None:
    if times[a] is None or times[b] is None:
        return None
    try:
        return (times[b] - times[a]).total_seconds()  # type: ignore[operator]
    except TypeError:  # one with a time zone, one without
        return None


def _openai_read(shared: int) -> int:
    if shared < OPENAI_MIN:
        return 0
    return OPENAI_MIN + (shared - OPENAI_MIN) // OPENAI_STEP * OPENAI_STEP


def predict(
    profile: Profile, trace: Trace, shared: SharedTokens | None = None, times: Sequence[datetime | None] | None = None
) -> list[CallCache]:
    """Every call's computed cache (the profile's rows and the trace's calls, position by position)."""
    times = list(times) if times is not None else call_times(trace)
    last: dict[str, int] = {}
    out: list[CallCache] = []
    rows = profile.calls
    for position, (row, call) in enumerate(zip(rows, trace.calls)):
        name = call.model or trace.model
        rules = rules_for(name)
        reported = call.reported.cache_read if call.reported and call.reported.prompt else None
        before_at = last.get(call.thread)
        last[call.thread] = position
        if before_at is None:
            out.append(
                CallCache(
                    shared=0,
                    shared_basis="tokens",
                    predicted=0 if rules else None,
                    reported=reported,
                    rules=rules,
                    miss="first-call",
                    detail="the first call of its conversation: nothing to reuse yet",
                )
            )
            continue
        before, before_row = trace.calls[before_at], rows[before_at]
        tools_changed = _tools_key(before.tools) != _tools_key(call.tools)
        k = first_difference(before.messages, call.messages)
        extends = k >= len(before.messages) and not tools_changed
        found = shared(position) if shared is not None else None
        here, there = _units(row, call), _units(before_row, before)
        if found is not None:
            scale = row.total / row.rendered if row.rendered else 1.0
            common, basis = round(min(found * scale, row.total) * here), "tokens"
        else:
            common = round(min(estimate_shared(before_row, before, call, k, tools_changed) * there, row.total * here))
            basis = "messages"
        gap = _gap(times, before_at, position)
        miss: str | None = None
        detail: str | None = None
        predicted: int | None = None
        part: str | None = None
        if not extends:
            miss, part = "prefix-changed", changed_part(before, call, k, tools_changed)
            detail = f"the prompt differs from the previous one from message {k} on: " + change_reason(
                before, call, k, tools_changed
            )
        switched = rules is not None and (before.model or trace.model) != name
        if rules == ANTHROPIC:
            minimum = anthropic_minimum(name)
            usage = before.reported
            long = bool(usage and usage.cache_write_1h)
            lifetime = LONG_TTL if long else SHORT_TTL
            if extends:
                cached = (
                    (usage.cache_read or 0) + (usage.cache_write or 0) if usage and usage.prompt else before_row.total
                )
                cached = min(cached, common)
            else:
                fixed = round(_fixed(before_row) * there)
                cached = fixed if fixed <= common else 0
            predicted = cached
            if gap is not None and gap > lifetime:
                predicted, miss = 0, "idle-gap"
                detail = (
                    f"{gap / 60:,.1f} minutes since the previous call, past the cache's "
                    f"{'1-hour' if long else '5-minute'} lifetime"
                )
            elif cached < minimum:
                predicted = 0
                if miss is None:
                    miss = "below-minimum"
                    detail = f"the prefix ({cached:,} tokens) is below the model's minimum of {minimum:,} to be cached"
        elif rules == OPENAI:
            predicted = _openai_read(common)
            if gap is not None and gap > OPENAI_IDLE:
                predicted, miss = 0, "idle-gap"
                detail = f"{gap / 60:,.1f} minutes since the previous call: OpenAI evicts prefixes after 5 to 10 minutes idle"
            elif common < OPENAI_MIN and miss is None:
                miss = "below-minimum"
                detail = f"the shared prefix ({common:,} tokens) is below OpenAI's minimum of {OPENAI_MIN:,}"
        if switched:
            predicted, miss, part = 0, "model-switch", None
            detail = (
                f"the previous call of its conversation used {before.model or trace.model}, this one {name}: "
                "a cache is per model"
            )
        uncached = bool(
            call.reported and call.reported.prompt and not call.reported.cache_read and not call.reported.cache_write
        )
        if (
            miss in (None, "below-prediction", "below-minimum")
            and rules == ANTHROPIC
            and uncached
            and min(common, before_row.total if not before.reported else before.reported.prompt or 0)
            >= anthropic_minimum(name)
        ):
            miss = "no-breakpoint"  # a breakpoint at the end of the previous prompt would have had it read
            detail = (
                f"the call neither read nor wrote the cache: no cache breakpoint (cache_control) where one "
                f"would pay ({common:,} tokens shared with the previous call)"
            )
        elif (
            miss is None
            and predicted
            and reported is not None
            and reported < predicted - (OPENAI_STEP if rules == OPENAI else 0) - max(predicted // 100, 0)
        ):
            miss = "below-prediction"
            expired = "an entry past its lifetime (the log gives no times to check), " if gap is None else ""
            detail = (
                f"the provider read {reported:,} tokens where its rules give {predicted:,}: {expired}an entry "
                "evicted early, breakpoints elsewhere, or another server"
            )
        out.append(
            CallCache(
                shared=common,
                shared_basis=basis,
                predicted=predicted,
                reported=reported,
                rules=rules,
                miss=miss,
                detail=detail,
                changed_at=None if extends else k,
                gap=gap,
                part=part,
            )
        )
    return out


def notes_for(
    caches: list[CallCache], times: Sequence[datetime | None], shared: SharedTokens | None
) -> tuple[str, ...]:
    rules = {c.rules for c in caches}
    notes = []
    if ANTHROPIC in rules:
        notes.append(NOTE_BREAKPOINTS)
    if OPENAI in rules:
        notes.append(NOTE_OPENAI)
    if rules & {ANTHROPIC, OPENAI} and all(t is None for t in times):
        notes.append(NOTE_NO_TIMES)
    if any(c.shared_basis == "messages" for c in caches):
        notes.append(NOTE_MESSAGES)
    return tuple(notes)


def attach_cache(
    profile: Profile, trace: Trace, shared: SharedTokens | None = None, times: Sequence[datetime | None] | None = None
) -> Profile:
    """The profile with every call's computed cache (``calls[].cache``, ``summary.cache``)."""
    if len(profile.calls) != len(trace.calls):
        return profile
    times = list(times) if times is not None else call_times(trace)
    caches = predict(profile, trace, shared, times)
    profile.calls = [dataclasses.replace(row, cache=cache) for row, cache in zip(profile.calls, caches)]
    profile.cache_notes = notes_for(caches, times, shared)
    return profile
