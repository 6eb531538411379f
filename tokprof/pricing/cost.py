"""What each call cost, at the provider's rates (genai-prices' bundled data, offline) or the user's
(``--price``, which take precedence): the split into input, cache writes, cache reads and output, and
the prompt's cost spread over the buckets in prompt order. A model with neither is unpriced, with the
reason, never $0. The rules are docs/output.md's (the ``cost`` fields) and docs/cache.md's."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import date, datetime, time, timezone
from decimal import Decimal
from typing import Any, Callable, Mapping

__all__ = ["EVERY_MODEL", "PriceError", "UserPrice", "attach_cost", "cost_calls", "parse_price", "parse_rates"]

from tokprof.base.text import visible
from tokprof.pricing.billing import (
    DIGITS,
    EVERY_MODEL,
    money,
    WRITES_AT_5M,
    CallCost,
    PricedTokens,
    PriceError,
    Rates,
    parse_price,
    parse_rates,
)
from tokprof.attribution.estimates import UNRECORDED
from tokprof.profiling import CallRow, Profile
from tokprof.trace import Trace, Usage

GENAI_PRICES = "genai-prices"
#: The buckets that come first in a prompt (the fixed part), in order; the messages' buckets follow.
FIXED_FIRST = (UNRECORDED, "system", "tool_definitions")

NO_USAGE = "the log reports no usage: priced on the computed prompt, with no cache, and the output not priced"
PREDICTED = (
    "a call a policy changed: billed as its provider would bill its computed prompt (the log's cache read "
    "less the prefix the policy rewrote, the rest written at the log's cache tier; docs/whatif.md), and the "
    "log's output"
)
NO_DATE = "the log gives no date: priced at today's rates"
NOT_RECORDED = "the log records neither the call's prompt nor its usage (redacted): not priced"
#: A call of an agent's session whose usage is not recorded while its other calls' is (a Gemini CLI
#: message whose tokens are all zero): not priced, by the rule ``tokprof sessions`` prices it by (#48.2).
USAGE_NOT_RECORDED = "usage not recorded: the session records it for its other calls"
OUTPUT_PLACEHOLDER = "output is under-reported (the log's output counts are streaming-start placeholders)"
PROMPT_ORDER = (
    "bucket costs take the cache reads as the prompt's first tokens, in the buckets of the previous "
    "prompt of the thread and, for the fixed part, system and tool definitions first (an estimate)"
)

#: ``prefix(position, n)``: the buckets of the first ``n`` tokens of the call at that position of the
#: profile, in the units of its buckets, or None when it cannot tell (then prompt order is used).
PrefixBuckets = Callable[[int, int], "dict[str, int] | None"]


@dataclass(frozen=True)
class UserPrice:
    """Rates the user set, and where (``--price``, a configuration file)."""

    rates: Rates
    source: str


# -- genai-prices --------------------------------------------------------------------------------
def genai_version() -> str | None:
    from tokprof.pricing.table import genai_version as version

    return version()


def find_model(name: str) -> tuple[Any, Any]:
    """genai-prices' provider and model for a log's model name (their ``id``; from the table of the
    models logs name, :mod:`tokprof.pricing.table`); raises LookupError when it has none."""
    from tokprof.pricing.table import entry

    found = entry(name)
    if found is None:
        raise LookupError(f"genai-prices has no model for {name!r}")
    return found.provider, found.model


def genai_usage(tokens: PricedTokens, prompt: int) -> dict[str, int]:
    """genai-prices' usage keys for a call: ``input_tokens`` is the whole prompt, as genai-prices counts it."""
    values: dict[str, int] = {
        "input_tokens": prompt,
        "cache_read_tokens": tokens.cache_read,
        "cache_write_tokens": tokens.cache_write,
        "output_tokens": tokens.output or 0,
    }
    if tokens.cache_write_1h:
        values["cache_write_1h_tokens"] = tokens.cache_write_1h
    return values


def _moment(day: date | None) -> datetime:
    return datetime.combine(day, time(0), tzinfo=timezone.utc) if day else datetime.now(tz=timezone.utc)


def genai_parts(model: Any, usage: Any, moment: datetime) -> dict[str, Decimal]:
    """The price of ``usage`` (genai-prices' ``Usage``) split into input, cache_write, cache_read,
    output and other, applying the model's price on ``moment`` unit by unit as genai-prices does."""
    from tokprof.pricing.table import genai_split

    return genai_split(model, usage, moment)


