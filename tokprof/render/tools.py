"""Renderers for the tools report: table, JSON, CSV."""

from __future__ import annotations

import io

from rich.console import Console

from tokprof.base.text import json_text
from tokprof.analyses.cutlist import KEEP, CutList
from tokprof.analyses.tools import ToolsReport
from tokprof.attribution.catalogue import Catalogue
from tokprof.render.console import Column, fit_table, default_model_line, safe, text_console
from tokprof.pricing.render import dollars
from tokprof.render import RenderOptions
from tokprof.render import csvsafe

CSV_COLUMNS = [
    "catalogue",
    "name",
    "marginal",
    "description_tokens",
    "parameter_tokens",
    "parameters",
    "requests",
    "calls",
    "run_cost",
    "unused",
]


class ToolsJsonRenderer:
    def render(self, report: ToolsReport, options: RenderOptions = RenderOptions()) -> str:
        return json_text(report.to_dict())


class ToolsCsvRenderer:
    def render(self, report: ToolsReport, options: RenderOptions = RenderOptions()) -> str:
        out = io.StringIO()
        writer = csvsafe.Writer(out)
        writer.writerow([*CSV_COLUMNS, "exact"])
        exact = _csv(report.model.exact)
        for i, catalogue in enumerate(report.catalogues):
            for tool in catalogue.tools:
                d = tool.to_dict()
                writer.writerow([i] + [_csv(d[c]) for c in CSV_COLUMNS[1:]] + [exact])
        return out.getvalue()


