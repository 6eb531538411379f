"""Profile many session files on a Dask cluster (or Dask's local schedulers): the ``dask`` extra.

``profile_paths(paths, ...)`` runs the same two passes as ``tokprof profile DIR --jobs N``, as Dask
map tasks: which provider requests each file holds (so that the calls a resumed session copies are
counted once, in the first file that holds them), then one profile per file. Each task is a plain
function of picklable arguments (the model goes by name, and each worker loads it once); what comes
back is one summary row per file, a few hundred bytes, never a trace. The rows make one
:class:`tokprof.SessionsReport`, and reports of several runs combine with ``SessionsReport.combine``.
See docs/scale.md for the design at 100,000 sessions a day.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from tokprof.analyses.sessions import SessionsReport
from tokprof.api import PathLike, ToolsArg, _copies, _profile_session, _request_ids, _SessionOptions, _system_arg
from tokprof.api import _tools_arg, sessions_report
from tokprof.errors import TokprofError


def profile_paths(
    paths: Iterable[PathLike],
    model: str | None = None,
    *,
    tools: ToolsArg = None,
    system: PathLike | None = None,
    chat_template: PathLike | None = None,
    scheduler: Any = "processes",
    root: str = "",
) -> SessionsReport:
    """A report of session files, each profiled as a Dask task. ``scheduler`` is what Dask's
    ``compute`` takes: "processes" or "threads" locally, or a ``distributed.Client``; ``root`` is the
    folder rows' paths are shown relative to."""
    try:
        import dask.bag as bag
    except ImportError:
        raise TokprofError("profiling on Dask needs the dask extra: pip install 'tokprof[dask]'") from None
    tasks = [(None, os.fspath(path)) for path in paths]
    if not tasks:
        raise TokprofError("no session files to profile")
    options = _SessionOptions(model, _tools_arg(tools), _system_arg(system),
                              None if chat_template is None else os.fspath(chat_template))
    compute = {"scheduler": scheduler}
    parts = max(1, min(len(tasks), 64))
    ids = bag.from_sequence(tasks, npartitions=parts).map(_request_ids).compute(**compute)
    work = [(task, options, dropped) for task, dropped in zip(tasks, _copies(list(ids)))]
    outcomes = bag.from_sequence(work, npartitions=parts).map(_profile_session).compute(**compute)
    return sessions_report(root, tasks, list(outcomes))
