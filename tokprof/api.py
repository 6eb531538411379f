"""tokprof's public API: the pipeline, for Python callers. The command line is a client of it.

Everything here is exported from :mod:`tokprof`; see its docstring for an example.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
import dataclasses
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from threading import Lock
from typing import TYPE_CHECKING, Any, TypeVar, Union

from tokprof.analyses.cost import UserPrice
from tokprof.analyses.finish import PricesArg, attach_analyses, user_prices
from tokprof.analyses.tools import ToolsReport, attach_catalogue, static_report
from tokprof.analyses.tools import tools_report as _tools_report
from tokprof.attribution.attributor import Attributor, RenderError
from tokprof.attribution.buckets import BUCKETS, WARNINGS
from tokprof.transforms.config import Config, ConfigError, find_config, load_file
from tokprof.base.errors import InputError, ModelError, TokprofError
from tokprof.models import DEFAULT_MODEL
from tokprof.models.base import ChatModel, ModelInfo
from tokprof.models.loaded import chat_model
from tokprof.profiling import Profile, profile_calls, profile_trace
from tokprof.formats.prompts import Prompt, extend_prompt, is_anthropic_shape, read_prompt  # noqa: F401 (the facade exports them)
from tokprof.trace import Call, Note, Trace

T = TypeVar("T")

if TYPE_CHECKING:
    from tokprof.analyses.local import LocalSession
    from tokprof.analyses.periods import Periods
    from tokprof.analyses.diff import RunDiff, Side
    from tokprof.analyses.probe import ProbeReport
    from tokprof.analyses.whatif import WhatIfReport
    from tokprof.analyses.cutlist import CutList
    from tokprof.render.tables import TeamOptions
    from tokprof.analyses import budgets
    from tokprof.analyses.directory import Mapper, SessionOptions
    from tokprof.analyses.sessions import SessionsReport

#: Names the facade has from modules that a profile does not need, imported when first asked for
#: (:func:`__getattr__`), so that a one-call profile does not build their dataclasses.
_LAZY = {
    "budgets": ("tokprof.analyses.budgets", ""),  # the module itself
    "SessionsReport": ("tokprof.analyses.sessions", "SessionsReport"),
    "Skipped": ("tokprof.analyses.sessions", "Skipped"),
    "Mapper": ("tokprof.analyses.directory", "Mapper"),
    "SessionOptions": ("tokprof.analyses.directory", "SessionOptions"),
    "SessionTask": ("tokprof.analyses.directory", "SessionTask"),
    "default_jobs": ("tokprof.analyses.directory", "default_jobs"),
    "local_map": ("tokprof.analyses.directory", "local_map"),
    "run_sessions": ("tokprof.analyses.directory", "run_sessions"),
}


#: A progress report: True for a bar on standard error when it is a terminal, or a function
#: called with (steps done, steps in all) after each step.
Progress = Union[bool, Callable[[int, int], None]]
PathLike = Union[str, "os.PathLike[str]"]
#: Tool definitions: a list (OpenAI, flat Responses, Anthropic or MCP shapes), or a JSON file of them.
ToolsArg = Union[Sequence[dict], PathLike, None]


@dataclass(frozen=True)
class Buckets:
    """Where one prompt's tokens go. The buckets are never negative and add up to :attr:`total`."""

    system: int
    tool_definitions: int
    tool_results: int
    conversation: int
    exact: bool  # False when the model is an estimate (a proxy for a closed model)
    warnings: tuple[Note, ...] = ()

    @property
    def total(self) -> int:
        return self.system + self.tool_definitions + self.tool_results + self.conversation

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in BUCKETS}


class Model:
    """A model that counts: its prompt format (a chat template) and its token counter.

    Get one with :func:`get_model`. :meth:`count` keeps what it learnt from the last prompts it
    counted, so counting a conversation again as it grows costs only what it adds.
    """

    def __init__(self, chat: ChatModel, *, keep_json: bool = False):
        """``keep_json`` (for a caller that owns the messages it counts and never changes them, as
        ``tokprof serve`` does): the JSON templates write of earlier messages is remembered from
        count to count."""
        self.chat = chat
        self._attributor: Attributor | None = None
        self._keep_json = keep_json
        self._lock = Lock()

    @property
    def name(self) -> str:
        return self.chat.name

    @property
    def exact(self) -> bool:
        """Whether counts are exact (the model's own tokenizer and template) or estimates."""
        return self.chat.exact

    @property
    def context_window(self) -> int | None:
        return self.chat.context_window

    @property
    def info(self) -> ModelInfo:
        return self.chat.describe()

    def __repr__(self) -> str:
        return f"<tokprof.Model {self.name!r}{'' if self.exact else ' (estimate)'}>"

    def count_text(self, text: str) -> int:
        """The number of tokens of a text, as it is (no chat template)."""
        if not isinstance(text, str):
            raise InputError("text", None, f"expected a string, found {type(text).__name__}")
        return self.chat.count(text)

    def count(
        self,
        messages: Sequence[dict],
        tools: Sequence[dict] | None = None,
        *,
        system: Any = None,
        date: date | None = None,
    ) -> Buckets:
        """The buckets of one prompt: ``messages`` in the Chat Completions shape (or the Anthropic
        Messages shape, with ``system`` as Anthropic's top-level system prompt), ``tools`` in any
        of the shapes :func:`read_log` takes. ``date`` pins templates that print today's date.
        Raises :class:`InputError` naming the message and field that is wrong."""
        return self.count_prompt(read_prompt(messages, tools, system=system), date=date)

    def count_prompt(self, prompt: Prompt, *, date: date | None = None) -> Buckets:
        """The buckets of a prompt already in the neutral form (:func:`read_prompt`'s): for a caller
        that converts only the messages a prompt adds to the previous one (``tokprof serve``)."""
        from tokprof.transforms import fit

        call = Call(index=0, messages=prompt.messages, tools=prompt.tools, day=date, where="request")
        one = fit(Trace(path="request", format="request", calls=[call]), self.chat)  # ids a model needs
        call = one.calls[0]
        notes = list(prompt.notes) + list(one.notes)
        with self._lock:
            if self._attributor is None:
                self._attributor = Attributor(self.chat, keep_json=self._keep_json)
            try:
                found = self._attributor.attribute(call)
            except RenderError as exc:
                raise InputError("request", None, str(exc).removeprefix("request: ")) from None
        warnings = tuple(notes) + tuple(Note(code, WARNINGS[code]) for code in found.warnings)
        return Buckets(
            found.system, found.tool_definitions, found.tool_results, found.conversation, self.exact, warnings
        )


