"""Many sessions: a directory's (or a list of files) profiled by the directory engine
(:mod:`tokprof.analyses.directory`), this machine's sessions and their spend by period, and the
session files a folder holds."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tokprof.analyses.standard import user_prices
from tokprof.base.errors import InputError, TokprofError
from tokprof.runs.arguments import PathLike
from tokprof.runs.inputs import system_arg, tools_arg
from tokprof.runs.options import DEFAULTS, Options
from tokprof.runs.progress import progress_bar

if TYPE_CHECKING:
    from tokprof.analyses.directory import SessionOptions
    from tokprof.analyses.local import LocalSession
    from tokprof.analyses.periods import Periods
    from tokprof.analyses.sessions import SessionsReport


def profile_directory(directory: PathLike, options: Options = DEFAULTS) -> SessionsReport:
    """A directory of agent sessions of any format tokprof reads (found by content): a summary row per session and
    the totals. A session that cannot be read is listed with why, not fatal, and so is every other
    ``.json``/``.jsonl`` file; each call is counted once (a resumed session's copies of earlier calls
    count in the first file that holds them). ``jobs``: processes to profile in (default: one per
    core); the report is the same whatever their number. ``records``: also a record per call
    (``report.calls``, see docs/tables.md), with the prompt text when ``with_text``, stamped with the
    ``machine`` and ``user`` given. ``state``: an incremental run (:mod:`tokprof.analyses.incremental`): the
    state file's entries (``load_state``), which only files that are new or changed are profiled
    against, replaced in place by the new state."""
    from tokprof.analyses.directory import SessionTask, default_jobs, local_map, run_sessions
    from tokprof.analyses.sessions import Skipped
    from tokprof.formats import scan_directory
    from tokprof.formats.registry import session_names

    name = os.fspath(directory)
    if "://" in name:  # a URL prefix (s3://, gs://, file://): tokprof.formats.remote
        from tokprof.formats.discovery import scan_url

        found = scan_url(name)
    else:
        found = scan_directory(name)
    files = found.sessions
    not_sessions = [Skipped(str(path), f"{path}: {reason}") for path, reason in found.skipped]
    input_format = options.input_format
    if input_format is not None:
        session_formats = session_names()
        if input_format not in session_formats:
            raise InputError(
                name,
                None,
                f"a directory holds sessions of {', '.join(session_formats[:-1])} or "
                f"{session_formats[-1]}, not {input_format}",
            )
        files = [(kind, path) for kind, path in files if kind == input_format]
    if not files:
        other = ""
        if not_sessions:
            more = ", …" if len(not_sessions) > 1 else ""
            other = f" ({len(not_sessions)} other files: {not_sessions[0].error}{more})"
        raise InputError(name, None, "no agent session files in this directory" + other)
    each = session_options(options)
    tasks = [SessionTask(kind, str(path)) for kind, path in files]
    jobs = max(1, min(options.jobs if options.jobs is not None else default_jobs(), len(tasks)))
    state = options.state
    with progress_bar(options.progress, 2 * len(tasks), "profiling sessions") as advance:
        if state is None:
            report = run_sessions(tasks, each, local_map(jobs, advance), name)
        else:
            from tokprof.analyses.incremental import run_incremental

            report, fresh, _ = run_incremental(tasks, each, local_map(jobs, advance), name, state)
            state.clear()
            state.update(fresh)
    if not report.sessions:
        raise InputError(name, None, f"no session could be read; first: {report.skipped[0].error}")
    report.skipped += not_sessions  # the sessions that failed first, then the files that are no sessions
    return report


def profile_sessions(paths: Iterable[PathLike], options: Options = DEFAULTS) -> SessionsReport:
    """Session files (each's format detected) profiled exactly as :func:`profile_directory` profiles a
    directory's, by the same directory engine, each file a task of ``map``: a function like the
    builtin ``map`` that returns a list (``map(function, items)``), such as a process pool's or Dask's;
    None: one after the other in this process. Each task is a plain function of picklable arguments
    (the model goes by name). ``root`` is the folder the rows' paths are shown relative to."""
    from tokprof.analyses.directory import SessionTask, local_map, run_sessions

    tasks = [SessionTask(None, os.fspath(path)) for path in paths]
    if not tasks:
        raise TokprofError("no session files to profile")
    return run_sessions(tasks, session_options(options), options.map or local_map(1), options.root)


def session_options(options: Options = DEFAULTS) -> SessionOptions:
    """How each session of a directory run is profiled, from what :func:`profile_directory` takes: the
    options every map of the directory engine (:mod:`tokprof.analyses.directory`) carries to its workers."""
    from tokprof.analyses.calls import Stamp
    from tokprof.analyses.directory import SessionOptions

    if options.model is not None and not isinstance(options.model, str):
        raise TypeError("a directory run takes the model by name")
    return SessionOptions(
        options.model,
        tools_arg(options.tools),
        system_arg(options.system),
        options.template,
        user_prices(options.prices),
        options.records,
        options.with_text,
        Stamp(options.machine, options.user),
    )


def local_sessions(
    agent: str | None = None,
    *,
    home: PathLike | None = None,
    environ: Mapping[str, str] | None = None,
    cache: dict | None = None,
) -> list[LocalSession]:
    """The sessions of every supported agent in its default folder on this machine (or one agent's),
    newest first, each with its agent, project, start, calls and reported cost
    (:mod:`tokprof.formats.locations` says where each agent keeps them). ``cache``: what an earlier
    call remembered of each file (a dict, updated in place; ``tokprof sessions`` keeps it in the state
    folder): a file that did not change is not read again."""
    from tokprof.formats.registry import agents
    from tokprof.base.text import did_you_mean

    if agent is not None and agent not in agents():
        raise TokprofError(f"unknown agent {agent!r}{did_you_mean(agent, agents())} (agents: {', '.join(agents())})")
    where = None if home is None else Path(home)
    if cache is not None:
        from tokprof.analyses.local_cache import local_sessions_cached

        return local_sessions_cached(cache, agent, where, environ)
    from tokprof.analyses.local import local_sessions as found

    return found(agent, where, environ)


def session_periods(
    sessions: "Sequence[LocalSession]",
    by: Sequence[str] = (),
    *,
    tz: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> "Periods":
    """The sessions (:func:`local_sessions`) added up by day, week, month, project, agent or model
    (several at once), each row with its sessions, calls, billed input by kind, output, cost, cache hit
    rate and what cache misses cost (an estimate); and the total. ``tz``: the zone of days, weeks and
    months (default: the machine's); ``since``/``until``: dates, dates and times, or spans back from now
    (``7d``). A session that could not be read is in ``skipped`` with why."""
    from tokprof.analyses.periods import parse_by, parse_when, periods, time_zone

    zone, name = time_zone(tz)
    return periods(
        [row.spend() for row in sessions if row.error is None],
        parse_by(list(by)),
        zone,
        name,
        parse_when(since, "--since", zone) if since else None,
        parse_when(until, "--until", zone, end=True) if until else None,
        [(row.path, row.error) for row in sessions if row.error is not None],
    )


def session_in_folder(path: PathLike) -> str | None:
    """The session file a folder is, when the folder is one session (a Cline, Roo Code or Kilo Code
    task folder: its ``api_conversation_history.json``); None for a file, or a folder of sessions."""
    from tokprof.formats import session_in_folder as found

    return found(os.fspath(path))


def find_session(directory: PathLike, wanted: str) -> str:
    """The session file in a directory whose file name or session id is (or contains, or starts
    with) ``wanted``; raises InputError unless exactly one matches."""
    from tokprof.formats import read_trace, session_files

    name = os.fspath(directory)
    files = session_files(name)
    matches = [path for _, path in files if path.stem == wanted or wanted in path.stem]
    if not matches:
        for kind, path in files:
            try:
                if (read_trace(str(path), kind).session or "").startswith(wanted):
                    matches.append(path)
            except TokprofError:
                continue
    if len(matches) != 1:
        if matches:
            found = f"{len(matches)} sessions match ({', '.join(p.name for p in matches[:5])})"
        else:
            names = [path.stem for _, path in files]
            listed = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            found = f"no session matches (the folder has {listed})" if names else "no session matches"
        raise InputError(name, None, f"--session {wanted}: {found}")
    return str(matches[0])


def recordings(directory: PathLike) -> list[str]:
    """The recordings ``tokprof record`` wrote in a directory, oldest first; none when the directory
    holds other logs too (a folder of agent sessions) or is no folder."""
    from tokprof.formats.recorded import recordings as found

    name = os.fspath(directory)
    return [str(path) for path in found(name)] if os.path.isdir(name) else []
