"""What every text renderer writes with: a rich console on a string buffer, text from logs made
safe to print, and tables that fit the width they are given.

Text from a log (model and tool names, paths, warning places) is data: :func:`safe` escapes rich
markup in it and shows control characters, escape sequences and bidirectional overrides as
``\\x1b``-style escapes, so that it can neither break a table nor drive the terminal.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from tokprof.render import RenderOptions
from tokprof.text import visible

#: The width of tables when none is given (files and pipes, where no terminal says).
DEFAULT_WIDTH = 120

def safe(value: object) -> str:
    """A value from a log, ready for :meth:`Console.print`: visible (see :func:`visible`), markup escaped."""
    return escape(visible(str(value)))


def text_console(options: RenderOptions) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    console = Console(
        file=out, force_terminal=options.color, no_color=not options.color, width=options.width or DEFAULT_WIDTH,
        highlight=False, color_system="standard" if options.color else None, emoji=False,
    )
    return console, out


Justify = Literal["left", "right"]


@dataclass(frozen=True)
class Column:
    """A table column: its header, a shorter one for narrow widths, and when it is given up."""

    header: str
    short: str | None = None
    justify: Justify = "right"
    drop: int = 0  # 0: kept at any width; columns with higher numbers are dropped first


def fit_table(console: Console, columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> Table:
    """The table with the longest headers that fits the console's width: full headers, then the
    short ones, then without the columns that may be dropped, highest ``drop`` first, saying under
    the table how many were left out. Cells are never wrapped, nor shortened: at widths nothing fits
    in, the narrowest table folds its cells onto more lines, every character kept."""
    keep = list(range(len(columns)))
    attempts: list[tuple[list[int], bool]] = [(keep, False), (keep, True)]
    for level in sorted({c.drop for c in columns if c.drop}, reverse=True):
        keep = [i for i in keep if columns[i].drop != level]
        attempts.append((keep, True))
    unbounded = console.options.update_width(1_000_000)  # measure what the table needs, not what it is given
    for number, (kept, short) in enumerate(attempts):
        last = number == len(attempts) - 1
        table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
        for i in kept:
            column = columns[i]
            header = column.short if short and column.short else column.header
            table.add_column(header, justify=column.justify, no_wrap=not last, overflow="fold")
        for row in rows:
            table.add_row(*(row[i] for i in kept))
        hidden = len(columns) - len(kept)
        if hidden:
            table.caption = (f"({hidden} column{'s' if hidden > 1 else ''} left out at this width: "
                             "a wider terminal or -f csv shows them)")
            table.caption_justify = "default"  # left, and no spaces after it
        if last or Measurement.get(console, unbounded, table).maximum <= console.width:
            return table
    raise AssertionError("unreachable: the last attempt is returned")
    return table
