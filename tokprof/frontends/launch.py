"""The console script: ``tokprof statusline`` starts without the command line's imports (Claude
Code runs it at every update of its status bar); every other command goes to :mod:`tokprof.frontends.cli`.

When a command is done, the process leaves without tearing the interpreter down: the exit handlers
run and the standard streams are flushed as at any exit, but the objects a profile built (a 150,000-token
vocabulary held twice, by Python and by tiktoken, numpy's state) are not freed one by one, which
took about 0.1 s of CPU after the output was written. A thread still running, or a stream that
cannot be flushed, makes it an ordinary exit. numpy's BLAS is told to start no threads (tokprof does
no linear algebra), unless the user says otherwise.
"""

from __future__ import annotations

import sys


def entry() -> None:
    import os

    # tokprof's arrays are counts and offsets, never linear algebra: numpy's BLAS starts no threads
    # (making them costs about 0.03 s of CPU at import); a user's own setting stands
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if sys.argv[1:] == ["statusline"]:
        from tokprof.frontends.statusline import main

        print(main(sys.stdin.read()))
        leave(0)
    from tokprof.frontends.cli import main as cli_main

    leave(cli_main())


def leave(code: int) -> None:
    """Exit with ``code``: the exit handlers and the flushes of an ordinary exit, then no teardown
    (see the module's docstring)."""
    import atexit
    import os
    import threading

    if threading.active_count() > 1:
        raise SystemExit(flushed(code))
    try:
        atexit._run_exitfuncs()
    except Exception:  # noqa: BLE001 - the ordinary exit reports it as it would
        raise SystemExit(flushed(code)) from None
    code = flushed(code)  # after the exit handlers, which may still write
    try:
        sys.stderr.flush()
    except OSError:
        pass
    os._exit(code)


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
