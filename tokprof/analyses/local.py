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
    recorded: int | None = None  # the calls whose usage the log records (None: the file could not be read)

    def to_dict(self) -> dict:
        return {
            "agent": self.agent,
            "project": self.project,
            "path": self.path,
            "format": self.format,
            "start": self.start.isoformat() if self.start else None,
            "calls": self.calls,
            "cost": self.cost,
            "calls_with_usage": self.recorded,
            "error": self.error,
        }


def _cost(trace: Trace) -> float | None:
    from tokprof.analyses.cost import genai_price, priced_tokens

    total = 0.0
    priced = 0
    for call in trace.calls:
        if call.reported is None or not call.reported.prompt:
            continue
        if not call.model:
            return None
        try:
            tokens, prompt, _ = priced_tokens(call.reported, 0)
            total += float(genai_price(call.model, tokens, prompt, call.day)[2]["total"])
        except Exception:  # genai-prices has no price for the model: not priced, never 0
            return None
        priced += 1
    return round(total, 8) if priced else None


def _row(found: SessionFile) -> LocalSession:
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
        )
    times = [call.time for call in trace.calls if call.time is not None]
    return LocalSession(
        found.agent,
        found.project,
        str(found.path),
        found.format,
        min(times) if times else mtime,
        len(trace.calls),
        _cost(trace),
        recorded=sum(1 for call in trace.calls if call.reported is not None and call.reported.prompt),
    )


def local_sessions(
    agent: str | None = None, home: Path | None = None, environ: Mapping[str, str] | None = None
) -> list[LocalSession]:
    """Every supported agent's sessions on this machine (or one agent's), newest first."""
    rows = [_row(found) for found in local_session_files(agent, home, environ)]
    oldest = datetime.min.replace(tzinfo=timezone.utc)
    return sorted(rows, key=lambda row: (row.start or oldest, row.path), reverse=True)
