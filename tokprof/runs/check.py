"""Budgets: a configuration loaded, a profile (or a catalogue) measured and judged against its budgets
and baseline, and ``tokprof check`` as one function."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tokprof.analyses.tools import ToolsReport
from tokprof.base.errors import InputError, ModelError, TokprofError
from tokprof.models import DEFAULT_MODEL
from tokprof.profiling import Profile
from tokprof.runs.arguments import PathLike
from tokprof.runs.inputs import NOTHING_RECORDED
from tokprof.runs.model import Model, get_model
from tokprof.runs.options import DEFAULTS, Options
from tokprof.runs.profile import one_run, profile, saved_profile
from tokprof.runs.tools import tools_report
from tokprof.transforms.config import Config, ConfigError, find_config, load_file

if TYPE_CHECKING:
    from tokprof.analyses import budgets


def load_config(path: PathLike | None = None) -> Config:
    """The configuration in a file (a tokprof.toml, or a pyproject.toml's ``[tool.tokprof]``), or,
    with no path, the nearest one from the working directory upwards (empty when there is none)."""
    if path is None:
        return find_config(Path.cwd()) or Config()
    if not Path(path).is_file():
        exists = os.path.exists(path) and not os.path.isdir(path)
        raise ConfigError(f"{os.fspath(path)}: " + ("not a regular file" if exists else "no such configuration file"))
    return load_file(Path(path))


def check(
    subject: Profile | ToolsReport,
    config: Config | PathLike | None = None,
    *,
    baseline: PathLike | None = None,
) -> budgets.CheckResult:
    """Judge a profile (or a catalogue priced alone by :func:`tools_report`) against budgets and a
    baseline. ``config`` is a :class:`Config`, a file, or None for the nearest one from the working
    directory; ``baseline`` a baseline file (default: the configuration's)."""
    from tokprof.analyses import budgets

    if not isinstance(config, Config):
        config = load_config(config)
    measurement = measure(subject)
    explicit = None if baseline is None else os.fspath(baseline)
    where = budgets.baseline_location(config, explicit, updating=False)
    return budgets.judge(measurement, config, where, explicit=explicit is not None)


@dataclass
class CheckRun:
    """What a check run found: the result, the measurement it judged (what ``--update-baseline``
    writes), the baseline's path (compared with, or to be written) and the files the run read (which
    the baseline may never replace)."""

    result: budgets.CheckResult
    measurement: budgets.Measurement
    baseline: str | None
    inputs: tuple[str, ...] = ()

    def baseline_text(self) -> str:
        """The JSON a baseline file holds for this run's measurement (what ``--update-baseline``
        writes to :attr:`baseline`), with paths relative to the baseline's folder."""
        import json

        folder = str(Path(self.baseline).parent) if self.baseline else "."
        return json.dumps(self.measurement.baseline_dict(folder), indent=2) + "\n"

    def write_baseline(self) -> str:
        """Write :meth:`baseline_text` to :attr:`baseline` (atomically) and return its path."""
        from tokprof.base.outputs import write_files

        if self.baseline is None:
            raise TokprofError("no baseline file: give one (baseline = ... in the configuration, or --baseline)")
        write_files([(self.baseline, self.baseline_text().encode("utf-8"))], self.inputs)
        return self.baseline


def _configured_model(model: str | Model | None, config: Config, template: PathLike | None) -> None:
    """The configuration's model, when it is the one that will count, loaded now so that a name that
    is wrong is an error naming the file and key."""
    if model is None and config.model is not None:
        try:
            get_model(config.model, chat_template=template)
        except ModelError as exc:
            raise ModelError(f"{config.model_where or 'model'}: {exc}") from None


@one_run
def run_check(
    log: PathLike | None = None,
    options: Options = DEFAULTS,
    *,
    config: Config | PathLike | None = None,
    baseline: PathLike | None = None,
    update_baseline: bool = False,
) -> CheckRun:
    """``tokprof check`` as a function: a log (or a saved profile), or a tools file with an optional
    system prompt file (``options.tools``, ``options.system``), judged against the configuration's
    budgets and baseline. The configuration's
    ``model`` and ``chat_template`` apply when none is given; with ``update_baseline`` nothing is
    compared with the baseline (the caller writes ``run.measurement.baseline_dict()`` to
    ``run.baseline``)."""
    from tokprof.analyses import budgets

    if not isinstance(config, Config):
        config = load_config(config)
    model, tools, system = options.model, options.tools, options.system
    template = options.chat_template if options.chat_template is not None else config.resolve(config.chat_template)
    system_path = None if system is None else Path(system)
    options = dataclasses.replace(options, system=system_path, chat_template=template)
    if log is None:
        if tools is None:
            raise InputError("check", None, "give a log or a tools file")
        _configured_model(model, config, template)
        report = tools_report(None, dataclasses.replace(options, model=model or config.model or DEFAULT_MODEL))
        measurement = budgets.measure_catalogue(report)
    elif os.path.isdir(log):  # a directory of sessions: its spend per day, project and session alone
        measurement = budgets.Measurement(
            model=(model.name if isinstance(model, Model) else model) or config.model or "-",
            template_sha256="",
            source=os.fspath(log),
            metrics={name: None for name in budgets.METRICS},
            tools={},
            unknown={name: "not measured over a directory: check one log for it" for name in budgets.METRICS},
        )
    else:
        name = os.fspath(log)
        saved = saved_profile(name)
        if saved is None:  # a saved profile needs no model
            _configured_model(model, config, template)
            saved = profile(name, dataclasses.replace(options, model=model or config.model))
        measurement = measure(saved)
    _measure_periods(measurement, config, log, options.input_format)
    explicit = None if baseline is None else os.fspath(baseline)
    where = budgets.baseline_location(config, explicit, update_baseline)
    result = budgets.judge(measurement, config, where, explicit=explicit is not None, updating=update_baseline)
    if update_baseline:
        result.notes.insert(0, f"baseline written to {where}")
    read = (log, tools if isinstance(tools, (str, os.PathLike)) else None, system, config.path, template)
    return CheckRun(result, measurement, where, tuple(os.fspath(p) for p in read if p is not None))


def _measure_periods(
    measurement: "budgets.Measurement", config: Config, log: PathLike | None, input_format: str | None
) -> None:
    """The spend per day, project and session (:mod:`tokprof.analyses.period_budgets`) when a budget or
    the baseline asks for them: from the log's reported usage (a saved profile keeps no call times)."""
    from tokprof.analyses.period_budgets import PERIOD_METRICS, log_spends, measure_periods

    if log is None or not any(metric in config.budgets for metric in PERIOD_METRICS):
        return
    name = os.fspath(log)
    if not os.path.isdir(name) and saved_profile(name) is not None:
        for metric in PERIOD_METRICS:
            measurement.unknown[metric] = (
                "not recorded: a saved profile keeps no call times; check the log "
                '(or set not_recorded = "skip" on this budget)'
            )
        return
    sessions = log_spends(name, input_format)
    limits = {metric: config.budgets[metric].max if metric in config.budgets else None for metric in PERIOD_METRICS}
    readable = [s for s in sessions if s.error is None]
    measurement.explain.update(measure_periods(readable, measurement.metrics, measurement.unknown, limits))
    measurement.skipped = [f"{s.path}: {s.error}" for s in sessions if s.error is not None]


def measure(subject: Profile | ToolsReport) -> budgets.Measurement:
    """The budget metrics of a profile, or of a catalogue priced alone."""
    from tokprof.analyses import budgets

    if isinstance(subject, Profile):
        if subject.calls and not any(c.recorded for c in subject.calls):  # budgets on figures not known: no
            raise InputError(subject.source.path, None, NOTHING_RECORDED.format(what="to check against budgets"))
        return budgets.measure_profile(subject)
    if isinstance(subject, ToolsReport):
        if subject.system_tokens is None:
            raise InputError(subject.source.path, None, "a log's tools report: check its profile instead")
        return budgets.measure_catalogue(subject)
    raise TypeError(f"check takes a Profile or a ToolsReport, not {type(subject).__name__}")
