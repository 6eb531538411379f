"""Count every model call once across the session files of a directory."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tokprof.base.errors import InputError
from tokprof.trace import Call, Trace

DUPLICATE = "a model call already counted in another session file is counted once (a resumed or copied session)"


def count_once(trace: Trace, seen: set[str]) -> Trace:
    """Leave out calls already counted in another session file (Claude Code copies a resumed session's
    calls into the new transcript): each provider request id is counted once. ``seen`` holds the ids
    counted so far and gains this trace's. Raises InputError when every call was counted already.
    The trace's calls fed to :func:`counted_once` (the one way)."""
    trace.calls = list(counted_once(trace.calls, seen, trace))
    return trace


def counted_once(calls: Iterable[Call], seen: set[str], trace: Trace) -> Iterator[Call]:
    """:func:`count_once` of a stream of calls (``trace``: its header, which the notes go to): each call
    not counted before, numbered anew, as it comes; InputError at the end when every call was."""
    kept = read = 0
    for call in calls:
        read += 1
        if call.request_id is not None and call.request_id in seen:
            trace.note("duplicate-call", DUPLICATE, call.where)
            continue
        if call.request_id is not None:
            seen.add(call.request_id)
        call.index = kept
        kept += 1
        yield call
    if read and not kept:
        raise InputError(trace.path, None, "every call is already counted in another session file")
