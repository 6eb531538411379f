"""Budgets and baselines: measure a log or a catalogue, and judge it against limits.

Metrics (see ``tokprof.transforms.config.METRICS``) come from a profile and a tools report. A budget fails when
a metric is over its ``max``, or over the baseline by more than ``max_increase``; its ``level``
says whether that fails the check (``error``) or only warns (``warn``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import tokprof.base.bounded as bounded
from tokprof.version import __version__
from tokprof.analyses.cache_loss import miss_cost
from tokprof.mcp.budgets import ServerResult, evaluate_servers
from tokprof.analyses.tools import ToolsReport
from tokprof.attribution.catalogue import CatalogueSummary
from tokprof.transforms.config import (
    HIGHER_IS_BETTER,
    METRICS,
    Config,
    ConfigError,
    Increase,
    McpBudgets,
    finite,
    shown,
    text_ok,
)
from tokprof.base.text import visible
from tokprof.models.base import ModelInfo
from tokprof.profiling import Profile

BASELINE_SCHEMA = 1
PASS, WARN, FAIL, SKIP = "pass", "warn", "fail", "n/a"


@dataclass
class Measurement:
    """What was measured: each metric's value and each tool's cost. A value is None when it cannot be
    measured: ``unknown`` says why (it needs a log and there is none, or the log does not record what
    it rests on)."""

    model: str
    template_sha256: str
    source: str
    metrics: dict[str, float | None]
    tools: dict[str, int]
    estimate: str | None = None  # how the counts are estimated, when they are not exact
    unknown: dict[str, str] = field(default_factory=dict)  # metric -> why it has no value
    mode: str = "log"  # "log", or "static" for a tool catalogue priced on its own
    explain: dict[str, str] = field(default_factory=dict)  # metric -> what most of its value is, for a failure
    skipped: list[str] = field(default_factory=list)  # sessions of a directory that could not be read, with why

    def baseline_dict(self, folder: str | None = None) -> dict:
        """The baseline to commit; ``folder``: where it is written, so that its source is stored
        relative to it and the baseline reads the same from any working directory."""
        source = self.source
        if folder is not None and not Path(source).is_absolute():
            source = os.path.relpath(Path(source).resolve(), Path(folder).resolve())
        return {
            "schema_version": BASELINE_SCHEMA,
            "tokprof_version": __version__,
            "mode": self.mode,
            "model": self.model,
            "chat_template_sha256": self.template_sha256,
            "source": Path(source).as_posix(),
            "metrics": {k: v for k, v in self.metrics.items() if v is not None},
            "tools": dict(sorted(self.tools.items())),
        }


#: A part of the prompt a log may not record -> the metrics that rest on it.
NOT_RECORDED_METRICS = {
    "tool_definitions": ("tool_definitions", "largest_tool", "unused_tool_waste"),
    "system_prompt": ("system_prompt",),
}
NOT_RECORDED = {
    "tool_definitions": "not recorded: the log does not record its tool definitions (give them with --tools FILE, "
    'or set not_recorded = "skip" on this budget)',
    "system_prompt": "not recorded: the log does not record its system prompt (give it with --system FILE, or set "
    'not_recorded = "skip" on this budget)',
}


def measure(
    model: ModelInfo, catalogue: CatalogueSummary | None, profile: Profile | None, system_tokens: int, source: str
) -> Measurement:
    """The metrics of a log's profile (or of a catalogue alone, with ``profile`` None): ``catalogue`` is
    the main catalogue with what its unused tools wasted, ``system_tokens`` the system prompt's cost."""
    main = catalogue.catalogue if catalogue else None
    metrics: dict[str, float | None] = {name: None for name in METRICS}
    unknown = {name: "needs a log" for name in METRICS if METRICS[name][1]}
    metrics["tool_definitions"] = main.total if main else 0
    metrics["largest_tool"] = max((t.marginal for t in main.tools), default=0) if main else 0
    metrics["system_prompt"] = system_tokens
    explain: dict[str, str] = {}
    if profile is not None:
        summary = profile.summary()
        metrics["first_prompt"] = profile.calls[0].total if profile.calls else 0
        metrics["largest_prompt"] = summary.largest_prompt
        metrics["billed_input"] = summary.billed_input
        # the waste as a share of the billed input in the catalogue's units (an estimate's catalogue is not scaled)
        share = catalogue.unused_waste_share if catalogue else None
        metrics["unused_tool_waste"] = share or 0.0
        unknown = {}
        _measure_cost(profile, metrics, unknown, explain)
        for part, metrics_of_part in NOT_RECORDED_METRICS.items():
            if part in profile.not_recorded:
                for name in metrics_of_part:
                    metrics[name] = None
                    unknown[name] = NOT_RECORDED[part]
    tools = {t.name: t.marginal for t in main.tools} if main else {}
    estimate = None
    if not model.exact:
        estimate = model.method or "a stated proxy"
    elif profile is not None and profile.inferred:
        estimate = profile.inferred
    return Measurement(
        model=model.name,
        template_sha256=model.chat_template_sha256,
        source=source,
        metrics=metrics,
        tools=tools,
        estimate=estimate,
        unknown=unknown,
        explain=explain,
    )


