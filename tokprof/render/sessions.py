"""Renderers of a directory of sessions: a row per session, then the totals."""

from __future__ import annotations

import io
import json
import re

from tokprof.analyses.sessions import SessionsReport
from tokprof.render.actions import NOTHING_CACHED, TITLE, wrapped
from tokprof.render.console import Column, fit_table, safe, text_console
from tokprof.render import RenderOptions
from tokprof.render import csvsafe
from tokprof.profiling import missing_buckets, recorded
from tokprof.render.table import NOT_RECORDED, NOT_RECORDED_NOTE

ID_WIDTH = 8  # sessions are shown by the start of their id, like short commit hashes; --session takes it
SHORT = {
    "system": "system",
    "tool_definitions": "tool defs",
    "tool_results": "tool res.",
    "conversation": "convers.",
    "unrecorded": "unrec.*",
}
TINY = {
    "system": "sys.",
    "tool_definitions": "tools",
    "tool_results": "res.",
    "conversation": "conv.",
    "unrecorded": "unrec.*",
}


class SessionsTableRenderer:
    def render(self, report: SessionsReport, options: RenderOptions = RenderOptions()) -> str:
        console, out = text_console(options)
        totals = report.totals()
        exact = "exact" if totals.exact else "ESTIMATE"
        console.print(
            f"[bold]tokprof[/bold] sessions in {safe(report.directory)} ({totals.sessions} session{'' if totals.sessions == 1 else 's'}, {exact})"
        )
        advice = wrapped(report.actions(), console.width, NOTHING_CACHED)
        if advice:  # what to change comes first (tokprof.analyses.actions)
            console.print(f"[bold]{TITLE}[/bold] (cache fixes each session's calls price, added up; most first)")
            for line in advice:
                console.print(safe(line))
            console.print(
                "  what a replay proves per session (tool results cut, tools never called dropped): "
                "tokprof profile DIR --session ID"
            )
        names = report.bucket_names()
        columns = [
            Column("session", justify="left"),
            Column("model", justify="left", drop=2),
            Column("calls"),
            Column("compact.", "cmp.", drop=1),
            Column("billed input", "billed"),
            Column("reported", drop=3),
        ]
        columns += [Column(SHORT.get(name, name), TINY.get(name)) for name in names]
        columns.append(Column("cost", drop=4))
        rows = []
        missing_everywhere = (
            frozenset.intersection(*(missing_buckets(r.not_recorded) for r in report.sessions))
            if report.sessions
            else frozenset()
        )
        for row in report.sessions:
            shares = row.shares()
            missing = missing_buckets(row.not_recorded)
            rows.append(
                [
                    safe(row.session[:ID_WIDTH]),
                    safe(re.sub(r"-\d{8}$", "", row.model or "-")),
                    f"{row.calls:,}",
                    f"{row.compactions:,}",
                    f"{row.billed_input:,}",
                    "-" if row.billed_input_reported is None else f"{row.billed_input_reported:,}",
                    *(_share(shares.get(name, 0.0), name, missing) for name in names),
                    _cost(row.cost, row.priced),
                ]
            )
        reported = totals.billed_input_reported
        rows.append(
            [
                "[bold]total[/bold]",
                "",
                f"{totals.calls:,}",
                f"{totals.compactions:,}",
                f"{totals.billed_input:,}",
                "-" if reported is None else f"{reported:,}",
                *(_share(totals.shares.get(name, 0.0), name, missing_everywhere) for name in names),
                _cost(totals.cost, totals.priced),
            ]
        )
        console.print(fit_table(console, columns, rows))
        for line in _cache_lines(report):
            console.print(safe(line))
        for label, key in (("ESTIMATE", "estimate"), ("INFERRED", "inferred")):
            texts: dict[str, int] = {}
            for row in report.sessions:
                if getattr(row, key):
                    texts[getattr(row, key)] = texts.get(getattr(row, key), 0) + 1
            for text, count in texts.items():
                console.print(f"[bold]{label}[/bold] ({count} session{'s' if count != 1 else ''}): {safe(text)}")
        for row in report.sessions:
            if row.unpriced:
                console.print(f"  unpriced calls in {safe(row.session[:ID_WIDTH])}: {safe(row.unpriced)}")
        if any(not row.priced for row in report.sessions):
            console.print("  +cost: some calls have no price, and are not in it")
        if any(missing_buckets(r.not_recorded) & set(names) for r in report.sessions):
            console.print(f"  {NOT_RECORDED_NOTE}")
        if "unrecorded" in names:
            console.print(
                "  *unrec.: the 'unrecorded' bucket; give what the logs do not record with --system and --tools"
            )
        for row in report.sessions:
            if row.warnings:
                differs = row.weighted_relative_difference
                detail = f" (computed vs reported: {differs:.1%} of the reported tokens)" if differs is not None else ""
                console.print(
                    f"[yellow]warnings[/yellow] {safe(row.session[:ID_WIDTH])}: {safe(', '.join(row.warnings))}{detail}"
                )
        console.print("  one session's calls: tokprof profile DIR --session ID (the start of the id is enough)")
        for skipped in report.skipped:
            console.print(f"[yellow]skipped[/yellow]: {safe(skipped.error)}")
        return out.getvalue()


