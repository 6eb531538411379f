"""The carry cost of tool results in US dollars: what the later calls that resent them paid for them.

A result resent by a call that continues the previous call of its thread sits in the part of the
prompt that call already sent (its first ``n`` tokens, ``n`` the previous prompt's). A call's prompt
is billed in stretches, as its cost spreads over the buckets (:func:`tokprof.pricing.cost.bucket_costs`):
its first tokens at the cache-read rate, the next at the cache-write rate, the rest at the input
rate. The dollars of the tool results in that first part, over their tokens, are the rate the call
paid for each token it resent: a cache read, mostly, and a write after the cache expired. A call that
does not continue its thread's previous one (its prompt rewritten) resends them at its tool-result
bucket's average rate. A result's carry cost in dollars is its tokens in each call that resent it
times that call's rate, added up; a tool's, its results'. None when a call that resent them is not
priced: never a part shown as the whole.
"""

from __future__ import annotations

import dataclasses

from tokprof.pricing.cost import prefix_buckets, thread_previous
from tokprof.attribution.tool_results import ToolResultCosts
from tokprof.pricing.billing import money
from tokprof.profiling import CallRow, Profile

RESULTS = "tool_results"


def _stretches(row: CallRow) -> list[tuple[float, float, float]]:
    """The call's prompt as it is billed, in the row's units: (start, end, dollars per token)."""
    cost = row.cost
    assert cost is not None and cost.tokens is not None
    tokens = cost.tokens
    prompt = tokens.input + tokens.cache_write + tokens.cache_read
    scale = row.total / prompt if prompt else 1.0
    out = []
    start = 0.0
    for count, dollars in (
        (tokens.cache_read, cost.cache_read),
        (tokens.cache_write, cost.cache_write),
        (tokens.input, cost.input),
    ):
        end = start + count * scale
        if end > start:
            out.append((start, end, (dollars or 0.0) / (end - start)))
        start = end
    return out


def carry_rates(profile: Profile) -> dict[int, float | None]:
    """Per call position, what the call paid in US dollars per token of the tool results it resent
    (module doc); None for a call that is not priced. Calls with no tool results are left out."""
    rows = profile.calls
    previous = thread_previous(profile)
    rates: dict[int, float | None] = {}
    for position, row in enumerate(rows):
        held = row.buckets.get(RESULTS, 0)
        if not held:
            continue
        cost = row.cost
        if cost is None or not cost.priced or cost.tokens is None:
            rates[position] = None
            continue
        before = previous[position]
        if before is None:  # not where in the prompt: the bucket's average
            spent = (cost.buckets or {}).get(RESULTS)
            rates[position] = None if spent is None else spent / held
            continue
        sent = min(rows[before].total, row.total)  # the part the previous call already sent

        def results(n: float) -> float:
            return prefix_buckets(rows, position, round(n), previous).get(RESULTS, 0.0)

        dollars = tokens = 0.0
        for start, end, rate in _stretches(row):
            if start >= sent:
                break
            part = results(min(end, sent)) - results(start)
            dollars += max(part, 0.0) * rate
            tokens += max(part, 0.0)
        if tokens > 0:
            rates[position] = dollars / tokens
        else:
            spent = (cost.buckets or {}).get(RESULTS)
            rates[position] = None if spent is None else spent / held
    return rates


def _priced(carried: dict[int, float], rates: dict[int, float | None]) -> float | None:
    total = 0.0
    for position, tokens in carried.items():
        rate = rates.get(position)
        if rate is None:
            return None
        total += tokens * rate
    return money(total)


def price_carry(profile: Profile) -> Profile:
    """The profile with its tool results' carry cost in dollars (``carry_dollars`` of the tools, the
    costliest results and the whole), once its calls are priced; the tokens per call they are priced
    from are let go. Unchanged when it has no tool results or no call is priced."""
    costs = profile.tool_result_costs
    if costs is None:
        return profile
    priced = any(c.cost is not None and c.cost.priced for c in profile.calls)
    rates = carry_rates(profile) if priced else {}
    tools = tuple(
        dataclasses.replace(t, carry_dollars=_priced(t.carried, rates) if priced else None, carried={})
        for t in costs.tools
    )
    top = tuple(
        dataclasses.replace(r, carry_dollars=_priced(r.carried, rates) if priced else None, carried={})
        for r in costs.top
    )
    whole = None
    if priced and all(t.carry_dollars is not None for t in tools):
        whole = money(sum(t.carry_dollars or 0.0 for t in tools))
    profile.tool_result_costs = ToolResultCosts(
        tools=tools,
        top=top,
        results=costs.results,
        tokens=costs.tokens,
        carry_cost=costs.carry_cost,
        carry_dollars=whole,
    )
    return profile
