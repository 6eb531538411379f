"""What each call of a log spent, from its reported usage alone (no token counted): billed input by
kind, output, price, and an estimate of what its cache misses cost, in whole units of :data:`UNIT`
dollars so that rows add up to the total exactly. ``tokprof sessions`` adds these up per session and
period (:mod:`tokprof.analyses.periods`); docs/output.md says what each figure means."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, datetime
from decimal import Decimal

from tokprof.trace import Call, Trace, Usage

#: Money is counted in integer units of this many dollars (1e-8: the rounding of every cost tokprof prints).
UNIT = Decimal("0.00000001")


def units(value: Decimal) -> int:
    """Dollars as whole :data:`UNIT` units (rounded half to even, once)."""
    return int((value / UNIT).to_integral_value())


def dollars_of(count: int) -> Decimal:
    """Whole :data:`UNIT` units as dollars, exactly."""
    return Decimal(count) * UNIT


@dataclass(frozen=True, slots=True)
class CallSpend:
    """One call's reported usage and price. None: the log does not report it (never 0)."""

    time: datetime | None
    model: str | None
    uncached: int | None
    cache_read: int | None
    cache_write: int | None
    output: int | None
    cost: int | None  # UNIT dollars; None: no usage reported, or no price for the model
    lost: int | None  # UNIT dollars the call's cache miss cost (an estimate); None: not measured
    project: str | None = None  # the working directory the log records for the call

    @property
    def reported(self) -> bool:
        return self.uncached is not None

    @property
    def prompt(self) -> int | None:
        if self.uncached is None:
            return None
        return self.uncached + (self.cache_read or 0) + (self.cache_write or 0)


def _price(model: str, usage: Usage, day: date | None) -> Decimal | None:
    from tokprof.pricing.cost import genai_price, priced_tokens

    try:
        tokens, prompt, _ = priced_tokens(usage, 0)
        return Decimal(genai_price(model, tokens, prompt, day)[2]["total"])
    except Exception:  # genai-prices has no price for the model (or not for this usage): not priced, never 0
        return None


def _lost_tokens(usage: Usage, before: Usage | None, kind: str) -> int:
    """The tokens a kept cache would have served the call (module doc): 0 when nothing was lost."""
    if before is None or kind == "compaction" or not usage.prompt:
        return 0
    if before.prompt and usage.prompt < before.prompt:
        return 0  # the conversation was cut short (a compaction, a rewrite): what was kept is not known
    kept = (before.cache_read or 0) + (before.cache_write or 0)
    read = usage.cache_read or 0
    if kept <= read:
        return 0
    return max(0, min(kept, usage.prompt) - read)


def _read_instead(usage: Usage, lost: int) -> Usage:
    """The usage the call would have reported had ``lost`` tokens been read: taken from its cache
    writes first, then from its uncached input."""
    write = usage.cache_write or 0
    from_write = min(write, lost)
    long = usage.cache_write_1h
    return replace(
        usage,
        cache_read=(usage.cache_read or 0) + lost,
        cache_write=write - from_write,
        cache_write_5m=None if usage.cache_write_5m is None else max(0, usage.cache_write_5m - from_write),
        cache_write_1h=None if long is None else min(long, write - from_write),
    )


def call_spends(trace: Trace) -> list[CallSpend]:
    """Each call's :class:`CallSpend`, in log order."""
    out = []
    before: dict[str, Usage] = {}  # the previous reported usage of each thread
    for call in trace.calls:
        out.append(_spend(call, trace.model, before.get(call.thread)))
        if call.reported is not None and call.reported.prompt:
            before[call.thread] = call.reported
    return out


def _spend(call: Call, default_model: str | None, before: Usage | None) -> CallSpend:
    usage = call.reported
    model = call.model or default_model
    if usage is None or not usage.prompt:
        return CallSpend(call.time, model, None, None, None, usage.output if usage else None, None, None, call.cwd)
    price = _price(model, usage, call.day) if model else None
    lost: int | None = None
    uses_cache = usage.cache_read is not None or usage.cache_write is not None
    if price is not None and uses_cache:
        tokens = _lost_tokens(usage, before, call.kind)
        if tokens:
            kept = _price(model or "", _read_instead(usage, tokens), call.day)
            lost = None if kept is None else max(0, units(price) - units(kept))
        else:
            lost = 0
    return CallSpend(
        time=call.time,
        model=model,
        uncached=usage.uncached,
        cache_read=usage.cache_read,
        cache_write=usage.cache_write,
        output=usage.output,
        cost=None if price is None else units(price),
        lost=lost,
        project=call.cwd,
    )
