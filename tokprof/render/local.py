"""Renderers of the agent sessions on this machine (``tokprof sessions``): a row per session, newest first."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from rich.console import Console
from rich.containers import Lines
from rich.table import Table
from rich.text import Text

from tokprof.analyses.local import LocalSession
from tokprof.render import RenderOptions
from tokprof.render.console import Column, fit_table, safe, text_console
from tokprof.pricing.render import dollars
from tokprof.base.text import home_shown, visible


#: The widths the project column is shortened to, in turn, until the table fits (never dropped).
PROJECT_WIDTHS = (None, 48, 40, 32, 26, 20, 16, 12)


def middle(text: str, width: int | None) -> str:
    """``text`` at most ``width`` characters long, its middle given up for an ellipsis: the start of a
    path and more of its end (the project's own name) are kept."""
    if width is None or len(text) <= width:
        return text
    head = (width - 1) // 3
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


class LocalTableRenderer:
    def render(self, rows: Sequence[LocalSession], options: RenderOptions = RenderOptions()) -> str:
        from rich.measure import Measurement

        console, out = text_console(options)
        console.print(
            f"[bold]tokprof[/bold] sessions on this machine ({len(rows)} session{'' if len(rows) == 1 else 's'}, "
            "newest first)"
        )
        columns = [
            Column("#"),
            Column("session", justify="left", drop=3),
            Column("agent", justify="left"),
            Column("project", justify="left"),
            Column("start (UTC)", "start", justify="left"),
            Column("calls"),
            Column("cost"),
            Column("file", justify="left", drop=1),
        ]
        unbounded = console.options.update_width(1_000_000)
        tables = []  # a table per project width, until one keeps the files
        for width in PROJECT_WIDTHS if rows else ():
            cells = [_cells(number, row, width) for number, row in enumerate(rows, 1)]
            table = fit_table(console, columns, cells)
            fits = Measurement.get(console, unbounded, table).maximum <= console.width
            tables.append((table, fits))
            if fits and "file" in {str(column.header) for column in table.columns}:
                break
        # the widest project column that keeps the files; else the widest that fits; else the narrowest
        chosen: Table | None = next((t for t, fits in tables if fits), tables[-1][0]) if tables else None
        if tables and tables[-1][1] and "file" in {str(c.header) for c in tables[-1][0].columns}:
            chosen = tables[-1][0]
        if chosen is not None:
            console.print(chosen)
            if "file" not in {str(column.header) for column in chosen.columns}:
                # Too narrow for the paths: the files listed under their folders, each folder once for
                # the rows in it that follow each other (a path is what the next command needs: never
                # cut; a folder wider than the terminal folds onto a second line).
                _files_by_folder(console, rows)
        for row in rows:
            if row.error:
                console.print(f"[yellow]unreadable[/yellow]: {safe(row.error)}")
        for row in rows:
            if row.usage_not_recorded:
                n = row.usage_not_recorded
                console.print(
                    f"usage not recorded for {n} call{'' if n == 1 else 's'} of {safe(home_shown(row.path))}: "
                    "not in its cost"
                )
        if any(row.recorded and row.calls and row.recorded < row.calls for row in rows):
            console.print("  cost (n/m): of the n calls of m whose usage the agent recorded")
        console.print("  one session: tokprof profile N (its number here), or FILE")
        return out.getvalue()


def _cells(number: int, row: LocalSession, width: int | None) -> list[str]:
    return [
        str(number),
        safe(row.session[:8]),
        safe(row.agent),
        safe(middle(visible(home_shown(row.project or "-")), width)),
        row.start.strftime("%Y-%m-%d %H:%M") if row.start else "-",
        "unreadable" if row.calls is None else f"{row.calls:,}",
        _cost_cell(row),
        safe(home_shown(row.path)),
    ]


def _cost_cell(row: LocalSession) -> str:
    cost = "not priced" if row.cost is None else dollars(row.cost)
    if row.recorded == 0:
        return "not recorded"  # the agent records no usage (Goose, Continue, ...): no cost, never 0
    if row.recorded is not None and row.calls and row.recorded < row.calls:
        return f"{cost} ({row.recorded}/{row.calls})"
    return cost


def _files_by_folder(console: Console, rows: Sequence[LocalSession]) -> None:
    """Each row's file as its number and its name, under its folder (``~`` for the home folder)."""
    width = len(str(len(rows)))
    folder = None
    for i, row in enumerate(rows, 1):
        parent, name = os.path.split(home_shown(row.path))
        if parent != folder:
            folder = parent
            _folded(console, "  ", os.path.join(parent, ""), "    ")
        prefix = f"    {i:>{width}}  "
        _folded(console, prefix, name, " " * len(prefix))


def _folded(console: Console, prefix: str, path: str, indent: str) -> None:
    """``prefix`` and a path, the path folded at the console's width (every character kept), its
    further lines after ``indent``."""
    shown = Text(visible(path))  # a Text: nothing in the path is read as markup
    lines = shown.wrap(console, max(8, console.width - len(indent)), overflow="fold", no_wrap=False)
    if Text(prefix + shown.plain).cell_len <= console.width:
        lines = Lines([shown])
    for number, line in enumerate(lines):
        console.print(Text(prefix if number == 0 else indent) + line, no_wrap=True, crop=False)


class LocalJsonRenderer:
    def render(self, rows: Sequence[LocalSession], options: RenderOptions = RenderOptions()) -> str:
        return json.dumps({"sessions": [row.to_dict() for row in rows]}, indent=2, ensure_ascii=False) + "\n"
