"""The profile as a terminal table: a row per call (or the first and last calls of a long log),
then the run's summary. Text from the log is printed through :func:`safe`."""

from __future__ import annotations

from rich.console import Console

from tokprof.attribution.estimates import UNRECORDED
from tokprof.profiling import CallRow, Profile, Summary, missing_buckets, recorded
from tokprof.render import RenderOptions
from tokprof.render.actions import TITLE, wrapped
from tokprof.render.console import Column, fit_table, default_model_line, safe, text_console
from tokprof.pricing.render import (
    billed_input_lines,
    cache_lines,
    call_cost,
    cost_lines,
    dollars,
    forensics_lines,
    usage_lines,
)

LABELS = {
    "system": "system",
    "tool_definitions": "tool defs",
    "tool_results": "tool results",
    "conversation": "conversation",
    "unrecorded": "unrecorded (inferred)",
}
#: Headers for narrow terminals.
SHORT = {
    "system": "system",
    "tool_definitions": "tools",
    "tool_results": "results",
    "conversation": "convers.",
    "unrecorded": "unrecorded",
}
#: What a cell shows for a bucket the log does not record (its tokens are in ``unrecorded``), never 0.
NOT_RECORDED = "n/r"
NOT_RECORDED_NOTE = "n/r: not recorded by the log; those tokens are in unrecorded (inferred from usage)"


def bucket_cell(value: int, name: str, missing: frozenset[str]) -> str:
    """A bucket's figure: ``n/r`` for an empty bucket the log does not record."""
    figure = recorded(value, name, missing)
    return NOT_RECORDED if figure is None else f"{figure:,}"


def shown_rows(calls: list[CallRow], limit: int | None) -> tuple[list[CallRow], list[CallRow]]:
    """The rows a table shows of ``limit`` (None: all): the first half and the last half."""
    if limit is None or len(calls) <= limit:
        return calls, []
    first = (limit + 1) // 2
    return calls[:first], calls[len(calls) - (limit - first) :]