def genai_price(name: str, tokens: PricedTokens, prompt: int, day: date | None) -> tuple[Any, Any, dict[str, Decimal]]:
    """genai-prices' provider, model and the price split of one call (``total`` is ``calc_price``'s):
    from the table of the models logs name where it can say, else from genai-prices itself."""
    from tokprof.pricing import table as price_table

    provider, model = find_model(name)
    usage = genai_usage(tokens, prompt)
    found = price_table.entry(name)
    parts = price_table.price_parts(found, usage, day) if found is not None else None
    if parts is None:
        from tokprof.pricing.genai import find

        parts = price_table.genai_parts(*find(name), usage, day)
    total = parts.pop("total")
    parts["other"] += total - sum(parts.values())  # nothing, unless genai-prices prices something more
    parts["total"] = total
    return provider, model, parts


def writes_1h_apart(name: str, day: date | None) -> bool:
    """Whether genai-prices prices the model's 1-hour cache writes apart from the 5-minute ones on ``day``."""
    from tokprof.pricing import table as price_table

    found = price_table.entry(name)
    flag = price_table.writes_1h(found, day) if found is not None else None
    if flag is None:
        from tokprof.pricing.genai import find

        flag = getattr(find(name)[1].get_prices(_moment(day)), "cache_write_1h_mtok", None) is not None
    return flag


# -- the tokens of a call ------------------------------------------------------------------------
def priced_tokens(usage: Usage | None, computed: int) -> tuple[PricedTokens, int, str]:
    """A call's tokens to price, its whole prompt, and the basis: the reported usage, or (without a
    reported prompt) the computed prompt with no cache and no output."""
    if usage is None or not usage.prompt:
        return (
            PricedTokens(input=computed, cache_write_5m=0, cache_write_1h=0, cache_read=0, output=None),
            computed,
            "computed",
        )
    read = usage.cache_read or 0
    write = usage.cache_write or 0
    long = min(usage.cache_write_1h or 0, write)
    short = write - long
    uncached = max(usage.prompt - read - write, 0)
    return (
        PricedTokens(input=uncached, cache_write_5m=short, cache_write_1h=long, cache_read=read, output=usage.output),
        usage.prompt,
        "reported",
    )


def user_cost(rates: Rates, tokens: PricedTokens) -> dict[str, float]:
    """The price split of a call at the user's rates (per million tokens)."""
    read = rates.input if rates.cache_read is None else rates.cache_read
    write = rates.input if rates.cache_write is None else rates.cache_write
    write_1h = write if rates.cache_write_1h is None else rates.cache_write_1h
    parts = {
        "input": tokens.input * rates.input / 1e6,
        "cache_write": (tokens.cache_write_5m * write + tokens.cache_write_1h * write_1h) / 1e6,
        "cache_read": tokens.cache_read * read / 1e6,
        "output": (tokens.output or 0) * rates.output / 1e6,
        "other": 0.0,
    }
    parts["total"] = sum(parts.values())
    return parts


def _long_rate_differs(rates: Rates) -> bool:
    """Whether the user's rates price a 1-hour cache write above a 5-minute one (the note says they cost more)."""
    write = rates.input if rates.cache_write is None else rates.cache_write
    return rates.cache_write_1h is not None and rates.cache_write_1h > write


def _user_price(prices: Mapping[str, UserPrice], name: str | None) -> UserPrice | None:
    if name:
        lowered = {k.lower(): v for k, v in prices.items()}
        if name.lower() in lowered:
            return lowered[name.lower()]
    return prices.get(EVERY_MODEL)


# -- buckets ---------------------------------------------------------------------------------------
def prefix_buckets(rows: list[CallRow], position: int, n: int, previous: list[int | None]) -> dict[str, float]:
    """The buckets of the first ``n`` tokens of ``rows[position]``, in prompt order: a call that
    continues the previous one of its thread (``previous[position]``) starts with that call's
    prompt, so its first tokens are that call's; a thread's first call (or one that rewrites it)
    starts with its fixed part (:data:`FIXED_FIRST`), then its messages' buckets in proportion."""
    while True:
        row = rows[position]
        n = min(n, row.total)
        before = previous[position]
        if before is not None and n <= rows[before].total:
            position = before
            continue
        break
    row = rows[position]
    out: dict[str, float] = {name: 0.0 for name in row.buckets}
    if before is not None:
        prev = rows[before]
        for name, tokens in prev.buckets.items():
            out[name] = out.get(name, 0.0) + tokens
        growth = {name: max(row.buckets.get(name, 0) - prev.buckets.get(name, 0), 0) for name in row.buckets}
        _spread(out, growth, n - prev.total)
        return out
    left = float(n)
    for name in FIXED_FIRST:
        take = min(float(row.buckets.get(name, 0)), left)
        if take:
            out[name] = out.get(name, 0.0) + take
            left -= take
    rest = {name: tokens for name, tokens in row.buckets.items() if name not in FIXED_FIRST}
    _spread(out, rest, left)
    return out


