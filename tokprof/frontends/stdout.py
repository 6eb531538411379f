"""Standard output that cannot be written: a full device or a closed terminal (one line, exit code 2) and a
reader that went away (``tokprof profile LOG | head``: silently). What it still holds is dropped, pointed at
/dev/null, so that the exit does not fail flushing it again. Used by the console script
(:mod:`tokprof.frontends.launch`) and the command line (:mod:`tokprof.frontends.cli`)."""

from __future__ import annotations

import sys


def flushed(code: int) -> int:
    """``code`` once standard output is flushed; when it cannot be (a full disk: one line and 2; a reader
    gone away, ``| head``: 1, silently), what is left of it goes to /dev/null, so that the exit does not
    fail flushing it again (exit code 120 and a traceback-like message)."""
    try:
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        quiet_stdout()
        return code or 1
    except OSError as exc:
        return write_failed(exc)


def write_failed(exc: OSError) -> int:
    """Standard output could not be written (a full device, a closed terminal): one line, and what it
    still holds dropped, so that the exit does not fail flushing it again; the exit code (2)."""
    print(f"tokprof: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
    quiet_stdout()
    return 2


def quiet_stdout() -> None:
    """Point standard output at /dev/null (after it failed, or its reader went away: what it still
    holds is dropped there)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
