"""Picking one of the machine's sessions: by its row number in the last ``tokprof sessions`` listing
(``tokprof profile 4``, ``--session 4``), the newest (``--latest``), or the start of its id (``tokprof
profile 3f2a``).

Each table or JSON listing of the sessions (without ``--by``) is remembered in the state folder
(:func:`tokprof.base.files.state_dir`, ``last-sessions.json``): the row numbers it showed, and each
row's file, format and id. Remembering is a convenience: a state folder that cannot be written is
not an error.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tokprof.analyses.local import LocalSession
from tokprof.base.errors import TokprofError
from tokprof.base.files import state_dir, write_atomic
from tokprof.base.text import home_shown, visible

LISTING = "last-sessions.json"
CACHE = "sessions-cache.json"  # each session file's row and calls' spend (tokprof.analyses.local_cache)
VERSION = 1
#: How many candidates an ambiguous id prefix names.
SHOWN = 5


@dataclass(frozen=True)
class Picked:
    path: str
    format: str
    session: str


def save_listing(rows: Sequence[LocalSession]) -> None:
    """Remember a listing's rows (their numbers are their places, from 1)."""
    doc = {
        "version": VERSION,
        "rows": [{"path": row.path, "format": row.format, "session": row.session} for row in rows],
    }
    try:
        write_atomic(state_dir() / LISTING, (json.dumps(doc, ensure_ascii=False) + "\n").encode("utf-8"))
    except OSError:
        pass  # a read-only home: the listing is not remembered, the command still works


def load_cache() -> dict:
    """What earlier listings remembered of each session file (empty when nothing, or not readable)."""
    try:
        with open(state_dir() / CACHE, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError, RecursionError):
        return {}
    files = doc.get("files") if isinstance(doc, dict) and doc.get("version") == VERSION else None
    return files if isinstance(files, dict) else {}


def save_cache(cache: dict) -> None:
    try:
        data = json.dumps({"version": VERSION, "files": cache}, ensure_ascii=False, separators=(",", ":"))
        write_atomic(state_dir() / CACHE, (data + "\n").encode("utf-8"))
    except OSError:
        pass  # not remembered: the next listing reads every file again


def machine_sessions(agent: str | None = None) -> list[LocalSession]:
    """The sessions on this machine (:func:`local_sessions`), reading only the files that are
    new or changed since the last listing."""
    from tokprof.runs.sessions import local_sessions

    cache = load_cache()
    rows = local_sessions(agent, cache=cache)
    save_cache(cache)
    return rows


def last_listing() -> list[Picked] | None:
    """The rows of the last listing (None: none remembered, or not readable)."""
    try:
        with open(state_dir() / LISTING, encoding="utf-8") as f:
            doc = json.load(f)
        return [Picked(str(r["path"]), str(r["format"]), str(r["session"])) for r in doc["rows"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def by_number(text: str) -> Picked:
    """Row ``text`` (1, 2, ...) of the last listing."""
    rows = last_listing()
    if rows is None:
        raise TokprofError(f"{text}: no such file, and no sessions listing to pick row {text} of: run tokprof sessions")
    number = int(text)
    if not 1 <= number <= len(rows):
        raise TokprofError(f"{text}: the last tokprof sessions listing has rows 1 to {len(rows)}")
    return rows[number - 1]


def by_prefix(text: str, rows: Sequence[Picked]) -> Picked | None:
    """The one row whose session id starts with ``text`` (None: none does; two or more: an error
    naming them)."""
    found = [row for row in rows if row.session.startswith(text)]
    unique = {row.path: row for row in found}
    if len(unique) > 1:
        named = ", ".join(
            f"{visible(row.session)} ({visible(home_shown(row.path))})" for row in list(unique.values())[:SHOWN]
        )
        more = f" and {len(unique) - SHOWN} more" if len(unique) > SHOWN else ""
        raise TokprofError(f"{text}: {len(unique)} sessions start with this id: {named}{more}")
    return next(iter(unique.values()), None)


def looks_like_pick(text: str) -> bool:
    """Whether a LOG argument that is no file may name a session: a row number or an id's start."""
    return not os.path.exists(text) and bool(re.fullmatch(r"[0-9A-Za-z][0-9A-Za-z_-]{0,127}", text))


def pick(text: str, fresh: Callable[[], Sequence[LocalSession]]) -> Picked | None:
    """The session ``text`` names: a row number of the last listing, else the start of a session id
    in the last listing (without one, among the sessions on this machine, ``fresh``); None when it
    names none."""
    if text.isdigit() and len(text) < 7:
        return by_number(text)
    listed = last_listing()
    if listed:
        return by_prefix(text, listed)
    rows = [Picked(row.path, row.format, row.session) for row in fresh() if row.error is None]
    return by_prefix(text, rows)


def latest(rows: Sequence[LocalSession]) -> Picked:
    """The newest readable session of ``rows`` (newest first, as :func:`tokprof.local_sessions` gives them)."""
    for row in rows:
        if row.error is None:
            return Picked(row.path, row.format, row.session)
    raise TokprofError("--latest: no session on this machine (tokprof sessions lists where tokprof looks)")