NO_CACHE_USAGE = 'not recorded: the log reports no cache usage (or set not_recorded = "skip" on this budget)'


def _measure_cost(
    profile: Profile, metrics: dict[str, float | None], unknown: dict[str, str], explain: dict[str, str]
) -> None:
    """The cost and cache metrics of a profile: unpriced calls make the cost unknown, never $0."""
    summary = profile.summary()
    cost = summary.cost
    for name, value in (
        ("cost", cost.total if cost else None),
        ("largest_call_cost", cost.largest_call if cost else None),
    ):
        if cost is None:
            unknown[name] = "not measured: the profile was made without prices"
        elif not cost.priced:
            reasons = "; ".join(u.reason for u in cost.unpriced)
            unknown[name] = (
                f"unpriced: {cost.calls_unpriced} of {cost.calls_priced + cost.calls_unpriced} calls ({reasons})"
            )
        else:
            metrics[name] = round(value, 8) if value is not None else None
    usage = summary.reported
    if usage is None or usage.cache_read is None:
        unknown["cache_hit_rate"] = NO_CACHE_USAGE
    else:
        metrics["cache_hit_rate"] = round(usage.hit_rate or 0.0, 6)
    missed = miss_cost(profile)
    if missed.total is None:
        unknown["cache_miss_cost"] = (missed.why or "not measured") + ' (or set not_recorded = "skip" on this budget)'
    else:
        metrics["cache_miss_cost"] = missed.total
        lost = summary.cache.lost if summary.cache else None
        if lost is not None and lost.breaks:
            worst = lost.by_reason[0]
            explain["cache_miss_cost"] = (
                f"most of it {worst.label}, ${worst.cost:.4f} on {worst.calls} call"
                f"{'' if worst.calls == 1 else 's'}; the costliest break: call "
                f"{lost.breaks[0].call}, docs/cache.md"
            )
    if usage is None:
        unknown["uncached_input"] = (
            'not recorded: the log reports no usage (or set not_recorded = "skip" on this budget)'
        )
    else:
        metrics["uncached_input"] = usage.uncached_input


