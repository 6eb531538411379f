"""Renderers of the agent sessions on this machine (``tokprof sessions``): a row per session, newest first."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from rich.console import Console
from rich.containers import Lines
from rich.text import Text

from tokprof.analyses.local import LocalSession
from tokprof.render import RenderOptions
from tokprof.render.console import Column, fit_table, safe, text_console
from tokprof.render.money import dollars
from tokprof.base.text import home_shown, visible


class LocalTableRenderer:
    def render(self, rows: Sequence[LocalSession], options: RenderOptions = RenderOptions()) -> str:
        console, out = text_console(options)
        console.print(
            f"[bold]tokprof[/bold] sessions on this machine ({len(rows)} session{'' if len(rows) == 1 else 's'}, "
            "newest first)"
        )
        columns = [
            Column("agent", justify="left"),
            Column("project", justify="left", drop=2),
            Column("start (UTC)", "start", justify="left"),
            Column("calls"),
            Column("cost"),
            Column("file", justify="left", drop=1),
        ]
        cells = []
        for row in rows:
            start = row.start.strftime("%Y-%m-%d %H:%M") if row.start else "-"
            calls = "unreadable" if row.calls is None else f"{row.calls:,}"
            cost = "not priced" if row.cost is None else dollars(row.cost)
            if row.recorded == 0:
                cost = "not recorded"  # the agent records no usage (Goose, Continue, ...): no cost, never 0
            elif row.recorded is not None and row.calls and row.recorded < row.calls:
                cost = f"{cost} ({row.recorded}/{row.calls})"
            cells.append([safe(row.agent), safe(row.project or "-"), start, calls, cost, safe(home_shown(row.path))])
        if cells:
            table = fit_table(console, columns, cells)
            if "file" not in {str(column.header) for column in table.columns}:
                # Too narrow for the paths: number the rows, and list the files under their folders, each
                # folder once for the rows in it that follow each other (a path is what the next command
                # needs: never cut; a folder wider than the terminal folds onto a second line).
                numbered = [Column("#"), *(c for c in columns if c.header != "file")]
                table = fit_table(console, numbered, [[str(i), *cell[:-1]] for i, cell in enumerate(cells, 1)])
                console.print(table)
                _files_by_folder(console, rows)
            else:
                console.print(table)
        for row in rows:
            if row.error:
                console.print(f"[yellow]unreadable[/yellow]: {safe(row.error)}")
        if any(row.recorded and row.calls and row.recorded < row.calls for row in rows):
            console.print("  cost (n/m): of the n calls of m whose usage the agent recorded")
        console.print("  one session: tokprof profile FILE")
        return out.getvalue()


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