def _spread(out: dict[str, float], weights: Mapping[str, int], amount: float) -> None:
    total = sum(weights.values())
    if amount <= 0 or total <= 0:
        return
    for name, weight in weights.items():
        out[name] = out.get(name, 0.0) + amount * weight / total


def bucket_costs(
    row: CallRow,
    prompt: int,
    tokens: PricedTokens,
    parts: Mapping[str, float],
    prefix: Callable[[int], dict[str, float]],
) -> dict[str, float]:
    """The prompt's cost (input, cache writes, cache reads) per bucket: the cache reads are the
    prompt's first tokens, the cache writes the next, the uncached input the rest. ``prefix(n)``
    gives the buckets of the first ``n`` tokens, in the row's units (scaled from the reported ones)."""
    scale = row.total / prompt if prompt else 1.0
    read_end = tokens.cache_read * scale
    write_end = (tokens.cache_read + tokens.cache_write) * scale
    first = prefix(round(read_end))
    upto = prefix(round(write_end))
    whole = {name: float(v) for name, v in row.buckets.items()}
    stretches = (
        (first, parts["cache_read"]),
        (_minus(upto, first), parts["cache_write"]),
        (_minus(whole, upto), parts["input"]),
    )
    out = {name: 0.0 for name in row.buckets}
    for stretch, amount in stretches:
        # a stretch too short to show in the row's units (counts far from the reported ones) takes the whole's shares
        weights = stretch if sum(stretch.values()) > 0 else whole
        for name in row.buckets:
            out[name] += _share(weights.get(name, 0.0), weights) * amount
    return out


