"""Budgets on spend per period (``tokprof check``): the costliest day's, project's and session's spend
(``cost_per_day``, ``cost_per_project``, ``cost_per_session``; in ``[budgets]`` also written
``max_cost_per_day = "$20"``), from the calls' reported usage and prices (:mod:`tokprof.pricing.spend`),
over one log or a directory of sessions.

Days are UTC days (a check gives the same answer on every machine). A metric's value is its
costliest group's spend; when it is over the budget, the check names the groups over it, costliest
first. A group with a call whose model has no price is unpriced: its spend is not known, never a
smaller number, and the metric is unknown ("unpriced"), as ``cost`` is. A log that reports no usage
has no spend to gate ("not recorded").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import timezone

from tokprof.analyses.periods import SessionSpend, key_of
from tokprof.pricing.spend import dollars_of

#: Metric -> the dimension it groups the calls by, and what a group is called.
PERIOD_METRICS = {
    "cost_per_day": ("day", "day"),
    "cost_per_project": ("project", "project"),
    "cost_per_session": ("session", "session"),
}
#: How many groups over the budget a failure names.
NAMED = 3


def session_name(session: SessionSpend, ids: Counter[str]) -> str:
    """A session as a check names it: its id, with its file when another session has the same id."""
    return session.session if session.session and ids[session.session] == 1 else f"{session.session} ({session.path})"


def group_spend(sessions: Sequence[SessionSpend], dimension: str) -> tuple[dict[str, int], set[str], bool]:
    """Each group's spend in whole units, the groups with an unpriced call, and whether any call reports usage."""
    spend: dict[str, int] = {}
    unpriced: set[str] = set()
    reported = False
    ids = Counter(session.session for session in sessions)
    for session in sessions:
        name = session_name(session, ids)
        for call in session.calls:
            if not call.reported:
                continue
            reported = True
            if dimension == "session":
                key = name
            else:
                key = key_of(session, call, dimension, timezone.utc)
            spend[key] = spend.get(key, 0) + (call.cost or 0)
            if call.cost is None:
                unpriced.add(key)
    return spend, unpriced, reported


def measure_periods(
    sessions: Sequence[SessionSpend],
    metrics: dict[str, float | None],
    unknown: dict[str, str],
    limits: dict[str, float | None],
) -> dict[str, str]:
    """Set the period metrics' values (or why they have none) and return, per metric, the groups over
    its limit (``limits``: each metric's max, None without one), to name in a failure."""
    over: dict[str, str] = {}
    for metric, (dimension, noun) in PERIOD_METRICS.items():
        spend, unpriced, reported = group_spend(sessions, dimension)
        metrics[metric] = None
        if not reported:
            unknown[metric] = 'not recorded: the log reports no usage (or set not_recorded = "skip" on this budget)'
            continue
        if unpriced:
            first = sorted(unpriced)[0]
            unknown[metric] = (
                f"unpriced: a call of {noun} {first} names a model with no price ({len(unpriced)} {noun}s)"
            )
            continue
        ranked = sorted(spend.items(), key=lambda kv: (-kv[1], kv[0]))
        metrics[metric] = float(dollars_of(ranked[0][1]))
        limit = limits.get(metric)
        named = [(k, v) for k, v in ranked if limit is not None and float(dollars_of(v)) > limit]
        if not named:
            named = ranked[:1]
        shown = ", ".join(f"{key} ${float(dollars_of(value)):,.4f}" for key, value in named[:NAMED])
        more = f" and {len(named) - NAMED} more" if len(named) > NAMED else ""
        over[metric] = f"{noun}{'s' if len(named) > 1 else ''} over it: {shown}{more}"
    return over


def log_spends(path: str, input_format: str | None = None) -> list[SessionSpend]:
    """A log's calls as one session's spend; a directory's sessions, each one (a session that cannot be
    read is left out: the check says so in a note)."""
    import os

    from tokprof.pricing.spend import call_spends
    from tokprof.formats import read_trace

    if os.path.isdir(path):
        from tokprof.formats import scan_directory

        found: list[tuple[str | None, str]] = [(kind, str(file)) for kind, file in scan_directory(path).sessions]
    else:
        found = [(input_format, path)]
    out: list[SessionSpend] = []
    for kind, file in found:
        try:
            trace = read_trace(file, kind)
        except Exception as exc:  # noqa: BLE001  a session that cannot be read: a note, not a failed check
            if not os.path.isdir(path):
                raise
            out.append(SessionSpend("", "", "", file, (), error=str(exc).splitlines()[0] if str(exc) else "unreadable"))
            continue
        project = next((call.cwd for call in trace.calls if call.cwd), None) or ""
        stem = os.path.splitext(os.path.basename(file))[0]
        out.append(SessionSpend(trace.format, project, trace.session or stem, file, tuple(call_spends(trace))))
    return out