# -- models --------------------------------------------------------------------------------------
def _chat_model(name: str | None, chat_template: PathLike | None, log_models: list[str | None] | None) -> ChatModel:
    """A loaded model, once per process for each name and template (:mod:`tokprof.models.loaded`)."""
    return chat_model(name, None if chat_template is None else os.fspath(chat_template), log_models)


def get_model(name: str = DEFAULT_MODEL, *, chat_template: PathLike | None = None) -> Model:
    """A model by name (``qwen2.5``, ``qwen3``, ``openai-proxy``, ``claude-proxy``, a closed model's
    name such as ``gpt-4o``), a tokenizer directory, or a Hub id from the local Hugging Face cache.
    ``chat_template`` is a Jinja file to use instead of the model's own. Raises
    :class:`ModelError` for a model that cannot be found (with the closest known name)."""
    return Model(_chat_model(name, chat_template, None))


def _model_for(trace: Trace, model: str | Model | None, chat_template: PathLike | None) -> ChatModel:
    if isinstance(model, Model):
        return model.chat
    return _chat_model(model, chat_template, [trace.model] + [call.model for call in trace.calls])


# -- logs ----------------------------------------------------------------------------------------
def _tools_arg(tools: ToolsArg) -> list[dict] | None:
    from tokprof.formats.toolsfile import normalise_tools, read_tools_file

    if tools is None:
        return None
    if isinstance(tools, (str, os.PathLike)):
        return read_tools_file(os.fspath(tools))
    return normalise_tools("tools", "", list(tools))


def _system_arg(system: PathLike | None) -> str | None:
    """A system prompt: the text itself, or a file (a :class:`pathlib.Path`) holding it."""
    from tokprof.formats.toolsfile import read_system_file

    if system is None or isinstance(system, str):
        return system
    return read_system_file(os.fspath(system))


def read_log(
    path: PathLike, *, input_format: str | None = None, tools: ToolsArg = None, system: PathLike | None = None
) -> Trace:
    """Read an agent log into its neutral trace (the format is detected unless named). ``tools`` and
    ``system`` give what a log does not record (Claude Code, Codex): tool definitions as a list or
    a JSON file, the system prompt as text or as a :class:`pathlib.Path`."""
    from tokprof.formats import read_trace
    from tokprof.transforms import supply, thread_by_content

    name = os.fspath(path)
    trace = thread_by_content(read_trace(name, input_format))
    if tools is not None or system is not None:
        try:
            supply(trace, _tools_arg(tools), _system_arg(system))
        except InputError:
            raise
        except ValueError as exc:
            raise InputError(name, None, str(exc)) from None
        if isinstance(tools, (str, os.PathLike)):
            from tokprof.formats.toolsfile import tools_file_source

            label = tools_file_source(os.fspath(tools))
            if label:
                trace.notes.append(Note("tools-from-mcp", f"{label} ({os.fspath(tools)})"))
    return trace


