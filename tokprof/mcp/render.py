"""Renderers for the MCP servers report (``tokprof mcp``): table, JSON, and the ``--list`` table."""

from __future__ import annotations

import json

from tokprof.mcp.report import McpReport
from tokprof.mcp.config import Discovery
from tokprof.render import RenderOptions
from tokprof.render.tools import print_cut_list
from tokprof.render.console import Column, fit_table, safe, text_console


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


class McpJsonRenderer:
    def render(self, report: McpReport, options: RenderOptions = RenderOptions()) -> str:
        return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"


class McpTableRenderer:
    def render(self, report: McpReport, options: RenderOptions = RenderOptions()) -> str:
        console, out = text_console(options)
        model = report.model
        exact = "exact" if model.exact else "ESTIMATE"
        console.print(
            f"[bold]tokprof[/bold] mcp: {len(report.servers)} servers, {len(report.tools)} tools "
            f"(model {safe(model.name)}, {exact}; names as {report.naming} exposes them)"
        )
        columns = [
            Column("server", justify="left"),
            Column("tools"),
            Column("tokens/req", "per req."),
            Column("share"),
            Column("largest tools (tokens)", "largest", justify="left", drop=1),
        ]
        listed = {t.name: t for t in report.tools}
        logged = report.requests is not None
        if logged:
            columns += [Column("calls"), Column("never-called cost", "unused cost")]
        rows = []
        for server in sorted(report.servers, key=lambda s: (-s.tokens, s.name)):
            share = "-" if server.share is None else f"{server.share:.1%}"
            largest = ", ".join(f"{listed[n].listed_name} ({listed[n].marginal:,})" for n in server.largest[:2])
            row = [safe(server.name), str(server.tools), _n(server.tokens), share, safe(largest)]
            if logged:
                row += [_n(server.calls), _n(server.never_called_cost)]
            rows.append(row)
        if rows:
            console.print(fit_table(console, columns, rows))
        tools = sum(s.tokens for s in report.servers)
        if report.servers:
            console.print()
            console.print(
                f"  catalogue per request  {report.total:,} tokens = {tools:,} servers' tools "
                f"+ {report.scaffolding:,} scaffolding"
            )
        else:
            console.print("  no server listed its tools")
        if logged:
            console.print(f"  over the log           {safe(report.log)}: {report.requests} requests")
        if report.skipped:
            console.print(f"[yellow]not priced[/yellow]: {safe(report.skipped_line() or '')}", soft_wrap=True)
        for failure in report.failures:
            tail = failure.stderr_tail.splitlines()[-1] if failure.stderr_tail else ""
            console.print(
                f"[red]failed[/red]: {safe(failure.name)} ({safe(failure.origin)}): {safe(failure.reason)}"
                + (f"; stderr: {safe(tail)}" if tail else ""),
                soft_wrap=True,
            )
        if report.cut_list is not None and report.cut_list.rows:
            print_cut_list(console, report.cut_list)
        if report.estimate:
            console.print(f"[bold]ESTIMATE[/bold]: {safe(report.estimate)}")
        return out.getvalue()


class DiscoveryTableRenderer:
    def render(self, found: Discovery, options: RenderOptions = RenderOptions()) -> str:
        console, out = text_console(options)
        console.print(f"[bold]tokprof[/bold] mcp --list: {len(found.servers)} servers configured (nothing started)")
        columns = [
            Column("server", justify="left"),
            Column("agent", justify="left"),
            Column("from", justify="left"),
            Column("would start", justify="left"),
        ]
        rows = [
            [safe(s.name), s.agent + (" (project)" if s.project else ""), safe(s.origin), safe(s.describe())]
            for s in found.servers
        ]
        if rows:
            console.print(fit_table(console, columns, rows))
        for problem in found.problems:
            console.print(f"[yellow]unreadable[/yellow]: {safe(problem)}", soft_wrap=True)
        return out.getvalue()


class DiscoveryJsonRenderer:
    def render(self, found: Discovery, options: RenderOptions = RenderOptions()) -> str:
        doc = {
            "schema_version": 1,
            "kind": "mcp-list",
            "servers": [s.to_dict() for s in found.servers],
            "problems": list(found.problems),
            "searched": list(found.searched),
        }
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
