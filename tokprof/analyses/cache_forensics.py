"""Cache forensics: what each cache miss cost (its lost tokens, priced at the call's own rates), so a
profile can say what keeping the cache would have saved, and what no rule explains apart (unknown, never
a saving). The rules per miss reason are docs/cache.md's ("What a miss cost")."""

from __future__ import annotations

import dataclasses
from datetime import date

from tokprof.pricing.cost import genai_price
from tokprof.analyses.prefix_cache import ANTHROPIC
from tokprof.pricing.billing import CallCache, CallCost, PricedTokens
from tokprof.profiling import CallRow, Profile

#: The reasons whose expected read is what the previous call cached (module doc).
FROM_PREVIOUS = ("system", "tools", "message", "reasoning")


def unit_price(cost: CallCost, part: str, prompt: int) -> float | None:
    """The call's price of one token of ``part`` (input, cache_read, cache_write_5m): its own where it has
    such tokens, else genai-prices' for its model on its date at its prompt's size; None when unknown."""
    tokens = cost.tokens
    if tokens is not None:
        held = {
            "input": (tokens.input, cost.input),
            "cache_read": (tokens.cache_read, cost.cache_read),
            "cache_write_5m": (tokens.cache_write_5m, cost.cache_write if not tokens.cache_write_1h else None),
        }
        count, paid = held[part]
        if count and paid is not None:
            return paid / count
    if cost.model is None or cost.source != "genai-prices" or prompt <= 0:
        return None
    counts = {"input": 0, "cache_write_5m": 0, "cache_read": 0}
    counts[part] = prompt
    probe = PricedTokens(
        input=counts["input"],
        cache_write_5m=counts["cache_write_5m"],
        cache_write_1h=0,
        cache_read=counts["cache_read"],
        output=None,
    )
    key = "cache_write" if part == "cache_write_5m" else part
    try:
        parts = genai_price(cost.model, probe, prompt, date.fromisoformat(cost.date) if cost.date else None)
    except (LookupError, ValueError):
        return None
    return float(parts[2][key]) / prompt


def previous_cached(row: CallRow) -> int:
    """What a call left in the cache for the next call of its thread: its reads and writes (Anthropic,
    when reported), else its prompt."""
    usage = row.reported
    cache = row.cache
    prompt = usage.prompt if usage is not None and usage.prompt else row.total
    if cache is not None and cache.rules == ANTHROPIC and usage is not None and usage.prompt:
        return (usage.cache_read or 0) + (usage.cache_write or 0)
    return prompt


def expected_read(cache: CallCache, before: int, prompt: int) -> int:
    """The tokens a kept cache would have served the call (module doc)."""
    shared = cache.shared or 0
    if cache.miss in (None, "first-call"):
        return 0
    if cache.miss == "prefix-changed":
        if cache.part in FROM_PREVIOUS:
            return min(before, prompt)
        if cache.shared_basis == "messages" and (cache.reported or 0) > 0:
            return 0  # an estimated prefix before a compaction or a cut, and the provider read one: no loss to tell
        return min(shared, prompt)
    if cache.miss in ("below-minimum", "no-breakpoint"):
        return min(shared, prompt)
    return min(shared, before, prompt)


def lost_dollars(cache: CallCache, cost: CallCost | None, lost: int, prompt: int) -> float | None:
    """What ``lost`` tokens of a call cost over the read price (module doc); None when not priced."""
    if not lost:
        return 0.0
    if cost is None or not cost.priced or cost.tokens is None:
        return None
    read = unit_price(cost, "cache_read", prompt)
    plain = unit_price(cost, "input", prompt)
    if read is None or plain is None:
        return None
    if cache.miss == "no-breakpoint":
        write = unit_price(cost, "cache_write_5m", prompt)
        if write is None:
            return None
        return max(0.0, lost * (plain - read) - (prompt - lost) * (write - plain))
    tokens = cost.tokens
    written = tokens.cache_write_5m + tokens.cache_write_1h
    lost_written = min(lost, written)
    paid = lost_written * ((cost.cache_write or 0.0) / written - read) if lost_written else 0.0
    return max(0.0, paid + (lost - lost_written) * (plain - read))


def call_loss(row: CallRow, before: CallRow | None) -> CallCache | None:
    """The call's cache with what its miss lost (``lost``, ``lost_cost``)."""
    cache = row.cache
    if cache is None:
        return None
    if cache.miss in (None, "first-call") or before is None:
        return dataclasses.replace(cache, lost=0, lost_cost=0.0)
    usage = row.reported
    if usage is None or not usage.prompt or cache.reported is None:
        return dataclasses.replace(cache, lost=None, lost_cost=None)
    prompt = usage.prompt
    read = cache.reported
    lost = max(0, min(expected_read(cache, previous_cached(before), prompt), prompt) - read)
    if cache.miss == "no-breakpoint":
        lost = min(cache.shared or 0, prompt)
    dollars = lost_dollars(cache, row.cost, lost, prompt)
    return dataclasses.replace(cache, lost=lost, lost_cost=None if dollars is None else round(dollars, 8))


def attach_losses(profile: Profile) -> Profile:
    """The profile with every call's cache loss (``calls[].cache.lost_tokens``, ``lost_cost``); the summary's
    ``cache.lost`` adds them up by reason."""
    last: dict[str | None, CallRow] = {}
    rows = []
    for row in profile.calls:
        cache = call_loss(row, last.get(row.thread))
        last[row.thread] = row
        rows.append(row if cache is None else dataclasses.replace(row, cache=cache))
    profile.calls = rows
    return profile
