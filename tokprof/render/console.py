"""The rich console every text renderer writes to: a string buffer, colour only when asked."""

from __future__ import annotations

import io

from rich.console import Console

from tokprof.render import RenderOptions

#: The width of tables when none is given (files and pipes, where no terminal says).
DEFAULT_WIDTH = 120


def text_console(options: RenderOptions) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    console = Console(
        file=out, force_terminal=options.color, no_color=not options.color, width=options.width or DEFAULT_WIDTH,
        highlight=False, color_system="standard" if options.color else None, markup=True, emoji=False,
    )
    return console, out