class TableRenderer:
    """A table of calls, then the run summary, for a terminal (colour only when asked)."""

    def render(self, profile: Profile, options: RenderOptions = RenderOptions()) -> str:
        console, out = text_console(options)
        summary = profile.summary()
        reported = summary.reported is not None

        model = profile.model
        exact = "exact" if summary.exact else "ESTIMATE"
        console.print(
            f"[bold]tokprof[/bold] profile of {safe(profile.source.path)} "
            f"({summary.calls} call{'' if summary.calls == 1 else 's'}, model {safe(model.name)}, {exact})"
        )
        default = default_model_line(model.name, model.selected)
        if default:
            console.print(default)
        advice = wrapped(profile.actions, console.width)
        if advice:  # what to change comes first (tokprof.analyses.actions)
            console.print(f"[bold]{TITLE}[/bold] (each saving measured on this log, most first)")
            for line in advice:
                console.print(safe(line))
        headline = forensics_lines(summary.cache, summary.cost)
        if headline:
            width = max(len(k) for k, _ in headline)
            for key, value in headline:
                console.print(f"  {key.ljust(width)}  {safe(value)}")
        names = profile.buckets()
        threads = any(c.thread is not None for c in profile.calls)  # subagents: say whose each call is
        columns = [Column("call")] + ([Column("thread", justify="left", drop=2)] if threads else [])
        columns += [Column(LABELS[name], SHORT[name]) for name in names]
        columns += [Column("total"), Column("billed so far", "billed", drop=1)]
        if reported and model.exact:
            columns += [Column("reported", drop=2), Column("computed vs reported", "vs rep.", drop=3)]
        elif reported:  # an estimate's total is the reported prompt: beside it, what was computed before scaling
            columns += [
                Column("computed (proxy + inferred)", "computed", drop=2),
                Column("computed vs reported", "vs rep.", drop=3),
            ]
        priced = any(c.cost is not None and c.cost.priced for c in profile.calls)  # else the summary says why
        if priced:
            columns.append(Column("cost", drop=4))
        first, last = shown_rows(profile.calls, options.calls)
        missing = missing_buckets(summary.not_recorded)
        rows = [self._cells(row, names, reported, priced, threads, model.exact, missing) for row in first]
        if last:
            rows.append(["…"] + [""] * (len(columns) - 1))
            rows += [self._cells(row, names, reported, priced, threads, model.exact, missing) for row in last]
        console.print(fit_table(console, columns, rows))
        if last:
            hidden = len(profile.calls) - len(first) - len(last)
            console.print(f"  {hidden:,} of {len(profile.calls):,} calls not shown (--calls all shows every call)")
        if missing & set(names):
            console.print(f"  {NOT_RECORDED_NOTE}")
        if any(c.cost is not None and c.cost.basis == "computed" and c.cost.priced for c in profile.calls):
            console.print("  *cost of the computed prompt: the call reports no usage (an estimate; output not priced)")
        console.print()

        console.print("[bold]Summary[/bold]")
        for key, value in self._summary_lines(profile, summary, names):
            console.print(f"  {key}  {value}")
        if summary.tool_result_costs is not None:
            self._result_costs(console, summary)
        self._mcp_servers(console, summary, model.exact)
        console.print(f"  tokenizer: {safe(model.tokenizer)}; template: {safe(model.chat_template)}")
        if model.selected:
            console.print(f"  model chosen: {safe(model.selected)}")
        if summary.inferred:
            console.print(f"[bold]INFERRED[/bold]: {safe(summary.inferred)} (give them with --system and --tools).")
        if summary.estimate is not None and any(c.recorded for c in profile.calls):
            console.print(f"[bold]ESTIMATE[/bold]: {safe(_estimate_text(summary, model.selected))}")
        for warning in profile.warnings:
            calls = warning.calls
            count = f" ({len(calls)} of {summary.calls} calls)" if calls else ""
            places = warning.places
            if places:
                count += ": " + ", ".join(places[:5]) + (f" and {len(places) - 5} more" if len(places) > 5 else "")
            console.print(f"[yellow]warning[/yellow]: {safe(warning.message + count)}")
        return out.getvalue()

    @staticmethod
    def _result_costs(console: Console, summary: Summary) -> None:
        """Which tool results cost most: per tool, and the costliest single results."""
        costs = summary.tool_result_costs
        assert costs is not None
        console.print()
        priced = costs.carry_dollars is not None  # the carry cost in dollars too, beside the tokens
        money = f", {dollars(costs.carry_dollars)}" if priced else ""
        console.print(
            f"[bold]Tool results[/bold]: {costs.results:,} added {costs.tokens:,} tokens; resent by later calls, "
            f"{costs.carry_cost:,} more (carry cost{money})"
        )
        differs = _adds_up(costs.tokens + costs.carry_cost, summary, costs.results)
        if differs:
            console.print(f"  {differs}")
        tools = [
            [safe(t.tool or "(unnamed)"), f"{t.results:,}", f"{t.tokens:,}", f"{t.carry_cost:,}"]
            + ([dollars(t.carry_dollars)] if priced else [])
            for t in costs.tools[:10]
        ]
        columns = [Column("tool", justify="left"), Column("results"), Column("tokens"), Column("carry cost", "carry")]
        if priced:
            columns.append(Column("carry $", "carry $"))
        console.print(fit_table(console, columns, tools))
        if len(costs.tools) > 10:
            console.print(f"  and {len(costs.tools) - 10} more tools (the JSON lists them all)")
        from tokprof.mcp.rollup import catalogue_rollup, rollup_from_results

        shown = summary.catalogue is not None and catalogue_rollup(summary.catalogue.catalogue, costs)
        for server in [] if shown else rollup_from_results(costs):
            console.print(
                f"  MCP server {safe(server.server)}: {server.calls:,} result(s) from {server.tools_called} tool(s), "
                f"{server.result_tokens:,} tokens, carry cost {server.carry_cost:,}"
                + (f" ({dollars(server.carry_dollars)})" if server.carry_dollars is not None else "")
            )
        if costs.top:
            console.print("  costliest results (carry cost: tokens × the later calls that resent them):")
            rows = [
                [
                    str(r.call) + (f" ({safe(r.thread)})" if r.thread else ""),
                    safe(r.tool or "(unnamed)"),
                    f"{r.tokens:,}",
                    f"{r.carried_by:,}",
                    f"{r.carry_cost:,}",
                ]
                + ([dollars(r.carry_dollars)] if priced else [])
                for r in costs.top
            ]
            columns = [
                Column("call"),
                Column("tool", justify="left"),
                Column("tokens"),
                Column("resent by", "resent"),
                Column("carry cost", "carry"),
            ]
            if priced:
                columns.append(Column("carry $", "carry $"))
            console.print(fit_table(console, columns, rows))
        console.print()

    @staticmethod
    def _mcp_servers(console: Console, summary: Summary, exact: bool) -> None:
        """Per MCP server: its tools' definitions per request (every one, called or not) and its results."""
        from tokprof.mcp.rollup import catalogue_rollup

        rows = catalogue_rollup(summary.catalogue.catalogue, summary.tool_result_costs) if summary.catalogue else []
        if not rows:
            return
        units = "" if exact else ", the proxy's own counts, not scaled"
        priced = any(r.carry_dollars is not None for r in rows)
        console.print(f"[bold]MCP servers[/bold] (from the tool names; definitions: tokens per request{units})")
        cells = [
            [
                safe(r.server),
                f"{r.tools:,}",
                f"{r.unused:,}",
                f"{r.definitions:,}",
                f"{r.calls:,}",
                f"{r.result_tokens:,}",
                f"{r.carry_cost:,}",
            ]
            + ([dollars(r.carry_dollars)] if priced else [])
            for r in rows
        ]
        columns = [
            Column("server", justify="left"),
            Column("tools"),
            Column("unused"),
            Column("definitions", "defs"),
            Column("calls"),
            Column("result tokens", "results"),
            Column("carry cost", "carry"),
        ]
        if priced:
            columns.append(Column("carry $", "carry $"))
        console.print(fit_table(console, columns, cells))
        console.print()

    @staticmethod
    def _cells(
        row: CallRow,
        names: tuple[str, ...],
        reported: bool,
        priced: bool = False,
        threads: bool = False,
        exact: bool = True,
        missing: frozenset[str] = frozenset(),
    ) -> list[str]:
        cells = [str(row.index)] + ([safe(row.thread) if row.thread is not None else "main"] if threads else [])
        if not row.recorded:  # neither the prompt nor its usage: not known, not 0
            cells += ["n/r"] * (len(names) + 2)
        else:
            cells += [
                *(bucket_cell(row.buckets.get(b, 0), b, missing) for b in names),
                f"{row.total:,}",
                f"{row.cumulative:,}",
            ]
        if reported:
            diff = row.difference()
            if diff is not None and row.reported is not None and row.reported.prompt is not None:
                cells += [f"{row.reported.prompt if exact else row.rendered:,}", f"{diff[1]:+.1%}"]
            else:
                cells += ["-", "-"]
        if priced:
            cells.append(call_cost(row.cost))
        return cells

    @staticmethod
    def _summary_lines(profile: Profile, summary: Summary, names: tuple[str, ...]) -> list[tuple[str, str]]:
        """The summary as (key, value) lines, keys padded to one width."""
        model = profile.model
        estimated = "  estimate" if not model.exact else ""
        lines = [("calls", f"{summary.calls:,}")]
        if profile.calls and not any(c.recorded for c in profile.calls):  # figures not known, not 0
            lines.append(
                ("billed input", "not recorded: no call records its prompt or its usage (the warnings say why)")
            )
            lines += [(f"  {LABELS[name]}", "not recorded") for name in names]
            lines += [(safe(k), safe(v)) for k, v in cost_lines(summary.cost, [])]
            width = max(len(k) for k, _ in lines)
            return [(key.ljust(width), value) for key, value in lines]
        threads = summary.threads
        final = f"{summary.final_prompt:,} tokens"
        if len(threads) > 1:
            final += " (the main conversation's)"
        lines += [
            ("final prompt", final),
            ("largest prompt", f"{summary.largest_prompt:,} tokens"),
        ]
        lines += billed_input_lines(summary)
        if summary.reported is not None:
            usage = summary.reported
            placeholder = any(w.code == "usage-at-stream-start" for w in profile.warnings)
            lines += usage_lines(usage, placeholder)
            check = summary.reconciliation
            if check:
                lines.append(
                    (
                        "computed vs reported" if model.exact else "proxy vs reported",
                        f"{check.weighted_relative_difference:.1%} of the reported tokens, "
                        f"{check.mean_relative_difference:.1%} mean per call, largest "
                        f"{check.max_relative_difference:+.1%} (call {check.max_call})",
                    )
                )
        missing = missing_buckets(summary.not_recorded)
        for name in names:
            label = estimated if name != UNRECORDED else ""
            if recorded(summary.buckets_billed[name], name, missing) is None:
                lines.append((f"  {LABELS[name]}", "not recorded (the log does not hold it: in unrecorded)"))
                continue
            lines.append(
                (f"  {LABELS[name]}", f"{summary.buckets_billed[name]:>12,}  {summary.shares[name]:6.1%}{label}")
            )
        models = list(dict.fromkeys((c.cost.model, c.cost.provider) for c in profile.calls if c.cost and c.cost.priced))
        lines += [(safe(k), safe(v)) for k, v in cost_lines(summary.cost, models)]
        lines += [(safe(k), safe(v)) for k, v in cache_lines(summary.cache)]
        if len(threads) > 1:
            for thread in threads:
                who = "main conversation" if thread.thread is None else f"subagent {safe(thread.thread)}"
                if thread.thread is not None and any(
                    c.thread == thread.thread and "from progress" in c.where for c in profile.calls
                ):
                    who += " (rebuilt from progress lines)"
                lines.append(
                    (
                        f"  {who}",
                        f"{thread.calls:,} calls, {thread.billed_input:,} billed, final prompt "
                        f"{thread.final_prompt:,}, largest {thread.largest_prompt:,}",
                    )
                )
        if summary.compactions:
            lines.append(("compactions", f"{summary.compactions} (calls that summarised the context)"))
        if summary.unrendered:
            lines.append(("unrendered", f"{summary.unrendered:,} tokens known from usage only (in the buckets)"))
        tools_unrecorded = "tool_definitions" in summary.not_recorded
        has_tools = any(c.buckets.get("tool_definitions") for c in profile.calls)
        cross = summary.crossovers

        def when(index: int | None) -> str:
            if tools_unrecorded:
                return "not recorded (the log has no tool definitions: give them with --tools)"
            if not has_tools:
                return "no tool definitions in the log"
            return f"call {index}" if index is not None else "never"

        lines.append(("tool results > tool defs", when(cross.tool_results_exceed_tool_definitions)))
        lines.append(("conversation > tool defs", when(cross.conversation_exceeds_tool_definitions)))
        section = summary.catalogue
        if section:
            catalogue = section.catalogue
            unused = [t for t in catalogue.tools if t.unused]
            text = f"{catalogue.total:,} tokens per request, {len(catalogue.tools)} tools"
            if unused and section.unused_waste is not None:
                text += (
                    f"; {len(unused)} never called: {section.unused_waste:,} tokens wasted "
                    f"({section.unused_waste_share or 0.0:.1%}{'' if model.exact else ' of the proxy billed input'})"
                )
            if not model.exact:
                text += " (the proxy's own counts, not scaled)"
            if section.distinct_catalogues > 1:
                text += f"; {section.distinct_catalogues} distinct catalogues (see tokprof tools)"
            lines.append(("tool catalogue", text))
        elif tools_unrecorded:
            lines.append(("tool catalogue", "not recorded (give it with --tools FILE to price each tool)"))
        width = max(len(k) for k, _ in lines)
        return [(key.ljust(width), value) for key, value in lines]


