"""A dashboard over many sessions (``tokprof report DIR -o site/``): what its index shows, made one
session at a time (a session is read, profiled, its page rendered, then let go: memory is bounded
by the largest session, not their number).

The index shows the spend by day, project, agent and model (from the reported usage, as ``tokprof
sessions --by`` adds it up, UTC days), the costliest sessions with their costliest cache-miss reason,
the cache's dollars lost by reason and the buckets over all sessions (from the profiles, as ``tokprof
profile DIR`` adds them up), and each session that could not be read with why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tokprof.analyses.periods import Periods, SessionSpend, periods
from tokprof.analyses.sessions import SessionRow, SessionsReport, Skipped
from tokprof.profiling import Action

#: The groupings of the index, each a table.
GROUPINGS = (("day",), ("project",), ("agent",), ("model",))
#: How many of the costliest sessions the index names.
COSTLIEST = 10


@dataclass(frozen=True)
class SitePage:
    """One session of the site: its summary row, where its page is, and its agent and project."""

    page: str  # the page's file name, beside index.html
    row: SessionRow
    agent: str
    project: str
    action: Action | None = None  # the first of its "what to change" (tokprof.analyses.actions), if any


@dataclass
class Site:
    title: str
    pages: list[SitePage] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    spends: list[SessionSpend] = field(default_factory=list)

    def report(self) -> SessionsReport:
        """The sessions as ``tokprof profile DIR`` reports them (totals, cache losses by reason)."""
        return SessionsReport(directory=self.title, model={}, sessions=[p.row for p in self.pages])

    def spend(self) -> list[Periods]:
        from datetime import timezone

        return [periods(self.spends, by, timezone.utc, "UTC") for by in GROUPINGS]

    def costliest(self) -> list[SitePage]:
        priced = [p for p in self.pages if p.row.cost is not None]
        return sorted(priced, key=lambda p: (-(p.row.cost or 0.0), p.page))[:COSTLIEST]