@contextlib.contextmanager
def _progress(progress: Progress, total: int, label_text: str, in_bytes: bool = False) -> Iterator[Callable[..., None]]:
    """Yields the function that advances a progress report by one step (or by ``steps``); a bar of
    ``in_bytes`` steps shows its share done, not the steps."""
    if callable(progress):
        done = [0]

        def advance(steps: int = 1) -> None:
            done[0] += steps
            progress(done[0], total)

        yield advance
        return
    if not progress or not sys.stderr.isatty() or total < 2:

        def unseen(steps: int = 1) -> None:
            pass

        yield unseen
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TaskProgressColumn, TimeRemainingColumn

    with Bar(
        "[progress.description]{task.description}",
        BarColumn(),
        TaskProgressColumn() if in_bytes else MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(label_text, total=total)

        def shown(steps: int = 1) -> None:
            bar.advance(task, steps)

        yield shown


def configured_prices(config: Config, specs: Sequence[str] = ()) -> dict[str, UserPrice]:
    """The user's rates by model name: a configuration's ``prices``, then rates written as ``--price``
    takes them (``[MODEL=]IN/OUT[/CACHE_READ[/CACHE_WRITE[/CACHE_WRITE_1H]]]``) over them."""
    where = f"{config.path} [prices]" if config.path else "the configuration"
    out = {name: UserPrice(rates, where) for name, rates in config.prices.items()}
    out.update(_prices(list(specs)))
    return out


def _prices(prices: PricesArg) -> dict[str, UserPrice]:
    """The user's prices by model name, from what :data:`PricesArg` allows."""
    return user_prices(prices)


def _one_run(function: Callable[..., T]) -> Callable[..., T]:
    """The renders of one call of ``function`` are one run: their time together is bounded
    (``TOKPROF_TEMPLATE_RUN_TIMEOUT``, tokprof.models.template.Limits)."""
    from tokprof.models.template import template_run

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> T:
        with template_run():
            return function(*args, **kwargs)

    return run


def _finish(result: Profile, trace: Trace, chat: ChatModel | None, prices: PricesArg) -> Profile:
    """The analyses a profile carries: the tool catalogue (with ``chat``), the cost and the computed cache."""
    return attach_analyses(result, trace, chat, user_prices(prices))


@_one_run
def _profile_trace(
    trace: Trace, chat: ChatModel, progress: Progress = False, prices: PricesArg = None, advice: bool = False
) -> Profile:
    from tokprof.transforms import fit

    trace = fit(trace, chat)
    if advice:  # the profile is the replay's baseline (tokprof.analyses.actions)
        return _advised(trace, chat, progress, prices)
    with _progress(progress, len(trace.calls), "profiling calls") as advance:
        try:
            result = profile_trace(trace, chat, on_call=lambda _: advance())
        except RenderError as exc:
            raise InputError(trace.path, None, str(exc)) from None
    return _finish(result, trace, chat, prices)


def _advised(trace: Trace, chat: ChatModel, progress: Progress, prices: PricesArg) -> Profile:
    """A fitted trace's profile with what to change: the log replayed under the tool-result policies
    (whose baseline is the profile itself, made once), and the actions they and the profile price."""
    from tokprof.analyses.actions import advise, replayed_policies
    from tokprof.analyses.whatif import whatif as replay
    from tokprof.transforms.policies import parse_policies

    policies = parse_policies(list(replayed_policies(trace)))
    with _progress(progress, len(trace.calls) * (1 + len(policies)), "profiling and replaying calls") as advance:
        try:
            report = replay(trace, chat, policies, on_call=advance, prices=_prices(prices))
        except RenderError as exc:
            if not policies:
                raise InputError(trace.path, None, str(exc)) from None
            policies = []  # a prompt the template cannot render once cut: the profile, without that action
            try:
                report = replay(trace, chat, policies, prices=_prices(prices))
            except RenderError as again:
                raise InputError(trace.path, None, str(again)) from None
    assert report.baseline is not None
    result = _finish(report.baseline, trace, chat, prices)
    result.actions = advise(result, trace, report if policies else None)
    return result


@_one_run
def _profile_calls(
    calls: Iterable[Call],
    header: Trace,
    chat: ChatModel,
    prices: PricesArg = None,
    settle: Callable[[], ChatModel] | None = None,
) -> Profile:
    """:func:`_profile_trace` of a stream of calls (each yielded once, in log order; ``header``: the
    trace's other fields, its notes, model, session and compactions read once the stream is done,
    and not changed), keeping no prompt
    after its call's pass (:func:`tokprof.profiling.profile_calls`): the tool-call ids are fitted call
    by call (:func:`tokprof.transforms.tool_ids.fitter`)."""
    from tokprof.transforms.tool_ids import fitter

    work = dataclasses.replace(header, calls=[])
    fitting = fitter(chat)

    def fitted() -> Iterator[Call]:
        for call in calls:
            yield fitting.fit(call) if fitting is not None else call
        work.notes = [Note(n.code, n.message, list(n.places), list(n.calls)) for n in header.notes]
        work.model, work.session, work.compactions = header.model, header.session, header.compactions
        if fitting is not None:
            fitting.note(work)

    settled = [chat]

    def settled_model() -> ChatModel:
        settled[0] = settle() if settle is not None else chat
        return settled[0]

    try:
        result, light = profile_calls(fitted(), work, chat, settle=settled_model)
    except RenderError as exc:
        raise InputError(header.path, None, str(exc)) from None
    return _finish(result, light, settled[0], prices)


def profile(
    log: PathLike | Trace,
    model: str | Model | None = None,
    *,
    input_format: str | None = None,
    tools: ToolsArg = None,
    system: PathLike | None = None,
    chat_template: PathLike | None = None,
    progress: Progress = False,
    prices: PricesArg = None,
    advice: bool = False,
) -> Profile:
    """Profile a log (a path, or a trace from :func:`read_log`): every call's prompt in its buckets,
    the run's totals, its main tool catalogue, every call's cost and what a prefix cache could reuse.
    ``model`` is a name, a :class:`Model`, or None to choose one from the model names the log
    records. ``prices`` sets rates per million tokens for models genai-prices does not price (or to
    price them otherwise): ``["0.2/0.6"]`` for every model, ``["my-model=0.2/0.6/0.02"]`` for one.
    ``advice``: also what to change (``Profile.actions``), proved by replaying the log (slower)."""
    from tokprof.models.template import template_run

    with template_run():
        trace = log if isinstance(log, Trace) else read_log(log, input_format=input_format, tools=tools, system=system)
        return _profile_trace(trace, _model_for(trace, model, chat_template), progress, prices, advice)


def saved_profile(path: PathLike) -> Profile | None:
    """The profile saved at ``path`` (``Profile.save``, ``tokprof profile -f json``), or None when the
    file is not one (a log). A file that says it is a profile and is not a valid one raises a
    :class:`TokprofError` naming the file and the field."""
    from tokprof.profiling import ProfileFileError

    name = os.fspath(path)
    if not Profile.sniff(name):
        return None
    try:
        return Profile.load(name)
    except ProfileFileError as exc:
        raise TokprofError(f"{name}: {exc}") from None
    except (OSError, ValueError) as exc:
        raise TokprofError(f"{name}: cannot read the saved profile: {getattr(exc, 'strerror', None) or exc}") from None


def profile_file(path: PathLike, **options: Any) -> Profile:
    """:func:`profile` of one file, as a plain function of picklable arguments (a model by name), so
    that it can run as a map task in another process; each process loads a model once."""
    model = options.get("model")
    if model is not None and not isinstance(model, str):
        raise TypeError("profile_file takes the model by name")
    return profile(path, **options)


def profile_directory(
    directory: PathLike,
    model: str | None = None,
    *,
    input_format: str | None = None,
    tools: ToolsArg = None,
    system: PathLike | None = None,
    chat_template: PathLike | None = None,
    progress: Progress = False,
    jobs: int | None = None,
    prices: PricesArg = None,
    records: bool = False,
    with_text: bool = False,
    machine: str | None = None,
    user: str | None = None,
    state: dict | None = None,
) -> SessionsReport:
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
    tasks = [SessionTask(kind, str(path)) for kind, path in files]
    jobs = max(1, min(jobs if jobs is not None else default_jobs(), len(tasks)))
    with _progress(progress, 2 * len(tasks), "profiling sessions") as advance:
        if state is None:
            report = run_sessions(tasks, options, local_map(jobs, advance), name)
        else:
            from tokprof.analyses.incremental import run_incremental

            report, fresh, _ = run_incremental(tasks, options, local_map(jobs, advance), name, state)
            state.clear()
            state.update(fresh)
    if not report.sessions:
        raise InputError(name, None, f"no session could be read; first: {report.skipped[0].error}")
    report.skipped += not_sessions  # the sessions that failed first, then the files that are no sessions
    return report


def profile_sessions(
    paths: Iterable[PathLike],
    model: str | None = None,
    *,
    tools: ToolsArg = None,
    system: PathLike | None = None,
    chat_template: PathLike | None = None,
    prices: PricesArg = None,
    records: bool = False,
    with_text: bool = False,
    machine: str | None = None,
    user: str | None = None,
    map: Mapper | None = None,
    root: str = "",
) -> SessionsReport:
    """Session files (each's format detected) profiled exactly as :func:`profile_directory` profiles a
    directory's, by the same directory engine, each file a task of ``map``: a function like the
    builtin ``map`` that returns a list (``map(function, items)``), such as a process pool's or Dask's;
    None: one after the other in this process. Each task is a plain function of picklable arguments
    (the model goes by name). ``root`` is the folder the rows' paths are shown relative to."""
    from tokprof.analyses.directory import SessionTask, local_map, run_sessions

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
    return run_sessions(tasks, options, map or local_map(1), root)


def session_options(
    model: str | None = None,
    *,
    tools: ToolsArg = None,
    system: PathLike | None = None,
    chat_template: PathLike | None = None,
    prices: PricesArg = None,
    records: bool = False,
    with_text: bool = False,
    machine: str | None = None,
    user: str | None = None,
) -> SessionOptions:
    """How each session of a directory run is profiled, from what :func:`profile_directory` takes: the
    options every map of the directory engine (:mod:`tokprof.analyses.directory`) carries to its workers."""
    from tokprof.analyses.calls import Stamp
    from tokprof.analyses.directory import SessionOptions

    if model is not None and not isinstance(model, str):
        raise TypeError("a directory run takes the model by name")
    return SessionOptions(
        model,
        _tools_arg(tools),
        _system_arg(system),
        None if chat_template is None else os.fspath(chat_template),
        user_prices(prices),
        records,
        with_text,
        Stamp(machine, user),
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


# -- tools and budgets ----------------------------------------------------------------------------
@_one_run
def tools_report(
    log: PathLike | Trace | None = None,
    *,
    tools: ToolsArg = None,
    system: PathLike | None = None,
    model: str | Model | None = None,
    input_format: str | None = None,
    chat_template: PathLike | None = None,
    progress: Progress = False,
    prices: PricesArg = None,
) -> ToolsReport:
    """What each tool definition costs per request. With a log: per distinct catalogue in it, with
    how often each tool was carried and called (``tools``/``system`` supply what the log does not
    record), and the cut list (``ToolsReport.cut_list``: per tool and MCP server, in dollars at
    ``prices``' rates where genai-prices has none). Without one: the catalogue ``tools`` priced alone,
    with ``system`` as the system prompt."""
    if log is None:
        if tools is None:
            raise InputError("tools_report", None, "give a log or tools")
        tool_list = _tools_arg(tools)
        assert tool_list is not None
        source = os.fspath(tools) if isinstance(tools, (str, os.PathLike)) else "tools"
        if isinstance(model, Model):
            chat = model.chat
        else:
            chat = _chat_model(model or DEFAULT_MODEL, chat_template, None)
        try:
            return static_report(chat, tool_list, _system_arg(system), source)
        except TokprofError:
            raise
        except Exception as exc:  # a template failing on the catalogue prompt (system + empty user)
            raise InputError(source, None, f"the chat template failed on the tool catalogue: {exc}") from None
    trace = log if isinstance(log, Trace) else read_log(log, input_format=input_format, tools=tools, system=system)
    chat = _model_for(trace, model, chat_template)
    from tokprof.transforms import fit

    trace = fit(trace, chat)
    with _progress(progress, len(trace.calls), "profiling calls") as advance:
        try:
            result = profile_trace(trace, chat, on_call=lambda _: advance())
        except RenderError as exc:
            raise InputError(trace.path, None, str(exc)) from None
    assert result.facts is not None  # the pass's: its catalogues and tool calls
    facts = result.facts.tools
    try:
        report = _tools_report(trace, chat, result.computed_billed_input(), facts=facts)
    except Exception as exc:  # a template failing on the isolated catalogue prompt (system + empty user)
        raise InputError(trace.path, None, f"the chat template failed on the tool catalogue alone: {exc}") from None
    from tokprof.analyses.carry_cost import price_carry
    from tokprof.analyses.cost import attach_cost
    from tokprof.analyses.mcp_rollup import server_rollup

    # the carry cost in dollars, where the log is priced (at ``prices``' rates where genai-prices has none)
    result = price_carry(attach_cost(result, trace, user_prices(prices)))
    report.mcp_servers = server_rollup(facts.called, result.tool_result_costs)
    report.billed_input_profile = sum(c.total for c in result.calls)  # what tokprof profile reports
    from tokprof.analyses.cutlist import cut_list, run_definitions

    cuts = cut_list(result, run_definitions(report.catalogues), facts.called)
    report.cut_list = _replayed_cuts(cuts, trace, chat, prices)
    return report


def _replayed_cuts(cuts: "CutList", trace: Trace, chat: ChatModel, prices: PricesArg) -> "CutList":
    """The cut list with its costliest caps and drops replayed (tokprof.analyses.cutlist.replayed)."""
    from tokprof.analyses.cutlist import replayed

    return replayed(cuts, trace, chat, _prices(prices))


# -- what-if ------------------------------------------------------------------------------------------
@_one_run
def whatif(
    log: PathLike | Trace,
    policies: Sequence[str] | None = None,
    model: str | Model | None = None,
    *,
    input_format: str | None = None,
    tools: ToolsArg = None,
    system: PathLike | None = None,
    chat_template: PathLike | None = None,
    window: int | None = None,
    progress: Progress = False,
    prices: PricesArg = None,
    facts: Sequence[str] = (),
    facts_file: PathLike | None = None,
) -> "WhatIfReport":
    """Replay a log under context policies (``window:20``, ``compact:80``, …; None: the default set),
    every prompt counted exactly like a profile's, ``full`` (the log as it is) first. ``window`` is
    the context window in tokens (default: the model's). ``facts`` (texts, or ``re:`` regular
    expressions) are looked for in every prompt: each policy says which it keeps
    (``PolicyResult.facts``); ``facts_file`` adds a file's, one per line (blank lines and lines
    starting with ``#`` left out). Raises :class:`TokprofError` for a policy that does not parse (the
    message lists the policies)."""
    from tokprof.analyses.retention import parse_fact, read_facts
    from tokprof.analyses.whatif import whatif as _whatif
    from tokprof.transforms.policies import DEFAULT_POLICIES, parse_policies

    if isinstance(policies, str):
        policies = [policies]
    texts = [facts] if isinstance(facts, str) else list(facts)
    if facts_file is not None:
        texts += read_facts(os.fspath(facts_file))
    wanted = [parse_fact(text) for text in texts]
    parsed = parse_policies(list(DEFAULT_POLICIES if policies is None else policies))
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window <= 0):
        raise TokprofError(f"window: expected a positive number of tokens, found {window!r}")
    trace = log if isinstance(log, Trace) else read_log(log, input_format=input_format, tools=tools, system=system)
    if trace.calls and all(
        not c.messages and not c.tools and c.reported is None and not c.unrendered for c in trace.calls
    ):
        raise InputError(trace.path, None, NOTHING_RECORDED.format(what="to replay"))
    chat = _model_for(trace, model, chat_template)
    from tokprof.transforms import fit

    trace = fit(trace, chat)
    notes = []
    if policies is None and window is None and _window_of(trace, chat) is None:
        from tokprof.transforms.policies import Compact

        left = [p.spec for p in parsed if isinstance(p, Compact)]
        parsed = [p for p in parsed if not isinstance(p, Compact)]
        notes.append(
            Note(
                "window-unknown",
                f"the model's context window is not known: {', '.join(left)} of the "
                "default policies is left out, and no call is counted over the window (give --window N)",
            )
        )
    with _progress(progress, len(trace.calls) * len(parsed), "replaying calls") as advance:
        try:
            report = _whatif(trace, chat, parsed, window=window, on_call=advance, prices=_prices(prices), facts=wanted)
        except RenderError as exc:
            raise InputError(trace.path, None, str(exc)) from None
    if report.baseline is not None:  # the profile of full is the log's profile, with its catalogue
        report.baseline = attach_catalogue(report.baseline, trace, chat)
    report.warnings += notes
    return report


def suggest_facts(log: PathLike | Trace, *, input_format: str | None = None) -> list[str]:
    """Candidate facts from the user's own messages in a log (standing instructions, identifiers
    stated once), for :func:`whatif`'s ``facts``: suggestions, for a person to choose from."""
    from tokprof.analyses.retention import suggest_facts as suggest

    trace = log if isinstance(log, Trace) else read_log(log, input_format=input_format)
    return suggest(trace)


def _window_of(trace: Trace, chat: ChatModel) -> int | None:
    """The context window a what-if measures against when none is given: the model's, for an estimate
    the window the log's agent ran the model with when known (as a profile's model says)."""
    from tokprof.profiling import log_window

    if not chat.exact:
        return log_window(trace, trace.calls).window or chat.context_window
    return chat.context_window


def load_config(path: PathLike | None = None) -> Config:
    """The configuration in a file (a tokprof.toml, or a pyproject.toml's ``[tool.tokprof]``), or,
    with no path, the nearest one from the working directory upwards (empty when there is none)."""
    if path is None:
        return find_config(Path.cwd()) or Config()
    if not Path(path).is_file():
        exists = os.path.exists(path) and not os.path.isdir(path)
        raise ConfigError(f"{os.fspath(path)}: " + ("not a regular file" if exists else "no such configuration file"))
    return load_file(Path(path))


def check(
    subject: Profile | ToolsReport,
    config: Config | PathLike | None = None,
    *,
    baseline: PathLike | None = None,
) -> budgets.CheckResult:
    """Judge a profile (or a catalogue priced alone by :func:`tools_report`) against budgets and a
    baseline. ``config`` is a :class:`Config`, a file, or None for the nearest one from the working
    directory; ``baseline`` a baseline file (default: the configuration's)."""
    from tokprof.analyses import budgets

    if not isinstance(config, Config):
        config = load_config(config)
    measurement = measure(subject)
    explicit = None if baseline is None else os.fspath(baseline)
    where = budgets.baseline_location(config, explicit, updating=False)
    return budgets.judge(measurement, config, where, explicit=explicit is not None)


@dataclass
class CheckRun:
    """What a check run found: the result, the measurement it judged (what ``--update-baseline``
    writes), the baseline's path (compared with, or to be written) and the files the run read (which
    the baseline may never replace)."""

    result: budgets.CheckResult
    measurement: budgets.Measurement
    baseline: str | None
    inputs: tuple[str, ...] = ()

    def baseline_text(self) -> str:
        """The JSON a baseline file holds for this run's measurement (what ``--update-baseline``
        writes to :attr:`baseline`), with paths relative to the baseline's folder."""
        import json

        folder = str(Path(self.baseline).parent) if self.baseline else "."
        return json.dumps(self.measurement.baseline_dict(folder), indent=2) + "\n"

    def write_baseline(self) -> str:
        """Write :meth:`baseline_text` to :attr:`baseline` (atomically) and return its path."""
        from tokprof.base.outputs import write_files

        if self.baseline is None:
            raise TokprofError("no baseline file: give one (baseline = ... in the configuration, or --baseline)")
        write_files([(self.baseline, self.baseline_text().encode("utf-8"))], self.inputs)
        return self.baseline


def _configured_model(model: str | Model | None, config: Config, template: PathLike | None) -> None:
    """The configuration's model, when it is the one that will count, loaded now so that a name that
    is wrong is an error naming the file and key."""
    if model is None and config.model is not None:
        try:
            get_model(config.model, chat_template=template)
        except ModelError as exc:
            raise ModelError(f"{config.model_where or 'model'}: {exc}") from None


@_one_run
def run_check(
    log: PathLike | None = None,
    *,
    tools: PathLike | None = None,
    system: PathLike | None = None,
    config: Config | PathLike | None = None,
    baseline: PathLike | None = None,
    update_baseline: bool = False,
    model: str | None = None,
    chat_template: PathLike | None = None,
    input_format: str | None = None,
    progress: Progress = False,
    prices: PricesArg = None,
) -> CheckRun:
    """``tokprof check`` as a function: a log (or a saved profile), or a tools file with an optional
    system prompt file, judged against the configuration's budgets and baseline. The configuration's
    ``model`` and ``chat_template`` apply when none is given; with ``update_baseline`` nothing is
    compared with the baseline (the caller writes ``run.measurement.baseline_dict()`` to
    ``run.baseline``)."""
    from tokprof.analyses import budgets

    if not isinstance(config, Config):
        config = load_config(config)
    template = chat_template if chat_template is not None else config.resolve(config.chat_template)
    system_path = None if system is None else Path(system)
    if log is None:
        if tools is None:
            raise InputError("check", None, "give a log or a tools file")
        _configured_model(model, config, template)
        report = tools_report(
            tools=tools, system=system_path, model=model or config.model or DEFAULT_MODEL, chat_template=template
        )
        measurement = budgets.measure_catalogue(report)
    elif os.path.isdir(log):  # a directory of sessions: its spend per day, project and session alone
        measurement = budgets.Measurement(
            model=model or config.model or "-",
            template_sha256="",
            source=os.fspath(log),
            metrics={name: None for name in budgets.METRICS},
            tools={},
            unknown={name: "not measured over a directory: check one log for it" for name in budgets.METRICS},
        )
    else:
        name = os.fspath(log)
        saved = saved_profile(name)
        if saved is None:  # a saved profile needs no model
            _configured_model(model, config, template)
            saved = profile(
                name,
                model or config.model,
                input_format=input_format,
                tools=tools,
                system=system_path,
                chat_template=template,
                progress=progress,
                prices=prices,
            )
        measurement = measure(saved)
    _measure_periods(measurement, config, log, input_format)
    explicit = None if baseline is None else os.fspath(baseline)
    where = budgets.baseline_location(config, explicit, update_baseline)
    result = budgets.judge(measurement, config, where, explicit=explicit is not None, updating=update_baseline)
    if update_baseline:
        result.notes.insert(0, f"baseline written to {where}")
    read = (log, tools, system, config.path, template)
    return CheckRun(result, measurement, where, tuple(os.fspath(p) for p in read if p is not None))


NOTHING_RECORDED = (
    "no call records its prompt or its usage (usage redacted, content capture off): nothing {what}; "
    "'tokprof profile' lists the calls and the totals the log holds"
)


def _measure_periods(
    measurement: "budgets.Measurement", config: Config, log: PathLike | None, input_format: str | None
) -> None:
    """The spend per day, project and session (:mod:`tokprof.analyses.period_budgets`) when a budget or
    the baseline asks for them: from the log's reported usage (a saved profile keeps no call times)."""
    from tokprof.analyses.period_budgets import PERIOD_METRICS, log_spends, measure_periods

    if log is None or not any(metric in config.budgets for metric in PERIOD_METRICS):
        return
    name = os.fspath(log)
    if not os.path.isdir(name) and saved_profile(name) is not None:
        for metric in PERIOD_METRICS:
            measurement.unknown[metric] = (
                "not recorded: a saved profile keeps no call times; check the log "
                '(or set not_recorded = "skip" on this budget)'
            )
        return
    sessions = log_spends(name, input_format)
    limits = {metric: config.budgets[metric].max if metric in config.budgets else None for metric in PERIOD_METRICS}
    readable = [s for s in sessions if s.error is None]
    measurement.explain.update(measure_periods(readable, measurement.metrics, measurement.unknown, limits))
    measurement.skipped = [f"{s.path}: {s.error}" for s in sessions if s.error is not None]


def diff(
    a: "PathLike | Profile | CheckRun",
    b: "PathLike | Profile | CheckRun",
    model: str | None = None,
    *,
    input_format: str | None = None,
    tools: ToolsArg = None,
    system: PathLike | None = None,
    prices: PricesArg = None,
    progress: Progress = False,
) -> "RunDiff":
    """Two runs compared: each a log, a saved profile (or a :class:`Profile`), a check baseline
    (``tokprof-baseline.json``) or a :class:`CheckRun` (its measurement: the metrics and the tools). Every figure is ``{a, b, change}``: the run's (calls, billed input,
    prompts, output, uncached input, cost, cache hit rate, cache miss cost), each bucket, each tool's
    definition and results, each cache-miss reason, each part of the cost; and, for two logs of one
    conversation, what changed first in the prompt (``first_change``). ``model`` counts both logs
    (default: each log's own)."""
    from tokprof.analyses.diff import diff as compare

    return compare(
        *(
            _diff_side(
                side, model, input_format=input_format, tools=tools, system=system, prices=prices, progress=progress
            )
            for side in (a, b)
        )
    )


def _diff_side(
    side: "PathLike | Profile | CheckRun",
    model: str | None,
    *,
    input_format: str | None,
    tools: ToolsArg,
    system: PathLike | None,
    prices: PricesArg,
    progress: Progress,
) -> "Side":
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
    trace = read_log(name, input_format=input_format, tools=tools, system=system)
    from tokprof.analyses.diff import prompt_start

    start = prompt_start(trace)  # before profiling, which may fit the trace to the model
    result = profile(trace, model, progress=progress, prices=prices)
    return side_of_profile(result, "log", start)


def report_site(
    directory: PathLike | None,
    write: Callable[[str, str], None],
    model: str | None = None,
    *,
    agent: str | None = None,
    prices: PricesArg = None,
    window: int | None = None,
    progress: Progress = False,
) -> int:
    """A dashboard over many sessions: the sessions of ``directory`` (found by content), or with
    ``directory`` None every session on this machine (of ``agent``'s), each profiled and its report
    page passed to ``write(name, html)`` as it is made (``session-0001.html``, ...), then the index
    (``index.html``): spend by day, project, agent and model, the costliest sessions, the cache's
    dollars lost by reason, the buckets over all sessions, and each session that could not be read,
    with why. Pages link to each other by name: write them into one folder. Returns the sessions'
    number."""
    from tokprof.analyses.periods import SessionSpend
    from tokprof.analyses.sessions import SessionRow, Skipped
    from tokprof.analyses.site import Site, SitePage
    from tokprof.analyses.spend import call_spends
    from tokprof.render import RenderOptions, render
    from tokprof.render.site import index_page, session_page

    files: list[tuple[str | None, str]]
    if directory is not None:
        from tokprof.formats import scan_directory

        name = os.fspath(directory)
        found = scan_directory(name)
        files = [(kind, str(path)) for kind, path in found.sessions]
        site = Site(name, skipped=[Skipped(str(path), f"{path}: {why}") for path, why in found.skipped])
    else:
        from tokprof.formats.discovery import local_session_files

        files = [(one.format, str(one.path)) for one in local_session_files(agent)]
        site = Site("this machine" + (f" ({agent})" if agent else ""))
    options = RenderOptions(window=window)
    with _progress(progress, len(files), "profiling sessions") as advance:
        for number, (kind, path) in enumerate(files, 1):
            try:
                trace = read_log(path, input_format=kind)
                spends = call_spends(trace)
                result = profile(trace, model, prices=prices, advice=True)  # its page's "what to change" too
                page = session_page(render("profile", "html", result, options))
            except (TokprofError, RenderError) as exc:
                site.skipped.append(Skipped(path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
                advance()
                continue
            name = f"session-{number:04d}.html"
            write(name, page)
            session = trace.session or Path(path).stem
            project = next((call.cwd for call in trace.calls if call.cwd), None) or ""
            first = result.actions[0] if result.actions else None
            site.pages.append(
                SitePage(name, SessionRow.from_profile(result, session, path), trace.format, project, first)
            )
            site.spends.append(SessionSpend(trace.format, project, session, path, tuple(spends)))
            advance()
    write("index.html", index_page(site))
    return len(site.pages)


def measure(subject: Profile | ToolsReport) -> budgets.Measurement:
    """The budget metrics of a profile, or of a catalogue priced alone."""
    from tokprof.analyses import budgets

    if isinstance(subject, Profile):
        if subject.calls and not any(c.recorded for c in subject.calls):  # budgets on figures not known: no
            raise InputError(subject.source.path, None, NOTHING_RECORDED.format(what="to check against budgets"))
        return budgets.measure_profile(subject)
    if isinstance(subject, ToolsReport):
        if subject.system_tokens is None:
            raise InputError(subject.source.path, None, "a log's tools report: check its profile instead")
        return budgets.measure_catalogue(subject)
    raise TypeError(f"check takes a Profile or a ToolsReport, not {type(subject).__name__}")


def __getattr__(name: str) -> Any:
    """The names of :data:`_LAZY`, loaded when first asked for."""
    if name in _LAZY:
        import importlib

        module, attribute = _LAZY[name]
        found = importlib.import_module(module)
        value = getattr(found, attribute) if attribute else found
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tokprof.api' has no attribute {name!r}")


__all__ = [
    "Buckets",
    "CheckRun",
    "Model",
    "check",
    "find_session",
    "get_model",
    "load_config",
    "measure",
    "profile",
    "run_check",
    "profile_directory",
    "profile_file",
    "read_log",
    "tools_report",
    "whatif",
    "ModelError",
]


def render_report(
    result: Any,
    fmt: str = "table",
    *,
    width: int | None = None,
    color: bool = False,
    calls: int | None = None,
    window: int | None = None,
    levels: Sequence[float] = (0.7, 0.8),
    cost_parts: bool = False,
    team: TeamOptions | None = None,
) -> str:
    """A result (:class:`Profile`, :class:`SessionsReport`, :class:`ToolsReport`,
    :class:`WhatIfReport`, :class:`CheckResult`, :class:`ProbeReport`, :class:`McpReport`, the
    discovery :func:`find_mcp_servers` returns or the list :func:`local_sessions` returns) as text in one of its formats (``table``,
    ``json``, ``csv``, ``html``, ``markdown``: :func:`report_formats` says which), as the command
    line writes it. ``width`` is the table's (None: 120 columns), ``calls`` the per-call rows a
    profile's table shows (None: all), ``window`` and ``levels`` the HTML report's context window and
    fill lines, ``cost_parts`` a what-if table's cost split per policy. ``team`` (a directory's
    report, made with ``records``): the sessions with a call in its time range, and its rollups after
    the table or in the JSON's ``rollups``."""
    from tokprof.names import report_formats, result_kind
    from tokprof.render import RenderOptions, render

    kind = result_kind(result)
    if kind is None:
        raise TypeError(f"render_report: not a tokprof result: {type(result).__name__}")
    if fmt not in report_formats(result):
        raise InputError(
            "format",
            None,
            f"{fmt!r} is not a format of a {kind} result: use one of " + ", ".join(report_formats(result)),
        )
    options = RenderOptions(
        color=color, width=width, calls=calls, window=window, levels=tuple(levels), cost_parts=cost_parts
    )
    if team is None:
        return render(kind, fmt, result, options)
    if kind != "sessions":
        raise TypeError(f"render_report: team options are for a directory's report, not a {kind} result")
    return _team_text(result, fmt, options, team)


def _team_text(report: SessionsReport, fmt: str, options: Any, team: TeamOptions) -> str:
    """A directory's report in the team's time range, with the team's rollups."""
    from tokprof.render import render
    from tokprof.render.tables import rollups_text, team_view

    report, _, rollups = team_view(report, team)
    text = render("sessions", fmt, report, options)
    if rollups and fmt == "json":
        import json

        doc = json.loads(text)
        doc["rollups"] = [r.to_dict() for r in rollups]
        text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    elif rollups and fmt == "table":
        text += rollups_text(rollups)
    elif rollups:
        raise TokprofError("--by: rollups are in the table, JSON and Parquet outputs (and CSV into a folder: -o DIR/)")
    return text


def report_tables(
    report: SessionsReport,
    fmt: str,
    folder: PathLike,
    *,
    team: TeamOptions | None = None,
    state: dict | None = None,
) -> list[tuple[str, bytes]]:
    """A directory's report (made with ``records``) as the tables a warehouse takes (docs/tables.md),
    each a file's path in ``folder`` and its bytes: ``calls`` and ``sessions``, then a table per
    rollup of ``team``, in ``fmt`` ``parquet`` (the ``parquet`` extra) or ``csv``; with ``state`` (an
    incremental run's, see :func:`incremental_state`), the state file too. Nothing is written."""
    from tokprof.render.tables import TeamOptions, table_files, tables, team_view

    if fmt not in ("parquet", "csv"):
        raise TokprofError(f"report_tables: the tables are parquet or csv files, not {fmt}")
    team = team or TeamOptions()
    folder = os.fspath(folder)
    report, calls, rollups = team_view(report, team)
    files = table_files(folder, fmt, tables(report, calls, rollups, team.with_text))
    if state is not None:
        from tokprof.analyses.incremental import STATE_NAME, state_bytes

        files.append((os.path.join(folder, STATE_NAME), state_bytes(state)))
    return files


def incremental_state(folder: PathLike) -> dict:
    """The state an incremental directory run keeps beside its tables in ``folder`` (empty when there
    is none yet): give it to :func:`profile_directory` as ``state``, which profiles only the files that
    are new or changed and replaces it with the new state, and to :func:`report_tables` to keep it."""
    from tokprof.analyses.incremental import STATE_NAME, load_state

    return load_state(os.path.join(os.fspath(folder), STATE_NAME))


def prometheus_text(report: SessionsReport) -> str:
    """A directory's per-call records (``profile_directory(records=True)``) as Prometheus' text
    exposition: a metric family per figure, a series per label set."""
    from tokprof.export.prometheus import exposition

    return exposition(report.calls)


def send_spans(report: SessionsReport, endpoint: str) -> int:
    """Send a span per call of a directory's records (``profile_directory(records=True)``) to an OTLP
    HTTP traces endpoint (``.../v1/traces``, the ``otel`` extra); the spans sent."""
    from tokprof.export.otlp import send_spans as send

    return send(report.calls, endpoint)


def probe(
    log: PathLike | Trace,
    question: str,
    expect: str,
    endpoint: str,
    policies: Sequence[str] | None = None,
    model: str | Model | None = None,
    *,
    trials: int = 1,
    endpoint_model: str | None = None,
    api_key: str | None = None,
    temperature: float = 0.0,
    timeout: float = 60.0,
    retries: int = 2,
    max_requests: int = 50,
    dry_run: bool = False,
    announce: Callable[[int, int], None] | None = None,
    input_format: str | None = None,
    tools: ToolsArg = None,
    system: PathLike | None = None,
    chat_template: PathLike | None = None,
    window: int | None = None,
) -> "ProbeReport":
    """Ask a chat model the user runs (an OpenAI-compatible ``endpoint``) ``question`` after each
    policy's final prompt, and after the fact alone (the control), ``trials`` times each, scoring each
    answer against ``expect``: hit, confident wrong answer (a value of the same shape), miss, or error.
    ``announce(requests, prompt_tokens)`` is called before anything is sent; more than
    ``max_requests`` requests is an error before sending; ``dry_run`` builds and counts the requests
    and sends nothing. ``model`` is the model that counts the prompts; ``endpoint_model`` the model
    name sent to the endpoint."""
    from tokprof.analyses.probe import CONTROL, NO_CONTROL, ProbeReport, requests, run
    from tokprof.base.chat_client import ChatClient
    from tokprof.transforms.policies import DEFAULT_POLICIES, parse_policies

    for name, value in (("question", question), ("expect", expect), ("endpoint", endpoint)):
        if not isinstance(value, str) or not value.strip():
            raise TokprofError(f"{name}: expected a text, found {value!r}")
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise TokprofError(f"trials: expected a positive number, found {trials!r}")
    if expect.startswith("re:"):
        raise TokprofError("expect: the value a right answer holds, as text (a pattern cannot be scored)")
    if isinstance(policies, str):
        policies = [policies]
    parsed = parse_policies(list(DEFAULT_POLICIES if policies is None else policies))
    trace = log if isinstance(log, Trace) else read_log(log, input_format=input_format, tools=tools, system=system)
    chat = _model_for(trace, model, chat_template)
    from tokprof.transforms import fit

    trace = fit(trace, chat)
    batch = requests(trace, chat, parsed, question, expect, window or _window_of(trace, chat))
    count = len(batch) * trials
    if count > max_requests:
        raise TokprofError(
            f"{count} requests ({len(batch)} prompts x {trials} trials) is more than the budget of "
            f"{max_requests}: raise it with --max-requests, or ask for fewer policies or trials"
        )
    if announce is not None:
        announce(count, sum(r.prompt_tokens for r in batch) * trials)
    client = ChatClient(endpoint, endpoint_model, api_key, temperature, timeout, retries)
    report = ProbeReport(question, expect, endpoint, endpoint_model, trials, dry_run=dry_run)
    if not batch or batch[0].policy != CONTROL:
        report.notes.append(NO_CONTROL)
    return run(report, batch, lambda request: client.complete(request.messages, request.tools))
