"""genai-prices' data for the models logs name, in a small table kept in the user's cache, so that a
start does not import genai-prices (about 0.2 s): :func:`entry` finds a model once and writes it
down, :func:`price_parts` prices a call from the table exactly as genai-prices would, or returns
None where it cannot. docs/models.md says what the table holds and how it is checked."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal
from functools import lru_cache
from typing import Any, Mapping

from tokprof.base.files import cache_dir, write_atomic
from tokprof.pricing.genai import find

#: Bump when the table's layout or the way it is made changes.
TABLE_VERSION = 1
#: The usage keys tokprof gives genai-prices (every call sets the first four; the 1-hour cache
#: writes only when there are some).
REPORTED = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens", "cache_write_1h_tokens")
PARTS = ("input", "cache_write", "cache_read", "output", "other")


@dataclass(frozen=True)
class Unit:
    """One priced unit of a period: genai-prices' usage key, its ``per``, its dimensions, the part of
    the bill it goes to, and its rate (with long-context tiers: (start, rate), ascending)."""

    usage_key: str
    price_key: str
    per: int
    dimensions: frozenset[tuple[str, str]]
    part: str
    rate: Decimal
    tiers: tuple[tuple[int, Decimal], ...] | None = None


@dataclass(frozen=True)
class Period:
    """The prices from ``start`` (None: no date constraint). ``units`` in genai-prices' unit registry
    order (the order the parts add up in); ``order``: their positions in the model price's own order
    (the order the total adds up in)."""

    start: date | None
    units: tuple[Unit, ...]
    order: tuple[int, ...]


@dataclass(frozen=True)
class Named:
    """A provider or a model by genai-prices' id."""

    id: str
    context_window: int | None = None


@dataclass(frozen=True)
class Entry:
    """What genai-prices has for a model name: the provider and model it matches, and the periods of
    its prices (None: priced by genai-prices itself)."""

    provider: Named
    model: Named
    periods: tuple[Period, ...] | None


# -- the table in the cache ------------------------------------------------------------------------
@lru_cache(maxsize=1)
def genai_version() -> str | None:
    """The installed genai-prices' version (None: not installed): from its ``.dist-info`` folder's
    name beside the package (importlib.metadata costs more than the rest of a lookup), else from
    importlib.metadata."""
    import importlib.util
    from pathlib import Path

    try:
        spec = importlib.util.find_spec("genai_prices")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.origin:
        found = sorted(Path(spec.origin).parent.parent.glob("genai_prices-*.dist-info"))
        if len(found) == 1:
            return found[0].name[len("genai_prices-") : -len(".dist-info")]
    try:
        from importlib.metadata import version

        return version("genai-prices")
    except Exception:  # pragma: no cover - a package without metadata
        return None


def table_path(version: str) -> Any:
    return cache_dir() / "prices" / f"genai-prices-{version}-{TABLE_VERSION}.json"


