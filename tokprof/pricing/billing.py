"""What a call cost, and what a prefix cache could have saved: the data a profile carries.

The figures are made by :mod:`tokprof.pricing.cost` (prices, from genai-prices' bundled data or the
user's rates) and :mod:`tokprof.analyses.prefix_cache` (the computed cache), and attached to a profile
the way the tool catalogue is; the profile carries them in its JSON (``calls[].cost``,
``calls[].cache``, ``summary.cost``, ``summary.cache``) and reads them back.

Amounts are US dollars, as floats rounded to :data:`DIGITS` places (a millionth of a cent), so that
the JSON holds numbers; a call's parts add up to its total up to that rounding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CURRENCY = "USD"
DIGITS = 8
#: The parts of a cost, in the order reports show them.
PARTS = ("input", "cache_write", "cache_read", "output")


#: A cost's note: cache writes the log does not split by lifetime, priced at the 5-minute rate.
WRITES_AT_5M = "cache writes are priced at the 5-minute rate: their lifetime is not known (1-hour writes cost more)"


def money(value: float | None) -> float | None:
    return None if value is None else round(value, DIGITS)


@dataclass(frozen=True)
class Rates:
    """Prices in US dollars per million tokens, as the user sets them (``--price``,
    ``[tool.tokprof.prices]``). A cache price left out is the input price: the user said nothing of a
    discount, so none is assumed; ``cache_write_1h`` left out is ``cache_write``."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    cache_write_1h: float | None = None

    def to_dict(self) -> dict:
        out = {"input": self.input, "output": self.output}
        for key in ("cache_read", "cache_write", "cache_write_1h"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Rates":
        return cls(**{k: d[k] for k in ("input", "output", "cache_read", "cache_write", "cache_write_1h") if k in d})


#: A stand-in model name: the user's rates for every model the log names.
EVERY_MODEL = "*"


class PriceError(ValueError):
    """Rates that cannot be read (``--price``, ``[tool.tokprof.prices]``)."""


RATE_KEYS = ("input", "output", "cache_read", "cache_write", "cache_write_1h")


def parse_price(spec: str) -> tuple[str, Rates]:
    """``--price [MODEL=]INPUT/OUTPUT[/CACHE_READ[/CACHE_WRITE[/CACHE_WRITE_1H]]]``, US dollars per
    million tokens; without MODEL the rates are for every model of the log."""
    model, sep, rates = spec.rpartition("=")
    if not sep:
        model = EVERY_MODEL
    model = model.strip() or EVERY_MODEL
    parts = [p.strip() for p in rates.split("/")]
    if not 2 <= len(parts) <= 5:
        raise PriceError(
            f"--price {spec!r}: expected [MODEL=]INPUT/OUTPUT[/CACHE_READ[/CACHE_WRITE[/CACHE_WRITE_1H]]] "
            "in dollars per million tokens, like gpt-oss=0.1/0.5"
        )
    values: dict[str, float] = {}
    for key, text in zip(RATE_KEYS, parts):
        try:
            value = float(text.lstrip("$"))
        except ValueError:
            raise PriceError(
                f"--price {spec!r}: {key}: {text!r} is not a number of dollars per million tokens"
            ) from None
        if not value >= 0 or value > 1e6:
            raise PriceError(f"--price {spec!r}: {key}: expected a price from 0 to 1,000,000, found {text!r}")
        values[key] = value
    return model, Rates(**values)


def parse_rates(value: Any, where: str) -> Rates:
    """A configuration's rates: ``{input = 0.2, output = 0.6, cache_read = 0.02, ...}``."""
    if not isinstance(value, dict):
        raise PriceError(f"{where}: expected a table like {{ input = 0.2, output = 0.6 }} (dollars per million tokens)")
    for key in value:
        if key not in RATE_KEYS:
            raise PriceError(f"{where}.{key}: unknown rate (expected one of {', '.join(RATE_KEYS)})")
    for key in ("input", "output"):
        if key not in value:
            raise PriceError(f"{where}.{key}: missing (dollars per million tokens)")
    rates: dict[str, float] = {}
    for key, number in value.items():
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not 0 <= number <= 1e6:
            raise PriceError(
                f"{where}.{key}: expected dollars per million tokens from 0 to 1,000,000, found {number!r}"
            )
        rates[key] = float(number)
    return Rates(**rates)


@dataclass(frozen=True, slots=True)  # one per call: no __dict__ each
class PricedTokens:
    """The tokens a cost is for: the prompt split into uncached input, cache writes by lifetime and
    cache reads, and the output (None when the log does not report it)."""

    input: int
    cache_write_5m: int
    cache_write_1h: int
    cache_read: int
    output: int | None

    @property
    def cache_write(self) -> int:
        return self.cache_write_5m + self.cache_write_1h

    def to_dict(self) -> dict:
        return {
            "input": self.input,
            "cache_write_5m": self.cache_write_5m,
            "cache_write_1h": self.cache_write_1h,
            "cache_read": self.cache_read,
            "output": self.output,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "PricedTokens":
        for key in ("input", "cache_write_5m", "cache_write_1h", "cache_read", "output"):
            if d.get(key) is not None and type(d[key]) is not int:
                raise ValueError(f"cost.tokens.{key}: expected a whole number")
        return cls(
            input=d["input"],
            cache_write_5m=d["cache_write_5m"],
            cache_write_1h=d["cache_write_1h"],
            cache_read=d["cache_read"],
            output=d.get("output"),
        )


@dataclass(frozen=True, slots=True)  # one per call: no __dict__ each
class CallCost:
    """One call's cost, or why it has none (``priced`` False, with ``reason``).

    ``basis`` is ``reported`` (the log's usage) or ``computed`` (a call without usage: its computed
    prompt, no cache, and no output). ``source`` is ``genai-prices`` or where the user's rates came
    from (``--price``, the configuration). ``buckets`` spreads the prompt's cost (input, cache writes
    and reads) over the buckets: cache reads on the buckets of the prompt's first tokens.
    ``notes`` label what the figures rest on beyond the log (an under-reported output, no date)."""

    priced: bool
    basis: str
    source: str
    source_version: str | None = None
    model: str | None = None  # the priced model (genai-prices' id), or the log's name for the user's rates
    provider: str | None = None
    date: str | None = None  # the day whose rates apply (ISO), or None: today's
    reason: str | None = None  # why a call is unpriced
    tokens: PricedTokens | None = None
    input: float | None = None
    cache_write: float | None = None
    cache_read: float | None = None
    output: float | None = None
    other: float | None = None  # what the price has beyond tokens (a fee per request), in the total
    total: float | None = None
    buckets: dict[str, float] | None = None
    notes: tuple[str, ...] = ()
    #: What the prompt would have cost with every token at the input price (no cache), plus the output.
    without_cache: float | None = None

    def to_dict(self) -> dict:
        out: dict = {
            "priced": self.priced,
            "currency": CURRENCY,
            "basis": self.basis,
            "source": self.source,
            "source_version": self.source_version,
            "model": self.model,
            "provider": self.provider,
            "date": self.date,
        }
        if not self.priced:
            out["reason"] = self.reason
        out.update({part: money(getattr(self, part)) for part in PARTS})
        if self.other:
            out["other"] = money(self.other)
        out["total"] = money(self.total)
        out["without_cache"] = money(self.without_cache)
        out["tokens"] = self.tokens.to_dict() if self.tokens else None
        out["buckets"] = None if self.buckets is None else {k: money(v) for k, v in self.buckets.items()}
        out["notes"] = list(self.notes)
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "CallCost":
        for key in ("input", "cache_write", "cache_read", "output", "other", "total", "without_cache"):
            value = d.get(key)
            if value is not None and (type(value) not in (int, float) or value != value):
                raise ValueError(f"cost.{key}: expected a number or null")
        for key in ("basis", "source", "source_version", "model", "provider", "date", "reason"):
            if d.get(key) is not None and type(d[key]) is not str:
                raise ValueError(f"cost.{key}: expected a string or null")
        if type(d.get("priced")) is not bool:
            raise ValueError("cost.priced: expected true or false")
        buckets = d.get("buckets")
        if buckets is not None and (
            type(buckets) is not dict or any(type(v) not in (int, float) for v in buckets.values())
        ):
            raise ValueError("cost.buckets: expected an object of numbers")
        return cls(
            priced=d["priced"],
            basis=d["basis"],
            source=d["source"],
            source_version=d.get("source_version"),
            model=d.get("model"),
            provider=d.get("provider"),
            date=d.get("date"),
            reason=d.get("reason"),
            tokens=PricedTokens.from_dict(d["tokens"]) if d.get("tokens") else None,
            input=d.get("input"),
            cache_write=d.get("cache_write"),
            cache_read=d.get("cache_read"),
            output=d.get("output"),
            other=d.get("other"),
            total=d.get("total"),
            buckets=dict(d["buckets"]) if d.get("buckets") is not None else None,
            notes=tuple(d.get("notes") or ()),
            without_cache=d.get("without_cache"),
        )


@dataclass(frozen=True)
class Unpriced:
    """Calls of one model that have no price, and why."""

    model: str | None
    reason: str
    calls: int

    def to_dict(self) -> dict:
        return {"model": self.model, "reason": self.reason, "calls": self.calls}


@dataclass(frozen=True)
class CostSummary:
    """The run's cost: the priced calls' costs added up. ``priced`` is False when some call has no
    price (``unpriced`` says which and why): the sums are then of the priced calls only, and are
    None when no call is priced."""

    priced: bool
    calls_priced: int
    calls_unpriced: int
    basis: str  # reported, computed, or mixed
    sources: tuple[str, ...]
    source_version: str | None
    input: float | None
    cache_write: float | None
    cache_read: float | None
    output: float | None
    other: float | None
    total: float | None
    largest_call: float | None
    largest_call_index: int | None
    buckets: dict[str, float] | None
    unpriced: tuple[Unpriced, ...] = ()
    notes: tuple[str, ...] = ()
    #: What the prompts would have cost at the input price, with no cache at all (None: not priced).
    without_cache: float | None = None

    def to_dict(self) -> dict:
        out: dict = {
            "priced": self.priced,
            "currency": CURRENCY,
            "calls_priced": self.calls_priced,
            "calls_unpriced": self.calls_unpriced,
            "basis": self.basis,
            "sources": list(self.sources),
            "source_version": self.source_version,
        }
        out.update({part: money(getattr(self, part)) for part in PARTS})
        if self.other:
            out["other"] = money(self.other)
        out["total"] = money(self.total)
        out["without_cache"] = money(self.without_cache)
        out["largest_call"] = money(self.largest_call)
        out["largest_call_index"] = self.largest_call_index
        out["buckets"] = None if self.buckets is None else {k: money(v) for k, v in self.buckets.items()}
        out["unpriced"] = [u.to_dict() for u in self.unpriced]
        out["notes"] = list(self.notes)
        return out


def summarise(costs: list[tuple[int, CallCost | None]]) -> CostSummary | None:
    """The run's cost from its calls' (``(index, cost)``; None when a profile has no cost)."""
    given = [(i, c) for i, c in costs if c is not None]
    if not given:
        return None
    priced = [(i, c) for i, c in given if c.priced]
    unpriced: dict[tuple[str | None, str], int] = {}
    for _, c in given:
        if not c.priced:
            key = (c.model, c.reason or "no price")
            unpriced[key] = unpriced.get(key, 0) + 1

    def total(part: str) -> float | None:
        return sum(getattr(c, part) or 0.0 for _, c in priced) if priced else None

    buckets: dict[str, float] | None = None
    if priced and all(c.buckets is not None for _, c in priced):
        buckets = {}
        for _, c in priced:
            for name, value in (c.buckets or {}).items():
                buckets[name] = buckets.get(name, 0.0) + value
    largest = max(priced, key=lambda item: item[1].total or 0.0) if priced else None
    bases = {c.basis for _, c in priced}
    notes: list[str] = []
    for _, c in priced:
        notes += [n for n in c.notes if n not in notes]
    sources = tuple(dict.fromkeys(c.source for _, c in priced))
    without = None
    if priced and all(c.without_cache is not None for _, c in priced):
        without = sum(c.without_cache or 0.0 for _, c in priced)
    return CostSummary(
        priced=not unpriced,
        calls_priced=len(priced),
        calls_unpriced=len(given) - len(priced),
        basis=bases.pop() if len(bases) == 1 else ("mixed" if bases else "reported"),
        sources=sources,
        source_version=next((c.source_version for _, c in priced if c.source_version), None),
        input=total("input"),
        cache_write=total("cache_write"),
        cache_read=total("cache_read"),
        output=total("output"),
        other=total("other") or None,
        total=total("total"),
        largest_call=largest[1].total if largest else None,
        largest_call_index=largest[0] if largest else None,
        buckets=buckets,
        unpriced=tuple(Unpriced(model, reason, n) for (model, reason), n in unpriced.items()),
        notes=tuple(notes),
        without_cache=without,
    )


# -- the computed cache ----------------------------------------------------------------------------
#: Why a call read less from the cache than a prefix cache could have given it.
MISS_CODES = (
    "first-call",
    "idle-gap",
    "model-switch",
    "prefix-changed",
    "below-minimum",
    "no-breakpoint",
    "below-prediction",
)
#: Which part of the prompt a ``prefix-changed`` call changed (``CallCache.part``).
CHANGED_PARTS = ("system", "tools", "message", "reasoning", "rewrite", "compaction")


@dataclass(frozen=True, slots=True)  # one per call: no __dict__ each
class CallCache:
    """What a prefix cache could have reused for one call.

    ``shared`` is the tokens its prompt shares with the previous call of its thread (their longest
    common prefix, in the provider's tokens: scaled to the reported prompt when there is one; ``shared_basis`` ``tokens`` when it comes from the rendered token sequences,
    ``messages`` when it is estimated from which messages the two prompts share). ``predicted`` is the
    cache read the provider's rules give (``rules``: ``anthropic``, ``openai``; None without rules),
    ``reported`` the log's. ``miss`` is a code of :data:`MISS_CODES` when the call could not reuse
    the previous prompt, with ``detail`` saying why (``changed_at``: the first message that differs;
    ``gap``: the seconds since the previous call, when the log has times)."""

    shared: int | None
    shared_basis: str
    predicted: int | None
    reported: int | None
    rules: str | None
    miss: str | None = None
    detail: str | None = None
    changed_at: int | None = None
    gap: float | None = None
    part: str | None = None  # prefix-changed: which part changed (CHANGED_PARTS)
    lost: int | None = None  # tokens a kept cache would have read, that the call paid more for (None: not measured)
    lost_cost: float | None = None  # what they cost over the read price, US dollars (None: not measured)

    def to_dict(self) -> dict:
        return {
            "shared": self.shared,
            "shared_basis": self.shared_basis,
            "predicted_read": self.predicted,
            "reported_read": self.reported,
            "rules": self.rules,
            "miss": self.miss,
            "detail": self.detail,
            "changed_at": self.changed_at,
            "gap_seconds": self.gap,
            "part": self.part,
            "lost_tokens": self.lost,
            "lost_cost": self.lost_cost,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "CallCache":
        return cls(
            shared=d.get("shared"),
            shared_basis=d.get("shared_basis", "messages"),
            predicted=d.get("predicted_read"),
            reported=d.get("reported_read"),
            rules=d.get("rules"),
            miss=d.get("miss"),
            detail=d.get("detail"),
            changed_at=d.get("changed_at"),
            gap=d.get("gap_seconds"),
            part=d.get("part"),
            lost=d.get("lost_tokens"),
            lost_cost=d.get("lost_cost"),
        )


@dataclass(frozen=True)
class ReasonLoss:
    """The cache misses of one reason (a miss code, and for ``prefix-changed`` the part that changed):
    how many calls, the tokens a kept cache would have read, and what they cost over the read price."""

    reason: str
    part: str | None
    calls: int
    tokens: int
    cost: float

    @property
    def label(self) -> str:
        return self.reason + (f" ({self.part})" if self.part else "")

    def to_dict(self) -> dict:
        return {
            "reason": self.reason,
            "part": self.part,
            "calls": self.calls,
            "tokens": self.tokens,
            "cost": money(self.cost),
        }


@dataclass(frozen=True)
class CacheBreak:
    """A call that broke the cache: what it lost, why, and what changed (``detail``)."""

    call: int
    thread: str | None
    reason: str
    part: str | None
    detail: str | None
    tokens: int
    cost: float

    def to_dict(self) -> dict:
        return {
            "call": self.call,
            "thread": self.thread,
            "reason": self.reason,
            "part": self.part,
            "detail": self.detail,
            "tokens": self.tokens,
            "cost": money(self.cost),
        }


#: How many cache breaks a summary lists (the costliest; every call's ``cache`` has its own).
BREAKS_SHOWN = 10
#: Misses no rule explains: the provider read less than its rules give (an entry evicted early,
#: breakpoints elsewhere than assumed, another server). What they cost is told apart (``unexplained``),
#: never as a loss that keeping the cache would have saved: the log cannot say which it was.
UNEXPLAINED = ("below-prediction",)
UNEXPLAINED_WHY = (
    "the provider read less than its rules give for the cache breakpoints assumed; why is not known: "
    "an entry evicted early, breakpoints elsewhere (the log does not record them), or another server"
)


@dataclass(frozen=True)
class Unexplained:
    """The calls that read less than the provider's rules give, for reasons no log records: how many,
    the tokens the rules gave that they did not read, and what those cost over the read price (None:
    not priced)."""

    calls: int
    tokens: int
    cost: float | None
    why: str = UNEXPLAINED_WHY

    def to_dict(self) -> dict:
        return {"calls": self.calls, "tokens": self.tokens, "cost": money(self.cost), "why": self.why}


@dataclass(frozen=True)
class CacheLoss:
    """What the run's cache misses cost: in all (None: not measurable, ``why``), by reason (costliest
    first), and the costliest breaks; the misses no rule explains apart (``unexplained``)."""

    cost: float | None
    tokens: int | None
    by_reason: tuple[ReasonLoss, ...] = ()
    breaks: tuple[CacheBreak, ...] = ()
    calls: int = 0  # the calls that lost anything
    why: str | None = None
    unexplained: Unexplained | None = None

    def to_dict(self) -> dict:
        return {
            "cost": money(self.cost),
            "tokens": self.tokens,
            "calls": self.calls,
            "why": self.why,
            "by_reason": [r.to_dict() for r in self.by_reason],
            "breaks": [b.to_dict() for b in self.breaks],
            "unexplained": self.unexplained.to_dict() if self.unexplained is not None else None,
        }


def cache_loss(rows: list[tuple[int, str | None, "CallCache"]]) -> CacheLoss:
    """The run's :class:`CacheLoss` of its calls' caches (``(index, thread, cache)``, in log order)."""
    if not any(cache.reported is not None for _, _, cache in rows):
        return CacheLoss(None, None, why="not recorded: the log reports no cache usage")
    apart = [cache for _, _, cache in rows if cache.miss in UNEXPLAINED and cache.lost]
    unexplained = (
        Unexplained(
            len(apart),
            sum(c.lost or 0 for c in apart),
            None if any(c.lost_cost is None for c in apart) else round(sum(c.lost_cost or 0.0 for c in apart), DIGITS),
        )
        if apart
        else None
    )
    rows = [row for row in rows if row[2].miss not in UNEXPLAINED]
    unmeasured = next(
        ((index, cache) for index, _, cache in rows if cache.lost is None or cache.lost_cost is None), None
    )
    if unmeasured is not None:
        index, cache = unmeasured
        why = (
            f"not measurable: call {index}'s cache miss ({cache.miss}) cannot be priced"
            if cache.miss
            else "not measured: a profile made without cache forensics"
        )
        return CacheLoss(None, None, why=why, unexplained=unexplained)
    groups: dict[tuple[str, str | None], list[CallCache]] = {}
    breaks: list[CacheBreak] = []
    for index, thread, cache in rows:
        if not cache.lost or not cache.miss:
            continue
        groups.setdefault((cache.miss, cache.part), []).append(cache)
        breaks.append(
            CacheBreak(index, thread, cache.miss, cache.part, cache.detail, cache.lost, cache.lost_cost or 0.0)
        )
    by_reason = [
        ReasonLoss(
            reason,
            part,
            len(group),
            sum(c.lost or 0 for c in group),
            round(sum(c.lost_cost or 0.0 for c in group), DIGITS),
        )
        for (reason, part), group in groups.items()
    ]
    by_reason.sort(key=lambda r: (-r.cost, -r.tokens, r.label))
    breaks.sort(key=lambda b: (-b.cost, -b.tokens, b.call))
    return CacheLoss(
        cost=round(sum(r.cost for r in by_reason), DIGITS),
        tokens=sum(r.tokens for r in by_reason),
        by_reason=tuple(by_reason),
        breaks=tuple(breaks[:BREAKS_SHOWN]),
        calls=len(breaks),
        unexplained=unexplained,
    )


@dataclass(frozen=True)
class CacheSummary:
    """The run's cache: reported and predicted reads, the shares of the billed input they are, and
    the misses by code. ``notes`` say what the prediction assumes (breakpoints, lifetimes)."""

    rules: tuple[str, ...]
    prompt: int
    shared: int
    predicted: int | None
    reported: int | None
    hit_rate_reported: float | None
    hit_rate_predicted: float | None
    misses: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    lost: CacheLoss | None = None  # what the misses cost (tokprof.analyses.cache_forensics)

    def to_dict(self) -> dict:
        return {
            "rules": list(self.rules),
            "prompt": self.prompt,
            "shared": self.shared,
            "predicted_read": self.predicted,
            "reported_read": self.reported,
            "hit_rate_reported": self.hit_rate_reported,
            "hit_rate_predicted": self.hit_rate_predicted,
            "misses": dict(self.misses),
            "notes": list(self.notes),
            **({"lost": self.lost.to_dict()} if self.lost is not None else {}),
        }
