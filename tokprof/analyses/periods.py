"""The sessions on this machine added up by day, week, month, project, agent or model (``tokprof
sessions --by``), from each call's reported usage (:mod:`tokprof.pricing.spend`).

A call falls in the day, ISO week and month of its time in the time zone asked for (the machine's
unless ``--tz``); a call whose log gives no time is in ``unknown``, and with ``--since``/``--until`` it
is left out. A row counts the sessions with a call in it, the calls, the billed input by kind, the
output, the cost, the cache hit rate and what cache misses cost (an estimate). What no call of a row
reports is None ("not recorded"), never 0. The rows' costs add up to the total exactly (whole units).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone, tzinfo

from tokprof.pricing.spend import CallSpend, dollars_of
from tokprof.base.errors import TokprofError

DIMENSIONS = ("day", "week", "month", "project", "agent", "model")
UNKNOWN = "unknown"


@dataclass(frozen=True)
class SessionSpend:
    """One session's calls, with what names it (its agent, project, id and file)."""

    agent: str
    project: str
    session: str
    path: str
    calls: tuple[CallSpend, ...]
    error: str | None = None  # why the session could not be read (then it has no calls)


@dataclass(frozen=True)
class PeriodRow:
    key: tuple[str, ...]  # one value per dimension, in the order asked
    sessions: int
    calls: int
    uncached: int | None
    cache_read: int | None
    cache_write: int | None
    output: int | None
    cost: int | None  # UNIT dollars over the priced calls; None: none priced
    priced: bool  # every call that reports usage is priced
    lost: int | None  # UNIT dollars, an estimate over the calls that measure it; None: none does

    @property
    def hit_rate(self) -> float | None:
        """Cache reads over the reported prompts (None: no call reports its prompt)."""
        if self.uncached is None:
            return None
        prompt = self.uncached + (self.cache_read or 0) + (self.cache_write or 0)
        return (self.cache_read or 0) / prompt if prompt else None

    def to_dict(self, by: Sequence[str]) -> dict:
        return {
            **dict(zip(by, self.key)),
            "sessions": self.sessions,
            "calls": self.calls,
            "billed_input": {
                "uncached": self.uncached,
                "cache_read": self.cache_read,
                "cache_write": self.cache_write,
            },
            "output": self.output,
            "cost": None if self.cost is None else float(dollars_of(self.cost)),
            "priced": self.priced,
            "cache_hit_rate": None if self.hit_rate is None else round(self.hit_rate, 6),
            "cache_lost_cost": None if self.lost is None else float(dollars_of(self.lost)),
        }


@dataclass(frozen=True)
class Periods:
    by: tuple[str, ...]
    zone: str  # the time zone's name, as shown
    rows: tuple[PeriodRow, ...]
    total: PeriodRow
    skipped: tuple[tuple[str, str], ...] = ()  # (path, why) of the sessions that could not be read
    since: datetime | None = None
    until: datetime | None = None

    def to_dict(self) -> dict:
        return {
            "kind": "sessions-periods",
            "by": list(self.by),
            "time_zone": self.zone,
            "since": None if self.since is None else self.since.isoformat(),
            "until": None if self.until is None else self.until.isoformat(),
            "rows": [row.to_dict(self.by) for row in self.rows],
            "total": {k: v for k, v in self.total.to_dict(()).items()},
            "cache_lost_estimate": True,
            "skipped": [{"path": path, "error": why} for path, why in self.skipped],
        }


@dataclass
class _Sums:
    sessions: set[tuple[str, str]] = field(default_factory=set)
    calls: int = 0
    uncached: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    output: int | None = None
    cost: int | None = None
    unpriced: bool = False
    lost: int | None = None

    def add(self, session: tuple[str, str], call: CallSpend) -> None:
        self.sessions.add(session)
        self.calls += 1
        self.uncached = _plus(self.uncached, call.uncached)
        self.cache_read = _plus(self.cache_read, call.cache_read)
        self.cache_write = _plus(self.cache_write, call.cache_write)
        self.output = _plus(self.output, call.output)
        self.cost = _plus(self.cost, call.cost)
        self.unpriced = self.unpriced or (call.reported and call.cost is None)
        self.lost = _plus(self.lost, call.lost)

    def row(self, key: tuple[str, ...]) -> PeriodRow:
        return PeriodRow(
            key,
            len(self.sessions),
            self.calls,
            self.uncached,
            self.cache_read,
            self.cache_write,
            self.output,
            self.cost,
            not self.unpriced and self.cost is not None,
            self.lost,
        )


def _plus(a: int | None, b: int | None) -> int | None:
    if b is None:
        return a
    return b if a is None else a + b


def key_of(session: SessionSpend, call: CallSpend, dimension: str, zone: tzinfo) -> str:
    """A call's value for a dimension ("unknown" when the log does not record it)."""
    if dimension == "agent":
        return session.agent or UNKNOWN
    if dimension == "project":
        return call.project or session.project or UNKNOWN
    if dimension == "model":
        return call.model or UNKNOWN
    if call.time is None:
        return UNKNOWN
    moment = call.time.astimezone(zone)
    if dimension == "day":
        return moment.date().isoformat()
    if dimension == "month":
        return f"{moment.year}-{moment.month:02d}"
    iso = moment.isocalendar()
    return f"{iso[0]}-W{iso[1]:02d}"


