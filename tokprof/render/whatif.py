"""Renderers for the what-if report: table, JSON, CSV, and the HTML report with its what-if section."""

from __future__ import annotations

import io
import json

from rich.table import Table

from tokprof.analyses.whatif import PolicyResult, WhatIfReport
from tokprof.render import RenderOptions
from tokprof.render.console import Column, fit_table, safe, text_console
from tokprof.profiling import missing_buckets
from tokprof.render.table import LABELS, NOT_RECORDED_NOTE, SHORT, bucket_cell
from tokprof.render import csvsafe

#: A line per policy in the HTML charts, in order.
PALETTE = ["#59636e", "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"]


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


class WhatIfJsonRenderer:
    def render(self, report: WhatIfReport, options: RenderOptions = RenderOptions()) -> str:
        return report.to_json()


class WhatIfCsvRenderer:
    """One row per policy and call: the policy, the call, its buckets and total, and what it shares
    with the previous call of its thread."""

    def render(self, report: WhatIfReport, options: RenderOptions = RenderOptions()) -> str:
        out = io.StringIO()
        writer = csvsafe.Writer(out)
        names = report.bucket_names()
        writer.writerow(
            [
                "policy",
                "index",
                "kind",
                "thread",
                *names,
                "total",
                "shared_prefix",
                "messages",
                "changed",
                "cache_read",
                "cache_write",
                "cost",
            ]
        )
        for result in report.policies:
            for call in result.calls:
                writer.writerow(
                    [
                        result.policy,
                        call.index,
                        call.kind,
                        call.thread or "",
                        *(call.buckets.get(name, 0) for name in names),
                        call.total,
                        call.shared,
                        call.messages,
                        "true" if call.changed else "false",
                        "" if call.cache_read is None else call.cache_read,
                        "" if call.cache_write is None else call.cache_write,
                        "" if call.cost is None else call.cost,
                    ]
                )
        return out.getvalue()


ESTIMATED = ("predicted", "computed", "mixed")
COSTS_MORE = "costs more"


def _amount(value: float) -> str:
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


def _usd(result: PolicyResult) -> str:
    if result.cost is None:
        return "unpriced"
    return _amount(result.cost) + ("*" if result.cost_basis in ESTIMATED else "")


def dollar_saving(result: PolicyResult) -> str:
    """The saving against full in dollars, signed: ``$0.46``, or ``-$0.46 costs more``; ``*`` where the
    policy's cost rests on the replay's bill (its changed calls), ``-`` when it is not priced."""
    if result.cost_saving is None:
        return "-"
    saving = round(result.cost_saving, 4)
    mark = "*" if result.cost_basis in ESTIMATED and result.changed_calls else ""
    if saving < 0:
        return f"-{_amount(-saving)}{mark} {COSTS_MORE}"
    return f"{_amount(saving) if saving else '$0'}{mark}"


def dollar_share(result: PolicyResult, full: PolicyResult) -> str:
    if result.cost_saving is None or not full.cost:
        return "-"
    return f"{result.cost_saving / full.cost:.1%}"


def _parts(result: PolicyResult) -> list[str]:
    parts = result.cost_parts or {}
    return [
        "-" if parts.get(name) is None else f"${parts[name]:,.4f}"
        for name in ("uncached", "cache_write", "cache_read", "output")
    ]


def facts_kept(result: PolicyResult) -> str:
    """ "2/2", or "1/2 LOST" when the final prompt no longer carries a fact the log's prompts had."""
    seen = [f for f in result.facts if f.first_call is not None]
    kept = sum(1 for f in seen if f.kept_in_final)
    return f"{kept}/{len(seen)}" + (" LOST" if kept < len(seen) else "")


