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
    "Buckets": "tokprof.api",
    "Model": "tokprof.api",
    "Prompt": "tokprof.formats.prompts",
    "read_prompt": "tokprof.api",
    "extend_prompt": "tokprof.api",
    "is_anthropic_shape": "tokprof.api",
    "get_model": "tokprof.api",
    "read_log": "tokprof.api",
    "profile": "tokprof.api",
    "profile_file": "tokprof.api",
    "profile_directory": "tokprof.api",
    "profile_sessions": "tokprof.api",
    "tools_report": "tokprof.api",
    "check": "tokprof.api",
    "load_config": "tokprof.api",
    "whatif": "tokprof.api",
    "saved_profile": "tokprof.api",
    "find_session": "tokprof.api",
    "session_in_folder": "tokprof.api",
    "recordings": "tokprof.api",
    "configured_prices": "tokprof.api",
    "run_check": "tokprof.api",
    "CheckRun": "tokprof.api",
    "render_report": "tokprof.api",
    "report_formats": "tokprof.names",
    "report_tables": "tokprof.api",
    "TeamOptions": "tokprof.render.tables",
    "incremental_state": "tokprof.api",
    "prometheus_text": "tokprof.api",
    "send_spans": "tokprof.api",
    "registered_models": "tokprof.names",
    "ModelSpec": "tokprof.models.registry",
    "context_window": "tokprof.names",
    "log_formats": "tokprof.names",
    "policy_names": "tokprof.names",
    "model_name": "tokprof.names",
    "local_sessions": "tokprof.api",
    "session_periods": "tokprof.api",
    "diff": "tokprof.api",
    "report_site": "tokprof.api",
    "RunDiff": "tokprof.analyses.diff",
    "suggest_facts": "tokprof.api",
    "probe": "tokprof.api",
    "ProbeReport": "tokprof.analyses.probe",
    "LocalSession": "tokprof.analyses.local",
    "find_mcp_servers": "tokprof.mcp.api",
    "list_mcp_servers": "tokprof.mcp.api",
    "mcp_report": "tokprof.mcp.api",
    "McpReport": "tokprof.mcp.report",
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
    "Rates": "tokprof.pricing.billing",
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
    from tokprof.mcp.report import McpReport
    from tokprof.mcp.api import find_mcp_servers, list_mcp_servers, mcp_report
    from tokprof.api import (
        Buckets,
        CheckRun,
        Model,
        check,
        configured_prices,
        find_session,
        get_model,
        load_config,
        local_sessions,
        probe,
        profile,
        profile_directory,
        profile_sessions,
        profile_file,
        read_log,
        recordings,
        incremental_state,
        prometheus_text,
        render_report,
        report_tables,
        run_check,
        saved_profile,
        send_spans,
        session_in_folder,
        suggest_facts,
        tools_report,
        whatif,
    )
    from tokprof.transforms.config import Config, ConfigError
    from tokprof.pricing.billing import Rates
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
