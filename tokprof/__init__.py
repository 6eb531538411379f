"""tokprof: where do my prompt tokens go?

Count one prompt's buckets with a model's own chat template and tokenizer::

    import tokprof

    model = tokprof.get_model("qwen2.5")
    buckets = model.count([{"role": "user", "content": "hello"}])
    buckets.conversation, buckets.total

Profile a saved agent log, save the profile, and check it against budgets later::

    profile = tokprof.profile("samples/incident_session.json")
    profile.summary().billed_input
    profile.save("run.json")
    result = tokprof.check(tokprof.Profile.load("run.json"), "samples/tokprof.toml")

The names below are the whole public API; everything else is internal. Importing tokprof is cheap:
the pipeline loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tokprof.version import __version__

#: Public name -> the module that defines it.
_EXPORTS = {
    "Buckets": "tokprof.runs.model",
    "Model": "tokprof.runs.model",
    "Prompt": "tokprof.formats.prompts",
    "read_prompt": "tokprof.formats.prompts",
    "extend_prompt": "tokprof.formats.prompts",
    "is_anthropic_shape": "tokprof.formats.prompts",
    "get_model": "tokprof.runs.model",
    "read_log": "tokprof.runs.inputs",
    "profile": "tokprof.runs.profile",
    "profile_file": "tokprof.runs.profile",
    "profile_directory": "tokprof.runs.sessions",
    "profile_sessions": "tokprof.runs.sessions",
    "tools_report": "tokprof.runs.tools",
    "check": "tokprof.runs.check",
    "load_config": "tokprof.runs.check",
    "whatif": "tokprof.runs.whatif",
    "saved_profile": "tokprof.runs.profile",
    "find_session": "tokprof.runs.sessions",
    "session_in_folder": "tokprof.runs.sessions",
    "recordings": "tokprof.runs.sessions",
    "configured_prices": "tokprof.runs.profile",
    "run_check": "tokprof.runs.check",
    "CheckRun": "tokprof.runs.check",
    "render_report": "tokprof.runs.reports",
    "report_formats": "tokprof.names",
    "report_tables": "tokprof.runs.reports",
    "TeamOptions": "tokprof.render.tables",
    "incremental_state": "tokprof.runs.reports",
    "prometheus_text": "tokprof.runs.reports",
    "send_spans": "tokprof.runs.reports",
    "registered_models": "tokprof.names",
    "ModelSpec": "tokprof.models.registry",
    "context_window": "tokprof.names",
    "log_formats": "tokprof.names",
    "policy_names": "tokprof.names",
    "model_name": "tokprof.names",
    "local_sessions": "tokprof.runs.sessions",
    "session_periods": "tokprof.runs.sessions",
    "diff": "tokprof.runs.diff",
    "report_site": "tokprof.runs.site",
    "RunDiff": "tokprof.analyses.diff",
    "suggest_facts": "tokprof.runs.whatif",
    "probe": "tokprof.runs.whatif",
    "ProbeReport": "tokprof.analyses.probe",
    "LocalSession": "tokprof.analyses.local",
    "find_mcp_servers": "tokprof.mcp_api",
    "list_mcp_servers": "tokprof.mcp_api",
    "mcp_report": "tokprof.mcp_api",
    "McpReport": "tokprof.analyses.mcp",
    "Profile": "tokprof.profiling",
    "Trace": "tokprof.trace",
    "ToolsReport": "tokprof.analyses.tools",
    "CheckResult": "tokprof.analyses.budgets",
    "SessionsReport": "tokprof.analyses.sessions",
    "WhatIfReport": "tokprof.analyses.whatif",
    "Config": "tokprof.transforms.config",
    "TokprofError": "tokprof.base.errors",
    "InputError": "tokprof.base.errors",
    "ModelError": "tokprof.base.errors",
    "ConfigError": "tokprof.transforms.config",
    "Rates": "tokprof.base.billing",
    "LiveSession": "tokprof.live",
    "LiveCall": "tokprof.live",
    "LiveRecording": "tokprof.live_record",
    "Telemetry": "tokprof.live_collect",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:
    from tokprof.live_collect import Telemetry
    from tokprof.analyses.budgets import CheckResult
    from tokprof.analyses.local import LocalSession
    from tokprof.analyses.probe import ProbeReport
    from tokprof.analyses.sessions import SessionsReport
    from tokprof.analyses.tools import ToolsReport
    from tokprof.analyses.whatif import WhatIfReport
    from tokprof.analyses.mcp import McpReport
    from tokprof.mcp_api import find_mcp_servers, list_mcp_servers, mcp_report
    from tokprof.runs.check import CheckRun, check, load_config, run_check
    from tokprof.runs.diff import diff
    from tokprof.runs.inputs import read_log
    from tokprof.runs.model import Buckets, Model, get_model
    from tokprof.runs.profile import configured_prices, profile, profile_file, saved_profile
    from tokprof.runs.reports import incremental_state, prometheus_text, render_report, report_tables, send_spans
    from tokprof.runs.sessions import (
        find_session,
        local_sessions,
        profile_directory,
        profile_sessions,
        recordings,
        session_in_folder,
        session_periods,
    )
    from tokprof.runs.site import report_site
    from tokprof.runs.tools import tools_report
    from tokprof.runs.whatif import probe, suggest_facts, whatif
    from tokprof.transforms.config import Config, ConfigError
    from tokprof.base.billing import Rates
    from tokprof.base.errors import InputError, ModelError, TokprofError
    from tokprof.live import LiveCall, LiveSession
    from tokprof.live_record import LiveRecording
    from tokprof.models.registry import ModelSpec
    from tokprof.names import context_window, log_formats, model_name, policy_names, registered_models, report_formats
    from tokprof.render.tables import TeamOptions
    from tokprof.profiling import Profile
    from tokprof.formats.prompts import Prompt, extend_prompt, is_anthropic_shape, read_prompt
    from tokprof.trace import Trace


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
