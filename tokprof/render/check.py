"""Renderers for the budget check: terminal table, Markdown (pull-request comments), JSON, and
GitHub Actions annotations."""

from __future__ import annotations

from collections.abc import Callable

import re

from tokprof.base.text import json_text
from tokprof.analyses.budgets import FAIL, PASS, SKIP, WARN, CheckResult, MetricResult
from tokprof.transforms.config import METRICS
from tokprof.render.console import Column, fit_table, safe, text_console
from tokprof.base.text import visible
from tokprof.render import RenderOptions

ICONS = {PASS: "pass", WARN: "WARN", FAIL: "FAIL", SKIP: "n/a"}
MD_ICONS = {PASS: "✅ pass", WARN: "⚠️ warn", FAIL: "❌ fail", SKIP: "➖ n/a"}


def _value(m: MetricResult, value: float | None) -> str:
    if value is None:
        return "-"
    unit = METRICS[m.name][0]
    if unit == "usd":
        from tokprof.pricing.render import dollars

        return dollars(value)
    return f"{value:.2%}" if unit == "share" else f"{value:,.0f}"


def _measured(m: MetricResult) -> str:
    """The value column: the value, or why there is none when the log does not record it."""
    if m.value is None and any(r.startswith("not recorded") for r in m.reasons):
        return "not recorded"
    if m.value is None and any(r.startswith("unpriced") for r in m.reasons):
        return "unpriced"
    return _value(m, m.value)


def _change(m: MetricResult) -> str:
    change = m.change
    if change is None:
        return "new" if m.new else "-"
    if METRICS[m.name][0] == "share":
        text = f"{change * 100:+.2f} pt"
    elif METRICS[m.name][0] == "usd":
        text = f"{'+' if change >= 0 else '-'}{_value(m, abs(change))}"
    else:
        text = f"{change:+,.0f}"
    if m.baseline:
        text += f" ({change / m.baseline:+.2%})"
    return text


def _limit(m: MetricResult) -> str:
    parts = []
    if m.max is not None:
        parts.append(f"max {_value(m, m.max)}")
    if m.min is not None:
        parts.append(f"min {_value(m, m.min)}")
    if m.increase is not None:
        parts.append(f"+{m.increase.shown(METRICS[m.name][0], short=True)}")
    elif m.allowed_increase is not None:
        parts.append(f"+{m.allowed_increase}")
    return ", ".join(parts) or "-"


def _verdict(check: CheckResult) -> str:
    """ "FAILED: 1 metric exceeded its budget, 1 regressed against the baseline" and the like: each metric
    counted once, by the first of what it failed (a metric over its budget and the baseline exceeded its
    budget), so that the counts add up to the metrics that failed."""
    reasons = (
        ("budget", "exceeded its budget", "exceeded their budgets"),
        ("baseline", "regressed against the baseline", "regressed against the baseline"),
        ("not recorded", "not recorded in the log", "not recorded in the log"),
    )

    def count(status: str) -> str:
        found = [m for m in check.metrics if m.status == status]
        first = [next((reason for reason, *_ in reasons if reason in m.failed), None) for m in found]
        parts = [_metrics(first.count(reason), one, many) for reason, one, many in reasons if reason in first]
        return ", ".join(parts) or _metrics(len(found), "", "")

    fails = sum(m.status == FAIL for m in check.metrics)
    warns = sum(m.status == WARN for m in check.metrics)
    if fails:
        return f"FAILED: {count(FAIL)}" + (f"; warnings: {count(WARN)}" if warns else "")
    if warns:
        return f"passed with warnings: {count(WARN)}"
    return "passed"


def _metrics(n: int, one: str, many: str) -> str:
    """ "1 metric exceeded its budget", "3 metrics exceeded their budgets"."""
    return (f"{n} metric {one}" if n == 1 else f"{n} metrics {many}").rstrip()


def _level(m: MetricResult) -> str:
    """What a failure of the metric does (error fails the build, warn only warns), on every row."""
    return m.level or "-"


def _estimated(check: CheckResult) -> str:
    return f", ESTIMATE: {check.estimate}" if check.estimate else ""


