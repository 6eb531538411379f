"""Renderers of the sessions added up by period or group (``tokprof sessions --by``): a row per day,
week, month, project, agent or model (or per combination), and the total row."""

from __future__ import annotations

import json
import re

from tokprof.analyses.periods import PeriodRow, Periods
from tokprof.pricing.spend import dollars_of
from tokprof.base.text import home_shown, visible
from tokprof.render import RenderOptions
from tokprof.render.console import Column, fit_table, safe, text_console
from tokprof.render.local import PROJECT_WIDTHS, middle
from tokprof.pricing.render import dollars
from tokprof.render.table import NOT_RECORDED

LOST_NOTE = (
    "  lost (est.): what cache misses cost, estimated from the reported usage (a call read less than its "
    "thread's previous call left cached); tokprof profile measures each miss and says why, or that no rule does"
)


def _tokens(value: int | None) -> str:
    return NOT_RECORDED if value is None else f"{value:,}"


def _money(value: int | None, priced: bool = True) -> str:
    if value is None:
        return "not priced"
    return dollars(float(dollars_of(value))) + ("" if priced else "+")


def _cells(row: PeriodRow, by: tuple[str, ...], width: int | None, total: bool = False) -> list[str]:
    if total:
        keys = ["[bold]total[/bold]"] + [""] * (len(by) - 1)
    else:
        keys = [
            safe(middle(visible(home_shown(value)), width))
            if name == "project"
            else safe(re.sub(r"-\d{8}$", "", value) if name == "model" else value)
            for name, value in zip(by, row.key)
        ]
    rate = row.hit_rate
    return [
        *keys,
        f"{row.sessions:,}",
        f"{row.calls:,}",
        _tokens(row.uncached),
        _tokens(row.cache_read),
        _tokens(row.cache_write),
        _tokens(row.output),
        _money(row.cost, row.priced),
        "-" if rate is None else f"{rate:.1%}",
        _money(row.lost) if row.lost is not None else "-",
    ]


class PeriodsTableRenderer:
    def render(self, result: Periods, options: RenderOptions = RenderOptions()) -> str:
        from rich.measure import Measurement

        console, out = text_console(options)
        span = ""
        if result.since is not None or result.until is not None:
            start = "…" if result.since is None else result.since.strftime("%Y-%m-%d %H:%M %Z")
            end = "now" if result.until is None else result.until.strftime("%Y-%m-%d %H:%M %Z")
            span = f", {start} to {end}"
        console.print(
            f"[bold]tokprof[/bold] spend by {', '.join(result.by)} ({result.total.sessions} session"
            f"{'' if result.total.sessions == 1 else 's'}, {result.total.calls:,} calls, time zone "
            f"{safe(result.zone)}{span})"
        )
        keys = [Column(name, justify="left") for name in result.by]
        figures = [
            Column("sessions", "sess.", drop=2),
            Column("calls"),
            Column("uncached", "uncach.", drop=5),
            Column("cache read", "c.read"),
            Column("cache write", "c.write", drop=4),
            Column("output", "out", drop=1),
            Column("cost"),
            Column("hit rate", "hit", drop=3),
            Column("lost (est.)", "lost*"),
        ]
        unbounded = console.options.update_width(1_000_000)
        table = None
        # the projects shortened before the billed input's columns are given up, then with them given up
        for most in (3, 5):
            columns = keys + [c if c.drop <= most else Column(c.header, c.short, c.justify) for c in figures]
            for width in PROJECT_WIDTHS:
                cells = [_cells(row, result.by, width) for row in result.rows]
                cells.append(_cells(result.total, result.by, width, total=True))
                table = fit_table(console, columns, cells)
                if Measurement.get(console, unbounded, table).maximum <= console.width:
                    break
                if "project" not in result.by:
                    break
            if table is not None and Measurement.get(console, unbounded, table).maximum <= console.width:
                break
        assert table is not None
        console.print(table)
        if not result.total.priced and result.total.cost is not None:
            console.print("  +cost: some calls' models have no price, and are not in it")
        console.print(LOST_NOTE)
        if NOT_RECORDED in "".join(_cells(result.total, result.by, None)):
            console.print("  n/r: not recorded by the logs")
        for path, why in result.skipped:
            console.print(f"[yellow]skipped[/yellow] {safe(home_shown(path))}: {safe(why)}")
        return out.getvalue()


class PeriodsJsonRenderer:
    def render(self, result: Periods, options: RenderOptions = RenderOptions()) -> str:
        return json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n"
