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

from tokprof.frontends.stdout import flushed


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