def _csv(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


class ToolsTableRenderer:
    def render(self, report: ToolsReport, options: RenderOptions = RenderOptions()) -> str:
        console, out = text_console(options)
        model = report.model
        exact = "exact" if model.exact else "ESTIMATE"
        console.print(f"[bold]tokprof[/bold] tools of {safe(report.source.path)} (model {safe(model.name)}, {exact})")
        default = default_model_line(model.name, model.selected)
        if default:
            console.print(default)
        if not report.catalogues and not any(w.code == "tools-unrecorded" for w in report.warnings):
            console.print("  no call in the log carries tools")
        for i, catalogue in enumerate(report.catalogues):
            if len(report.catalogues) > 1:
                console.print(
                    f"\n[bold]Catalogue {i + 1} of {len(report.catalogues)}[/bold]: first at call "
                    f"{catalogue.first_call}, carried by {catalogue.requests} requests"
                )
            self._catalogue(console, catalogue)
        if report.billed_input is not None and report.catalogues:
            waste = report.unused_waste() or 0
            share = waste / report.billed_input if report.billed_input else 0.0
            counted = "" if model.exact else " as the proxy counts it"
            shown = report.billed_input_profile
            if shown is not None and shown != report.billed_input:
                counted += f"; tokprof profile reports {shown:,}, scaled to the reported usage"
            console.print(
                f"  unused tools cost {waste:,} tokens over the run, {share:.1%} of billed input "
                f"({report.billed_input:,}{counted})"
            )
        for unknown in report.unknown_calls:
            close = f"; closest in the catalogue: {safe(unknown.closest)}" if unknown.closest else ""
            console.print(
                f"[yellow]unknown tool[/yellow]: the model called {safe(repr(unknown.name))} {unknown.calls} "
                f"time(s), not in the catalogue{close}"
            )
        if report.mcp_servers:
            console.print("\n[bold]MCP servers[/bold] (from the tool names)")
            columns = [
                Column("server", justify="left"),
                Column("tools called", "tools"),
                Column("calls"),
                Column("result tokens", "results"),
                Column("carry cost", "carry"),
            ]
            priced = any(s.carry_dollars is not None for s in report.mcp_servers)
            if priced:  # the carry cost in dollars too, where the log is priced
                columns.append(Column("carry $", "carry $"))
            console.print(
                fit_table(
                    console,
                    columns,
                    [
                        [safe(s.server), str(s.tools_called), _n(s.calls), _n(s.result_tokens), _n(s.carry_cost)]
                        + ([dollars(s.carry_dollars)] if priced else [])
                        for s in report.mcp_servers
                    ],
                )
            )
        if report.cut_list is not None and report.cut_list.rows:
            print_cut_list(console, report.cut_list)
        for warning in report.warnings:
            console.print(f"[yellow]warning[/yellow]: {safe(warning.message)}")
        if not model.exact:
            console.print(
                f"[bold]ESTIMATE[/bold]: tool costs are the proxy's own counts, not scaled: "
                f"{safe(model.method or 'a stated proxy')}"
            )
        return out.getvalue()

    def _catalogue(self, console: Console, catalogue: Catalogue) -> None:
        requests = catalogue.requests
        columns = [
            Column("tool", justify="left"),
            Column("marginal", "per req."),
            Column("description", "descr."),
            Column("name+params", "rest"),
            Column("params", drop=2),
        ]
        if requests is not None:
            columns += [Column("requests", "reqs", drop=3), Column("calls"), Column("run cost", drop=1)]
        rows = []
        for tool in sorted(catalogue.tools, key=lambda t: (-t.marginal, t.name)):
            row = [
                safe(tool.name) + (" (unused)" if tool.calls == 0 else ""),
                _n(tool.marginal),
                _n(tool.description_tokens),
                _n(tool.parameter_tokens),
                str(tool.parameters),
            ]
            if requests is not None:
                row += [_n(tool.requests), _n(tool.calls), _n(tool.run_cost)]
            rows.append(row)
        console.print(fit_table(console, columns, rows))
        marginals = sum(t.marginal for t in catalogue.tools)
        console.print()
        console.print(
            f"  catalogue per request  {catalogue.total:,} tokens = {marginals:,} tools "
            f"+ {catalogue.scaffolding:,} scaffolding (added once whenever any tool exists)"
        )
        if requests is not None:
            console.print(f"  over the run           {catalogue.total * requests:,} tokens ({requests} requests)")
        console.print(
            f"  what if descriptions were cut to their first sentence: {catalogue.trim_saving:,} tokens saved per request"
        )
        if catalogue.drop_unused_saving is not None and requests is not None:
            console.print(
                f"  what if unused tools were dropped: {catalogue.drop_unused_saving:,} tokens saved per request, "
                f"{catalogue.drop_unused_saving * requests:,} over the run"
            )


#: How many rows of the cut list the table shows (the JSON has every one).
CUT_ROWS = 15


def print_cut_list(console: Console, cuts: CutList) -> None:
    """Per tool and MCP server: its definitions over the run and its results' carry, in tokens and in dollars
    at the run's mean input price; the cut, its replayed saving where one was replayed, and how to apply it."""
    from tokprof.pricing.render import dollars

    agent = f" for {cuts.agent}" if cuts.agent else ""
    console.print(f"\n[bold]Cut list[/bold] (per tool and MCP server, costliest first; how to cut it{agent})")
    columns = [
        Column("tool or server", "tool", justify="left"),
        Column("calls"),
        Column("definitions over the run", "defs", drop=2),
        Column("results carried", "carried", drop=3),
        Column("cost*", drop=1),
        Column("cut", justify="left"),
        Column("replayed saving", "saving", drop=4),
    ]
    rows = []
    shown = cuts.rows[:CUT_ROWS]
    for r in shown:
        if r.saving_dollars is not None:
            costs_more = f"-{dollars(-r.saving_dollars)} (costs more)"
            saving = dollars(r.saving_dollars) if r.saving_dollars >= 0 else costs_more
        elif r.saving_tokens is not None:
            saving = f"{r.saving_tokens:,} tokens"
        else:
            saving = "-" if r.cut == KEEP else "not replayed"
        rows.append(
            [
                safe(r.name) + (" (server)" if r.kind == "server" else ""),
                f"{r.calls:,}",
                ("-" if cuts.definitions_recorded else "n/r")
                if r.definition_tokens is None
                else f"{r.definition_tokens:,}",
                f"{r.carry_tokens:,}",
                "-" if r.cost_dollars is None else dollars(r.cost_dollars),
                r.cut,
                saving,
            ]
        )
    console.print(fit_table(console, columns, rows))
    if len(cuts.rows) > len(shown):
        console.print(f"  {len(cuts.rows) - len(shown):,} more rows in -f json")
    estimate = " (an estimate: the counts are a proxy's)" if cuts.estimate else ""
    if cuts.price_per_token is not None:
        console.print(
            f"  *cost: tokens at the run's mean price of an input token, ${cuts.price_per_token * 1e6:.2f} per "
            f"million{estimate}; never a saving: only a replay proves one"
        )
    else:
        console.print(f"  *cost: no dollars: {safe(cuts.unpriced or 'not priced')}")
    if not cuts.definitions_recorded:
        console.print("  n/r: the log does not record the tool definitions (give them with --tools FILE)")
    elif any(r.definition_tokens is None for r in shown):
        console.print("  -: a tool the model called that is in no catalogue the log sent")
    if cuts.agent is None:
        if any(r.cut != KEEP for r in shown):
            console.print(
                "  how: tokprof knows no documented setting of the agent that wrote this log for these cuts "
                "(the JSON says per row); whoever builds its prompts applies them"
            )
        return
    for r in shown:
        if r.cut != KEEP and r.how:
            console.print(f"  {safe(r.name)}: {safe(r.how)}")
