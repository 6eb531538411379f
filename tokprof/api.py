"""tokprof's public API for Python callers: a log read, profiled, replayed, its tools priced, checked
against budgets and compared, each call taking one :class:`Options` (or its fields as keywords).

The jobs themselves live in :mod:`tokprof.runs` (one module each), where the front ends call them;
this module gives them the facade's form. Everything here is exported from :mod:`tokprof`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

from tokprof.runs.arguments import PathLike
from tokprof.runs.options import DEFAULTS, Options
from tokprof.trace import Trace

if TYPE_CHECKING:
    from tokprof.analyses.diff import RunDiff
    from tokprof.analyses.sessions import SessionsReport
    from tokprof.analyses.tools import ToolsReport
    from tokprof.analyses.whatif import WhatIfReport
    from tokprof.profiling import Profile

#: What :func:`profile` takes: a log file (a path or URL), a folder or URL prefix of sessions, a list
#: of session files, or a trace from :func:`read_log`.
Source = Union[PathLike, Iterable[PathLike], Trace]


def options_of(options: Options | None, fields: dict[str, Any]) -> Options:
    """``options`` (default: every default) with ``fields`` set; a field that is not one of
    :class:`Options`' is a TypeError naming it."""
    base = DEFAULTS if options is None else options
    if not isinstance(base, Options):
        raise TypeError(f"options: expected a tokprof.Options, found {type(base).__name__}")
    if not fields:
        return base
    known = [field.name for field in dataclasses.fields(Options)]
    for name in fields:
        if name not in known:
            from tokprof.base.text import did_you_mean

            raise TypeError(f"unknown option {name!r}{did_you_mean(name, known)} (options: {', '.join(known)})")
    return dataclasses.replace(base, **fields)


def read_log(path: PathLike, options: Options | None = None, **fields: Any) -> Trace:
    """Read an agent log into its neutral trace (the format is detected unless ``input_format``
    names it), with ``tools`` and ``system`` supplying what the log does not record."""
    from tokprof.runs import inputs

    return inputs.read_log(path, options_of(options, fields))


def profile(source: Source, options: Options | None = None, **fields: Any) -> "Profile | SessionsReport":
    """Profile a log: a file (or a file's URL) or a trace gives its :class:`Profile` (every call's
    prompt in its buckets, the run's totals, its tool catalogue, every call's cost, what a prefix
    cache could reuse); a folder of sessions (or a URL prefix ending in ``/``, or a list of session
    files) gives a :class:`SessionsReport`, a row per session and the totals (a session that cannot be
    read is listed with why). ``options`` (or its fields as keywords: ``model="qwen3"``) say how."""
    from tokprof.runs import profile as one
    from tokprof.runs import sessions

    chosen = options_of(options, fields)
    if isinstance(source, Trace):
        return one.profile(source, chosen)
    if isinstance(source, (bytes, Mapping)) or not isinstance(source, (str, os.PathLike, Iterable)):
        raise TypeError(f"profile: expected a path, a list of paths or a Trace, found {type(source).__name__}")
    if not isinstance(source, (str, os.PathLike)):
        return sessions.profile_sessions(list(source), chosen)
    name = os.fspath(source)
    if os.path.isdir(name) or (name.endswith("/") and "://" in name):
        session = sessions.session_in_folder(name)  # a Cline-family task folder is one session
        if session is None:
            return sessions.profile_directory(name, chosen)
        name = session
    return one.profile(name, chosen)


def tools_report(
    source: PathLike | Trace | None = None, options: Options | None = None, **fields: Any
) -> "ToolsReport":
    """What each tool definition costs per request. With a log: per distinct catalogue in it, with
    how often each tool was carried and called, and the cut list (per tool and MCP server, in
    dollars where the log is priced). Without one: the catalogue ``tools`` priced alone, with
    ``system`` as the system prompt."""
    from tokprof.runs import tools

    return tools.tools_report(source, options_of(options, fields))


def whatif(
    source: PathLike | Trace,
    policies: Sequence[str] | None = None,
    options: Options | None = None,
    *,
    window: int | None = None,
    facts: Sequence[str] = (),
    facts_file: PathLike | None = None,
    **fields: Any,
) -> "WhatIfReport":
    """Replay a log under context policies (``window:20``, ``compact:80``, …; None: the default set),
    every prompt counted exactly like a profile's, ``full`` (the log as it is) first. ``window`` is
    the context window in tokens (default: the model's). ``facts`` (texts, or ``re:`` regular
    expressions) are looked for in every prompt, each policy saying which it keeps; ``facts_file``
    adds a file's, one per line. A policy that does not parse is a :class:`TokprofError` listing them."""
    from tokprof.runs import whatif as replay

    chosen = options_of(options, fields)
    return replay.whatif(source, policies, chosen, window=window, facts=facts, facts_file=facts_file)


def diff(
    a: "PathLike | Profile",
    b: "PathLike | Profile",
    options: Options | None = None,
    **fields: Any,
) -> "RunDiff":
    """Two runs compared: each a log, a saved profile (or a :class:`Profile`) or a check baseline
    (``tokprof-baseline.json``). Every figure is ``{a, b, change}``; for two logs of one
    conversation, what changed first in the prompt too. ``model`` counts both logs (default: each
    log's own)."""
    from tokprof.runs import diff as compare

    return compare.diff(a, b, options_of(options, fields))
