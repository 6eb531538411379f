"""Two runs compared: each a log, a saved profile, a check baseline or a check run."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from tokprof.profiling import Profile
from tokprof.runs.arguments import PathLike
from tokprof.runs.check import CheckRun
from tokprof.runs.inputs import read_log
from tokprof.runs.options import DEFAULTS, Options
from tokprof.runs.profile import profile, saved_profile

if TYPE_CHECKING:
    from tokprof.analyses.diff import RunDiff, Side


def diff(
    a: "PathLike | Profile | CheckRun", b: "PathLike | Profile | CheckRun", options: Options = DEFAULTS
) -> "RunDiff":
    """Two runs compared: each a log, a saved profile (or a :class:`Profile`), a check baseline
    (``tokprof-baseline.json``) or a :class:`CheckRun` (its measurement: the metrics and the tools). Every figure is ``{a, b, change}``: the run's (calls, billed input,
    prompts, output, uncached input, cost, cache hit rate, cache miss cost), each bucket, each tool's
    definition and results, each cache-miss reason, each part of the cost; and, for two logs of one
    conversation, what changed first in the prompt (``first_change``). ``options.model`` counts both
    logs (default: each log's own)."""
    from tokprof.analyses.diff import diff as compare

    return compare(_diff_side(a, options), _diff_side(b, options))


def _diff_side(side: "PathLike | Profile | CheckRun", options: Options) -> "Side":
    import json

    import tokprof.base.bounded as bounded
    from tokprof.analyses.budgets import BASELINE_SCHEMA
    from tokprof.analyses.diff import side_of_baseline, side_of_measurement, side_of_profile

    if isinstance(side, CheckRun):
        found = side.measurement
        return side_of_measurement(found.metrics, found.tools, found.source, found.model)
    if isinstance(side, Profile):
        return side_of_profile(side, "profile")
    name = os.fspath(side)
    saved = saved_profile(name)
    if saved is not None:
        return side_of_profile(saved, "profile")
    if name.endswith(".json") and os.path.isfile(name):
        try:
            doc = json.loads(bounded.read_text(name, "baseline"))
        except (OSError, ValueError, RecursionError):
            doc = None
        if (
            isinstance(doc, dict)
            and doc.get("schema_version") == BASELINE_SCHEMA
            and isinstance(doc.get("metrics"), dict)
        ):
            if "tokprof_version" in doc or "chat_template_sha256" in doc:
                return side_of_baseline(doc, name)
    trace = read_log(name, options)
    from tokprof.analyses.diff import prompt_start

    start = prompt_start(trace)  # before profiling, which may fit the trace to the model
    result = profile(trace, options)
    return side_of_profile(result, "log", start)