def fact_lines(report: WhatIfReport) -> list[str]:
    """One line per fact: where it enters the conversation, then each policy that drops it."""
    full = report.policies[0]
    lines = []
    for number, fact in enumerate(full.facts):
        if fact.first_call is None:
            lines.append(f"fact {fact.text!r}: {fact.note or 'in no prompt of the log'}")
            continue
        lines.append(f"fact {fact.text!r}: first in call {fact.first_call}")
        for result in report.ranked()[1:]:
            mine = result.facts[number]
            if mine.calls_missing:
                last = "none" if mine.last_call is None else f"call {mine.last_call}"
                lines.append(
                    f"  {result.policy}: {'not in the final prompt' if mine.dropped else 'kept at the end'}; "
                    f"missing from {len(mine.calls_missing)} later calls (last carried: {last})"
                )
    return lines


class WhatIfTableRenderer:
    def render(self, report: WhatIfReport, options: RenderOptions = RenderOptions()) -> str:
        console, out = text_console(options)
        model = report.model
        full = report.policies[0]
        exact = "exact" if report.exact else "ESTIMATE"
        window = f", window {report.context_window:,}" if report.context_window else ""
        console.print(
            f"[bold]tokprof[/bold] whatif of {safe(report.source.path)} ({len(full.calls)} calls, "
            f"model {safe(model.name)}, {exact}{window})"
        )
        priced = report.priced  # the saving in dollars, ranked by it, the tokens beside
        if priced:
            columns = [
                Column("policy", justify="left"),
                Column("saving"),
                Column("saving %", "%"),
                Column("cost", drop=1),
                Column("billed input", "billed"),
                Column("tokens saved", "tok.saved"),
                Column("largest prompt", "largest", drop=3),
                Column("over window", "over", drop=4),
                Column("shared prefix", "shared", drop=2),
                Column("shared %", "sh.%", drop=2),
            ]
        else:
            columns = [
                Column("policy", justify="left"),
                Column("billed input", "billed"),
                Column("saving"),
                Column("saving %", "%"),
                Column("largest prompt", "largest", drop=2),
                Column("over window", "over", drop=3),
                Column("shared prefix", "shared", drop=1),
                Column("shared %", "sh.%", drop=1),
            ]
        facts = bool(full.facts)
        if facts:  # beside the saving: what the policy forgets
            columns.insert(4, Column("facts kept", "facts"))
        rows = []
        for result in report.ranked():
            first = result is full
            if priced:
                row = [
                    safe(result.policy),
                    "-" if first else dollar_saving(result),
                    "-" if first else dollar_share(result, full),
                    _usd(result),
                    _n(result.billed_input),
                    "-" if first else _n(result.saving),
                ]
            else:
                row = [
                    safe(result.policy),
                    _n(result.billed_input),
                    "-" if first else _n(result.saving),
                    "-" if first else f"{result.saving_share:.1%}",
                ]
            row += [
                _n(result.largest_prompt),
                _n(result.calls_over_window),
                _n(result.shared_prefix),
                f"{result.shared_share:.1%}",
            ]
            if facts:
                row.insert(4, facts_kept(result))
            rows.append(row)
        console.print(fit_table(console, columns, rows))
        if facts:
            for line in fact_lines(report):
                console.print(f"  {safe(line)}")
        if not priced:
            why = full.cost_unpriced or "the log's calls have no price"
            console.print(f"  saving in tokens, no dollars: {safe(why)}")
        elif full.cost_unpriced:
            console.print(f"  some calls are unpriced ({safe(full.cost_unpriced)})")
        if priced and any(r.cost_basis in ESTIMATED for r in report.policies):
            console.print(
                "  *cost estimated: a call a policy changes is billed as the log's provider would bill it: "
                "the log's cache read less the prefix the policy rewrote, at most the prefix it shares with "
                "the previous call, the rest written at the log's cache tier, and the log's output; calls it "
                "keeps are priced on their reported usage"
            )
        if priced and options.cost_parts:
            console.print()
            console.print("[bold]Cost parts[/bold]")
            console.print(
                fit_table(
                    console,
                    [
                        Column("policy", justify="left"),
                        Column("uncached"),
                        Column("cache write", "write"),
                        Column("cache read", "read"),
                        Column("output"),
                        Column("cost"),
                    ],
                    [[safe(r.policy), *_parts(r), _usd(r)] for r in report.ranked()],
                )
            )
        console.print()
        console.print("[bold]Billed input per bucket[/bold]")
        names = report.bucket_names()
        bucket_columns = [Column("policy", justify="left")] + [Column(LABELS[n], SHORT[n]) for n in names]
        missing = missing_buckets(report.baseline.not_recorded) if report.baseline is not None else frozenset()
        console.print(
            fit_table(
                console,
                bucket_columns,
                [
                    [safe(r.policy), *(bucket_cell(r.buckets_billed.get(n, 0), n, missing) for n in names)]
                    for r in report.ranked()
                ],
            )
        )
        if missing & set(names):
            console.print(f"  {NOT_RECORDED_NOTE}")
        console.print()
        console.print("[bold]Policies[/bold]")
        what = Table(show_header=False, show_edge=False, pad_edge=False, box=None)
        what.add_column("policy", no_wrap=True)
        what.add_column("what")
        for result in report.ranked():
            text = result.description
            if result is not full:
                text = f"{result.changed_calls} of {len(full.calls)} calls changed; " + text
                if result.summaries:
                    text += f"; {result.summaries} summarising call{'s' if result.summaries > 1 else ''} added (billed)"
            what.add_row("  " + safe(result.policy), safe(text))
        console.print(what)
        console.print()
        ranked = "in dollars (the tokens beside)" if priced else "in tokens"
        console.print(
            "shared: the prompt tokens each call shares with the previous call of its thread (what a prefix "
            f"cache could reuse), added up. saving: against full, {ranked}; policies ranked by it."
        )
        if not report.exact:
            console.print(
                "[bold]ESTIMATE[/bold]: counts are the proxy's, as in the profile; calls a policy changes have no "
                "reported usage to scale to"
            )
        for warning in report.warnings:
            console.print(f"[yellow]warning[/yellow]: {safe(warning.message)}")
        return "".join(line.rstrip() + "\n" for line in out.getvalue().splitlines())  # no padding at line ends


