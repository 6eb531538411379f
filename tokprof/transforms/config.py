"""tokprof's configuration: ``[tool.tokprof]`` in pyproject.toml, or a tokprof.toml.

Found by walking up from the working directory, like other Python tools; ``--config`` names one.
In pyproject.toml the settings live under ``[tool.tokprof]`` and ``[tool.tokprof.budgets]``; in
tokprof.toml they are at the top level and under ``[budgets]``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

import tokprof.base.bounded as bounded
from tokprof.pricing.billing import PriceError, Rates, parse_rates
from tokprof.base.errors import TokprofError

#: metric name -> (unit, needs a log, description)
METRICS: dict[str, tuple[str, bool, str]] = {
    "tool_definitions": ("tokens", False, "tool definitions per request"),
    "system_prompt": ("tokens", False, "system prompt tokens"),
    "first_prompt": ("tokens", True, "first call's prompt"),
    "largest_prompt": ("tokens", True, "largest prompt"),
    "billed_input": ("tokens", True, "billed input over the log"),
    "largest_tool": ("tokens", False, "largest single tool's marginal cost"),
    "unused_tool_waste": ("share", True, "unused tools' cost as a share of billed input"),
    "cost": ("usd", True, "the run's cost in US dollars"),
    "largest_call_cost": ("usd", True, "the costliest call's cost in US dollars"),
    "cache_hit_rate": ("share", True, "reported cache reads as a share of the reported prompts"),
    "uncached_input": ("tokens", True, "reported prompt tokens neither read from nor written to the cache"),
    "cache_miss_cost": ("usd", True, "US dollars paid for shared prefixes the cache did not serve (cache misses)"),
    "cost_per_day": ("usd", True, "the costliest UTC day's spend in US dollars (reported usage)"),
    "cost_per_project": ("usd", True, "the costliest project's spend in US dollars (reported usage)"),
    "cost_per_session": ("usd", True, "the costliest session's cost in US dollars (reported usage)"),
}
#: ``max_<metric> = value`` in [budgets] is ``<metric> = {max = value}`` (``max_cost_per_day = "$20"``).
MAX_ALIASES = {"max_cost_per_day", "max_cost_per_project", "max_cost_per_session"}
#: Metrics where more is better: a bare budget is a minimum, and a baseline fails on a fall.
HIGHER_IS_BETTER = {"cache_hit_rate"}
LEVELS = ("error", "warn")
TOP_KEYS = {"model", "chat_template", "baseline", "max_increase", "budgets", "prices", "whatif"}
BUDGET_KEYS = {"max", "min", "level", "max_increase", "not_recorded"}
#: What a budget does when the log does not record what its metric rests on: fail (the default) or skip.
NOT_RECORDED_CHOICES = ("fail", "skip")


class ConfigError(TokprofError):
    pass


#: Numbers beyond this are not token counts or budgets (a 400-digit number is a typo, or an attack).
MAX_NUMBER = 1e15


def finite(value: Any) -> float | None:
    """A TOML or JSON number as a float, or None when it is not a number a budget can hold (not a
    number, a boolean, infinite, or beyond :data:`MAX_NUMBER`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) and abs(number) <= MAX_NUMBER else None


def text_ok(value: str) -> bool:
    """Whether a string can be printed: valid Unicode (JSON escapes can make lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True)
class Increase:
    """An allowed increase over the baseline: a fraction ("5%") or an absolute amount."""

    amount: float
    relative: bool

    def allowed(self, base: float) -> float:
        return base * self.amount if self.relative else self.amount

    def __str__(self) -> str:
        return f"{self.amount * 100:g}%" if self.relative else f"{self.amount:g}"

    def shown(self, unit: str, short: bool = False) -> str:
        """As a check shows it for a metric in ``unit``: an absolute amount of a share in percentage
        points ("0.005 percentage points", or "0.005 pt" when ``short``), else as written."""
        if unit == "share" and not self.relative:
            return f"{self.amount * 100:g} {'pt' if short else 'percentage points'}"
        return str(self)


@dataclass
class Budget:
    metric: str
    max: float | None = None
    level: str = "error"
    min: float | None = None
    max_increase: Increase | None = None
    not_recorded: str = "fail"  # or "skip"


@dataclass(frozen=True)
class McpBudgets:
    """``[budgets.mcp]``: server = max tokens per request ("*": every server without its own), and
    ``tools = { name = max, "*" = max }`` per MCP tool."""

    servers: Mapping[str, float] = field(default_factory=dict)
    tools: Mapping[str, float] = field(default_factory=dict)

    def for_server(self, name: str) -> float | None:
        return self.servers.get(name, self.servers.get("*"))

    def for_tool(self, name: str) -> float | None:
        return self.tools.get(name, self.tools.get("*"))


def parse_mcp_budgets(value: object, where: str) -> McpBudgets:
    """``[budgets.mcp]`` of the configuration; raises :class:`ConfigError` with the place on a bad entry."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table of server = max tokens per request")
    servers: dict[str, float] = {}
    tools: dict[str, float] = {}
    for key, item in value.items():
        if key == "tools":
            if not isinstance(item, dict):
                raise ConfigError(f"{where}.tools: expected a table of tool = max tokens per request")
            for tool, limit in item.items():
                tools[tool] = _limit(limit, f"{where}.tools.{tool}")
        else:
            servers[key] = _limit(item, f"{where}.{key}")
    return McpBudgets(servers, tools)


