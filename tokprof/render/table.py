from __future__ import annotations


from rich.table import Table

from tokprof.profiling import Profile
from tokprof.render.console import text_console
from tokprof.render import RenderOptions

LABELS = {
    "system": "system",
    "tool_definitions": "tool defs",
    "tool_results": "tool results",
    "conversation": "conversation",
    "unrecorded": "unrecorded (inferred)",
}


class TableRenderer:
    """A table of calls, then the run summary, for a terminal (colour only when ``color``)."""

    def render(self, profile: Profile, options: RenderOptions = RenderOptions()) -> str:
        console, out = text_console(options)
        summary = profile.summary()
        reported = summary.reported is not None

        model = profile.model
        exact = "exact" if summary.exact else "ESTIMATE"
        console.print(
            f"[bold]tokprof[/bold] profile of {profile.source.path} "
            f"({summary.calls} call{'' if summary.calls == 1 else 's'}, model {model.name}, {exact})"
        )
        table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
        table.add_column("call", justify="right")
        names = profile.buckets()
        for name in names:
            table.add_column(LABELS[name], justify="right")
        table.add_column("total", justify="right")
        table.add_column("billed so far", justify="right")
        if reported:
            table.add_column("reported", justify="right")
            table.add_column("computed vs reported" if model.exact else "proxy vs reported", justify="right")
        for row in profile.calls:
            cells = [str(row.index), *(f"{row.buckets.get(b, 0):,}" for b in names), f"{row.total:,}", f"{row.cumulative:,}"]
            if reported:
                diff = row.difference()
                if diff is not None:
                    cells += [f"{row.reported.prompt:,}", f"{diff[1]:+.1%}"]
                else:
                    cells += ["-", "-"]
            table.add_row(*cells)
        console.print(table)
        console.print()

        console.print("[bold]Summary[/bold]")
        lines = [
            ("calls", f"{summary.calls:,}"),
            ("final prompt", f"{summary.final_prompt:,} tokens"),
            ("largest prompt", f"{summary.largest_prompt:,} tokens"),
            ("billed input", f"{summary.billed_input:,} tokens (every call's prompt, added up)"),
        ]
        if summary.reported is not None:
            usage = summary.reported
            lines.append(
                ("billed input, reported", f"{usage.billed_input:,} tokens "
                 f"({usage.calls} call{'' if usage.calls == 1 else 's'} with usage)")
            )
            for value, label in ((usage.cache_read, "cache reads"), (usage.cache_write, "cache writes")):
                if value:
                    lines.append((f"  {label}, reported", f"{value:,} tokens"))
            check = summary.reconciliation
            if check:
                lines.append(
                    ("computed vs reported" if model.exact else "proxy vs reported",
                     f"{check.mean_relative_difference:.1%} mean difference, largest "
                     f"{check.max_relative_difference:+.1%} (call {check.max_call})")
                )
        for name in names:
            lines.append(
                (f"  {LABELS[name]}", f"{summary.buckets_billed[name]:>12,}  {summary.shares[name]:6.1%}")
            )
        if summary.compactions:
            lines.append(("compactions", f"{summary.compactions} (calls that summarised the context)"))
        if summary.unrendered:
            lines.append(("unrendered", f"{summary.unrendered:,} tokens known from usage only (in the buckets)"))
        cross = summary.crossovers

        def when(index):
            return f"call {index}" if index is not None else "never"

        lines.append(("tool results > tool defs", when(cross.tool_results_exceed_tool_definitions)))
        lines.append(("conversation > tool defs", when(cross.conversation_exceeds_tool_definitions)))
        key_width = max(len(k) for k, _ in lines)
        for key, value in lines:
            console.print(f"  {key.ljust(key_width)}  {value}")
        section = summary.catalogue
        if section:
            catalogue = section.catalogue
            unused = [t for t in catalogue.tools if t.unused]
            text = f"{catalogue.total:,} tokens per request, {len(catalogue.tools)} tools"
            if unused and section.unused_waste is not None:
                text += (
                    f"; {len(unused)} never called: {section.unused_waste:,} tokens wasted "
                    f"({section.unused_waste_share or 0.0:.1%})"
                )
            if not model.exact:
                text += " (the proxy's own counts, not scaled)"
            if section.distinct_catalogues > 1:
                text += f"; {section.distinct_catalogues} distinct catalogues (see tokprof tools)"
            console.print(f"  {'tool catalogue'.ljust(key_width)}  {text}")
        console.print(f"  tokenizer: {model.tokenizer}; template: {model.chat_template}")
        if model.selected:
            console.print(f"  model chosen: {model.selected}")
        if summary.inferred:
            console.print(f"[bold]INFERRED[/bold]: {summary.inferred} (give them with --system and --tools).")
        if summary.estimate is not None:
            estimate = summary.estimate
            console.print(
                f"[bold]ESTIMATE[/bold]: every count above is an estimate: {estimate.method}. "
                f"{estimate.calls_scaled_to_reported} of {summary.calls} calls were scaled to add up to the "
                "reported prompt; "
                f"the proxy counted {estimate.billed_input_computed:,} billed input tokens."
            )
        for warning in profile.warnings:
            calls = warning.calls
            count = f" ({len(calls)} of {summary.calls} calls)" if calls else ""
            places = warning.places
            if places:
                count += ": " + ", ".join(places[:5]) + (f" and {len(places) - 5} more" if len(places) > 5 else "")
            console.print(f"[yellow]warning[/yellow]: {warning.message}{count}")
        return out.getvalue()
