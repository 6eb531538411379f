"""tokprof's public API: the pipeline, for Python callers. The functions live in :mod:`tokprof.runs`
(one module per job); this module gathers the ones :mod:`tokprof` exports.

Everything here is exported from :mod:`tokprof`; see its docstring for an example.
"""

from __future__ import annotations

from tokprof.base.errors import ModelError
from tokprof.formats.prompts import Prompt, extend_prompt, is_anthropic_shape, read_prompt
from tokprof.runs.check import CheckRun, check, load_config, measure, run_check
from tokprof.runs.diff import diff
from tokprof.runs.inputs import PathLike, ToolsArg, read_log
from tokprof.runs.model import Buckets, Model, get_model
from tokprof.runs.profile import configured_prices, profile, profile_file, saved_profile
from tokprof.runs.progress import Progress
from tokprof.runs.reports import incremental_state, prometheus_text, render_report, report_tables, send_spans
from tokprof.runs.sessions import (
    find_session,
    local_sessions,
    profile_directory,
    profile_sessions,
    recordings,
    session_in_folder,
    session_options,
    session_periods,
)
from tokprof.runs.site import report_site
from tokprof.runs.tools import tools_report
from tokprof.runs.whatif import probe, suggest_facts, whatif

__all__ = [
    "Buckets",
    "CheckRun",
    "Model",
    "ModelError",
    "PathLike",
    "Progress",
    "Prompt",
    "ToolsArg",
    "check",
    "configured_prices",
    "diff",
    "extend_prompt",
    "find_session",
    "get_model",
    "incremental_state",
    "is_anthropic_shape",
    "load_config",
    "local_sessions",
    "measure",
    "probe",
    "profile",
    "profile_directory",
    "profile_file",
    "profile_sessions",
    "prometheus_text",
    "read_log",
    "read_prompt",
    "recordings",
    "render_report",
    "report_site",
    "report_tables",
    "run_check",
    "saved_profile",
    "send_spans",
    "session_in_folder",
    "session_options",
    "session_periods",
    "suggest_facts",
    "tools_report",
    "whatif",
]
