"""Count every model call once across the session files of a directory."""

from __future__ import annotations

from tokprof.base.errors import InputError
from tokprof.trace import Trace


def count_once(trace: Trace, seen: set[str]) -> Trace:
    """Leave out calls already counted in another session file (Claude Code copies a resumed session's
    calls into the new transcript): each provider request id is counted once. ``seen`` holds the ids
    counted so far and gains this trace's. Raises InputError when every call was counted already."""
    kept = []
    for call in trace.calls:
        if call.request_id is not None and call.request_id in seen:
            trace.note(
                "duplicate-call",
                "a model call already counted in another session file is counted once (a resumed or copied session)",
                call.where,
            )
            continue
        if call.request_id is not None:
            seen.add(call.request_id)
        kept.append(call)
    if not kept and trace.calls:
        raise InputError(trace.path, None, "every call is already counted in another session file")
    for index, call in enumerate(kept):
        call.index = index
    trace.calls = kept
    return trace
