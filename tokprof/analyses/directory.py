"""The directory engine: the one implementation of profiling many session files.

A run has two passes, each a map of a plain function over picklable items, so that any map runs it:
:func:`local_map` (this process, or a pool of worker processes: ``tokprof profile DIR --jobs N``) or
Dask's (:mod:`tokprof.frontends.distributed`). Pass one (:func:`request_ids`) finds the provider request ids
each file holds, so that the calls a resumed session copies are counted once, in the first file that
holds them (:func:`copies`); pass two (:func:`profile_session`) profiles each file, with the user's
prices, and returns a summary row (and, when asked, a record per call), never a trace.
:func:`run_sessions` runs both passes with a given map and builds the :class:`SessionsReport`.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from tokprof.analyses.calls import CallRecord, Stamp, call_records
from tokprof.pricing.cost import UserPrice
from tokprof.analyses.standard import attach_analyses
from tokprof.analyses.sessions import SessionRow, SessionsReport, Skipped
from tokprof.attribution.attributor import RenderError
from tokprof.base.errors import TokprofError
from tokprof.models.base import ChatModel, ModelInfo
from tokprof.models.loaded import chat_model
from tokprof.profiling import Profile, profile_calls
from tokprof.trace import Call, Trace

#: A map: ``function`` of every item, the results in the items' order.
Mapper = Callable[[Callable[[Any], Any], Sequence[Any]], list]


@dataclass(frozen=True)
class SessionTask:
    """One session file: its format (None: detect it) and its path or URL."""

    kind: str | None
    path: str


@dataclass(frozen=True)
class SessionOptions:
    """How every session of a run is profiled: picklable, so that it travels to workers."""

    model: str | None = None  # a name (each worker loads it once), or None to choose from each log
    tools: list[dict] | None = None
    system: str | None = None
    chat_template: str | None = None
    prices: dict[str, UserPrice] = field(default_factory=dict)  # the user's rates by model name
    records: bool = False  # also a record per call (tokprof.analyses.calls)
    with_text: bool = False  # the records carry the prompt and response text
    stamp: Stamp = field(default_factory=Stamp)  # the machine and user given for the run


@dataclass(frozen=True)
class SessionWork:
    task: SessionTask
    options: SessionOptions
    counted: frozenset[str] = frozenset()  # request ids an earlier file holds: counted there


@dataclass(frozen=True)
class SessionOutcome:
    """A profiled session: its row, the model that counted it, and its calls' records when asked."""

    row: SessionRow
    model: ModelInfo
    calls: tuple[CallRecord, ...] = ()


Outcome = Union[SessionOutcome, Skipped]


def request_ids(task: SessionTask) -> list[str] | None:
    """The provider request ids of a session file's calls, in order (None when it cannot be read)."""
    from tokprof.formats import read_trace

    try:
        return [call.request_id for call in read_trace(task.path, task.kind).calls if call.request_id is not None]
    except TokprofError:
        return None


def copies(ids: Sequence[list[str] | None]) -> list[frozenset[str]]:
    """Per file, the request ids an earlier file already holds: its copies of calls counted there."""
    seen: set[str] = set()
    out = []
    for found in ids:
        found = found or []
        out.append(frozenset(i for i in found if i in seen))
        seen.update(found)
    return out


def model_for(trace: Trace, name: str | None, chat_template: str | None) -> ChatModel:
    """The model that counts a trace: ``name``, or chosen from the model names the log records."""
    return chat_model(name, chat_template, [trace.model] + [call.model for call in trace.calls])


def profile_session(work: SessionWork) -> Outcome:
    """One session file profiled (its row, its model, its records), or why it was skipped. A plain
    function of a picklable argument: it runs in a worker process or on a cluster. The file's calls are
    read as a stream (:class:`tokprof.transforms.stream.LogCalls`), each prompt let go after its pass."""
    path, options = work.task.path, work.options
    try:
        given = chat_model(options.model, options.chat_template, None) if options.model is not None else None
        result, light, chat, texts = _session_profile(work, given)
    except TokprofError as exc:
        return Skipped(path, str(exc))
    except RenderError as exc:  # the template failed on one session: skip it, say why
        return Skipped(path, f"{path}: {exc}")
    session = light.session or Path(path).stem
    records = (
        call_records(result, light, session, path, options.stamp, options.with_text, texts) if options.records else []
    )
    return SessionOutcome(SessionRow.from_profile(result, session, path), chat.describe(), tuple(records))


