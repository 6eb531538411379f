"""Profile many session files on a Dask cluster (or Dask's local schedulers): the ``dask`` extra.

``profile_paths(paths, ...)`` is a directory run of the directory engine (:mod:`tokprof.analyses.directory`,
the same code as ``tokprof profile DIR --jobs N``) with Dask's map in place of the process pool:
the same two passes, the same options (the user's prices included), the same rows. Each task is a
plain function of picklable arguments (the model goes by name, and each worker loads it once); what
comes back is one summary row per file (and a record per call when asked), never a trace. Reports of
several runs combine with ``SessionsReport.combine``. See docs/scale.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from tokprof.analyses.sessions import SessionsReport
from tokprof.api import PathLike, PricesArg, ToolsArg, session_options
from tokprof.analyses.directory import Mapper, SessionTask, run_sessions
from tokprof.base.errors import TokprofError


def dask_map(scheduler: Any = "processes", partitions: int = 64) -> Mapper:
    """A map of the directory engine on Dask: ``scheduler`` is what Dask's ``compute`` takes
    ("processes" or "threads" locally, or a ``distributed.Client``)."""
    try:
        import dask.bag as bag
    except ImportError:
        raise TokprofError("profiling on Dask needs the dask extra: pip install 'tokprof[dask]'") from None

    def map_(function: Callable[[Any], Any], items: Sequence[Any]) -> list:
        parts = max(1, min(len(items), partitions))
        return list(bag.from_sequence(list(items), npartitions=parts).map(function).compute(scheduler=scheduler))

    return map_


def profile_paths(
    paths: Iterable[PathLike],
    model: str | None = None,
    *,
    tools: ToolsArg = None,
    system: PathLike | None = None,
    chat_template: PathLike | None = None,
    prices: PricesArg = None,
    scheduler: Any = "processes",
    root: str = "",
    records: bool = False,
    with_text: bool = False,
    machine: str | None = None,
    user: str | None = None,
) -> SessionsReport:
    """A report of session files, each profiled as a Dask task, exactly as :func:`tokprof.profile_directory`
    profiles them (``prices`` included). ``scheduler`` is what Dask's ``compute`` takes: "processes" or
    "threads" locally, or a ``distributed.Client``; ``root`` is the folder rows' paths are shown
    relative to."""
    mapper = dask_map(scheduler)
    tasks = [SessionTask(None, os.fspath(path)) for path in paths]
    if not tasks:
        raise TokprofError("no session files to profile")
    options = session_options(
        model,
        tools=tools,
        system=system,
        chat_template=chat_template,
        prices=prices,
        records=records,
        with_text=with_text,
        machine=machine,
        user=user,
    )
    return run_sessions(tasks, options, mapper, root)
