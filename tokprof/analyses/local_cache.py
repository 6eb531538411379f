"""What ``tokprof sessions`` remembers of each session file between runs, so that a listing (or its
spend by period) of thousands of sessions reads only the files that are new or changed: each file's
row and its calls' spend (:mod:`tokprof.pricing.spend`), under its size and modification time, and
the tokprof and genai-prices versions (another version reads every file again: other prices).

The front end keeps the entries in the state folder; an entry that is not what this module wrote
(another version, a damaged file) is ignored and the file read again.
"""

from __future__ import annotations

import os
from datetime import datetime

from collections.abc import Mapping
from pathlib import Path

from tokprof.analyses.local import LocalSession, newest_first, session_row
from tokprof.pricing.spend import CallSpend

VERSION = 3  # 2: usage_not_recorded; 3: recorded


def code_key() -> str:
    from tokprof.pricing.cost import genai_version
    from tokprof.version import __version__

    return f"{VERSION}; tokprof {__version__}; genai-prices {genai_version()}"


def _when(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def encode(row: LocalSession, size: int, mtime_ns: int, code: str) -> dict:
    return {
        "code": code,
        "size": size,
        "mtime_ns": mtime_ns,
        "agent": row.agent,
        "project": row.project,
        "format": row.format,
        "start": _when(row.start),
        "calls": row.calls,
        "cost": row.cost,
        "error": row.error,
        "session": row.session,
        "usage_not_recorded": row.usage_not_recorded,
        "recorded": row.recorded,
        "spends": [
            [_when(s.time), s.model, s.uncached, s.cache_read, s.cache_write, s.output, s.cost, s.lost, s.project]
            for s in row.spends
        ],
    }


def _int(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("not a whole number")
    return value


def _text(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ValueError("not text")


def _time(value: object) -> datetime | None:
    text = _text(value)
    return None if text is None else datetime.fromisoformat(text)


def decode(path: str, entry: object, size: int, mtime_ns: int, code: str) -> LocalSession | None:
    """The row an entry remembers, when it is of this file as it is now and of this code (else None)."""
    if not isinstance(entry, dict) or entry.get("code") != code:
        return None
    if entry.get("size") != size or entry.get("mtime_ns") != mtime_ns:
        return None
    try:
        spends = tuple(
            CallSpend(
                _time(s[0]),
                _text(s[1]),
                _int(s[2]),
                _int(s[3]),
                _int(s[4]),
                _int(s[5]),
                _int(s[6]),
                _int(s[7]),
                _text(s[8]),
            )  # fmt: skip
            for s in entry["spends"]
        )
        cost = entry["cost"]
        unrecorded = entry.get("usage_not_recorded", 0)
        if isinstance(unrecorded, bool) or not isinstance(unrecorded, int) or unrecorded < 0:
            return None
        if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float))):
            return None
        return LocalSession(
            agent=str(entry["agent"]),
            project=str(entry["project"]),
            path=path,
            format=str(entry["format"]),
            start=_time(entry["start"]),
            calls=_int(entry["calls"]),
            cost=None if cost is None else float(cost),
            error=_text(entry["error"]),
            session=str(entry["session"]),
            usage_not_recorded=unrecorded,
            recorded=_int(entry.get("recorded")),
            spends=spends,
        )
    except (KeyError, TypeError, ValueError, IndexError):
        return None


def stat_of(path: str) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_size, found.st_mtime_ns


def local_sessions_cached(
    cache: dict, agent: str | None = None, home: Path | None = None, environ: Mapping[str, str] | None = None
) -> list[LocalSession]:
    """:func:`tokprof.analyses.local.local_sessions`, reading only the files ``cache`` does not
    remember as they are now; ``cache`` is updated in place (files that are gone are forgotten)."""
    from tokprof.formats.discovery import local_session_files

    code = code_key()
    rows = []
    for found in local_session_files(agent, home, environ):
        path = str(found.path)
        stat = stat_of(path)
        row = decode(path, cache.get(path), *stat, code) if stat is not None else None
        if row is None or row.agent != found.agent:
            row = session_row(found)
            if stat is not None:
                cache[path] = encode(row, *stat, code)
        rows.append(row)
    for path in [p for p in cache if not os.path.exists(p)]:
        del cache[path]
    return newest_first(rows)