class SessionsJsonRenderer:
    def render(self, report: SessionsReport, options: RenderOptions = RenderOptions()) -> str:
        return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"


class SessionsCsvRenderer:
    def render(self, report: SessionsReport, options: RenderOptions = RenderOptions()) -> str:
        out = io.StringIO()
        writer = csvsafe.Writer(out)
        names = report.bucket_names()
        writer.writerow(
            [
                "session",
                "path",
                "format",
                "model",
                "calls",
                "compactions",
                "billed_input",
                "billed_input_reported",
                *names,
                "exact",
                "cache_read_reported",
                "cache_write_reported",
                "cost",
                "priced",
            ]
        )
        for row in report.sessions:
            writer.writerow(
                [
                    row.session,
                    row.path,
                    row.format,
                    row.model or "",
                    row.calls,
                    row.compactions,
                    row.billed_input,
                    "" if row.billed_input_reported is None else row.billed_input_reported,
                    *(row.buckets.get(name, 0) for name in names),
                    "true" if row.exact else "false",
                    "" if row.cache_read_reported is None else row.cache_read_reported,
                    "" if row.cache_write_reported is None else row.cache_write_reported,
                    "" if row.cost is None else f"{row.cost:.8f}".rstrip("0").rstrip("."),
                    "true" if row.priced else "false",
                ]
            )
        return out.getvalue()


def _cache_lines(report: SessionsReport) -> list[str]:
    """What the sessions' cache misses cost: in all, by reason, and the costliest sessions."""
    from tokprof.pricing.render import dollars

    totals = report.totals()
    if totals.cache_lost_cost is None:
        return []
    measured = sum(1 for r in report.sessions if r.cache_lost_cost is not None)
    share = f", {totals.cache_lost_cost / totals.cost:.1%} of the cost" if totals.cost else ""
    head = (
        f"cache: misses cost {dollars(totals.cache_lost_cost)} over {measured} session"
        f"{'' if measured == 1 else 's'} ({'what keeping the cache would have saved' + share})"
    )
    if not totals.cache_lost_cost:
        return [head]
    reasons = "; ".join(f"{label} {dollars(cost)}" for label, cost in list(totals.cache_lost_by_reason.items())[:5])
    worst = ", ".join(
        f"{w.session[:ID_WIDTH]} {dollars(w.cost)}" + (f" (most: {w.reason})" if w.reason else "")
        for w in totals.cache_worst
    )
    return [head, f"  by reason: {reasons}", f"  costliest sessions: {worst}"]


def _cost(value: float | None, priced: bool) -> str:
    from tokprof.pricing.render import dollars

    if value is None:
        return "unpriced"
    return dollars(value) + ("" if priced else "+")


def _share(share: float, name: str, missing: frozenset[str]) -> str:
    """A bucket's share of a session's billed input: ``n/r`` for an empty bucket its log does not record."""
    figure = recorded(share, name, missing)
    return NOT_RECORDED if figure is None else f"{figure:.1%}"
