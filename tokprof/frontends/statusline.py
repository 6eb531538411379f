"""``tokprof statusline``: one short line for Claude Code's status bar.

Claude Code runs the ``statusLine`` command at most every 300 ms while a session changes, with a
JSON object on standard input (``session_id``, ``transcript_path``, ``cwd``, ``model`` {``id``,
``display_name``}, ``workspace`` {``current_dir``, ``project_dir``}, ``cost`` {``total_cost_usd``,
...}, newer versions ``context_window`` {``context_window_size``, ...}), and shows the first line
printed; an error or empty output blanks it. The line is made from the transcript's reported usage:
context fill of the newest call's prompt against the window Claude Code runs the model with (the
input's ``context_window_size``, else 200,000 unless a ``[1m]`` model id or a prompt above 200,000
shows the 1M option), the tokens left before Claude Code compacts the conversation by itself, what
the call added, the session's cost (Claude Code's own ``cost.total_cost_usd``, when given:
genai-prices is not loaded) and cache read share.

Repeat calls are cheap: the follower and reader state is kept in the user's cache directory
(``statusline`` in tokprof's cache: ``$TOKPROF_CACHE_DIR``, else ``$XDG_CACHE_HOME/tokprof``, else
``~/.cache/tokprof``), one file per
transcript (named by the SHA-256 of its path), so a call reads only what was appended. No tokenizer
is loaded: the buckets shown are the newest a background counter wrote
(:mod:`tokprof.frontends.statusline_counter`, started here when calls are not counted yet). Nothing from the
log reaches the line but numbers; a problem prints ``tokprof: ...`` and exits 0.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import pickle
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

from tokprof.frontends.statusline_files import state_file

#: The prompt states kept for lines to come (a rewind to an older line rebuilds its state once).
KEPT_STATES = 16
STATE_VERSION = 3  # 2: the reader keeps no prompts (Incremental(prompts=False)); 3: the agent's window


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """The cyclic garbage collector off: pickling makes or walks thousands of objects, none of them
    garbage, and the collections it would set off cost about a third of the time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _load(transcript: str) -> Any:
    try:
        with open(state_file(transcript), "rb") as f, _no_gc():
            version, live = pickle.load(f)
        return live if version == STATE_VERSION else None
    except Exception:  # noqa: BLE001 - no state, or a state from another version: start again
        return None


def _save(transcript: str, live: Any) -> None:
    live.reader.forget(KEPT_STATES)
    reader = live.reader.reader
    reader.converted.clear()  # keyed by object ids, which do not survive a pickle; so is the list of
    reader.lists.clear()  # each state's messages (one per call: quadratic in the session's length)
    target = state_file(transcript)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".state-")
    try:
        with os.fdopen(fd, "wb") as f, _no_gc():
            pickle.dump((STATE_VERSION, live), f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


def _k(n: int) -> str:
    return f"{n / 1000:.0f}k" if abs(n) >= 10_000 else f"{n / 1000:.1f}k" if abs(n) >= 1000 else str(n)


def line(payload: dict) -> str:
    from tokprof.live import LiveSession

    transcript = payload.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return "tokprof: no transcript_path in the status line input"
    if not os.path.isfile(transcript):
        return "tokprof: waiting for the transcript"
    live = _load(transcript)
    if live is None or live.path != transcript:
        live = LiveSession(transcript, count=False, price=False)
    live.agent_says(*_agent_says(payload))  # the newest call's figures again, when the agent says otherwise
    live.update()
    _save(transcript, live)
    last = live.last
    if last is None:
        return "tokprof: no model call yet"
    parts = []
    if last.fill is not None:
        mark = " !" if last.past else ""
        parts.append(f"ctx {last.fill:.0%}{mark} of {_k(last.window or 0)}")
    else:
        parts.append(f"prompt {_k(last.prompt)}")
    if last.to_compact is not None:
        parts.append(f"{_k(last.to_compact)} to compact" if last.to_compact > 0 else "compact due")
    if last.added is not None:
        parts.append(f"+{_k(last.added)}" if last.added >= 0 else f"-{_k(-last.added)}")
    parts += _buckets(transcript, last.call)
    cost = (payload.get("cost") or {}).get("total_cost_usd") if isinstance(payload.get("cost"), dict) else None
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        parts.append(f"${cost:.2f}")
    if last.cache_read_share is not None:
        parts.append(f"cache {last.cache_read_share:.0%}")
    if last.cache_broke:
        parts.append("cache broke")
    return " · ".join(parts)


def _agent_says(payload: dict) -> tuple[int | None, str | None]:
    """The window Claude Code's input gives (``context_window.context_window_size``, in versions that
    send it) and its model id (``model.id``: ``[1m]`` names the 1M option)."""
    context = payload.get("context_window")
    size = context.get("context_window_size") if isinstance(context, dict) else None
    window = size if isinstance(size, int) and not isinstance(size, bool) and 0 < size < 10**9 else None
    model = payload.get("model")
    given = model.get("id") if isinstance(model, dict) else None
    return window, given if isinstance(given, str) and 0 < len(given) < 200 else None


#: Each bucket's name where space is short (the status line, watch's table): no two alike.
LABELS = {
    "system": "system",
    "tool_definitions": "tools",
    "tool_results": "results",
    "conversation": "conversation",
    "unrecorded": "unrecorded",
}
#: The buckets the line shows, by their short names; ``~`` marks an estimate.
SHOWN = tuple((name, LABELS[name]) for name in ("tool_definitions", "tool_results", "unrecorded"))


def _buckets(transcript: str, call: int) -> list[str]:
    """The newest buckets the counter wrote (a call behind at most while it counts), and the counter
    started when calls are not counted yet (:mod:`tokprof.frontends.statusline_counter`)."""
    from tokprof.frontends import statusline_counter as counter

    if not counter.enabled():
        return []
    found = counter.counted(transcript)
    if found is None or found.call < call:
        try:
            counter.ensure(transcript)
        except OSError:  # a cache folder not writable, no process to spare: the line without buckets
            return []
    if found is None or found.call > call:  # none yet, or of a file since replaced
        return []
    mark = "~" if found.estimate else ""
    return [f"{label} {mark}{_k(found.buckets[name])}" for name, label in SHOWN if found.buckets.get(name)]


def main(stdin: str) -> str:
    """The status line for Claude Code's input; never raises."""
    try:
        try:
            payload = json.loads(stdin or "{}")
        except ValueError:
            return "tokprof: the status line input is not JSON"
        if not isinstance(payload, dict):
            return "tokprof: the status line input is not a JSON object"
        return line(payload)
    except Exception as exc:  # noqa: BLE001 - a status bar shows one short line, never a traceback
        return f"tokprof: {type(exc).__name__}"[:80]


if __name__ == "__main__":  # python -m tokprof.frontends.statusline: the fastest start
    print(main(sys.stdin.read()))