def _limit(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or value != value:
        raise ConfigError(f"{where}: expected a number of tokens per request, found {value!r}")
    return float(value)


@dataclass
class Config:
    path: str | None = None
    model: str | None = None
    chat_template: str | None = None
    baseline: str | None = None
    max_increase: Increase | None = None
    budgets: dict[str, Budget] = field(default_factory=dict)
    #: Rates per million tokens by model name ("*": every model), for models genai-prices does not price.
    prices: dict[str, Rates] = field(default_factory=dict)
    whatif: tuple[str, ...] | None = None  # the policies of tokprof whatif, when named
    mcp: McpBudgets | None = None  # [budgets.mcp]: per MCP server and per MCP tool
    model_where: str | None = None  # where ``model`` is set ("tokprof.toml: model"), for its errors

    def resolve(self, path: str | None) -> str | None:
        """A path the configuration names, relative to the configuration file's folder."""
        if path is None or Path(path).is_absolute() or self.path is None:
            return path
        return str(Path(self.path).parent / path)


def _where(path: str, prefix: str, key: str) -> str:
    return f"{path}: {prefix}{key}"


def parse_increase(value: Any, where: str) -> Increase:
    if isinstance(value, bool):
        raise ConfigError(f'{where}: expected a percentage like "5%" or a number, found {value!r}')
    if isinstance(value, (int, float)):
        number = finite(value)
        if number is None or number < 0:
            raise ConfigError(f"{where}: expected a non-negative number up to {MAX_NUMBER:g}, found {shown(value)}")
        return Increase(number, relative=False)
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            pct = float(value.strip()[:-1])
        except ValueError:
            raise ConfigError(f"{where}: cannot read {value!r} as a percentage") from None
        if not math.isfinite(pct) or pct > MAX_NUMBER:
            raise ConfigError(f"{where}: expected a finite percentage up to {MAX_NUMBER:g}%, found {value!r}")
        if pct < 0:
            raise ConfigError(f"{where}: must not be negative, found {value!r}")
        return Increase(pct / 100.0, relative=True)
    raise ConfigError(f'{where}: expected a percentage like "5%" or a number, found {value!r}')


def parse_limit(value: Any, metric: str, where: str) -> float:
    unit = METRICS[metric][0]
    if unit == "usd" and isinstance(value, str):
        text = value.strip().removeprefix("$").replace(",", "").strip()
        try:
            amount = float(text)
        except ValueError:
            raise ConfigError(f'{where}: cannot read {value!r} as an amount of US dollars (like "$5" or 5)') from None
        if not math.isfinite(amount) or not 0 <= amount <= MAX_NUMBER:
            raise ConfigError(f"{where}: expected an amount of US dollars from 0, found {value!r}")
        return amount
    if isinstance(value, str) and unit == "share" and value.strip().endswith("%"):
        try:
            share = float(value.strip()[:-1]) / 100.0
        except ValueError:
            raise ConfigError(f"{where}: cannot read {value!r} as a percentage") from None
        if not math.isfinite(share) or not 0 <= share <= 1:
            raise ConfigError(f"{where}: expected a percentage from 0% to 100%, found {value!r}")
        return share
    number = finite(value)
    if number is None or number < 0:
        hint = {"share": 'a share like "2%" or 0.02', "usd": 'an amount of US dollars like "$5" or 5'}.get(
            unit, "a number of tokens"
        )
        raise ConfigError(f"{where}: expected {hint}, found {shown(value)}")
    if unit == "share" and number > 1:
        raise ConfigError(f'{where}: a share is at most 1 (or write "{value}%"), found {value!r}')
    return number


def shown(value: Any) -> str:
    """A value for an error message, cut to a readable length."""
    text = (
        repr(value) if not isinstance(value, int) or abs(value) < 10**30 else f"a {len(str(abs(value)))}-digit number"
    )
    return text if len(text) <= 80 else text[:60] + f"... ({len(text):,} characters)"


def parse_config(data: dict, path: str, prefix: str) -> Config:
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: {prefix.rstrip('.') or 'configuration'}: expected a table")
    config = Config(path=path)
    for key in data:
        if key not in TOP_KEYS:
            raise ConfigError(
                f"{_where(path, prefix, key)}: unknown setting (expected one of {', '.join(sorted(TOP_KEYS))})"
            )
    for key in ("model", "chat_template", "baseline"):
        if key in data:
            if not isinstance(data[key], str):
                raise ConfigError(f"{_where(path, prefix, key)}: expected a string, found {data[key]!r}")
            setattr(config, key, data[key])
    if config.model is not None:
        config.model_where = _where(path, prefix, "model")
    if "max_increase" in data:
        config.max_increase = parse_increase(data["max_increase"], _where(path, prefix, "max_increase"))
    prices = data.get("prices", {})
    if not isinstance(prices, dict):
        raise ConfigError(
            f"{_where(path, prefix, 'prices')}: expected a table of model = {{ input = ..., output = ... }}"
        )
    for name, rates in prices.items():
        try:
            config.prices[name] = parse_rates(rates, _where(path, prefix, f"prices.{name}"))
        except PriceError as exc:
            raise ConfigError(str(exc)) from None
    if "whatif" in data:
        config.whatif = _policies(data["whatif"], _where(path, prefix, "whatif"))
    budgets = data.get("budgets", {})
    if not isinstance(budgets, dict):
        raise ConfigError(f"{_where(path, prefix, 'budgets')}: expected a table of metric = budget")
    for metric, spec in budgets.items():
        where = _where(path, prefix, f"budgets.{metric}")
        if metric == "mcp":
            config.mcp = parse_mcp_budgets(spec, where)
            continue
        if metric in MAX_ALIASES:
            metric, spec = metric[len("max_") :], {"max": spec}
            where = _where(path, prefix, f"budgets.max_{metric}")
            if metric in budgets:
                raise ConfigError(f"{where}: {metric} has a budget of its own: give one of them")
        if metric not in METRICS:
            import difflib

            close = difflib.get_close_matches(metric, METRICS, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise ConfigError(f"{where}: unknown metric ({hint}expected one of {', '.join(METRICS)})")
        budget = Budget(metric=metric)
        if isinstance(spec, dict):
            for key in spec:
                if key not in BUDGET_KEYS:
                    raise ConfigError(
                        f"{where}.{key}: unknown setting (expected one of {', '.join(sorted(BUDGET_KEYS))})"
                    )
            if "max" in spec:
                budget.max = parse_limit(spec["max"], metric, f"{where}.max")
            if "min" in spec:
                budget.min = parse_limit(spec["min"], metric, f"{where}.min")
            if "level" in spec:
                if spec["level"] not in LEVELS:
                    raise ConfigError(f'{where}.level: expected "error" or "warn", found {spec["level"]!r}')
                budget.level = spec["level"]
            if "max_increase" in spec:
                budget.max_increase = parse_increase(spec["max_increase"], f"{where}.max_increase")
            if "not_recorded" in spec:
                if spec["not_recorded"] not in NOT_RECORDED_CHOICES:
                    raise ConfigError(
                        f'{where}.not_recorded: expected "fail" or "skip", found {spec["not_recorded"]!r}'
                    )
                budget.not_recorded = spec["not_recorded"]
            if budget.min is not None and budget.max is not None and budget.min > budget.max:
                raise ConfigError(f"{where}: min is above max: no value can pass")
        elif metric in HIGHER_IS_BETTER:
            budget.min = parse_limit(spec, metric, where)
        else:
            budget.max = parse_limit(spec, metric, where)
        config.budgets[metric] = budget
    return config


def _policies(value: Any, where: str) -> tuple[str, ...]:
    """``whatif = ["full", "cap:4000", …]``: the policies, each checked."""
    from tokprof.transforms.policies import PolicyError, parse_policy

    if not isinstance(value, list) or not value or not all(isinstance(v, str) and text_ok(v) for v in value):
        raise ConfigError(f'{where}: expected a list of policies like ["full", "cap:4000"], found {shown(value)}')
    for policy in value:
        try:
            parse_policy(policy)
        except PolicyError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return tuple(value)


def _load_toml(path: Path, data: bytes | None = None) -> dict:
    try:
        if data is None:
            data = bounded.read_bytes(path, "configuration")
        return tomllib.loads(data.decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: byte {exc.start}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None


def load_file(path: Path) -> Config:
    data = _load_toml(path)
    if path.name == "pyproject.toml":
        tool = data.get("tool")
        section = tool.get("tokprof") if isinstance(tool, dict) else None
        if section is None:
            raise ConfigError(f"{path}: no [tool.tokprof] section")
        return parse_config(section, str(path), "tool.tokprof.")
    return parse_config(data, str(path), "")


def find_config(start: Path) -> Config | None:
    """The nearest tokprof.toml, or pyproject.toml with [tool.tokprof], from ``start`` upwards."""
    for directory in [start, *start.parents]:
        candidate = directory / "tokprof.toml"
        if candidate.is_file():
            return load_file(candidate)
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            try:
                raw = bounded.read_bytes(candidate, "configuration")
            except OSError:
                continue  # an unreadable pyproject.toml is not ours to judge
            if b"tokprof" not in raw:
                continue  # another project's file: whether it parses is not tokprof's business
            data = _load_toml(candidate, raw)
            tool = data.get("tool")
            if isinstance(tool, dict) and "tokprof" in tool:
                return parse_config(data["tool"]["tokprof"], str(candidate), "tool.tokprof.")
    return None