def load_baseline(path: str, measurement: Measurement) -> dict:
    try:
        data = json.loads(bounded.read_text(path, "baseline"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read baseline: {exc.strerror}") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: baseline is not valid JSON: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: baseline is not valid JSON: nested too deeply") from None
    if not isinstance(data, dict) or data.get("schema_version") != BASELINE_SCHEMA:
        raise ConfigError(f"{path}: schema_version: not a tokprof baseline (schema_version {BASELINE_SCHEMA})")
    if data.get("model") != measurement.model:
        raise ConfigError(
            f"{path}: model: baseline made with {data.get('model')!r}, this check uses {measurement.model!r}; "
            "run with --update-baseline to remake it"
        )
    mode = data.get("mode")
    if mode is not None and mode != measurement.mode:
        described = {"log": "a log", "static": "a tool catalogue alone (--tools)"}
        raise ConfigError(
            f"{path}: mode: baseline made from {described.get(str(mode), repr(mode))}, this check measures "
            f"{described[measurement.mode]}; run with --update-baseline to remake it"
        )
    if not isinstance(data.get("metrics"), dict) or not isinstance(data.get("tools"), dict):
        raise ConfigError(f"{path}: metrics: missing or not an object")
    for name, value in data["metrics"].items():
        if name not in METRICS:
            raise ConfigError(
                f"{path}: metrics.{visible(name)[:80]}: unknown metric (expected one of {', '.join(METRICS)})"
            )
        number = finite(value)
        if number is None or number < 0:
            raise ConfigError(f"{path}: metrics.{name}: expected a non-negative number, found {shown(value)}")
    for name, value in data["tools"].items():
        if not text_ok(name):
            raise ConfigError(f"{path}: tools: a tool name is not valid Unicode: {visible(repr(name))[:80]}")
        if isinstance(value, bool) or not isinstance(value, int) or finite(value) is None:
            raise ConfigError(f"{path}: tools.{visible(name)[:80]}: expected a number of tokens, found {shown(value)}")
    return data


@dataclass
class MetricResult:
    name: str
    value: float | None
    status: str
    max: float | None = None
    level: str | None = None
    baseline: float | None = None
    min: float | None = None
    allowed_increase: str | None = None  # as written (the JSON's max_increase)
    increase: Increase | None = None  # the same, to show in the metric's unit
    reasons: list[str] = field(default_factory=list)
    failed: tuple[str, ...] = ()  # what it failed: "budget", "baseline", "not recorded"
    new: bool = False  # measured now, not in the baseline

    @property
    def change(self) -> float | None:
        if self.value is None or self.baseline is None:
            return None
        return self.value - self.baseline

    def to_dict(self) -> dict:
        change = self.change
        pct = None
        if change is not None and self.baseline:
            pct = round(change / self.baseline, 6)
        return {
            "metric": self.name,
            "description": METRICS[self.name][2],
            "unit": METRICS[self.name][0],
            "value": self.value,
            "max": self.max,
            "min": self.min,
            "level": self.level,
            "baseline": self.baseline,
            "change": change,
            "change_ratio": pct,
            "max_increase": self.allowed_increase,
            "status": self.status,
            "failed": list(self.failed),
            "new": self.new,
            "reasons": self.reasons,
        }


@dataclass
class CheckResult:
    model: str
    source: str
    metrics: list[MetricResult]
    tools_added: list[dict] = field(default_factory=list)
    tools_removed: list[dict] = field(default_factory=list)
    tools_changed: list[dict] = field(default_factory=list)
    baseline_path: str | None = None
    notes: list[str] = field(default_factory=list)
    estimate: str | None = None  # how the counts are estimated, when they are not exact
    servers: list[ServerResult] = field(default_factory=list)  # per MCP server and tool ([budgets.mcp])

    @property
    def status(self) -> str:
        statuses = {m.status for m in self.metrics} | {s.status for s in self.servers}
        return FAIL if FAIL in statuses else WARN if WARN in statuses else PASS

    @property
    def exit_code(self) -> int:
        return 1 if self.status == FAIL else 0

    def to_dict(self) -> dict:
        return {
            "schema_version": 1,
            "kind": "check",
            "model": self.model,
            "exact": self.estimate is None,
            "estimate": self.estimate,
            "source": self.source,
            "status": self.status,
            "baseline": self.baseline_path,
            "metrics": [m.to_dict() for m in self.metrics],
            "tools": {"added": self.tools_added, "removed": self.tools_removed, "changed": self.tools_changed},
            "mcp": [s.to_dict() for s in self.servers],
            "notes": self.notes,
        }


def _fmt(metric: str, value: float) -> str:
    unit = METRICS[metric][0]
    if unit == "usd":
        return f"${value:,.2f}" if value >= 1 or value == 0 else f"${value:.4f}"
    return f"{value:.2%}" if unit == "share" else f"{value:,.0f}"


def _change_text(metric: str, change: float) -> str:
    """A change: in percentage points for a share (1.44% to 23.95% is up 22.51 points), else in tokens."""
    if METRICS[metric][0] == "share":
        return f"{change * 100:.2f} percentage points"
    return _fmt(metric, change)


def _allowed_text(metric: str, increase: "Increase", base: float) -> str:
    if METRICS[metric][0] == "share" and increase.relative:
        return f"{increase} of it ({increase.allowed(base) * 100:.2f} percentage points)"
    return increase.shown(METRICS[metric][0])


def evaluate(config: Config, measurement: Measurement, baseline: dict | None, baseline_path: str | None) -> CheckResult:
    results = []
    untolerated: list[str] = []  # metrics in dollars or shares that a global number of tokens does not apply to
    names = list(config.budgets)
    if baseline is not None:
        names += [m for m in METRICS if m not in config.budgets and m in baseline["metrics"]]
    for name in sorted(set(names), key=list(METRICS).index):
        budget = config.budgets.get(name)
        value = measurement.metrics.get(name)
        level = budget.level if budget else "error"
        result = MetricResult(
            name=name,
            value=value,
            status=PASS,
            level=level,
            max=budget.max if budget else None,
            min=budget.min if budget else None,
        )
        if value is None:
            why = measurement.unknown.get(name, "not measured")
            result.reasons.append(why)
            # what the log does not record fails unless the budget says to skip it: a gate must not pass on no data
            if why.startswith(("not recorded", "unpriced")) and not (budget and budget.not_recorded == "skip"):
                result.status = FAIL if level == "error" else WARN
                result.failed = ("not recorded",)
            else:
                result.status = SKIP
            results.append(result)
            continue
        failed: list[str] = []
        if budget and budget.max is not None and value > budget.max:
            failed.append("budget")
            result.reasons.append(
                f"exceeded the budget: {_fmt(name, value)}, over the max of {_fmt(name, budget.max)}"
                + (f" ({measurement.explain[name]})" if name in measurement.explain else "")
            )
        if budget and budget.min is not None and value < budget.min:
            failed.append("budget")
            result.reasons.append(f"below the budget: {_fmt(name, value)}, under the min of {_fmt(name, budget.min)}")
        increase = budget.max_increase if budget and budget.max_increase is not None else config.max_increase
        if (
            increase is not None
            and not increase.relative
            and METRICS[name][0] in ("share", "usd")
            and not (budget and budget.max_increase is not None)
        ):
            increase = None  # a global number of tokens says nothing about a share or dollars
            if baseline is not None and name in baseline["metrics"]:
                untolerated.append(name)
        if increase is None and baseline is not None:
            increase = Increase(0.0, relative=True)  # with a baseline and no tolerance, any increase fails
        if baseline is not None and name not in baseline["metrics"]:
            result.new = True
            result.reasons.append("new: the baseline has no value for it yet (--update-baseline records one)")
        if (
            budget
            and budget.max is None
            and budget.min is None
            and (baseline is None or name not in baseline["metrics"])
        ):
            result.status = SKIP
            if not result.new:
                result.reasons.append("nothing to check: no max or min, and no baseline value")
            results.append(result)
            continue
        if baseline is not None and name in baseline["metrics"]:
            base = float(baseline["metrics"][name])
            result.baseline = base
            if increase is not None and name in HIGHER_IS_BETTER:
                result.allowed_increase, result.increase = str(increase), increase
                if value < base - increase.allowed(base):
                    failed.append("baseline")
                    result.reasons.append(
                        f"regressed against the baseline: {_fmt(name, value)} is down {_change_text(name, base - value)} "
                        f"from the baseline's {_fmt(name, base)}, more than the allowed "
                        f"{_allowed_text(name, increase, base)}"
                    )
            elif increase is not None:
                result.allowed_increase, result.increase = str(increase), increase
                if value > base + increase.allowed(base):
                    failed.append("baseline")
                    result.reasons.append(
                        f"regressed against the baseline: {_fmt(name, value)} is up {_change_text(name, value - base)} "
                        f"from the baseline's {_fmt(name, base)}, more than the allowed "
                        f"{_allowed_text(name, increase, base)}"
                    )
        if failed:
            result.status = FAIL if level == "error" else WARN
            result.failed = tuple(failed)
        results.append(result)

    check = CheckResult(
        model=measurement.model,
        source=measurement.source,
        metrics=results,
        baseline_path=baseline_path,
        estimate=measurement.estimate,
    )
    check.servers = evaluate_servers(
        config.mcp or McpBudgets(), measurement.tools, baseline["tools"] if baseline is not None else None
    )
    if baseline is not None:
        before, after = baseline["tools"], measurement.tools
        check.tools_added = [{"name": n, "marginal": after[n]} for n in sorted(set(after) - set(before))]
        check.tools_removed = [{"name": n, "marginal": before[n]} for n in sorted(set(before) - set(after))]
        check.tools_changed = [
            {"name": n, "before": before[n], "after": after[n], "change": after[n] - before[n]}
            for n in sorted(set(before) & set(after))
            if before[n] != after[n]
        ]
        if baseline.get("chat_template_sha256") != measurement.template_sha256:
            check.notes.append("the baseline was made with another chat template")
        if untolerated:
            its = "its own, it fails" if len(untolerated) == 1 else "their own, they fail"
            fall = " (a fall, for cache_hit_rate)" if "cache_hit_rate" in untolerated else ""
            check.notes.append(
                f"the global max_increase ({config.max_increase}) is a number of tokens and does not apply to "
                f"{', '.join(untolerated)}: without a max_increase of {its} on any increase over the baseline{fall}"
            )
    return check


#: The baseline's file name when the configuration names none: next to the configuration.
DEFAULT_BASELINE = "tokprof-baseline.json"


def measure_profile(profile: Profile) -> Measurement:
    """The metrics of a profiled log (with its catalogue, when it has one)."""
    system = profile.calls[0].buckets["system"] if profile.calls else 0
    return measure(profile.model, profile.catalogue, profile, system, profile.source.path)


def measure_catalogue(report: ToolsReport) -> Measurement:
    """The metrics of a catalogue priced on its own (``tokprof tools --tools FILE``)."""
    measurement = measure(report.model, report.summary_section(), None, report.system_tokens or 0, report.source.path)
    measurement.mode = "static"
    return measurement


def baseline_location(config: Config, explicit: str | None, updating: bool) -> str | None:
    """The baseline to compare with (or to write): the one named, else the configuration's, else
    :data:`DEFAULT_BASELINE` next to the configuration when it exists or is to be written."""
    if explicit is not None:
        return explicit
    named = config.resolve(config.baseline)
    if named is not None:
        return named
    default = config.resolve(DEFAULT_BASELINE)
    assert default is not None
    return default if updating or Path(default).is_file() else None


def judge(
    measurement: Measurement,
    config: Config,
    baseline_path: str | None,
    *,
    explicit: bool = False,
    updating: bool = False,
) -> CheckResult:
    """Judge a measurement against the budgets and the baseline at ``baseline_path`` (``explicit``:
    named by the user, so that its absence is an error). ``updating``: the baseline is being
    written from this measurement, so it is not compared with."""
    baseline = None
    notes = []
    if not updating and baseline_path:
        if Path(baseline_path).exists() and not Path(baseline_path).is_dir():  # a device too: read, capped
            baseline = load_baseline(baseline_path, measurement)
        elif explicit:
            raise ConfigError(f"{baseline_path}: no such baseline file")
        else:
            notes.append(f"no baseline at {baseline_path} yet: make one with --update-baseline")
    if not config.budgets and config.mcp is None and baseline is None and not updating:
        raise ConfigError(
            "no budgets to check: add [tool.tokprof.budgets] to pyproject.toml (or a tokprof.toml), "
            "pass --config FILE, or compare with --baseline FILE"
        )
    if baseline is not None and config.max_increase is None:
        notes.append("no global max_increase: a metric without its own fails on any increase over the baseline")
    result = evaluate(config, measurement, baseline, baseline_path if baseline is not None else None)
    notes += [f"skipped {why}" for why in measurement.skipped]
    result.notes = notes + result.notes
    return result