def periods(
    sessions: Sequence[SessionSpend],
    by: Sequence[str],
    zone: tzinfo,
    zone_name: str,
    since: datetime | None = None,
    until: datetime | None = None,
    skipped: Sequence[tuple[str, str]] = (),
) -> Periods:
    """The calls of ``sessions`` grouped by ``by`` (every dimension at once), in [since, until)."""
    groups: dict[tuple[str, ...], _Sums] = {}
    total = _Sums()
    for session in sessions:
        ident = (session.path, session.session)
        for call in session.calls:
            if since is not None or until is not None:
                if call.time is None or (since is not None and call.time < since):
                    continue
                if until is not None and call.time >= until:
                    continue
            key = tuple(key_of(session, call, d, zone) for d in by)
            groups.setdefault(key, _Sums()).add(ident, call)
            total.add(ident, call)
    rows = tuple(groups[key].row(key) for key in sorted(groups, key=_order))
    return Periods(tuple(by), zone_name, rows, total.row(()), tuple(skipped), since, until)


def _order(key: tuple[str, ...]) -> tuple:
    return tuple((part == UNKNOWN, part) for part in key)  # "unknown" last


def parse_by(values: Sequence[str]) -> tuple[str, ...]:
    """``--by`` values, each a dimension or several joined by commas; repeated, they combine."""
    out: list[str] = []
    for value in values:
        for name in (part.strip() for part in value.split(",")):
            if name not in DIMENSIONS:
                raise TokprofError(f"--by {value}: expected {', '.join(DIMENSIONS)}")
            if name not in out:
                out.append(name)
    return tuple(out)


def time_zone(name: str | None) -> tuple[tzinfo, str]:
    """The zone ``--tz`` names (an IANA name such as Europe/Paris, or UTC), else the machine's."""
    if name is None:
        local = datetime.now().astimezone().tzinfo or timezone.utc
        return _Local(), str(local.tzname(None) or "local")
    if name.upper() in ("UTC", "Z"):
        return timezone.utc, "UTC"
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name), name
    except (ValueError, KeyError, OSError):  # ZoneInfoNotFoundError is a KeyError
        raise TokprofError(f"--tz {name}: not a time zone (an IANA name such as Europe/Paris, or UTC)") from None


class _Local(tzinfo):
    """The machine's time zone, with its offset at each moment (summer time included)."""

    def utcoffset(self, dt: datetime | None) -> timedelta:
        return self._zone(dt).utcoffset(None) or timedelta(0)

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)

    def tzname(self, dt: datetime | None) -> str:
        return self._zone(dt).tzname(None) or "local"

    def fromutc(self, dt: datetime) -> datetime:
        moment = dt.replace(tzinfo=timezone.utc).astimezone()  # the machine's offset at that moment
        return moment.replace(tzinfo=self)

    @staticmethod
    def _zone(dt: datetime | None) -> tzinfo:
        moment = datetime.now() if dt is None else dt.replace(tzinfo=None)
        return moment.astimezone().tzinfo or timezone.utc


_RELATIVE = re.compile(r"^(\d{1,9})([hdwm])$")


def parse_when(text: str, option: str, zone: tzinfo, now: datetime | None = None, end: bool = False) -> datetime:
    """A ``--since``/``--until`` value: a date (a whole day in ``zone``; ``--until`` takes it in), a
    date and time, ``today``, ``yesterday``, or a span back from now: ``12h``, ``7d``, ``2w``, ``3m``
    (30-day months)."""
    try:
        return _when(text, zone, now or datetime.now(timezone.utc), end)
    except OverflowError:
        raise TokprofError(f"{option} {text}: out of the range of dates") from None
    except ValueError:
        raise TokprofError(
            f"{option} {text}: expected a date (2026-11-30), a date and time, today, yesterday, or 7d, 12h, 2w, 3m"
        ) from None


def _when(text: str, zone: tzinfo, now: datetime, end: bool) -> datetime:
    value = text.strip().lower()
    found = _RELATIVE.match(value)
    if found:
        count, unit = int(found.group(1)), found.group(2)
        hours = {"h": 1, "d": 24, "w": 24 * 7, "m": 24 * 30}[unit] * count
        return now - timedelta(hours=hours)
    if value in ("today", "yesterday"):
        day = now.astimezone(zone).date() - timedelta(days=1 if value == "yesterday" else 0)
        return _day_start(day + timedelta(days=1) if end else day, zone)
    if len(value) == 10:
        day = date.fromisoformat(value)
        return _day_start(day + timedelta(days=1) if end else day, zone)
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=zone)


def _day_start(day: date, zone: tzinfo) -> datetime:
    try:
        return datetime.combine(day, time(), zone).astimezone(timezone.utc)
    except ValueError:  # a day at the end of the calendar, beyond what the zone's offset can reach
        raise OverflowError(day) from None
