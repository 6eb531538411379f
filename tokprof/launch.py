"""The console script: ``tokprof statusline`` starts without the command line's imports (Claude
Code runs it at every update of its status bar); every other command goes to :mod:`tokprof.cli`."""

from __future__ import annotations

import sys


def entry() -> None:
    if sys.argv[1:] == ["statusline"]:
        from tokprof.statusline import main

        print(main(sys.stdin.read()))
        raise SystemExit(0)
    from tokprof.cli import entry as cli_entry

    cli_entry()
