"""The recall probe's report: a table (a row per policy, the control first) and JSON."""

from __future__ import annotations

import json

from tokprof.analyses.probe import ProbeReport
from tokprof.render import RenderOptions
from tokprof.render.console import Column, fit_table, safe, text_console


class ProbeJsonRenderer:
    def render(self, report: ProbeReport, options: RenderOptions = RenderOptions()) -> str:
        return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"


class ProbeTableRenderer:
    def render(self, report: ProbeReport, options: RenderOptions = RenderOptions()) -> str:
        console, out = text_console(options)
        console.print(
            f"[bold]tokprof[/bold] probe: {safe(report.question)!s} (expected {safe(report.expect)}; "
            f"{report.trials} trial{'s' if report.trials != 1 else ''} each, {safe(report.endpoint)})"
        )
        columns = [
            Column("policy", justify="left"),
            Column("prompt tokens", "tokens"),
            Column("hits"),
            Column("confident wrong", "wrong"),
            Column("misses"),
            Column("errors", drop=1),
            Column("first answer", "answer", justify="left", drop=2),
        ]
        rows = []
        for result in report.results:
            first = result.answers[0].text if result.answers else ("(dry run: not sent)" if report.dry_run else "")
            counts = [str(result.count(o)) if not report.dry_run else "-" for o in ("hit", "wrong", "miss", "error")]
            rows.append([safe(result.policy), f"{result.prompt_tokens:,}", *counts, safe(first[:60])])
        console.print(fit_table(console, columns, rows))
        for note in report.notes:
            console.print(f"[yellow]note[/yellow]: {safe(note)}")
        console.print(
            "  hit: the answer holds the expected value; confident wrong: a value of the same shape that is not "
            "it; miss: neither (a refusal, another subject). The control asks the fact alone."
        )
        return "".join(line.rstrip() + "\n" for line in out.getvalue().splitlines())
