"""What a log's cache misses cost (the CI metric ``cache_miss_cost``): the dollars the calls paid, over
the read price, for tokens a kept cache would have served them, by miss code. The per-call figures are
:mod:`tokprof.analyses.cache_forensics`'s (``calls[].cache.lost_cost``); this adds them up."""

from __future__ import annotations

from dataclasses import dataclass

from tokprof.profiling import Profile


@dataclass(frozen=True)
class MissCost:
    """The dollars lost to cache misses, by miss code (None: not measurable, ``why``)."""

    total: float | None
    by_reason: dict[str, float]
    why: str | None = None


def miss_cost(profile: Profile) -> MissCost:
    """The dollars the profile's calls lost to cache misses, in all and by miss code."""
    cache = profile.summary().cache
    lost = cache.lost if cache is not None else None
    if lost is None:
        return MissCost(None, {}, "not recorded: the log reports no cache usage")
    if lost.cost is None:
        return MissCost(None, {}, lost.why)
    by_reason: dict[str, float] = {}
    for reason in lost.by_reason:
        if reason.cost:
            by_reason[reason.reason] = round(by_reason.get(reason.reason, 0.0) + reason.cost, 8)
    return MissCost(lost.cost, by_reason)
