"""What every text renderer writes with: a rich console on a string buffer, text from logs made
safe to print, and tables that fit the width they are given.

A line of prose printed as a plain string wraps with a hanging indent (:class:`ProseConsole`), so that
a long summary line or warning never runs back to column 0 at a narrow width.

Text from a log (model and tool names, paths, warning places) is data: :func:`safe` escapes rich
markup in it and shows control characters, escape sequences and bidirectional overrides as
``\\x1b``-style escapes, so that it can neither break a table nor drive the terminal.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from tokprof.render import RenderOptions
from tokprof.base.text import visible

#: The width of tables when none is given (files and pipes, where no terminal says).
DEFAULT_WIDTH = 120


def safe(value: object) -> str:
    """A value from a log, ready for :meth:`Console.print`: visible (see :func:`visible`), markup escaped."""
    return escape(visible(str(value)))


#: A summary line's key ends at a gap of two or more spaces within this many characters.
KEY_SPAN = 32
_KEY = re.compile(r" +\S.*?\S?\s{2,}(?=\S)")


def default_model_line(name: str, selected: str | None) -> str | None:
    """The line under a heading when tokprof fell back to its default model because the log names
    none: the counts are exact for that model, which may not be the log's."""
    if selected and selected.startswith("default"):
        return f"  model {safe(name)} is the default: the log names no model (--model sets it)"
    return None


def hanging_indent(plain: str) -> int:
    """Where a wrapped line's continuation lines start: under the value of a ``  key  value`` line
    (a key ended by two or more spaces near the start), else two columns in from the line's own
    indentation."""
    key = _KEY.match(plain)
    if key is not None and key.end() <= KEY_SPAN:
        return key.end()
    return len(plain) - len(plain.lstrip(" ")) + 2


class ProseConsole(Console):
    """A console whose plain-string lines wrap with a hanging indent (:func:`hanging_indent`);
    tables and other renderables print as rich prints them."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if len(objects) != 1 or kwargs or not isinstance(objects[0], str):
            super().print(*objects, **kwargs)
            return
        for paragraph in objects[0].split("\n"):
            text = Text.from_markup(paragraph, emoji=False)  # as the console: a log's :name: stays text
            indent = min(hanging_indent(text.plain), max(0, self.width // 2))
            if text.cell_len <= self.width:
                super().print(text, no_wrap=True, crop=False)
                continue
            first = text.wrap(self, self.width, overflow="fold")[0]
            first.rstrip()
            super().print(first, no_wrap=True, crop=False)
            rest = text[len(first.plain) :]
            rest = rest[len(rest.plain) - len(rest.plain.lstrip(" ")) :]  # the space the line broke at
            for line in rest.wrap(self, self.width - indent, overflow="fold"):
                line.rstrip()
                super().print(Text(" " * indent) + line, no_wrap=True, crop=False)


def text_console(options: RenderOptions) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    console = ProseConsole(
        file=out,
        force_terminal=options.color,
        no_color=not options.color,
        width=options.width or DEFAULT_WIDTH,
        highlight=False,
        color_system="standard" if options.color else None,
        emoji=False,
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


class NotedTable(Table):
    """A table with a note under it (what :func:`fit_table` left out), written at the console's width
    rather than the table's, which is often narrower: on one line when it fits, else broken between
    its clauses (after ``: ``), and only a clause wider than the console at its words."""

    note: str = ""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from super().__rich_console__(console, options)
        if not self.note:
            return
        clauses = [self.note]
        if Text(self.note).cell_len > options.max_width:
            head, _, tail = self.note.partition(": ")
            clauses = [head + ":", " " + tail] if tail else clauses
        for clause in clauses:
            yield from console.render(Text(clause, justify="default", overflow="fold"), options)  # no padding after it


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
        table = NotedTable(show_edge=False, pad_edge=False, box=None, header_style="bold")
        for i in kept:
            column = columns[i]
            header = column.short if short and column.short else column.header
            table.add_column(header, justify=column.justify, no_wrap=not last, overflow="fold")
        for row in rows:
            table.add_row(*(row[i] for i in kept))
        hidden = len(columns) - len(kept)
        if hidden:
            table.note = (
                f"({hidden} column{'s' if hidden > 1 else ''} left out at this width: "
                "a wider terminal or -f json shows them)"
            )
        if last or Measurement.get(console, unbounded, table).maximum <= console.width:
            return table
    raise AssertionError("unreachable: the last attempt is returned")
    return table
