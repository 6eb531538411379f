"""A directory of agent sessions (a Claude Code project folder, a Codex sessions tree): one summary
row per session and the totals, like the session reports of usage tools, plus the bucket shares."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from tokprof.analyses.actions import cache_actions, combined
from tokprof.analyses.calls import CallRecord
from tokprof.pricing.billing import CacheSummary
from tokprof.models.base import ModelInfo
from tokprof.profiling import Action, Profile

#: The sessions JSON's own version (the profile's went on to 3 without changing it).
SCHEMA_VERSION = 2


@dataclass
class SessionRow:
    session: str
    path: str
    format: str
    model: str | None  # the model the log names
    calls: int
    compactions: int
    billed_input: int
    billed_input_reported: int | None
    buckets: dict[str, int]
    exact: bool
    profiled_with: str = ""  # the tokprof model (qwen2.5, openai-proxy, ...)
    estimate: str | None = None  # how the counts are estimated, when they are
    inferred: str | None = None  # how the unrecorded bucket was inferred, when it was
    warnings: list[str] = field(default_factory=list)  # the codes of the session's warnings
    mean_relative_difference: float | None = None  # computed vs reported, when reported
    weighted_relative_difference: float | None = None  # the same, weighted by tokens (what warnings use)
    cost: float | None = None  # US dollars, over the priced calls (None: none priced)
    priced: bool = False  # every call priced
    unpriced: str | None = None  # why some calls are not, when they are not
    cache_read_reported: int | None = None
    cache_write_reported: int | None = None
    not_recorded: tuple[str, ...] = ()  # "system_prompt", "tool_definitions": what the log does not record
    cache_hit_rate: float | None = None  # reported cache reads over the reported prompts
    cache_lost_cost: float | None = None  # what the cache misses cost (None: not measured, or no cache usage)
    cache_lost_by_reason: dict[str, float] = field(default_factory=dict)  # by reason label, costliest first
    #: What to change that needs no replay (tokprof.analyses.actions: cache fixes), as Action dicts
    actions: list[dict] = field(default_factory=list)

    @classmethod
    def from_profile(cls, profile: Profile, session: str, path: str) -> "SessionRow":
        summary = profile.summary()
        return cls(
            session=session,
            path=path,
            format=profile.source.format,
            model=profile.source.model,
            calls=summary.calls,
            compactions=summary.compactions,
            billed_input=summary.billed_input,
            billed_input_reported=summary.reported.billed_input if summary.reported else None,
            buckets=dict(summary.buckets_billed),
            exact=summary.exact,
            profiled_with=profile.model.name,
            estimate=None if profile.model.exact else profile.model.method,
            inferred=profile.inferred,
            warnings=[w.code for w in profile.warnings],
            mean_relative_difference=summary.reconciliation.mean_relative_difference
            if summary.reconciliation
            else None,
            weighted_relative_difference=(
                summary.reconciliation.weighted_relative_difference if summary.reconciliation else None
            ),
            cost=summary.cost.total if summary.cost else None,
            priced=bool(summary.cost and summary.cost.priced),
            unpriced="; ".join(u.reason for u in summary.cost.unpriced)
            if summary.cost and summary.cost.unpriced
            else None,
            cache_read_reported=summary.reported.cache_read if summary.reported else None,
            cache_write_reported=summary.reported.cache_write if summary.reported else None,
            not_recorded=tuple(summary.not_recorded),
            **_cache_fields(summary.cache),
            actions=[a.to_dict() for a in cache_actions(profile, summary.cache)],
        )

    def shares(self) -> dict[str, float]:
        return {k: (v / self.billed_input if self.billed_input else 0.0) for k, v in self.buckets.items()}

    def to_dict(self) -> dict:
        return {
            "session": self.session,
            "path": self.path,
            "format": self.format,
            "model": self.model,
            "calls": self.calls,
            "compactions": self.compactions,
            "billed_input": self.billed_input,
            "billed_input_reported": self.billed_input_reported,
            "buckets_billed": self.buckets,
            "shares": {k: round(v, 6) for k, v in self.shares().items()},
            "exact": self.exact,
            "profiled_with": self.profiled_with,
            "estimate": self.estimate,
            "inferred": self.inferred,
            "mean_relative_difference": self.mean_relative_difference,
            "weighted_relative_difference": self.weighted_relative_difference,
            "cache_read_reported": self.cache_read_reported,
            "cache_write_reported": self.cache_write_reported,
            "cache_hit_rate": self.cache_hit_rate,
            "cache_lost_cost": self.cache_lost_cost,
            "cache_lost_by_reason": dict(self.cache_lost_by_reason),
            "cost": None if self.cost is None else round(self.cost, 8),
            "priced": self.priced,
            "unpriced": self.unpriced,
            "warnings": self.warnings,
            "not_recorded": list(self.not_recorded),
        }


@dataclass(frozen=True)
class WorstSession:
    """A session among those whose cache misses cost most, and its costliest reason."""

    session: str
    cost: float
    reason: str | None


@dataclass(frozen=True)
class SessionTotals:
    sessions: int
    calls: int
    compactions: int
    billed_input: int
    billed_input_reported: int | None
    buckets_billed: dict[str, int]
    shares: dict[str, float]
    exact: bool
    cost: float | None = None  # US dollars, over the priced sessions' priced calls
    priced: bool = False  # every call of every session priced
    currency: str = "USD"
    cache_lost_cost: float | None = None  # what the cache misses cost, over the sessions that measure it
    cache_lost_by_reason: dict[str, float] = field(default_factory=dict)  # by reason label, costliest first
    cache_worst: tuple[WorstSession, ...] = ()  # the sessions whose misses cost most


def _cache_fields(cache: CacheSummary | None) -> dict:
    lost = cache.lost if cache is not None else None
    if cache is None or lost is None or lost.cost is None:
        return {"cache_hit_rate": cache.hit_rate_reported if cache is not None else None}
    return {
        "cache_hit_rate": cache.hit_rate_reported,
        "cache_lost_cost": lost.cost,
        "cache_lost_by_reason": {r.label: r.cost for r in lost.by_reason if r.cost},
    }


#: How many sessions the totals name as the costliest in cache misses.
WORST_SHOWN = 5


def cache_totals(rows: list[SessionRow]) -> dict:
    """The cache-miss fields of :class:`SessionTotals`: in all, by reason, the costliest sessions."""
    measured = [r for r in rows if r.cache_lost_cost is not None]
    if not measured:
        return {}
    by_reason: dict[str, float] = {}
    for row in measured:
        for label, cost in row.cache_lost_by_reason.items():
            by_reason[label] = by_reason.get(label, 0.0) + cost
    ordered = dict(sorted(((k, round(v, 8)) for k, v in by_reason.items()), key=lambda kv: (-kv[1], kv[0])))
    worst = sorted((r for r in measured if r.cache_lost_cost), key=lambda r: (-(r.cache_lost_cost or 0.0), r.session))
    return {
        "cache_lost_cost": round(sum(r.cache_lost_cost or 0.0 for r in measured), 8),
        "cache_lost_by_reason": ordered,
        "cache_worst": tuple(
            WorstSession(r.session, r.cache_lost_cost or 0.0, next(iter(r.cache_lost_by_reason), None))
            for r in worst[:WORST_SHOWN]
        ),
    }


@dataclass(frozen=True)
class Skipped:
    """A file of the directory that was not profiled, and why."""

    path: str
    error: str


@dataclass
class SessionsReport:
    directory: str
    model: dict[str, ModelInfo]  # the model (or models) used, by name
    sessions: list[SessionRow] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)  # sessions that could not be read
    calls: list[CallRecord] = field(default_factory=list)  # a record per call, when asked for (not in to_dict)

    @classmethod
    def combine(cls, reports: "list[SessionsReport]", directory: str = "") -> "SessionsReport":
        """One report of several (of folders, machines or days): their rows and skipped files, in order.
        A session in two reports is two rows, as two files of one folder are."""
        combined = cls(directory=directory or ", ".join(r.directory for r in reports), model={})
        for report in reports:
            combined.model.update(report.model)
            combined.sessions += report.sessions
            combined.skipped += report.skipped
            combined.calls += report.calls
        return combined

    def bucket_names(self) -> list[str]:
        names: list[str] = []
        for row in self.sessions:
            names += [name for name in row.buckets if name not in names]
        return names

    def totals(self) -> SessionTotals:
        names = self.bucket_names()
        billed = sum(r.billed_input for r in self.sessions)
        buckets = {name: sum(r.buckets.get(name, 0) for r in self.sessions) for name in names}
        reported = [r.billed_input_reported for r in self.sessions if r.billed_input_reported is not None]
        return SessionTotals(
            sessions=len(self.sessions),
            calls=sum(r.calls for r in self.sessions),
            compactions=sum(r.compactions for r in self.sessions),
            billed_input=billed,
            billed_input_reported=sum(reported) if reported else None,
            buckets_billed=buckets,
            shares={k: round(v / billed, 6) if billed else 0.0 for k, v in buckets.items()},
            exact=all(r.exact for r in self.sessions),
            cost=round(sum(r.cost or 0.0 for r in costs), 8)
            if (costs := [r for r in self.sessions if r.cost is not None])
            else None,
            priced=bool(self.sessions) and all(r.priced for r in self.sessions),
            **cache_totals(self.sessions),
        )

    def actions(self) -> tuple[Action, ...]:
        """What to change over the sessions (the fixes each session's profile prices without a replay),
        the same change added up, ranked (tokprof.analyses.actions)."""
        found = []
        for n, row in enumerate(self.sessions):
            for d in row.actions:
                try:
                    found.append((Action.from_dict(d), n))
                except (KeyError, TypeError, ValueError):  # a damaged state file's entry: left out
                    continue
        return combined([a for a, _ in found], [n for _, n in found])

    def to_dict(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "sessions",
            "directory": self.directory,
            "actions": [a.to_dict() for a in self.actions()],
            "models": {name: _session_model(info) for name, info in self.model.items()},
            "sessions": [r.to_dict() for r in self.sessions],
            "totals": dataclasses.asdict(self.totals()),
            "skipped": [{"path": s.path, "error": s.error} for s in self.skipped],
        }


def _session_model(info: ModelInfo) -> dict:
    """A model as the sessions report lists it: without what differs from session to session."""
    return {k: v for k, v in info.to_dict().items() if k not in ("method", "selected")}
