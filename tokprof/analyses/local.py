"""The agent sessions on this machine (:mod:`tokprof.formats.locations`): one row per session, newest
first, with its agent, project, start, calls and reported cost.

A row is made from the log alone, without counting a token: ``calls`` is the number of model calls
the reader finds, ``cost`` the sum of genai-prices' prices of the calls' reported usage (None when
a call with usage names a model genai-prices does not price, or no call reports usage: "not
priced", never 0); ``recorded`` the calls whose usage the log records (a cost is theirs alone: an
agent that records none, such as Goose or Continue, has no cost, "not recorded"). ``start`` is the
first call's time, else the file's modification time. A file that cannot be read is a row with its
``error`` (one line, as ``tokprof profile`` would say it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from tokprof.analyses.periods import SessionSpend
from tokprof.pricing.spend import CallSpend, call_spends, dollars_of
from tokprof.base.errors import TokprofError
from tokprof.formats.discovery import SessionFile, local_session_files
from tokprof.trace import Trace


@dataclass(frozen=True)
class LocalSession:
    agent: str
    project: str
    path: str
    format: str
    start: datetime | None
    calls: int | None  # None: the file could not be read
    cost: float | None  # US dollars; None: not priced
    error: str | None = None
    #: calls whose usage the session does not record while it records the others': not in ``cost``
    #: (as ``tokprof profile`` leaves them out: one rule, #48.2)
    usage_not_recorded: int = 0
    session: str = ""  # the session's id (the log's, else the file's name without its suffix)
    spends: tuple[CallSpend, ...] = ()  # each call's reported usage and price (not in to_dict)

    def spend(self) -> SessionSpend:
        return SessionSpend(self.agent, self.project, self.session, self.path, self.spends)

    recorded: int | None = None  # the calls whose usage the log records (None: the file could not be read)

    def to_dict(self) -> dict:
        return {
            "session": self.session,
            "agent": self.agent,
            "project": self.project,
            "path": self.path,
            "format": self.format,
            "start": self.start.isoformat() if self.start else None,
            "calls": self.calls,
            "cost": self.cost,
            "calls_with_usage": self.recorded,
            "error": self.error,
            "usage_not_recorded": self.usage_not_recorded,
        }


def _cost(spends: list[CallSpend]) -> float | None:
    """The session's price: None when a call with usage names a model genai-prices does not price, or
    no call reports usage (not priced, never 0)."""
    reported = [spend for spend in spends if spend.reported]
    if not reported or any(spend.cost is None for spend in reported):
        return None
    return float(dollars_of(sum(spend.cost or 0 for spend in reported)))


def project_of(trace: Trace, folder: str) -> str:
    """The session's project: the working directory its log records (the first call's that does), else
    the name of the agent's folder for it."""
    return next((call.cwd for call in trace.calls if call.cwd), None) or folder


def session_row(found: SessionFile) -> LocalSession:
    """A session file's row: read whole, its calls' spend worked out (an unreadable file: its error)."""
    from tokprof.pricing.cost import usage_not_recorded
    from tokprof.formats import read_trace

    try:
        mtime = datetime.fromtimestamp(found.path.stat().st_mtime, tz=timezone.utc)
    except OSError:
        mtime = None
    try:
        trace = read_trace(str(found.path), found.format)
    except TokprofError as exc:
        return LocalSession(
            found.agent,
            found.project,
            str(found.path),
            found.format,
            mtime,
            None,
            None,
            error=str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
            session=found.path.stem,
        )
    times = [call.time for call in trace.calls if call.time is not None]
    spends = call_spends(trace)
    return LocalSession(
        found.agent,
        project_of(trace, found.project),
        str(found.path),
        found.format,
        min(times) if times else mtime,
        len(trace.calls),
        _cost(spends),
        usage_not_recorded=len(usage_not_recorded(trace)),
        session=trace.session or found.path.stem,
        spends=tuple(spends),
        recorded=sum(1 for call in trace.calls if call.reported is not None and call.reported.prompt),
    )


def local_sessions(
    agent: str | None = None, home: Path | None = None, environ: Mapping[str, str] | None = None
) -> list[LocalSession]:
    """Every supported agent's sessions on this machine (or one agent's), newest first."""
    return newest_first([session_row(found) for found in local_session_files(agent, home, environ)])


def newest_first(rows: list[LocalSession]) -> list[LocalSession]:
    oldest = datetime.min.replace(tzinfo=timezone.utc)
    return sorted(rows, key=lambda row: (row.start or oldest, row.path), reverse=True)
