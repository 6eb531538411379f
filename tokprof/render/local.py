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
            console.print(fit_table(console, columns, cells))
        for row in rows:
            if row.error:
                console.print(f"[yellow]unreadable[/yellow]: {safe(row.error)}")
        console.print("  one session: tokprof profile FILE")
        return out.getvalue()


class LocalJsonRenderer:
    def render(self, rows: Sequence[LocalSession], options: RenderOptions = RenderOptions()) -> str:
        return json.dumps({"sessions": [row.to_dict() for row in rows]}, indent=2, ensure_ascii=False) + "\n"
