"""tokprof: where do my prompt tokens go?

Count one prompt's buckets with a model's own chat template and tokenizer::

    import tokprof

    model = tokprof.get_model("qwen2.5")
    buckets = model.count([{"role": "user", "content": "hello"}])
    buckets.conversation, buckets.total

Profile a saved agent log (a file; a folder of sessions gives a row per session), save the
profile, and check it against budgets later::

    profile = tokprof.profile("samples/incident_session.json", model="qwen2.5")
    profile.summary().billed_input
    profile.save("run.json")
    result = tokprof.check(tokprof.Profile.load("run.json"), "samples/tokprof.toml")

Every function takes its settings as one :class:`Options` (``tokprof.Options(model="qwen3")``) or as
its fields by keyword. The names below are the whole public API; everything else is internal
(the command line and the other front ends call :mod:`tokprof.runs` directly). Importing tokprof is cheap:
the pipeline loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tokprof.version import __version__

#: Public name -> the module that defines it.
_EXPORTS = {
    "Options": "tokprof.runs.options",
    "get_model": "tokprof.runs.model",
    "Model": "tokprof.runs.model",
    "Buckets": "tokprof.runs.model",
    "read_log": "tokprof.api",
    "profile": "tokprof.api",
    "tools_report": "tokprof.api",
    "whatif": "tokprof.api",
    "check": "tokprof.runs.check",
    "diff": "tokprof.api",
    "render_report": "tokprof.runs.reports",
    "Trace": "tokprof.trace",
    "Profile": "tokprof.profiling",
    "SessionsReport": "tokprof.analyses.sessions",
    "ToolsReport": "tokprof.analyses.tools",
    "WhatIfReport": "tokprof.analyses.whatif",
    "CheckResult": "tokprof.analyses.budgets",
    "RunDiff": "tokprof.analyses.diff",
    "TokprofError": "tokprof.base.errors",
    "InputError": "tokprof.base.errors",
    "ModelError": "tokprof.base.errors",
    "ConfigError": "tokprof.transforms.config",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:
    from tokprof.analyses.budgets import CheckResult
    from tokprof.analyses.diff import RunDiff
    from tokprof.analyses.sessions import SessionsReport
    from tokprof.analyses.tools import ToolsReport
    from tokprof.analyses.whatif import WhatIfReport
    from tokprof.api import diff, profile, read_log, tools_report, whatif
    from tokprof.base.errors import InputError, ModelError, TokprofError
    from tokprof.profiling import Profile
    from tokprof.runs.check import check
    from tokprof.runs.model import Buckets, Model, get_model
    from tokprof.runs.options import Options
    from tokprof.runs.reports import render_report
    from tokprof.trace import Trace
    from tokprof.transforms.config import ConfigError


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tokprof' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
