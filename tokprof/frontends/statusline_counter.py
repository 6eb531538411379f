"""The bucket counter behind ``tokprof statusline``: a process of its own that counts the buckets of
a Claude Code transcript's newest call, so that the status line itself loads no tokenizer.

Counting needs the model's tokenizer and chat template: over a second to load and a few to count a
long session from nothing, far more than the 300 ms a status line has. So the status line starts
this counter in the background (:func:`ensure`) when the transcript has calls it has not counted,
and shows the newest buckets it wrote. The counter follows the transcript with a
:class:`tokprof.LiveSession` (the tokenizer loaded once, what it learnt from earlier prompts kept),
writes the newest main-thread call's buckets to ``<key>.buckets.json`` beside the status line's
state (atomically), and exits after :data:`IDLE` seconds without a new call (``$TOKPROF_STATUSLINE_IDLE``)
or when the transcript is gone. One counter per transcript: it holds an exclusive lock on
``<key>.lock`` (POSIX ``flock``; without it, no buckets) for its life, with its pid written there.
``TOKPROF_STATUSLINE_BUCKETS=0`` turns it off.

``python -m tokprof.frontends.statusline_counter TRANSCRIPT`` runs it (what :func:`ensure` starts).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tokprof.frontends.statusline_files import state_file

#: Seconds without a new call after which the counter exits.
IDLE = 600.0
#: Seconds between reads of the transcript.
POLL = 0.25
COUNTS_VERSION = 1


@dataclass(frozen=True)
class Counted:
    """The buckets the counter wrote: of call number ``call`` (0-based, as the status line numbers them)."""

    call: int
    buckets: dict[str, int]
    estimate: bool


def _files(transcript: str) -> tuple[Path, Path]:
    state = state_file(transcript)
    return state.with_suffix(".buckets.json"), state.with_suffix(".lock")


def enabled() -> bool:
    if os.environ.get("TOKPROF_STATUSLINE_BUCKETS", "1").strip().lower() in ("0", "no", "off", "false"):
        return False
    try:
        import fcntl  # noqa: F401 - POSIX only
    except ImportError:
        return False
    return True


def counted(transcript: str) -> Counted | None:
    """The newest buckets written for a transcript, or None."""
    path, _ = _files(transcript)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("version") != COUNTS_VERSION or doc.get("transcript") != os.path.abspath(transcript):
            return None
        buckets = {str(k): int(v) for k, v in doc["buckets"].items()}
        return Counted(int(doc["call"]), buckets, bool(doc["estimate"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _locked(path: Path) -> IO[str] | None:
    """The lock file, locked by this process; None when another process holds it."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+", encoding="ascii")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


def running(transcript: str) -> bool:
    """Whether a counter holds the transcript's lock."""
    handle = _locked(_files(transcript)[1])
    if handle is None:
        return True
    handle.close()  # closing releases the lock
    return False


def ensure(transcript: str) -> bool:
    """Start the transcript's counter in the background unless one runs; True when one was started."""
    if not enabled() or running(transcript):
        return False
    subprocess.Popen(
        [sys.executable, "-m", "tokprof.frontends.statusline_counter", os.path.abspath(transcript)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    return True


def _write(path: Path, transcript: str, call: int, buckets: dict[str, int], estimate: bool) -> None:
    doc = {
        "version": COUNTS_VERSION,
        "transcript": os.path.abspath(transcript),
        "call": call,
        "buckets": buckets,
        "estimate": estimate,
    }
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(doc), encoding="utf-8")
    os.replace(tmp, path)


def count(transcript: str, idle: float | None = None) -> int:
    """Follow the transcript and write its newest main-thread call's buckets until it is idle or gone."""
    from tokprof.live import LiveSession

    counts, lock = _files(transcript)
    handle = _locked(lock)
    if handle is None:
        return 0  # another counter follows it
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    idle = float(os.environ.get("TOKPROF_STATUSLINE_IDLE") or IDLE) if idle is None else idle
    live = LiveSession(transcript, count=True, price=False)
    first, seen, written = True, time.monotonic(), None
    while os.path.isfile(transcript):
        new = live.update(count_every=not first)  # a first read counts its newest call only
        first = False
        last = live.last
        if last is not None and last.buckets is not None and last.call != written:
            _write(counts, transcript, last.call, last.buckets, last.estimate)
            written = last.call
        if new:
            seen = time.monotonic()
        elif time.monotonic() - seen > idle:
            break
        time.sleep(POLL)
    handle.close()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(count(sys.argv[1]))
    except Exception:  # noqa: BLE001 - a background counter dies quietly: the status line shows no buckets
        sys.exit(1)