def _minus(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    return {k: max(a.get(k, 0.0) - b.get(k, 0.0), 0.0) for k in a}


def _share(part: float, of: Mapping[str, float]) -> float:
    total = sum(of.values())
    return part / total if total > 0 else 0.0


# -- the profile -------------------------------------------------------------------------------------
def thread_previous(profile: Profile) -> list[int | None]:
    """For each call, the position of the previous call of its thread when it continues it (its
    ``added_messages`` are known), else None."""
    last: dict[str | None, int] = {}
    out: list[int | None] = []
    for position, row in enumerate(profile.calls):
        before = last.get(row.thread)
        out.append(before if before is not None and row.added is not None else None)
        last[row.thread] = position
    return out


def usage_not_recorded(trace: Trace) -> set[int]:
    """The positions of the calls of an agent's session (a format ``tokprof sessions`` lists) that
    report no usage while others of the session do: one rule for ``profile`` and ``sessions`` (#48.2),
    their cost is not recorded, so it is not priced (not estimated in one and left out of the other)."""
    from tokprof.formats.registry import session_names

    if trace.format.split("/")[0] not in session_names():
        return set()
    missing = {k for k, call in enumerate(trace.calls) if not (call.reported and call.reported.prompt)}
    return missing if len(missing) < len(trace.calls) else set()


def cost_calls(
    profile: Profile,
    trace: Trace,
    prices: Mapping[str, UserPrice] | None = None,
    prefix: PrefixBuckets | None = None,
    predicted: Mapping[int, Usage] | None = None,
) -> list[CallCost]:
    """Every call's cost (the profile's rows and the trace's calls, position by position).
    ``predicted``: for calls without reported usage, by position, the usage to price instead (a
    what-if's changed calls: their prompt with the cache a prefix cache would read, and the log's
    output), priced with basis "predicted"."""
    prices = prices or {}
    version = genai_version()
    previous = thread_previous(profile)
    placeholder = _placeholder_calls(profile, trace)
    unrecorded = usage_not_recorded(trace)
    out: list[CallCost] = []
    for position, (row, call) in enumerate(zip(profile.calls, trace.calls)):
        name = call.model or trace.model
        stand_in = None if predicted is None or (call.reported and call.reported.prompt) else predicted.get(position)
        tokens, prompt, basis = priced_tokens(stand_in or call.reported, row.total)
        if stand_in is None and basis == "computed" and position in unrecorded:
            out.append(
                CallCost(
                    priced=False,
                    basis=basis,
                    source=GENAI_PRICES,
                    source_version=version,
                    model=name,
                    date=call.day.isoformat() if call.day else None,
                    tokens=tokens,
                    reason=USAGE_NOT_RECORDED,
                )
            )
            continue
        notes: list[str] = []
        if stand_in is not None:
            basis = "predicted"
            notes.append(PREDICTED)
        elif basis == "computed":
            notes.append(NO_USAGE)
        elif position in placeholder:
            notes.append(OUTPUT_PLACEHOLDER)
        day = call.day
        user = _user_price(prices, name)
        model_id, provider_id = name, None
        source, source_version = GENAI_PRICES, version
        if user is not None:
            parts = user_cost(user.rates, tokens)
            source, source_version = user.source, None
            usage = call.reported
            if (
                tokens.cache_write
                and usage is not None
                and usage.cache_write_1h is None
                and _long_rate_differs(user.rates)
            ):
                notes.append(WRITES_AT_5M)
        elif not row.recorded:
            out.append(
                CallCost(
                    priced=False,
                    basis=basis,
                    source=GENAI_PRICES,
                    source_version=version,
                    model=name,
                    reason=NOT_RECORDED,
                )
            )
            continue
        elif not name:
            out.append(
                CallCost(
                    priced=False,
                    basis=basis,
                    source=GENAI_PRICES,
                    source_version=version,
                    tokens=tokens,
                    reason="the log names no model (set rates with --price)",
                    notes=tuple(notes),
                )
            )
            continue
        else:
            try:
                provider, model, exact = genai_price(name, tokens, prompt, day)
            except (LookupError, ValueError) as exc:
                why = f"genai-prices {version or ''} has no price for '{visible(name)}'".replace("  ", " ")
                if isinstance(exc, ValueError) and not isinstance(exc, LookupError):
                    why = f"genai-prices cannot price this usage of {name!r}: {exc}"
                out.append(
                    CallCost(
                        priced=False,
                        basis=basis,
                        source=GENAI_PRICES,
                        source_version=version,
                        model=name,
                        date=day.isoformat() if day else None,
                        tokens=tokens,
                        reason=why + " (set rates with --price)",
                        notes=tuple(notes),
                    )
                )
                continue
            parts = {k: float(v) for k, v in exact.items()}
            model_id, provider_id = model.id, provider.id
            usage = call.reported
            if tokens.cache_write and usage is not None and usage.cache_write_1h is None and writes_1h_apart(name, day):
                notes.append(WRITES_AT_5M)
            if day is None:
                notes.append(NO_DATE)

        def first(n: int, position: int = position) -> dict[str, float]:
            if prefix is not None:
                found = prefix(position, n)
                if found is not None:
                    return {k: float(v) for k, v in found.items()}
            return prefix_buckets(profile.calls, position, n, previous)

        if prefix is None:
            notes.append(PROMPT_ORDER)
        buckets = bucket_costs(row, prompt, tokens, parts, first)
        without = _without_cache(parts, tokens, prompt, user.rates if user else None, name, day)
        parts = {k: round(v, DIGITS) for k, v in parts.items()}  # as the JSON keeps them: a saved profile sums the same
        out.append(
            CallCost(
                priced=True,
                basis=basis,
                source=source,
                source_version=source_version,
                model=model_id,
                provider=provider_id,
                date=day.isoformat() if day else None,
                tokens=tokens,
                input=parts["input"],
                cache_write=parts["cache_write"],
                cache_read=parts["cache_read"],
                output=None if tokens.output is None else parts["output"],
                other=parts["other"] or None,
                total=parts["total"],
                buckets={k: round(v, DIGITS) for k, v in buckets.items()},
                notes=tuple(notes),
                without_cache=money(without),
            )
        )
    return out


def _without_cache(
    parts: Mapping[str, float],
    tokens: PricedTokens,
    prompt: int,
    rates: Rates | None,
    name: str | None,
    day: date | None,
) -> float | None:
    """What the call would have cost with no cache: every prompt token at the input price."""
    plain = PricedTokens(input=prompt, cache_write_5m=0, cache_write_1h=0, cache_read=0, output=tokens.output)
    if rates is not None:
        return user_cost(rates, plain)["total"]
    if not tokens.cache_read and not tokens.cache_write:
        return parts["total"]
    try:
        return float(genai_price(name or "", plain, prompt, day)[2]["total"])
    except (LookupError, ValueError):
        return None


def _placeholder_calls(profile: Profile, trace: Trace) -> set[int]:
    """The positions of calls whose output count is a streaming-start placeholder (Claude Code)."""
    note = next((w for w in profile.warnings if w.code == "usage-at-stream-start"), None)
    if note is None:
        return set()
    places = set(note.places)
    marked = {i for i, call in enumerate(trace.calls) if call.where in places or call.where.split(" (")[0] in places}
    return marked or set(range(len(trace.calls)))


def attach_cost(
    profile: Profile,
    trace: Trace,
    prices: Mapping[str, UserPrice] | None = None,
    prefix: PrefixBuckets | None = None,
    predicted: Mapping[int, Usage] | None = None,
) -> Profile:
    """The profile with every call's cost (``calls[].cost``; ``summary.cost`` adds them up)."""
    if len(profile.calls) != len(trace.calls):  # not the trace's profile: nothing to attach to
        return profile
    costs = cost_calls(profile, trace, prices, prefix, predicted)
    profile.calls = [dataclasses.replace(row, cost=cost) for row, cost in zip(profile.calls, costs)]
    return profile