# -- HTML ------------------------------------------------------------------------------------------
def whatif_section(report: WhatIfReport) -> tuple[list[str], dict[str, dict]]:
    """The HTML report's what-if section: its parts and its figures (billed input per policy; each
    call's prompt, one line per policy)."""
    from tokprof.render.html import COLORS
    from tokprof.render.plot_style import GRID, count_axis as _count_axis, layout as _layout

    names = [r.policy for r in report.policies]
    buckets = report.bucket_names()
    billed = {
        "data": [
            {
                "type": "bar",
                "name": LABELS[b],
                "x": names,
                "y": [r.buckets_billed.get(b, 0) for r in report.policies],
                "marker": {"color": COLORS[b]},
                "hovertemplate": "%{x}: %{y:,} tokens",
            }
            for b in buckets
        ],
        "layout": _layout(
            barmode="stack",
            hovermode="closest",
            xaxis={"gridcolor": GRID, "automargin": True},
            yaxis=_count_axis("billed input"),
        ),
    }
    lines = []
    seen: dict[tuple[int, ...], str] = {}  # a policy's prompts -> the first policy with the same ones
    for i, result in enumerate(report.policies):
        totals = tuple(c.total for c in result.calls)
        same = seen.setdefault(totals, result.policy)
        name = result.policy if same == result.policy else f"{result.policy} (same as {same})"
        lines.append(
            {  # a line that would hide under an identical one is drawn dashed over it, and says so
                "type": "scatter",
                "mode": "lines",
                "name": name,
                "x": list(range(len(result.calls))),
                "y": list(totals),
                "line": {
                    "color": PALETTE[i % len(PALETTE)],
                    "width": 1.5,
                    "dash": "solid" if same == result.policy else "dash",
                },
                "customdata": [f"call {c.index}" + (" (summary)" if c.kind == "summary" else "") for c in result.calls],
                "hovertemplate": "%{customdata}: %{y:,} tokens",
            }
        )
    prompts = {
        "data": lines,
        "layout": _layout(
            hovermode="closest",
            yaxis=_count_axis("tokens in the prompt"),
            xaxis={"title": {"text": "call (in replay order)"}, "gridcolor": GRID},
        ),
    }
    full = report.policies[0]
    priced = report.priced

    def money_cells(r: PolicyResult) -> str:
        if not priced:
            return ""
        saving = "-" if r is full else f"{dollar_saving(r)} ({dollar_share(r, full)})"
        return f"<td>{html_escape(saving)}</td><td>{html_escape(_usd(r))}</td>"

    rows = "".join(
        f"<tr><td><code>{html_escape(r.policy)}</code></td>" + money_cells(r) + f"<td>{r.billed_input:,}</td>"
        f"<td>{'-' if r is full else f'{r.saving:,} ({r.saving_share:.1%})'}</td><td>{r.largest_prompt:,}</td>"
        + (f"<td>{html_escape(facts_kept(r))}</td>" if full.facts else "")
        + f"<td>{_n(r.calls_over_window)}</td><td>{r.shared_prefix:,} ({r.shared_share:.1%})</td>"
        f"<td>{html_escape(r.description)}</td></tr>"
        for r in report.ranked()
    )
    if priced:
        unit = (
            "Saving: against <code>full</code>, in US dollars (negative: the policy costs more), the policies ranked "
            "by it; * where a changed call is billed as its provider would bill the replayed prompt "
            "(<code>docs/whatif.md</code>)."
        )
    else:
        why = html_escape(full.cost_unpriced or "the log's calls have no price")
        unit = f"Saving: against <code>full</code>, in tokens, the policies ranked by it; no dollars: {why}."
    parts = [
        "<h2>What if: the log under context policies</h2>",
        '<p class="muted">Every call keeps its own new messages; a policy decides what of the earlier history each '
        "prompt carries. Every count is rendered with the model's template, like the profile. Shared prefix: the "
        f"prompt tokens each call shares with the previous call of its thread (what a prefix cache could reuse). {unit}</p>",
        '<div class="scroll"><table class="whatif"><thead><tr><th>policy</th>'
        + (
            "<th>saving</th><th>cost</th><th>billed input</th><th>tokens saved</th>"
            if priced
            else "<th>billed input</th><th>saving</th>"
        )
        + "<th>largest prompt</th>"
        + ("<th>facts kept</th>" if full.facts else "")
        + f"<th>over the window</th><th>shared prefix</th><th>what it does</th></tr></thead><tbody>{rows}</tbody></table></div>",
        "<h3>Billed input per policy</h3>",
        '<div id="chart-whatif-billed" class="chart"></div>',
        "<h3>Prompt size per call</h3>",
        '<div id="chart-whatif-prompts" class="chart"></div>',
    ]
    return parts, {"whatif-billed": billed, "whatif-prompts": prompts}


def html_escape(text: str) -> str:
    import html

    return html.escape(text)


class WhatIfHtmlRenderer:
    """The HTML report of the log (the profile of ``full``) with the what-if section."""

    def render(self, report: WhatIfReport, options: RenderOptions = RenderOptions()) -> str:
        from tokprof.render.html import HtmlRenderer

        assert report.baseline is not None, "the HTML report needs the profile of full"
        parts, figures = whatif_section(report)
        return HtmlRenderer().page(
            report.baseline,
            options,
            parts,
            figures,
            embedded={"tokprof-whatif": json.dumps(report.to_dict(), ensure_ascii=False)},
        )