def _adds_up(total: int, summary: Summary, results: int) -> str:
    """Nothing when the tool results' tokens and carry cost add up to the tool-results bucket; else why not."""
    bucket = summary.buckets_billed.get("tool_results", 0)
    if total == bucket:
        return ""
    if abs(total - bucket) <= results:  # an estimate scales each result by its call's factor, rounded per result
        return f"together the tool-results bucket, {bucket:,}, up to rounding per result ({total - bucket:+,})"
    return (
        f"together {total:,} of the tool-results bucket's {bucket:,}: the rest is tool-result tokens outside the "
        "results counted here (unrendered, or a result repeated within one prompt)"
    )


def _estimate_text(summary: Summary, selected: str | None = None) -> str:
    estimate = summary.estimate
    assert estimate is not None
    text = f"every count above is an estimate: {estimate.method}. "
    scaled = estimate.calls_scaled_to_reported
    if scaled:
        ratios = ", ".join(f"{r:.2f}" for r in estimate.ratios.values())
        text += (
            f"{scaled} of {summary.calls} calls add up to the reported prompt: {estimate.calls_anchored} as the "
            f"call before plus what they add (the log's usual ratio: {ratios or '-'} reported per estimated "
            "token), the rest scaled whole"
        )
        if estimate.unexplained_growth:
            text += (
                f"; {estimate.unexplained_growth:,} tokens of reported growth that no new message explains are "
                "in 'unrecorded'"
            )
        text += "; "
    counter = "the stand-in" if selected and selected.startswith("stand-in") else "the proxy"
    counted = f"{counter} counted {estimate.billed_input_computed:,} billed input tokens."
    return text + (counted[0].upper() + counted[1:] if text.endswith(". ") else counted)
