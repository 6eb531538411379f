"""Profile many session files on a Dask cluster (or Dask's local schedulers): the ``dask`` extra.

``profile_paths(paths, ...)`` is a directory run of the directory engine (:mod:`tokprof.analyses.directory`,
the same code as ``tokprof profile DIR --jobs N``) with Dask's map in place of the process pool:
the same two passes, the same options (the user's prices included), the same rows. Each task is a
plain function of picklable arguments (the model goes by name, and each worker loads it once); what
comes back is one summary row per file (and a record per call when asked), never a trace. Reports of
several runs combine with ``SessionsReport.combine``. See docs/scale.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Union

from tokprof.base.errors import TokprofError

if TYPE_CHECKING:
    import os

    from tokprof import SessionsReport

#: A map of the directory engine: ``map(function, items)`` as a list.
Mapper = Callable[[Callable[[Any], Any], Sequence[Any]], list]
PathLike = Union[str, "os.PathLike[str]"]


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
    tools: Any = None,
    system: PathLike | None = None,
    chat_template: PathLike | None = None,
    prices: Any = None,
    scheduler: Any = "processes",
    root: str = "",
    records: bool = False,
    with_text: bool = False,
    machine: str | None = None,
    user: str | None = None,
) -> SessionsReport:
    """A report of session files, each profiled as a Dask task, exactly as :func:`profile_directory`
    profiles them (``prices`` included): :func:`profile_sessions` with Dask's map. ``scheduler`` is
    what Dask's ``compute`` takes: "processes" or "threads" locally, or a ``distributed.Client``; ``root``
    is the folder rows' paths are shown relative to."""
    from tokprof.runs.options import Options
    from tokprof.runs.sessions import profile_sessions

    mapper = dask_map(scheduler)
    options = Options(
        model=model,
        tools=tools,
        system=system,
        chat_template=chat_template,
        prices=prices,
        records=records,
        with_text=with_text,
        machine=machine,
        user=user,
        map=mapper,
        root=root,
    )
    return profile_sessions(paths, options)