class CheckTableRenderer:
    def render(self, check: CheckResult, options: RenderOptions = RenderOptions()) -> str:
        console, out = text_console(options)
        console.print(
            f"[bold]tokprof check[/bold] of {safe(check.source)} (model {safe(check.model)}{safe(_estimated(check))})"
        )
        columns = [
            Column("metric", justify="left"),
            Column("value"),
            Column("limit"),
            Column("baseline", drop=2),
            Column("change"),
            Column("level", justify="left", drop=3),
            Column("status", justify="left"),
        ]
        styles = {FAIL: "red", WARN: "yellow", PASS: "green", SKIP: "dim"}
        rows = [
            [
                m.name,
                _measured(m),
                _limit(m),
                _value(m, m.baseline),
                _change(m),
                _level(m),
                f"[{styles[m.status]}]{ICONS[m.status]}[/{styles[m.status]}]",
            ]
            for m in check.metrics
        ]
        console.print(fit_table(console, columns, rows))
        for m in check.metrics:
            for reason in m.reasons:
                if m.status in (FAIL, WARN):
                    console.print(f"  {ICONS[m.status]} {m.name}: {safe(reason)}")
        _tool_lines(check, lambda text: console.print(safe(text)))
        for server in check.servers:
            console.print(
                f"  {ICONS[FAIL] if server.status == FAIL else '-'} MCP {server.kind} {safe(server.name)}: "
                f"{safe('; '.join(server.reasons) or 'within budget')}"
            )
        for note in check.notes:
            console.print(f"  note: {safe(note)}")
        console.print(_verdict(check))
        return out.getvalue()


def _tool_lines(check: CheckResult, emit: Callable[[str], None]) -> None:
    for t in check.tools_added:
        emit(f"  tool added: {t['name']} (+{t['marginal']:,} tokens per request)")
    for t in check.tools_removed:
        emit(f"  tool removed: {t['name']} (-{t['marginal']:,} tokens per request)")
    for t in check.tools_changed:
        emit(f"  tool changed: {t['name']} {t['before']:,} -> {t['after']:,} ({t['change']:+,} tokens per request)")


def _tool_rows(check: CheckResult) -> list[tuple[str, str, str, str]]:
    """Per tool that changed against the baseline: (tool, baseline, now, change), in tokens per request."""
    rows = [(f"{t['name']} (added)", "-", f"{t['marginal']:,}", f"+{t['marginal']:,}") for t in check.tools_added]
    rows += [(f"{t['name']} (removed)", f"{t['marginal']:,}", "-", f"-{t['marginal']:,}") for t in check.tools_removed]
    rows += [(t["name"], f"{t['before']:,}", f"{t['after']:,}", f"{t['change']:+,}") for t in check.tools_changed]
    return rows


_MARKDOWN = re.compile(r"([\\`*_\[\]<>|#!~])")


def md(text: object) -> str:
    """Text from a log for Markdown (a step summary, a pull-request comment): shown as written, with no
    markup, link, HTML or table cell of its own, on one line."""
    return _MARKDOWN.sub(r"\\\1", visible(str(text)))


def _n(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


class CheckMarkdownRenderer:
    def render(self, check: CheckResult, options: RenderOptions = RenderOptions()) -> str:
        lines = [
            f"### tokprof check: {_verdict(check)}",
            "",
            f"{md(check.source)}, model {md(check.model)}{md(_estimated(check))}",
            "",
            "| metric | value | limit | baseline | change | status |",
            "| --- | ---: | ---: | ---: | ---: | --- |",
        ]
        for m in check.metrics:
            lines.append(
                f"| {m.name} | {_measured(m)} | {_limit(m)} | {_value(m, m.baseline)} | {md(_change(m))} | "
                f"{MD_ICONS[m.status]} |"
            )
        reasons = [f"- **{m.name}**: {md(r)}" for m in check.metrics if m.status in (FAIL, WARN) for r in m.reasons]
        if reasons:
            lines += ["", *reasons]
        tools = _tool_rows(check)
        if tools:
            lines += [
                "",
                "**Tools against the baseline** (tokens per request)",
                "",
                "| tool | baseline | now | change |",
                "| --- | ---: | ---: | ---: |",
            ]
            lines += [f"| {md(name)} | {before} | {after} | {change} |" for name, before, after, change in tools]
        if check.servers:
            lines += [
                "",
                "**MCP servers and tools** (tokens per request)",
                "",
                "| server or tool | now | max | baseline | change | status |",
                "| --- | ---: | ---: | ---: | ---: | --- |",
            ]
            lines += [
                f"| {server.kind} {md(server.name)} | {_n(server.tokens)} | {_n(server.max)} | {_n(server.baseline)} "
                f"| {'-' if server.change is None else f'{server.change:+,}'} | "
                f"{MD_ICONS[server.status]} {md('; '.join(server.reasons))} |"
                for server in check.servers
            ]
        for note in check.notes:
            lines += ["", f"_{md(note)}_"]
        return "\n".join(lines) + "\n"


class CheckJsonRenderer:
    def render(self, check: CheckResult, options: RenderOptions = RenderOptions()) -> str:
        return json_text(check.to_dict())
