"""Renderers of the agent sessions on this machine (``tokprof sessions``): a row per session, newest first."""

from __future__ import annotations

import json
from collections.abc import Sequence

from tokprof.analyses.local import LocalSession
from tokprof.render import RenderOptions
from tokprof.render.console import Column, fit_table, safe, text_console
from tokprof.render.money import dollars


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
            cells.append([safe(row.agent), safe(row.project or "-"), start, calls, cost, safe(row.path)])
        if cells:
            table = fit_table(console, columns, cells)
            if "file" not in {str(column.header) for column in table.columns}:
                # Too narrow for the paths: number the rows and print each path whole on a line of its own
                # (the path is what the next command needs; it is never cut).
                numbered = [Column("#"), *(c for c in columns if c.header != "file")]
                table = fit_table(console, numbered, [[str(i), *cell[:-1]] for i, cell in enumerate(cells, 1)])
                console.print(table)
                width = len(str(len(rows)))
                for i, row in enumerate(rows, 1):
                    console.print(f"  {i:>{width}}  {safe(row.path)}", soft_wrap=True)
            else:
                console.print(table)
        for row in rows:
            if row.error:
                console.print(f"[yellow]unreadable[/yellow]: {safe(row.error)}")
        console.print("  one session: tokprof profile FILE")
        return out.getvalue()


class LocalJsonRenderer:
    def render(self, rows: Sequence[LocalSession], options: RenderOptions = RenderOptions()) -> str:
        return json.dumps({"sessions": [row.to_dict() for row in rows]}, indent=2, ensure_ascii=False) + "\n"