def _session_profile(
    work: SessionWork, given: ChatModel | None
) -> tuple[Profile, Trace, ChatModel, dict[int, str] | None]:
    """A session file's profile, its light trace, the model that counted it and (with text records)
    each call's text; ``given``: the model (None: chosen from the first call's name, settled on every
    name: another choice profiles the file again with it)."""
    from tokprof.analyses.calls import call_text
    from tokprof.transforms import counted_once
    from tokprof.transforms.stream import LogCalls, fitted

    path, options = work.task.path, work.options
    source = LogCalls(path, work.task.kind, options.tools, options.system, thread=False)
    stream = counted_once(source.calls(), set(work.counted), source.header)
    first = next(stream, None)
    chat = given or chat_model(None, options.chat_template, [source.header.model, first.model if first else None])
    names: list[str | None] = []
    texts: dict[int, str] | None = {} if options.records and options.with_text else None

    def calls() -> Iterator[Call]:
        for call in itertools.chain([first] if first is not None else [], stream):
            names.append(call.model)
            yield call

    def noted(calls: Iterator[Call]) -> Iterator[Call]:
        for call in calls:
            if texts is not None:
                texts[call.index] = call_text(call)
            yield call

    length = getattr(chat, "tool_call_id_length", None)
    profile, light = profile_calls(noted(fitted(calls(), length, source.header)), source.header, chat)
    if given is None:
        final = chat_model(None, options.chat_template, [source.header.model, *names])
        if (final.name, final.exact, final.method) != (chat.name, chat.exact, chat.method):
            return _session_profile(work, final)  # the log's other model names choose another model
        profile.model = dataclasses.replace(profile.model, selected=final.selected)
        chat = final
    return attach_analyses(profile, light, None, options.prices), light, chat, texts


def run_sessions(tasks: Sequence[SessionTask], options: SessionOptions, map_: Mapper, root: str = "") -> SessionsReport:
    """Both passes over ``tasks`` with ``map_``, and their report (rows' paths relative to ``root``)."""
    if not tasks:
        raise TokprofError("no session files to profile")
    ids = map_(request_ids, list(tasks))  # pass 1: which calls each file holds
    work = [SessionWork(task, options, counted) for task, counted in zip(tasks, copies(ids))]
    return sessions_report(root, tasks, map_(profile_session, work))


def sessions_report(root: str, tasks: Sequence[SessionTask], outcomes: Sequence[Outcome]) -> SessionsReport:
    """The report of session files profiled one by one: each task's outcome, a row or why it was
    skipped, in the tasks' order; the records of every call, in the same order."""
    report = SessionsReport(directory=root, model={})
    for task, outcome in zip(tasks, outcomes):
        if isinstance(outcome, Skipped):
            report.skipped.append(outcome)
            continue
        report.model[outcome.model.name] = outcome.model
        row = outcome.row
        relative = _relative(task.path, root)
        if relative is not None:
            row.path = relative
        report.sessions.append(row)
        report.calls += [_with_path(record, row.path) for record in outcome.calls]
    return report


def _relative(path: str, root: str) -> str | None:
    if not root:
        return None
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return None


def _with_path(record: CallRecord, path: str) -> CallRecord:
    import dataclasses

    return record if record.path == path else dataclasses.replace(record, path=path)


def local_map(jobs: int, advance: Callable[[], None] = lambda: None) -> Mapper:
    """A map in this process (``jobs`` 1) or in ``jobs`` worker processes; ``advance`` is called once
    per item done (a progress bar)."""

    def map_(function: Callable[[Any], Any], items: Sequence[Any]) -> list:
        if jobs <= 1 or len(items) <= 1:
            out = []
            for item in items:
                out.append(function(item))
                advance()
            return out
        return _pool_map(function, items, jobs, advance)

    return map_


def _pool_map(function: Callable[[Any], Any], items: Sequence[Any], jobs: int, advance: Callable[[], None]) -> list:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    results: list = [None] * len(items)
    with ProcessPoolExecutor(max_workers=min(jobs, len(items)), mp_context=context) as pool:
        futures = {pool.submit(function, item): i for i, item in enumerate(items)}
        for future in as_completed(futures):
            results[futures[future]] = future.result()
            advance()
    return results


def default_jobs() -> int:
    """One job per core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
