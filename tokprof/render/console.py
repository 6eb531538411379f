"""The rich console every text renderer writes to: a string buffer, colour only when asked."""

from __future__ import annotations

import io

from rich.console import Console


def text_console(color: bool, width: int | None = None) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    console = Console(
        file=out, force_terminal=color, no_color=not color, width=width or 120, highlight=False,
        color_system="standard" if color else None,
    )
    return console, out
