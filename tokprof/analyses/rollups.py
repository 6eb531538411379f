"""Rollups of per-call records by project, branch, model, agent, day, week, month (UTC) or user (several at once),
and the calls within a time range. What a log does not record is grouped as "unknown": never 0,
never dropped. Reported figures are summed over the calls that report them (None when none do)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone

from tokprof.analyses.calls import ALL_BUCKETS, CallRecord
from tokprof.base.errors import TokprofError

DIMENSIONS = ("project", "branch", "model", "agent", "day", "week", "month", "user")
UNKNOWN = "unknown"


@dataclass(frozen=True)
class RollupRow:
    key: tuple[str, ...]
    sessions: int
    calls: int
    billed_input: int  # the calls' computed prompts (the buckets' sum)
    buckets: dict[str, int | None]  # None: no call of the row records the bucket
    reported_calls: int  # calls whose prompt the log reports
    reported_prompt: int | None
    reported_cache_read: int | None
    reported_cache_write: int | None
    reported_output: int | None
    cost: float | None  # US dollars over the priced calls (None: none priced)
    priced_calls: int

    def to_dict(self, by: tuple[str, ...]) -> dict:
        return {
            **dict(zip(by, self.key)),
            "sessions": self.sessions,
            "calls": self.calls,
            "billed_input": self.billed_input,
            "buckets": dict(self.buckets),
            "reported_calls": self.reported_calls,
            "reported_prompt": self.reported_prompt,
            "reported_cache_read": self.reported_cache_read,
            "reported_cache_write": self.reported_cache_write,
            "reported_output": self.reported_output,
            "cost": None if self.cost is None else round(self.cost, 8),
            "priced_calls": self.priced_calls,
        }


@dataclass(frozen=True)
class Rollup:
    by: tuple[str, ...]
    rows: tuple[RollupRow, ...]

    @property
    def name(self) -> str:
        return "+".join(self.by)

    def to_dict(self) -> dict:
        return {"by": list(self.by), "rows": [row.to_dict(self.by) for row in self.rows]}


def parse_by(values: list[str]) -> list[tuple[str, ...]]:
    """``--by`` values: each a dimension or several joined by commas (one grouping by all of them)."""
    out = []
    for value in values:
        names = tuple(part.strip() for part in value.split(",") if part.strip())
        wrong = [name for name in names if name not in DIMENSIONS]
        if wrong or not names:
            raise TokprofError(f"--by {value}: expected {', '.join(DIMENSIONS)} (or several joined by commas)")
        out.append(names)
    return out


def key_of(record: CallRecord, dimension: str) -> str:
    """A record's value for a dimension, "unknown" when the log does not record it."""
    when = record.time
    value: str | None
    if dimension == "project":
        value = record.project
    elif dimension == "branch":
        value = record.git_branch
    elif dimension == "model":
        value = record.model
    elif dimension == "agent":
        value = record.agent
    elif dimension == "user":
        value = record.user
    elif dimension == "day":
        value = None if when is None else when.astimezone(timezone.utc).date().isoformat()
    elif dimension == "month":
        value = None if when is None else when.astimezone(timezone.utc).strftime("%Y-%m")
    else:
        iso = None if when is None else when.astimezone(timezone.utc).isocalendar()
        value = None if iso is None else f"{iso[0]}-W{iso[1]:02d}"
    return value if value else UNKNOWN


def rollup(records: list[CallRecord], by: tuple[str, ...]) -> Rollup:
    groups: dict[tuple[str, ...], list[CallRecord]] = {}
    for record in records:
        groups.setdefault(tuple(key_of(record, d) for d in by), []).append(record)
    rows = tuple(_row(key, calls) for key, calls in sorted(groups.items(), key=lambda kv: _order(kv[0])))
    return Rollup(by, rows)


def _order(key: tuple[str, ...]) -> tuple:
    return tuple((part == UNKNOWN, part) for part in key)  # "unknown" last


def _known_sum(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _row(key: tuple[str, ...], calls: list[CallRecord]) -> RollupRow:
    priced = [c.cost_total for c in calls if c.priced and c.cost_total is not None]
    return RollupRow(
        key=key,
        sessions=len({(c.path, c.session) for c in calls}),
        calls=len(calls),
        billed_input=sum(c.total for c in calls),
        buckets={name: _known_sum([getattr(c, name) for c in calls]) for name in ALL_BUCKETS},
        reported_calls=sum(1 for c in calls if c.reported_prompt is not None),
        reported_prompt=_known_sum([c.reported_prompt for c in calls]),
        reported_cache_read=_known_sum([c.reported_cache_read for c in calls]),
        reported_cache_write=_known_sum([c.reported_cache_write for c in calls]),
        reported_output=_known_sum([c.reported_output for c in calls]),
        cost=sum(priced) if priced else None,
        priced_calls=len(priced),
    )


def parse_when(text: str, option: str, end: bool = False) -> datetime:
    """A ``--since``/``--until`` value: an ISO date (a whole day, UTC; ``--until`` takes in that day)
    or an ISO date and time (UTC unless it names a zone)."""
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            moment = datetime.combine(day + timedelta(days=1) if end else day, time(), timezone.utc)
            return moment
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise TokprofError(f"{option} {text}: expected an ISO date (2026-11-30) or date and time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def within(records: list[CallRecord], since: datetime | None, until: datetime | None) -> list[CallRecord]:
    """The records of calls made in [since, until); with either bound, a call without a time is left out."""
    if since is None and until is None:
        return records
    return [
        r
        for r in records
        if r.time is not None and (since is None or r.time >= since) and (until is None or r.time < until)
    ]