@lru_cache(maxsize=4)
def _table(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {"names": {}}
    return data if isinstance(data, dict) and isinstance(data.get("names"), dict) else {"names": {}}


_ENTRIES: dict[str, Entry | None] = {}
_MISSING: Any = object()


def entry(name: str) -> Entry | None:
    """genai-prices' model for a log's model name (None: it has none), from the table, else found by
    genai-prices once and written to the table."""
    if name in _ENTRIES:
        return _ENTRIES[name]
    version = genai_version()
    if version is None:
        return None
    path = str(table_path(version))
    names = _table(path)["names"]
    found = _MISSING
    if name in names:
        try:
            found = _decoded(names[name])
        except (KeyError, TypeError, ValueError, IndexError, ArithmeticError):  # a damaged entry: made again
            found = _MISSING
    if found is _MISSING:
        raw = _encoded(_built(name))
        found = _decoded(raw)
        _remember(path, name, raw)
    _ENTRIES[name] = found
    return found


def _remember(path: str, name: str, raw: dict | None) -> None:
    """Add one name to the table file (as it is now on disk: another process may have added others)."""
    _table.cache_clear()
    table = _table(path)
    table = {"genai_prices": genai_version(), "table": TABLE_VERSION, "names": {**table["names"], name: raw}}
    try:
        from pathlib import Path

        write_atomic(Path(path), json.dumps(table, sort_keys=True).encode("utf-8"))
    except OSError:  # an unwritable cache: genai-prices is asked again next time
        pass
    _table.cache_clear()


# -- encoding ----------------------------------------------------------------------------------------
def _encoded(found: Entry | None) -> dict | None:
    if found is None:
        return None
    periods = (
        None
        if found.periods is None
        else [
            {
                "start": p.start.isoformat() if p.start else None,
                "order": list(p.order),
                "units": [
                    [
                        u.usage_key,
                        u.price_key,
                        u.per,
                        sorted(map(list, u.dimensions)),
                        u.part,
                        str(u.rate),
                        None if u.tiers is None else [[start, str(rate)] for start, rate in u.tiers],
                    ]
                    for u in p.units
                ],
            }
            for p in found.periods
        ]
    )
    return {
        "provider": found.provider.id,
        "model": found.model.id,
        "context_window": found.model.context_window,
        "periods": periods,
    }


def _decoded(raw: Any) -> Entry | None:
    if not isinstance(raw, dict):
        return None
    window = raw.get("context_window")
    periods = (
        None
        if raw.get("periods") is None
        else tuple(
            Period(
                start=date.fromisoformat(p["start"]) if p["start"] else None,
                order=tuple(p["order"]),
                units=tuple(
                    Unit(
                        usage_key=u[0],
                        price_key=u[1],
                        per=u[2],
                        dimensions=frozenset(map(tuple, u[3])),
                        part=u[4],
                        rate=Decimal(u[5]),
                        tiers=None if u[6] is None else tuple((t[0], Decimal(t[1])) for t in u[6]),
                    )
                    for u in p["units"]
                ),
            )
            for p in raw["periods"]
        )
    )
    return Entry(Named(raw["provider"]), Named(raw["model"], window if isinstance(window, int) else None), periods)


# -- pricing -------------------------------------------------------------------------------------------
def _period(periods: tuple[Period, ...], day: date) -> Period:
    """genai-prices' choice: the last period that has started, else the first."""
    for period in reversed(periods):
        if period.start is None or day >= period.start:
            return period
    return periods[0]


def _rate(unit: Unit, total_input: int) -> Decimal:
    for start, rate in reversed(unit.tiers or ()):
        if total_input > start:
            return rate
    return unit.rate


_PLANS: dict[int, tuple[Period, tuple[tuple[str, tuple[str, ...]], ...]]] = {}


def _leaf_plan(period: Period) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The period's units from the most specific, each with the units its count includes (made once
    per period: a collector prices thousands of calls a second)."""
    found = _PLANS.get(id(period))
    if found is not None and found[0] is period:
        return found[1]
    keyed = sorted(
        (u for u in period.units if u.usage_key != "requests"), key=lambda u: (-len(u.dimensions), u.usage_key)
    )
    plan = tuple(
        (unit.usage_key, tuple(d.usage_key for d in keyed if d is not unit and unit.dimensions <= d.dimensions))
        for unit in keyed
    )
    _PLANS[id(period)] = (period, plan)
    return plan


def price_parts(found: Entry, usage: Mapping[str, int], day: date | None) -> dict[str, Decimal] | None:
    """The price of ``usage`` (genai-prices' usage keys) on ``day`` (None: today, UTC): the total
    and its parts, as genai-prices computes them; None when the table cannot say (see the module)."""
    if found.periods is None or any(v < 0 for v in usage.values()):
        return None
    period = _period(found.periods, day or datetime.now(tz=timezone.utc).date())
    leaves: dict[str, int] = {}
    for key, below_keys in _leaf_plan(period):
        leaf = usage.get(key, 0) - sum(leaves[d] for d in below_keys)
        if leaf < 0:  # genai-prices refuses this usage: let it say why
            return None
        leaves[key] = leaf
    total_input = usage.get("input_tokens", 0) if any(u.tiers is not None for u in period.units) else 0
    amounts = [
        _rate(u, total_input) * Decimal(1 if u.usage_key == "requests" else leaves[u.usage_key]) / u.per
        for u in period.units
    ]
    total = Decimal(0)
    for position in period.order:
        total += amounts[position]
    parts = {name: Decimal(0) for name in PARTS}
    for unit, amount in zip(period.units, amounts):
        parts[unit.part] += amount
    parts["total"] = total
    return parts


def writes_1h(found: Entry, day: date | None) -> bool | None:
    """Whether the model prices 1-hour cache writes apart on ``day`` (None: the table cannot say)."""
    if found.periods is None:
        return None
    period = _period(found.periods, day or datetime.now(tz=timezone.utc).date())
    return any(u.price_key == "cache_write_1h_mtok" for u in period.units)


# -- building an entry from genai-prices -------------------------------------------------------------
def _part(dimensions: Mapping[str, str]) -> str:
    """The part of the bill a unit goes to (as :func:`tokprof.pricing.cost.genai_parts` sorts them)."""
    if dimensions.get("family") != "tokens":
        return "other"
    if dimensions.get("direction") == "output":
        return "output"
    if dimensions.get("token_type") in ("cache_read", "cache_write"):
        return str(dimensions["token_type"])
    return "input" if dimensions.get("direction") == "input" else "other"


def _built(name: str) -> Entry | None:
    """genai-prices' entry for a model name, with its periods when the table can write them exactly."""
    try:
        provider, model = find(name)
    except LookupError:
        return None
    window = model.context_window if isinstance(model.context_window, int) and model.context_window > 0 else None
    found = Entry(Named(provider.id), Named(model.id, window), None)
    periods = _periods(provider, model)
    if periods is None:
        return found
    candidate = Entry(found.provider, found.model, periods)
    return candidate if _agrees(candidate, provider, model) else found


def _periods(provider: Any, model: Any) -> tuple[Period, ...] | None:
    from genai_prices.types import ModelPrice, StartDateConstraint

    if provider.id == "groq" and model.id.startswith("whisper"):  # genai-prices bills these audio seconds its own way
        return None
    if isinstance(model.prices, ModelPrice):
        conditions = [(None, model.prices)]
    else:
        conditions = [(c.constraint, c.prices) for c in model.prices]
    if not conditions or any(c is not None and type(c) is not StartDateConstraint for c, _ in conditions):
        return None
    out = []
    for constraint, prices in conditions:
        units = _units(prices)
        if units is None:
            return None
        out.append(
            Period(start=constraint.start_date if constraint is not None else None, units=units[0], order=units[1])
        )
    return tuple(out)


def _units(prices: Any) -> tuple[tuple[Unit, ...], tuple[int, ...]] | None:
    """A model price's units in registry order and their positions in its own order; None when one
    is not a plain rate or tiers, or genai-prices would refuse the set, or a unit tokprof does not
    report could count something (then genai-prices infers it)."""
    from genai_prices.types import TieredPrices, ModelPrice
    from genai_prices.units import _get_registry
    from genai_prices.validation import validate_priced_units

    if type(prices) is not ModelPrice:
        return None
    registry = _get_registry()
    own = [(k, v) for k, v in prices.__dict__.items() if not k.startswith("_") and v is not None]
    try:
        defs = [registry.unit_for_price_key(k) for k, _ in own]
        validate_priced_units(tuple(defs), registry)
    except (KeyError, ValueError):
        return None
    if not _unreported_count_nothing(defs, registry):
        return None
    by_key = {}
    for (key, value), unit in zip(own, defs):
        if isinstance(value, TieredPrices):
            starts = [t.start for t in value.tiers]
            if starts != sorted(starts) or any(type(s) is not int or s < 0 for s in starts):
                return None
            rate, tiers = value.base, tuple((t.start, t.price) for t in value.tiers)
        else:
            rate, tiers = value, None
        if not all(isinstance(r, Decimal) and r.is_finite() and r >= 0 for r in (rate, *(r for _, r in tiers or ()))):
            return None
        by_key[key] = Unit(
            usage_key=unit.usage_key,
            price_key=key,
            per=unit.per,
            dimensions=frozenset(unit.dimensions.items()),
            part=_part(unit.dimensions),
            rate=rate,
            tiers=tiers,
        )
    in_registry = [u.price_key for u in registry.units.values() if u.price_key in by_key]
    units = tuple(by_key[k] for k in in_registry)
    order = tuple(in_registry.index(k) for k, _ in own)
    return units, order


def _unreported_count_nothing(defs: list, registry: Any) -> bool:
    """Whether every priced unit tokprof does not report counts 0 for genai-prices: none of the
    reported units is below it, and no two of them join into it (genai-prices' inference)."""
    reported = [registry.units[k] for k in REPORTED]
    for unit in defs:
        if unit.usage_key in REPORTED or unit.usage_key == "requests":
            continue
        dims = dict(unit.dimensions)
        if any(
            dims.items() <= r.dimensions.items() or dims == {**a.dimensions, **b.dimensions}
            for r in reported
            for a in reported
            for b in reported
        ):
            return False
    return True


def _probes() -> list[dict[str, int]]:
    return [
        {"input_tokens": 1000, "cache_read_tokens": 0, "cache_write_tokens": 0, "output_tokens": 0},
        {"input_tokens": 123_457, "cache_read_tokens": 100_003, "cache_write_tokens": 20_011, "output_tokens": 977},
        {
            "input_tokens": 301_001,
            "cache_read_tokens": 250_000,
            "cache_write_tokens": 40_000,
            "output_tokens": 5_003,
            "cache_write_1h_tokens": 30_000,
        },
    ]


def _agrees(candidate: Entry, provider: Any, model: Any) -> bool:
    """Whether the table prices sample usages as genai-prices does, on each period's first day and today."""
    days: list[date | None] = [None] + [p.start for p in candidate.periods or () if p.start]
    for day in days:
        for usage in _probes():
            mine = price_parts(candidate, usage, day)
            try:
                theirs = genai_parts(provider, model, usage, day)
            except (LookupError, ValueError):
                return False
            if mine is None or not _same(mine, theirs):
                return False
    return True


def _same(mine: Mapping[str, Decimal], theirs: Mapping[str, Decimal]) -> bool:
    return all(mine[k] == theirs[k] for k in (*PARTS, "total"))


def genai_moment(day: date | None) -> datetime:
    """The time genai-prices prices a call of ``day`` at: its midnight UTC (None: now)."""
    return datetime.combine(day, datetime.min.time(), tzinfo=timezone.utc) if day else datetime.now(tz=timezone.utc)


def genai_split(model: Any, usage: Any, moment: datetime) -> dict[str, Decimal]:
    """The price of genai-prices' ``usage`` split into input, cache_write, cache_read, output and
    other, applying the model's price on ``moment`` unit by unit as genai-prices does (its total is
    their sum)."""
    from genai_prices.decompose import compute_leaf_values
    from genai_prices.types import TieredPrices, calc_unit_price
    from genai_prices.units import _get_registry

    price = model.get_prices(moment)
    registry = _get_registry()
    priced = [
        (u, getattr(price, u.price_key))
        for u in registry.units.values()
        if getattr(price, u.price_key, None) is not None
    ]
    tokens = {u.usage_key: u for u, _ in priced if u.usage_key != "requests"}
    counts: dict[str, Any] = compute_leaf_values(set(tokens), usage, tokens) if tokens else {}
    if any(u.usage_key == "requests" for u, _ in priced):
        counts["requests"] = 1
    total_input = usage.input_tokens if any(isinstance(p, TieredPrices) for _, p in priced) else 0
    parts = {name: Decimal(0) for name in PARTS}
    for unit, unit_price in priced:
        parts[_part(unit.dimensions)] += calc_unit_price(unit_price, counts.get(unit.usage_key), total_input, unit.per)
    return parts


def genai_parts(provider: Any, model: Any, usage: Mapping[str, int], day: date | None) -> dict[str, Decimal]:
    """genai-prices' own price of ``usage`` on ``day``: ``calc_price``'s total and :func:`genai_split`'s
    parts (what :func:`price_parts` must equal)."""
    from genai_prices import Usage, calc_price

    moment = genai_moment(day)
    genai_usage = Usage(**usage)
    total = calc_price(genai_usage, model.id, provider_id=provider.id, genai_request_timestamp=moment).total_price
    parts = genai_split(model, genai_usage, moment)
    parts["total"] = total
    return parts


def clear() -> None:
    """Forget what this process read (tests point the cache elsewhere)."""
    _ENTRIES.clear()
    _table.cache_clear()
