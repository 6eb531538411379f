"""What a log's cache misses cost: the dollars a call paid for the prefix it shared with the previous
call of its thread but did not read from the cache.

For a call with a miss (``calls[].cache.miss``, other than ``first-call``: nothing to reuse yet), the
lost tokens are its shared prefix less its reported cache read; they were paid at the call's write
price where the call wrote that many (Anthropic), else at its input price, where a read would have
cost the read price. Each price is the call's own (its part in dollars over its tokens); a read
price the call does not show is genai-prices' for its model and date.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from tokprof.analyses.cost import genai_price
from tokprof.billing import CallCost, PricedTokens
from tokprof.profiling import CallRow, Profile

MILLION = 10 ** 6


@dataclass(frozen=True)
class MissCost:
    """The dollars lost to cache misses, by miss code (None: not measurable, ``why``)."""

    total: float | None
    by_reason: dict[str, float]
    why: str | None = None


def _read_price(cost: CallCost) -> float | None:
    tokens = cost.tokens
    if tokens is not None and tokens.cache_read and cost.cache_read is not None:
        return cost.cache_read / tokens.cache_read
    if cost.model is None or cost.source != "genai-prices":
        return None
    day = date.fromisoformat(cost.date) if cost.date else None
    probe = PricedTokens(input=0, cache_write_5m=0, cache_write_1h=0, cache_read=MILLION, output=None)
    try:
        return float(genai_price(cost.model, probe, MILLION, day)[2]["cache_read"]) / MILLION
    except (LookupError, ValueError):
        return None


def call_loss(row: CallRow) -> float | None:
    """The dollars one call lost to its cache miss (0 without one; None: not measurable)."""
    cache, cost = row.cache, row.cost
    if cache is None or cache.miss in (None, "first-call"):
        return 0.0
    if cost is None or not cost.priced or cost.tokens is None or cache.reported is None or cache.shared is None:
        return None
    tokens = cost.tokens
    prompt = tokens.input + tokens.cache_write_5m + tokens.cache_write_1h + tokens.cache_read
    lost = max(0, min(cache.shared, prompt) - cache.reported)
    if not lost:
        return 0.0
    written = tokens.cache_write_5m + tokens.cache_write_1h
    lost_written = min(lost, written)
    lost_input = lost - lost_written
    read = _read_price(cost)
    if read is None:
        return None
    paid = 0.0
    if lost_written:
        paid += lost_written * ((cost.cache_write or 0.0) / written - read)
    if lost_input:
        if not tokens.input or cost.input is None:
            return None
        paid += lost_input * (cost.input / tokens.input - read)
    return max(0.0, paid)


def miss_cost(profile: Profile) -> MissCost:
    """The dollars the profile's calls lost to cache misses, in all and by miss code."""
    if not any(row.cache is not None and row.cache.reported is not None for row in profile.calls):
        return MissCost(None, {}, "not recorded: the log reports no cache usage")
    by_reason: dict[str, float] = {}
    for row in profile.calls:
        loss = call_loss(row)
        if loss is None:
            return MissCost(None, {}, f"unpriced: call {row.index}'s cache miss cannot be priced")
        if loss and row.cache is not None and row.cache.miss:
            by_reason[row.cache.miss] = by_reason.get(row.cache.miss, 0.0) + loss
    return MissCost(round(sum(by_reason.values()), 8), {k: round(v, 8) for k, v in by_reason.items()})
