"""Which prefix of each prompt a provider's prompt cache could have reused (the longest prefix shared with
the previous call of its thread, turned into a predicted read by Anthropic's or OpenAI's rules), and why
a call missed. The shared prefix is in tokens where the attributor reports them, else estimated from
the messages (``shared_basis``). The rules and reasons are docs/cache.md's ("Why a call missed")."""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime
from typing import Callable, Sequence

from tokprof.pricing.cost import FIXED_FIRST, find_model
from tokprof.pricing.billing import CallCache
from tokprof.attribution.estimates import UNRECORDED
from tokprof.profiling import CallRow, Profile
from tokprof.attribution.facts import PairFacts, PassFacts, prompt_facts
from tokprof.trace import Call, Trace


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


def _fixed(row: CallRow) -> int:
    return sum(row.buckets.get(name, 0) for name in FIXED_FIRST)


def estimate_shared(before_row: CallRow, pair: PairFacts) -> int:
    """The tokens two prompts share, from their messages (``pair``: the later call's facts against the
    earlier one, whose row is ``before_row``): all of the earlier prompt when the call continues it;
    else its fixed part and the share of its messages' text before the first that differs. When they
    part at the first message (or at the system prompt), what comes before it: the tool definitions,
    the part the log does not record (:data:`UNRECORDED`, the inferred system prompt and tools) unless
    the first message is a system prompt that changed, and when the first message is not a system
    prompt, the system prompt the chat template adds itself (all of the fixed part)."""
    if pair.tools_changed:
        return 0
    k = pair.changed_at
    if k >= pair.before_messages:
        return before_row.total
    fixed = _fixed(before_row)
    if k == 0 or (pair.before_system_at_change and k <= 1):
        if k == 0 and not pair.before_system_first:
            return fixed
        unrecorded = 0 if k == 0 else before_row.buckets.get(UNRECORDED, 0)
        return before_row.buckets.get("tool_definitions", 0) + unrecorded
    whole, head = pair.whole, pair.head
    return fixed + round((before_row.total - fixed) * head / whole) if whole else fixed


def _units(row: CallRow, call: Call) -> float:
    """Reported tokens per token of the row's buckets: the provider's units, in which the rules apply."""
    prompt = call.reported.prompt if call.reported else None
    return prompt / row.total if prompt and row.total else 1.0


def gap_seconds(times: Sequence[datetime | None], a: int, b: int) -> float | None:
    """Seconds from call ``a`` to call ``b``; None when either time is not recorded (or they cannot be compared)."""
    if times[a] is None or times[b] is None:
        return None
    try:
        return (times[b] - times[a]).total_seconds()  # type: ignore[operator]
    except TypeError:  # one with a time zone, one without
        return None


def openai_cached_read(shared: int) -> int:
    """The tokens OpenAI's automatic prompt cache reads of a shared prefix of ``shared`` tokens: none below
    its minimum, then whole steps."""
    if shared < OPENAI_MIN:
        return 0
    return OPENAI_MIN + (shared - OPENAI_MIN) // OPENAI_STEP * OPENAI_STEP


def predict(
    profile: Profile,
    trace: Trace,
    shared: SharedTokens | None = None,
    times: Sequence[datetime | None] | None = None,
    facts: PassFacts | None = None,
) -> list[CallCache]:
    """Every call's computed cache (the profile's rows and the trace's calls, position by position;
    ``facts``: what the pass took of the calls' prompts, by default the profile's, else taken from the
    trace's calls now). Nothing here reads a prompt: a trace of light calls will do."""
    times = list(times) if times is not None else call_times(trace)
    facts = facts or profile.facts or prompt_facts(trace.calls)
    last: dict[str, int] = {}
    out: list[CallCache] = []
    rows = profile.calls
    for position, (row, call, pair) in enumerate(zip(rows, trace.calls, (f.pair for f in facts.calls))):
        name = call.model or trace.model
        rules = rules_for(name)
        reported = call.reported.cache_read if call.reported and call.reported.prompt else None
        before_at = last.get(call.thread)
        last[call.thread] = position
        if before_at is None or pair is None:
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
        k, extends = pair.changed_at, pair.continues
        found = shared(position) if shared is not None else None
        here, there = _units(row, call), _units(before_row, before)
        if found is not None:
            scale = row.total / row.rendered if row.rendered else 1.0
            common, basis = round(min(found * scale, row.total) * here), "tokens"
        else:
            common = round(min(estimate_shared(before_row, pair) * there, row.total * here))
            basis = "messages"
        gap = gap_seconds(times, before_at, position)
        miss: str | None = None
        detail: str | None = None
        predicted: int | None = None
        part: str | None = None
        if not extends:
            miss, part = "prefix-changed", pair.part
            detail = f"the prompt differs from the previous one from message {k} on: {pair.reason}"
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
            predicted = openai_cached_read(common)
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
    facts = profile.facts or prompt_facts(trace.calls)
    if not len(profile.calls) == len(trace.calls) == len(facts.calls):
        return profile
    times = list(times) if times is not None else call_times(trace)
    caches = predict(profile, trace, shared, times, facts)
    profile.calls = [dataclasses.replace(row, cache=cache) for row, cache in zip(profile.calls, caches)]
    profile.cache_notes = notes_for(caches, times, shared)
    return profile
