"""Renderers of two runs compared (``tokprof diff A B``): the run's figures, the buckets, the tools,
the cache-miss reasons and the cost parts, each a, b and the change; and what changed first."""

from __future__ import annotations

import json

from tokprof.analyses.diff import Change, RunDiff, Side
from tokprof.base.text import home_shown, visible
from tokprof.render import RenderOptions
from tokprof.render.console import Column, fit_table, safe, text_console

#: How many tools (and reasons) a table shows, largest change first; JSON has them all.
SHOWN = 10
DOLLAR_FIGURES = {"cost", "cache_miss_cost"}
SHARE_FIGURES = {"cache_hit_rate"}
LABELS = {
    "calls": "calls",
    "billed_input": "billed input",
    "first_prompt": "first prompt",
    "largest_prompt": "largest prompt",
    "output": "output (reported)",
    "uncached_input": "uncached input (reported)",
    "cost": "cost",
    "cache_hit_rate": "cache hit rate",
    "cache_miss_cost": "cache misses cost",
}


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return "n/r"
    if unit == "usd":
        return f"${value:,.4f}" if abs(value) < 1 else f"${value:,.2f}"
    if unit == "share":
        return f"{value:.1%}"
    return f"{value:,.0f}"


def _change(change: Change, unit: str) -> str:
    value = change.change
    if value is None:
        return "-"
    if value == 0:
        return "="
    sign = "+" if value > 0 else "-"
    if unit == "usd":
        amount = abs(value)
        return f"{sign}${amount:,.4f}" if amount < 1 else f"{sign}${amount:,.2f}"
    if unit == "share":
        return f"{sign}{abs(value) * 100:.1f} pt"
    relative = f" ({value / change.a:+.0%})" if change.a else ""
    return f"{sign}{abs(value):,.0f}{relative}"


def _unit(name: str) -> str:
    return "usd" if name in DOLLAR_FIGURES else "share" if name in SHARE_FIGURES else "tokens"


def sections(result: RunDiff) -> list[tuple[str, str, list[tuple[str, Change]], int]]:
    """The tables to show: title, unit, rows (at most :data:`SHOWN`, the changed ones for tools and
    reasons) and how many rows were left out."""
    out = []
    figures = [(LABELS[name], change) for name, change in result.figures.items()]
    out.append(("run", "", figures, 0))
    out.append(("buckets (billed input)", "tokens", list(result.buckets.items()), 0))
    for title, unit, rows in (
        ("tools (definition tokens per request)", "tokens", result.tools),
        ("tool results (tokens added)", "tokens", result.tool_results),
        ("cache misses by reason", "usd", result.miss_reasons),
    ):
        changed = [(name, c) for name, c in rows.items() if c.change != 0]
        out.append((title, unit, changed[:SHOWN], max(0, len(changed) - SHOWN)))
    parts = [(name, c) for name, c in result.cost_parts.items() if c.a is not None or c.b is not None]
    out.append(("cost parts", "usd", parts, 0))
    return [section for section in out if section[2]]


def shown_path(path: str) -> str:
    """A path as the reader types it: relative to the working directory when below it, else with ``~``."""
    import os

    here = os.getcwd()
    if os.path.isabs(path) and path.startswith(here.rstrip(os.sep) + os.sep):
        return os.path.relpath(path, here)
    return home_shown(path)


def _side(side: Side) -> str:
    model = f", {side.model}" if side.model else ""
    return f"{visible(shown_path(side.path))} ({side.kind}{model})"


def first_line(result: RunDiff) -> str:
    if result.first_change is not None:
        change = result.first_change
        return f"first change: call {change.call}: {change.detail}"
    if result.same_conversation:
        return "first change: none in the prompts both runs share (the shorter run's prompts are the longer's)"
    if result.same_conversation is False:
        return "not runs of one conversation (their first user messages differ): no first change"
    return ""


class DiffTableRenderer:
    def render(self, result: RunDiff, options: RenderOptions = RenderOptions()) -> str:
        console, out = text_console(options)
        console.print(f"[bold]tokprof diff[/bold] a: {safe(_side(result.a))}")
        console.print(f"             b: {safe(_side(result.b))}")
        for title, unit, rows, left in sections(result):
            console.print(f"\n[bold]{safe(title)}[/bold]")
            cells = [
                [
                    safe(visible(name)),
                    _value(c.a, unit or _unit(_key(result, name))),
                    _value(c.b, unit or _unit(_key(result, name))),
                    _change(c, unit or _unit(_key(result, name))),
                ]
                for name, c in rows
            ]
            columns = [Column("", justify="left"), Column("a"), Column("b"), Column("change")]
            console.print(fit_table(console, columns, cells))
            if left:
                console.print(f"  and {left} more (-f json has them all)")
        line = first_line(result)
        if line:
            console.print("\n" + safe(line))
        return out.getvalue()


def _key(result: RunDiff, label: str) -> str:
    return next((name for name, shown in LABELS.items() if shown == label), label)


class DiffJsonRenderer:
    def render(self, result: RunDiff, options: RenderOptions = RenderOptions()) -> str:
        return json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n"


def _cell(text: str) -> str:
    """Text from a log for Markdown: shown as written, no markup (as the check's comment writes it)."""
    from tokprof.render.check import md

    return md(text)


class DiffMarkdownRenderer:
    def render(self, result: RunDiff, options: RenderOptions = RenderOptions()) -> str:
        lines = [
            "### tokprof diff",
            "",
            f"a: {_cell(_side(result.a))}  ",
            f"b: {_cell(_side(result.b))}",
        ]
        for title, unit, rows, left in sections(result):
            lines += ["", f"**{title}**", "", "| | a | b | change |", "| --- | ---: | ---: | ---: |"]
            for name, c in rows:
                kind = unit or _unit(_key(result, name))
                lines.append(f"| {_cell(name)} | {_value(c.a, kind)} | {_value(c.b, kind)} | {_change(c, kind)} |")
            if left:
                lines.append(f"| and {left} more | | | |")
        line = first_line(result)
        if line:
            lines += ["", _cell(line)]
        return "\n".join(lines) + "\n"
