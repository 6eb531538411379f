"""The command line: a thin typer client of the jobs in :mod:`tokprof.runs`.

Each command parses its flags into one :class:`tokprof.Options`, calls its job, renders the result
with ``render_report`` and writes the outputs (``tests/test_cmdline.py`` pins each command to its call). Errors in the user's input are one line on standard error and exit code 2, never a
traceback; the pipeline is imported only when a command runs, so that ``--help`` is fast.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Iterable, Optional

import typer

from tokprof.version import __version__
from tokprof.frontends.cli_startup import command_named, fast_coercion, light_rich_help
from tokprof.frontends.cli_common import (
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USAGE,
    ChatTemplate,
    ModelName,
    RenderOptions,
    formats_for,
    one_line,
    esc as _esc,
    format_option as _format_option,
    render_options as _options,
    write_outputs as _write,
    protected_paths as _protected,
    render as _render,
)
from tokprof.base.errors import TokprofError

if TYPE_CHECKING:
    from tokprof.profiling import Profile
    from tokprof.runs.options import Options

#: Usage errors of the click that typer runs on (typer vendors it in recent releases).
_CLICK_ERRORS: tuple[type[Exception], ...] = tuple(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException" and issubclass(c, Exception)
)


def _input_formats() -> tuple[str, ...]:
    from tokprof.names import log_formats

    return log_formats()


LOG_HELP = (
    "An agent log: OpenAI Chat Completions (a transcript, request records or captured request/response pairs), "
    "Anthropic Messages captures (claude-trace, proxy logs), OpenAI Responses API captures, an Inspect AI log "
    "(.json or .eval), a Claude Code transcript, Claude Code stream-json output (claude -p) or a Codex CLI rollout "
    "(the format is detected; see --input-format); or a saved profile (tokprof profile LOG -f json -o run.json), "
    "shown again without profiling again."
)
PROGRESS_HELP = "Never show a progress bar (it shows on standard error, only when that is a terminal)."
OUTPUT_HELP = "Write to FILE instead of standard output (atomically: on an error no file is left)."
CALLS_HELP = (
    "How many per-call rows the table shows: a number (the first and last calls, half each) or 'all'. "
    "Default: all up to 40 calls, else 20."
)


def _check_input_format(value: Optional[str]) -> Optional[str]:
    if value is None:
        return None
    formats = _input_formats()
    if value not in formats:
        from tokprof.base.text import did_you_mean

        raise typer.BadParameter(f"{value!r} is not one of {', '.join(formats)}{did_you_mean(value, formats)}")
    return value


InputFormat = Annotated[
    Optional[str],
    typer.Option(
        "--input-format",
        "-i",
        metavar="NAME",
        callback=_check_input_format,
        help="The log's format, instead of detecting it: openai-chat, anthropic, openai-responses, inspect, "
        "claude-code, claude-stream-json, codex, gemini-cli, qwen-code, pi.",
    ),
]
ToolsFile = Annotated[
    Optional[str],
    typer.Option(
        "--tools",
        metavar="FILE",
        help="The tool definitions, for a log that does not record them (Claude Code, Codex): a JSON list "
        "(OpenAI, Anthropic or MCP tools/list).",
    ),
]
SystemFile = Annotated[
    Optional[str],
    typer.Option(
        "--system", metavar="FILE", help="The system prompt, for a log that does not record it (Claude Code)."
    ),
]
Output = Annotated[Optional[str], typer.Option("--output", "-o", metavar="FILE", help=OUTPUT_HELP)]
NoProgress = Annotated[bool, typer.Option("--no-progress", help=PROGRESS_HELP)]
Agent = Annotated[
    Optional[str],
    typer.Option(
        "--agent",
        metavar="NAME",
        help="List only this agent's sessions (claude-code, codex, gemini-cli, qwen-code, pi, ...).",
    ),
]
Window = Annotated[
    Optional[int],
    typer.Option("--window", metavar="N", help="The HTML report's context window in tokens (default: the model's)."),
]
PRICE_HELP = (
    "Rates in US dollars per million tokens, for a self-hosted or private model (or to price one otherwise than "
    "genai-prices does): [MODEL=]INPUT/OUTPUT[/CACHE_READ[/CACHE_WRITE[/CACHE_WRITE_1H]]], e.g. 0.2/0.6 for every "
    "model of the log or my-model=0.2/0.6/0.02; repeat for several models. A cache rate left out is the input rate. "
    "Also [tool.tokprof.prices] in the configuration."
)
Price = Annotated[Optional[list[str]], typer.Option("--price", metavar="RATES", help=_esc(PRICE_HELP))]
FillLines = Annotated[
    str,
    typer.Option(
        "--fill-lines",
        metavar="P,Q",
        help="The HTML report's context-window fill lines, in percent (a common compaction trigger and warning).",
    ),
]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"tokprof {__version__}")
        raise typer.Exit(EXIT_OK)


app = typer.Typer(
    name="tokprof",
    help="Where do my prompt tokens go? Re-render every model call of an agent log with the model's own chat "
    "template and tokenizer, and attribute each token to system, tool definitions, tool results or "
    "conversation.",
    epilog="Run 'tokprof COMMAND --help' for a command's options and examples.",
    no_args_is_help=True,
    suggest_commands=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option("--version", "-V", callback=_version, is_eager=True, help="Print tokprof's version and exit."),
    ] = False,
) -> None:
    """Where do my prompt tokens go?"""


def _no_type_for_flags() -> None:
    """typer 0.29 prints ``<bool>`` in the help's type column after flags, which take no value: the
    column is left empty for them (options with a value keep their metavar)."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich

    def display_type_rich(self, ctx):
        return None if self.is_flag and self.metavar is None else shown(self, ctx)

    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_no_type_for_flags()
fast_coercion()


# -- helpers ----------------------------------------------------------------------------------
#: Without --calls, a table shows every call of a log of up to this many, and this many rows otherwise.
AUTO_CALLS = (40, 20)


def _calls(value: Optional[str], calls: int) -> Optional[int]:
    """The rows --calls asks for, for a profile of ``calls`` calls (None: every call)."""
    if value is None:
        return None if calls <= AUTO_CALLS[0] else AUTO_CALLS[1]
    if value == "all":
        return None
    if value.isdigit() and int(value) > 0:
        return int(value)
    raise TokprofError(f"--calls: expected a number of rows or 'all', found {value!r}")


def _not_standard_input(path: Optional[str]) -> None:
    if path == "-":
        raise TokprofError("-: reading a log from standard input is not supported: save it to a file and give its path")


def _saved_profile(path: str) -> Optional["Profile"]:
    """The saved profile at ``path``, or None when the file is not one (a log)."""
    from tokprof.runs.profile import saved_profile

    return saved_profile(path)


def _only_for_logs(path: str, **given: object) -> None:
    """Options that read a log mean nothing for a saved profile: say so rather than ignore them."""
    named = [name for name, value in given.items() if value]
    if named:
        flags = ", ".join("--" + name.replace("_", "-") for name in named)
        verb = "applies" if len(named) == 1 else "apply"
        raise TokprofError(
            f"{path}: a saved profile is shown as it was made; {flags} {verb} to logs (profile the log again)"
        )


def _user_prices(price: Optional[list[str]], settings=None) -> dict:
    """The user's rates by model name: the configuration's ``prices``, then ``--price`` over them."""
    from tokprof.runs.check import load_config
    from tokprof.runs.profile import configured_prices

    return configured_prices(settings if settings is not None else load_config(), price or ())


def _run_options(
    model: Optional[str] = None,
    input_format: Optional[str] = None,
    tools: Optional[str] = None,
    system: Optional[str] = None,
    chat_template: Optional[str] = None,
    no_progress: bool = True,
) -> "Options":
    """The one :class:`Options` a command runs with, from the flags that read, count and show a log
    (the prices are added where the command prices)."""
    from tokprof.runs.options import Options

    return Options(
        model=model,
        input_format=input_format,
        tools=tools,
        system=Path(system) if system else None,
        chat_template=chat_template,
        progress=not no_progress,
    )


def _profile_of(log: str, run: "Options", price: Optional[list[str]] = None, settings=None) -> "Profile":
    """The profile of a log with the command's options (and ``price`` and the configuration's prices
    as the user's rates, what to change too), or a saved profile as it is."""
    from tokprof.runs.profile import profile

    _not_standard_input(log)
    saved = _saved_profile(log)
    if saved is not None:
        _only_for_logs(log, **_log_options(run), price=price)
        return saved
    return profile(log, replace(run, prices=_user_prices(price, settings), advice=True))


def _paths(run: "Options") -> tuple[Optional[str], ...]:
    """The files ``run`` reads (tools, system prompt, chat template), which no output may replace."""
    return tuple(
        os.fspath(p) if isinstance(p, (str, os.PathLike)) else None for p in (run.tools, run.system, run.chat_template)
    )


def _log_options(run: "Options") -> dict[str, object]:
    """The options that read a log, by flag name (what a saved profile refuses)."""
    names = ("model", "input_format", "tools", "system", "chat_template")
    return {name: getattr(run, name) for name in names}


# -- commands ---------------------------------------------------------------------------------
PROFILE_EXAMPLES = _esc(
    "Examples:\n\n"
    "  tokprof profile samples/incident_session.json\n\n"
    "  tokprof profile session.jsonl --model qwen3 -f json -o run.json\n\n"
    "  tokprof profile run.json --calls all      # a saved profile, every call\n\n"
    "  tokprof profile ~/.claude/projects/-home-me-app/ --session 3f2a"
)


@app.command(epilog=PROFILE_EXAMPLES)
def profile(
    log: Annotated[
        Optional[str],
        typer.Argument(
            metavar="LOG",
            help=_esc(
                LOG_HELP + " Or a directory of Claude Code or "
                "Codex sessions: a row per session (of tokprof "
                "record's recordings: the newest). None: the "
                "sessions of every agent on this machine, as "
                "'tokprof sessions' lists them."
            ),
        ),
    ] = None,
    input_format: InputFormat = None,
    tools: ToolsFile = None,
    system: SystemFile = None,
    session: Annotated[
        Optional[str],
        typer.Option(
            "--session",
            metavar="ID",
            help="With a directory: profile the one session whose id or file name is or contains ID. "
            "Without LOG: the session numbered ID in the last 'tokprof sessions' listing, or whose id starts with ID.",
        ),
    ] = None,
    model: ModelName = None,
    chat_template: ChatTemplate = None,
    fmt: Annotated[str, _format_option("profile", extra=("parquet",))] = "table",
    output: Output = None,
    calls: Annotated[Optional[str], typer.Option("--calls", metavar="N|all", help=CALLS_HELP)] = None,
    html: Annotated[
        Optional[str], typer.Option("--html", metavar="FILE", help="Also write the HTML report to FILE.")
    ] = None,
    window: Window = None,
    fill_lines: FillLines = "70,80",
    price: Price = None,
    config: Annotated[
        Optional[str],
        typer.Option(
            "--config",
            metavar="FILE",
            help="The configuration whose prices apply (default: found from the working directory).",
        ),
    ] = None,
    no_progress: NoProgress = False,
    jobs: Annotated[
        Optional[int],
        typer.Option(
            "--jobs",
            "-j",
            metavar="N",
            min=1,
            help="With a directory: profile its sessions in N processes (default: one per core).",
        ),
    ] = None,
    agent: Agent = None,
    latest: Annotated[
        bool, typer.Option("--latest", help="Profile the newest session on this machine (of --agent's, if given).")
    ] = False,
    by: Annotated[
        Optional[list[str]],
        typer.Option(
            "--by",
            metavar="DIM[,DIM]",
            help="With a directory: roll the calls up by project, branch, model, agent, "
            "day, week, month or user (repeat for several rollups; join with commas to group by several at once).",
        ),
    ] = None,
    since: Annotated[
        Optional[str],
        typer.Option(
            "--since",
            metavar="WHEN",
            help="With a directory: only calls made at or after WHEN (ISO date or time, UTC).",
        ),
    ] = None,
    until: Annotated[
        Optional[str],
        typer.Option(
            "--until", metavar="WHEN", help="With a directory: only calls made before WHEN (an ISO date: to its end)."
        ),
    ] = None,
    machine: Annotated[
        Optional[str],
        typer.Option(
            "--machine", metavar="NAME", help="With a directory: the machine the logs come from, on every call's row."
        ),
    ] = None,
    user: Annotated[
        Optional[str],
        typer.Option(
            "--user", metavar="NAME", help="With a directory: the person the logs are of, on every call's row."
        ),
    ] = None,
    with_text: Annotated[
        bool,
        typer.Option(
            "--with-text", help="With -f parquet or csv into a folder: the calls table carries prompts and responses."
        ),
    ] = False,
    incremental: Annotated[
        bool,
        typer.Option(
            "--incremental",
            help="With -f parquet or csv into a folder: remember each input in a state file there "
            "and profile only files that are new or changed (the output is a full run's).",
        ),
    ] = False,
) -> int:
    """Four buckets per call, and the billed input over the run.

    Every call's prompt split into system, tool definitions, tool results and conversation, the billed
    input over the run, and the tool catalogue's cost.
    """
    from tokprof.runs.check import load_config
    from tokprof.runs.sessions import find_session, recordings, session_in_folder

    options = _options(fmt, output, window, fill_lines)
    settings = load_config(config) if config is not None else None
    run = _run_options(model, input_format, tools, system, chat_template, no_progress)
    if log is None and (latest or session is not None):
        log, input_format = _picked(session, latest, agent, input_format)
        run = replace(run, input_format=input_format)
        session = agent = None
    elif log is None:
        return _local(agent, fmt, output, options)
    elif latest:
        raise TokprofError("--latest picks the newest session on this machine: give no LOG")
    else:
        log, input_format = _named(log, input_format)
        run = replace(run, input_format=input_format)
    if agent is not None:
        raise TokprofError("--agent picks the sessions listed when no LOG is given")
    log = session_in_folder(log) or log  # a Cline-family task folder is one session
    recorded = recordings(log)
    if recorded:  # a folder of tokprof record's recordings: one of them, profiled whole
        log = _recording(log, recorded, session)
    elif os.path.isdir(log) or (log.endswith("/") and "://" in log):  # a folder, or a URL prefix (s3://bucket/logs/)
        if session is None:
            team = _team_options(by, since, until, with_text, machine, user, incremental)
            return _sessions(log, fmt, output, options, replace(run, jobs=jobs), html, price, team, settings)
        log = find_session(log, session)
    elif session is not None:
        raise TokprofError(f"{log}: --session picks a session in a directory, and this is a file")
    if fmt == "parquet" or by or since or until or machine or user or with_text or incremental:
        raise TokprofError(
            f"{log}: -f parquet, --by, --since, --until, --machine, --user, --with-text and --incremental are for "
            "a directory of sessions"
        )
    result = _profile_of(log, run, price, settings)
    options = replace(options, calls=_calls(calls, len(result.calls)))
    outputs: "list[tuple[Optional[str], str | Iterable[str]]]" = [(output, _profile_text(result, fmt, options, output))]
    _write([*outputs, *_html_output(html, result, options)], (log, tools, system, chat_template))
    return EXIT_OK


def _picked(
    session: Optional[str], latest: bool, agent: Optional[str], input_format: Optional[str]
) -> tuple[str, Optional[str]]:
    """The file and format of the session ``--session`` (a row number, an id's start) or ``--latest`` picks."""
    from tokprof.frontends.picks import Picked, latest as newest, machine_sessions, pick

    if latest and session is not None:
        raise TokprofError("--latest and --session each pick a session: give one")
    found: "Picked | None" = newest(machine_sessions(agent)) if latest else None
    if found is None:
        found = pick(session or "", lambda: machine_sessions(agent))
        if found is None:
            raise TokprofError(f"--session {session}: no session of the last tokprof sessions listing has this id")
    return found.path, input_format or found.format


def _named(log: str, input_format: Optional[str]) -> tuple[str, Optional[str]]:
    """LOG as given, or the session it names when it is no file: a row number of the last listing
    (``tokprof profile 4``) or the start of a session id."""
    from tokprof.frontends.picks import looks_like_pick, machine_sessions, pick

    if not looks_like_pick(log):
        return log, input_format
    found = pick(log, machine_sessions)
    if found is None:
        return log, input_format  # no session by that name: read as a file (and says it is none)
    return found.path, input_format or found.format


def _recording(directory: str, recorded: list[str], wanted: Optional[str]) -> str:
    """The recording a folder of recordings profiles: the one ``--session`` names, else the newest."""
    from tokprof.base.text import visible

    names = [os.path.basename(path) for path in recorded]
    if wanted is not None:
        matches = [path for path, name in zip(recorded, names) if wanted in name]
        if len(matches) != 1:
            listed = ", ".join(visible(n) for n in names[-5:]) + (
                f" and {len(names) - 5} more" if len(names) > 5 else ""
            )
            raise TokprofError(
                f"{directory}: --session {wanted}: {len(matches) or 'no'} recordings match (the folder has {listed})"
            )
        return matches[0]
    if len(recorded) > 1:
        print(
            f"tokprof: {visible(directory)}: {len(recorded)} recordings; the newest, {visible(names[-1])} "
            "(--session NAME for another)",
            file=sys.stderr,
        )
    return recorded[-1]


def _local(
    agent: Optional[str],
    fmt: str,
    output: Optional[str],
    options,
    by: Optional[list[str]] = None,
    since: Optional[str] = None,
    until: Optional[str] = None,
    tz: Optional[str] = None,
) -> int:
    from tokprof.runs.sessions import session_periods

    kind = "periods" if by else "local"
    if fmt not in formats_for(kind):
        what = "spend by period" if by else "list of sessions"
        raise TokprofError(f"the {what} is one of {', '.join(formats_for(kind))}, not {fmt}")
    from tokprof.frontends.picks import machine_sessions

    sessions = machine_sessions(agent)  # a file that did not change since the last listing is not read
    if by or since or until:
        result = session_periods(sessions, by or [], tz=tz, since=since, until=until)
        if not by:  # a time range alone: the sessions with a call in it
            sessions = [row for row in sessions if any(_within(c.time, result) for c in row.spends)]
    if by:
        _write([(output, _render(result, fmt, options))], tuple(row.path for row in sessions))
        return EXIT_OK
    _write([(output, _render(sessions, fmt, options))], tuple(row.path for row in sessions))  # -o never replaces one
    from tokprof.frontends.picks import save_listing

    save_listing(sessions)  # its row numbers pick a session: tokprof profile 4
    return EXIT_OK


def _within(when, span) -> bool:
    return when is not None and (span.since is None or when >= span.since) and (span.until is None or when < span.until)


SESSIONS_EXAMPLES = _esc(
    "Examples:\n\n  tokprof sessions\n\n  tokprof sessions --agent gemini-cli -f json\n\n"
    "  tokprof sessions --by day --since 7d\n\n  tokprof sessions --by month --by project --tz Europe/Paris"
)


@app.command(epilog=SESSIONS_EXAMPLES)
def sessions(
    agent: Agent = None,
    fmt: Annotated[str, _format_option("local")] = "table",
    output: Output = None,
    by: Annotated[
        Optional[list[str]],
        typer.Option(
            "--by",
            metavar="DIM",
            help="Add the sessions up by day, week, month, project, agent or model: a row each, and the "
            "total (repeat, or join with commas, to group by several at once: --by day --by project).",
        ),
    ] = None,
    since: Annotated[
        Optional[str],
        typer.Option(
            "--since",
            metavar="WHEN",
            help="Only calls made at or after WHEN: a date (2026-11-30), a date and time, today, yesterday, "
            "or a span back from now (12h, 7d, 2w, 3m).",
        ),
    ] = None,
    until: Annotated[
        Optional[str],
        typer.Option("--until", metavar="WHEN", help="Only calls made before WHEN (a date: to its end)."),
    ] = None,
    tz: Annotated[
        Optional[str],
        typer.Option(
            "--tz",
            metavar="ZONE",
            help="The time zone of days, weeks, months and dates (an IANA name such as Europe/Paris, or UTC; "
            "default: the machine's).",
        ),
    ] = None,
) -> int:
    """The sessions of every supported agent on this machine, newest first; or their spend by period.

    Claude Code (~/.claude/projects, or $CLAUDE_CONFIG_DIR/projects), Codex (~/.codex/sessions, or
    $CODEX_HOME/sessions), Gemini CLI (~/.gemini/tmp/*/chats, or under $GEMINI_CLI_HOME), Qwen Code
    (~/.qwen/projects/*/chats, or $QWEN_RUNTIME_DIR/projects) and pi (~/.pi/agent/sessions, or
    $PI_CODING_AGENT_DIR/sessions): each with its agent, project, start time, calls and reported cost.
    Each row's number picks it: tokprof profile 4. With --by: a row per day, week, month, project,
    agent or model: billed input by kind, output, cost, cache hit rate, what cache misses cost.
    """
    return _local(agent, fmt, output, _options(fmt, output), by, since, until, tz)


def _sessions(directory, fmt, output, options, run: "Options", html, price=None, team=None, settings=None) -> int:
    """A directory's report (``run``: the command's options, its ``jobs`` too), or its tables in a folder."""

    from tokprof.render.tables import TeamOptions
    from tokprof.runs.reports import incremental_state, report_tables
    from tokprof.runs.sessions import profile_directory

    team, machine, user, incremental = team or (TeamOptions(), None, None, False)
    if html:
        raise TokprofError(f"{directory}: --html needs one session: add --session ID")
    if fmt not in formats_for("sessions") + ["parquet"]:
        raise TokprofError(
            f"{directory}: a directory's report is one of {', '.join(formats_for('sessions'))} or "
            f"parquet, not {fmt}: add --session ID for one session's {fmt}"
        )
    folder = fmt == "parquet" or (
        fmt == "csv" and output is not None and (output.endswith("/") or os.path.isdir(output))
    )
    if fmt == "parquet" and not output:
        raise TokprofError(
            f"{directory}: -f parquet writes calls.parquet and sessions.parquet: give the folder with -o"
        )
    if folder and os.path.exists(output) and not os.path.isdir(output):
        raise TokprofError(f"{output}: not a folder (the tables are written into a folder)")
    if incremental and "://" in directory:
        raise TokprofError(f"{directory}: --incremental takes a local folder")
    if incremental and not folder:
        raise TokprofError(
            f"{directory}: --incremental keeps its state beside the tables: give -f parquet (or csv) and -o FOLDER/"
        )
    state = incremental_state(output) if incremental else None
    records = folder or bool(team.by) or team.filtered
    prices = _user_prices(price, settings)
    run = replace(
        run, prices=prices, records=records, with_text=team.with_text, machine=machine, user=user, state=state
    )
    report = profile_directory(directory, run)
    inputs = (directory, *_paths(run))
    if folder:
        files = report_tables(report, fmt, output, team=team, state=state)
        _write_bytes(files, inputs)
        return EXIT_OK
    _write([(output, _render(report, fmt, options, team))], inputs)
    return EXIT_OK


def _team_options(by, since, until, with_text, machine, user, incremental=False):
    from tokprof.render.tables import TeamOptions

    team = TeamOptions.parse(by or [], since, until, with_text)
    return team, machine, user, incremental


def _write_bytes(outputs: list[tuple[str, bytes]], inputs: tuple[Optional[str], ...] = ()) -> None:
    """Write binary files, all of them or none, refusing any that would replace an input (:func:`_write`)."""
    from tokprof.base.outputs import write_files

    write_files(outputs, _protected(inputs))


@app.command(
    epilog=_esc(
        "Examples:\n\n  tokprof report samples/incident_session.json -o report.html\n\n"
        "  tokprof report run.json -o report.html     # from a saved profile\n\n"
        "  tokprof report ~/.claude/projects/-home-me-app/ -o site/   # a dashboard over many sessions"
    )
)
def report(
    log: Annotated[
        Optional[str],
        typer.Argument(
            metavar="LOG",
            help=_esc(LOG_HELP + " Or a directory of sessions: a dashboard, written into the folder -o names."),
        ),
    ] = None,
    output: Annotated[
        str, typer.Option("--output", "-o", metavar="FILE", help="The HTML file to write (a folder: a dashboard).")
    ] = "",
    every: Annotated[
        bool, typer.Option("--all", help="A dashboard of every session on this machine (of --agent's, if given).")
    ] = False,
    agent: Agent = None,
    input_format: InputFormat = None,
    tools: ToolsFile = None,
    system: SystemFile = None,
    model: ModelName = None,
    chat_template: ChatTemplate = None,
    window: Window = None,
    fill_lines: FillLines = "70,80",
    price: Price = None,
    no_progress: NoProgress = False,
) -> int:
    """Write a self-contained HTML report (plotly, opens offline).

    The summary, the four buckets per call with the billed input, the tool catalogue, the
    context-window fill and, with reported usage, computed versus reported.
    """
    if not output:
        raise TokprofError("--output: expected a file name, found ''")
    if every or (log is not None and os.path.isdir(log)):
        return _site(log if not every else None, output, model, agent, price, window, no_progress)
    if log is None:
        raise TokprofError("report: give a LOG, a directory of sessions, or --all")
    if agent is not None:
        raise TokprofError("--agent picks the sessions of --all")
    options = _options("html", output, window, fill_lines)
    result = _profile_of(log, _run_options(model, input_format, tools, system, chat_template, no_progress), price)
    _write([(output, _render(result, "html", options))], (log, tools, system, chat_template))
    print(f"tokprof: wrote {output}", file=sys.stderr)
    return EXIT_OK


def _site(
    directory: Optional[str],
    output: str,
    model: Optional[str],
    agent: Optional[str],
    price: Optional[list[str]],
    window: Optional[int],
    no_progress: bool,
) -> int:
    """``tokprof report DIR -o site/`` (or ``--all``): the dashboard's pages, each written as it is made."""
    from tokprof.runs.options import Options
    from tokprof.runs.site import report_site
    from tokprof.base.outputs import write_files

    if os.path.exists(output) and not os.path.isdir(output):
        raise TokprofError(f"{output}: not a folder (a dashboard is a folder of pages)")
    protected = _protected((directory,))

    def write(name: str, html: str) -> None:
        write_files([(os.path.join(output, name), html.encode("utf-8"))], protected)

    run = Options(model=model, prices=_user_prices(price), progress=not no_progress)
    count = report_site(directory, write, run, agent=agent, window=window)
    print(f"tokprof: wrote {os.path.join(output, 'index.html')} and {count} session page(s)", file=sys.stderr)
    return EXIT_OK


def _policy_help() -> str:
    from tokprof.names import policy_names

    return (
        f"A context policy to replay the log under, repeatable: {', '.join(policy_names())}. Default: "
        f"whatif in [tool.tokprof] or tokprof.toml, else {', '.join(policy_names(default=True))}. full is "
        "always shown first."
    )


WHATIF_EXAMPLES = _esc(
    "Examples:\n\n"
    "  tokprof whatif samples/incident_session.json\n\n"
    "  tokprof whatif session.jsonl -p cap:2000 -p elide:1 -p compact:70 -f json -o whatif.json\n\n"
    "  tokprof whatif samples/incident_session.json --html report.html"
)


@app.command(epilog=WHATIF_EXAMPLES)
def whatif(
    log: Annotated[str, typer.Argument(metavar="LOG", help=_esc(LOG_HELP.split("; or a saved profile")[0] + "."))],
    policy: Annotated[
        Optional[list[str]], typer.Option("--policy", "-p", metavar="P", help=_esc(_policy_help()))
    ] = None,
    input_format: InputFormat = None,
    tools: ToolsFile = None,
    system: SystemFile = None,
    model: ModelName = None,
    chat_template: ChatTemplate = None,
    window: Annotated[
        Optional[int],
        typer.Option(
            "--window",
            metavar="N",
            help="The context window in tokens (default: the model's): compact measures against it, and the calls "
            "over it are counted.",
        ),
    ] = None,
    config: Annotated[
        Optional[str],
        typer.Option(
            "--config",
            metavar="FILE",
            help="The configuration whose whatif policies apply without --policy (default: found from the working "
            "directory).",
        ),
    ] = None,
    price: Price = None,
    fmt: Annotated[str, _format_option("whatif")] = "table",
    output: Output = None,
    html: Annotated[
        Optional[str],
        typer.Option(
            "--html", metavar="FILE", help="Also write the HTML report of the log, with the what-if charts, to FILE."
        ),
    ] = None,
    no_progress: NoProgress = False,
    fact: Annotated[
        Optional[list[str]],
        typer.Option(
            "--fact",
            metavar="TEXT",
            help="A fact the conversation must not forget, repeatable: each policy says whether its prompts still "
            "carry it (verbatim; re:PATTERN for a regular expression).",
        ),
    ] = None,
    facts_file: Annotated[
        Optional[str],
        typer.Option("--facts", metavar="FILE", help="Facts to look for, one per line (# starts a comment)."),
    ] = None,
    suggest_facts: Annotated[
        bool,
        typer.Option(
            "--suggest-facts",
            help="List candidate facts from the user's own messages (standing instructions, "
            "identifiers stated once), and replay nothing.",
        ),
    ] = False,
    cost_parts: Annotated[
        bool,
        typer.Option(
            "--cost-parts",
            help="Also show each policy's cost in parts: uncached input, cache writes, cache reads, "
            "output (the JSON always has them).",
        ),
    ] = False,
) -> int:
    """Replay a log under context policies: what each would have billed, exactly, and what it forgets.

    Every call keeps its own new messages; a policy decides what of the earlier history each prompt
    carries. Per policy: billed input, its saving against full, the largest prompt, the calls over the
    context window, the billed input per bucket, and the prompt tokens a prefix cache could reuse.
    """
    from tokprof.runs.check import load_config
    from tokprof.runs.sessions import session_in_folder
    from tokprof.runs.whatif import whatif

    _not_standard_input(log)
    if window is not None and window <= 0:
        raise TokprofError(f"--window: expected a positive number of tokens, found {window}")
    log = session_in_folder(log) or log  # a Cline-family task folder is one session
    if os.path.isdir(log):
        raise TokprofError(f"{log}: whatif replays one log: give a session file (tokprof profile DIR lists them)")
    if _is_saved_profile(log):
        raise TokprofError(f"{log}: a saved profile has no messages to replay: give the log it was made from")
    if suggest_facts:
        return _suggested_facts(log, input_format, fmt, output)
    policies = list(policy) if policy else None
    settings = load_config(config)
    if policies is None:
        policies = list(settings.whatif) if settings.whatif else None
    options = dataclasses.replace(_options(fmt, output), cost_parts=cost_parts)
    run = replace(
        _run_options(model, input_format, tools, system, chat_template, no_progress),
        prices=_user_prices(price, settings),
    )
    result = whatif(log, policies, run, window=window, facts=list(fact or []), facts_file=facts_file)
    outputs = [(output, _render(result, fmt, options))]
    _write(outputs + _html_output(html, result, options), (log, tools, system, chat_template, facts_file))
    return EXIT_OK


def _suggested_facts(log: str, input_format: Optional[str], fmt: str, output: Optional[str]) -> int:
    """--suggest-facts: candidates, labelled as suggestions (JSON: a list of strings)."""
    import json

    from tokprof.runs.whatif import suggest_facts
    from tokprof.base.text import visible

    found = suggest_facts(log, _run_options(input_format=input_format))
    if fmt == "json":
        text = json.dumps({"suggested_facts": found}, indent=2, ensure_ascii=False) + "\n"
    else:
        lines = ["suggested facts, from the user's own messages (suggestions: pass the ones that matter with --fact):"]
        lines += [f"  {visible(item)}" for item in found] or ["  (none found)"]
        text = "\n".join(lines) + "\n"
    _write([(output, text)], (log,))
    return EXIT_OK


def _html_output(html: Optional[str], result: object, options: RenderOptions) -> list[tuple[Optional[str], str]]:
    """The --html output, when asked for."""
    if html is None:
        return []
    if not html:
        raise TokprofError("--html: expected a file name, found ''")
    return [(html, _render(result, "html", options))]


def _profile_text(result: "Profile", fmt: str, options: RenderOptions, output: Optional[str]) -> "str | Iterable[str]":
    """A profile in a format; its JSON to a file in pieces, written as they are made (a large log's
    rows are never all held as dicts and text at once)."""
    if fmt == "json" and output is not None:
        return result.json_chunks()
    return _render(result, fmt, options)


def _is_saved_profile(path: str) -> bool:
    from tokprof.profiling import Profile

    return Profile.sniff(path)


def _log_or_tools(command: str, log: Optional[str], tools_file: Optional[str], system: Optional[str]) -> None:
    """``tools`` and ``check`` take a log (with --tools and --system supplying what it does not record),
    or a tools file with an optional system prompt."""
    if log is None and tools_file is None:
        raise TokprofError(f"{command}: give a LOG or --tools FILE")
    if log is None and system and not tools_file:
        raise TokprofError(f"{command}: --system goes with --tools or a LOG")


TOOLS_FILE_HELP = (
    "A JSON list of tool definitions (OpenAI, Anthropic or MCP tools/list): without a LOG, price it alone (static "
    "mode); with a LOG that does not record its tools (Claude Code, Codex), supply them."
)


@app.command(
    epilog=_esc(
        "Examples:\n\n  tokprof tools samples/incident_session.json\n\n"
        "  tokprof tools --tools samples/tools_anthropic.json --system samples/system_prompt.txt"
    )
)
def tools(
    log: Annotated[Optional[str], typer.Argument(metavar="LOG", help=_esc(LOG_HELP))] = None,
    tools_file: Annotated[Optional[str], typer.Option("--tools", metavar="FILE", help=_esc(TOOLS_FILE_HELP))] = None,
    system: Annotated[
        Optional[str],
        typer.Option(
            "--system",
            metavar="FILE",
            help="A system prompt: to render static tools with, or for a LOG that does not record it.",
        ),
    ] = None,
    input_format: InputFormat = None,
    model: ModelName = None,
    chat_template: ChatTemplate = None,
    fmt: Annotated[str, _format_option("tools")] = "table",
    output: Output = None,
    price: Price = None,
    no_progress: NoProgress = False,
) -> int:
    """What each tool definition costs per request, and what unused tools wasted.

    The catalogue's cost per request, the scaffolding a template adds for tools, each tool's marginal
    cost, and, from a log, how often each tool was carried and called.
    """
    from tokprof.analyses.tools import ToolsReport
    from tokprof.runs.tools import tools_report

    _log_or_tools("tools", log, tools_file, system)
    if price and log is None:
        raise TokprofError("tools: --price prices a log's cut list; give a LOG")
    _not_standard_input(log)
    options = _options(fmt, output)
    run = _run_options(model, input_format, tools_file, system, chat_template, no_progress)
    saved = _saved_profile(log) if log is not None else None
    if saved is not None:
        _only_for_logs(log or "", **_log_options(run), price=price)
        result = ToolsReport.from_profile(saved)
    else:
        result = tools_report(log, replace(run, prices=_user_prices(price) if log is not None else None))
    _write([(output, _render(result, fmt, options))], (log, tools_file, system, chat_template))
    return EXIT_OK


CHECK_HELP = (
    "Check a log, a saved profile, or a tool catalogue against the budgets in [tool.tokprof.budgets] of "
    "pyproject.toml or in tokprof.toml (found by walking up from the working directory), and against a committed "
    "baseline.\n\n"
    "Metrics: tool_definitions, system_prompt, first_prompt, largest_prompt, billed_input, largest_tool, "
    'unused_tool_waste, cost and largest_call_cost (US dollars: "$5"), cache_hit_rate (a share; a bare value is a '
    "minimum), uncached_input, cache_miss_cost, and spend per period: cost_per_day, cost_per_project, cost_per_session "
    '(max_cost_per_day = "$20"; LOG may be a directory of sessions for these). '
    "Settings: model, chat_template, baseline (default tokprof-baseline.json next to the "
    "configuration), max_increase, [prices], and [budgets] with metric = max or {max, min, level = error|warn, "
    "max_increase}.\n\n"
    "With GITHUB_STEP_SUMMARY set the Markdown report is appended to it; with GITHUB_ACTIONS=true failures (and bad input) are "
    "also printed as annotations. Exit codes: 0 pass (warnings allowed), 1 a budget or the baseline failed, 2 bad "
    "input or configuration."
)


@app.command(
    help=_esc(CHECK_HELP),
    short_help="Fail a build when prompt or tool-catalogue tokens go over budget or regress.",
    epilog=_esc(
        "Examples:\n\n  tokprof check samples/incident_session.json --config samples/tokprof.toml\n\n"
        "  tokprof check --tools tools.json --system system.txt --update-baseline"
    ),
)
def check(
    log: Annotated[Optional[str], typer.Argument(metavar="LOG", help=_esc(LOG_HELP))] = None,
    tools_file: Annotated[
        Optional[str],
        typer.Option(
            "--tools",
            metavar="FILE",
            help="Check a tool catalogue instead of a log; with a LOG that does not record its tools, supply them.",
        ),
    ] = None,
    system: Annotated[
        Optional[str],
        typer.Option(
            "--system",
            metavar="FILE",
            help="The system prompt, with --tools or for a LOG that does not record it.",
        ),
    ] = None,
    input_format: InputFormat = None,
    model: ModelName = None,
    chat_template: ChatTemplate = None,
    config: Annotated[
        Optional[str],
        typer.Option(
            "--config", metavar="FILE", help="The configuration file (default: found from the working directory)."
        ),
    ] = None,
    baseline: Annotated[
        Optional[str],
        typer.Option(
            "--baseline",
            metavar="FILE",
            help="The baseline JSON to compare with (default: from the configuration).",
        ),
    ] = None,
    update_baseline: Annotated[
        bool, typer.Option("--update-baseline", help="Write the measured values as the new baseline.")
    ] = False,
    fmt: Annotated[str, _format_option("check")] = "table",
    output: Output = None,
    price: Price = None,
    no_progress: NoProgress = False,
) -> int:
    """Fail a build when prompt or tool-catalogue tokens go over budget or regress."""
    from tokprof.runs.check import load_config, run_check
    from tokprof.frontends import github

    _log_or_tools("check", log, tools_file, system)
    _not_standard_input(log)
    options = _options(fmt, output)
    settings = load_config(config)
    given = _run_options(model, input_format, tools_file, system, chat_template, no_progress)
    if log is not None and _is_saved_profile(log):
        _only_for_logs(log, **_log_options(given), price=price)
    given = replace(given, prices=_user_prices(price, settings))
    run = run_check(log, given, config=settings, baseline=baseline, update_baseline=update_baseline)
    outputs: list[tuple[Optional[str], str]] = []
    if update_baseline:
        assert run.baseline is not None
        outputs.append((run.baseline, run.baseline_text()))
    outputs.append((output, _render(run.result, fmt, options)))
    # the baseline is an input unless it is the output; the log, the configuration... never are outputs
    _write(
        outputs,
        (log, tools_file, system, config, chat_template, None if update_baseline else run.baseline),
        replaces=run.baseline if update_baseline else None,
    )
    # workflow commands go to standard output, unless the JSON report is there
    github.report(run.result, annotations_to=sys.stderr if fmt == "json" and output is None else sys.stdout)
    return run.result.exit_code


@app.command(
    epilog=_esc(
        "Examples:\n\n  tokprof diff main-run.jsonl branch-run.jsonl\n\n"
        "  tokprof diff run.json tokprof-baseline.json -f json     # a saved profile and its baseline"
    )
)
def diff(
    a: Annotated[str, typer.Argument(metavar="A", help="The first run: a log, a saved profile, or a baseline.")],
    b: Annotated[str, typer.Argument(metavar="B", help="The second run: a log, a saved profile, or a baseline.")],
    input_format: InputFormat = None,
    tools: ToolsFile = None,
    system: SystemFile = None,
    model: ModelName = None,
    fmt: Annotated[str, _format_option("diff")] = "table",
    output: Output = None,
    price: Price = None,
    no_progress: NoProgress = False,
) -> int:
    """Compare two runs: every figure a, b and the change, and what changed first in the prompt.

    Two logs, two saved profiles, or a profile and its check baseline: the run's figures (billed
    input, prompts, output, cost, cache hit rate, cache misses), each bucket, each tool, each
    cache-miss reason and each part of the cost. For two logs of one conversation, the first call
    whose system prompt, tools or messages differ.
    """
    from tokprof.runs.diff import diff

    for side in (a, b):
        _not_standard_input(side)
    run = replace(_run_options(model, input_format, tools, system, None, no_progress), prices=_user_prices(price))
    result = diff(a, b, run)
    _write([(output, _render(result, fmt, _options(fmt, output)))], (a, b, tools, system))
    return EXIT_OK


PROBE_EXAMPLES = _esc(
    "Examples:\n\n"
    "  tokprof probe session.jsonl --endpoint http://127.0.0.1:8080 --question 'Which shard is affected?' "
    "--expect pay-shard-7 --dry-run\n\n"
    "  tokprof probe session.jsonl --endpoint http://127.0.0.1:11434 --endpoint-model qwen2.5 -p window:20 "
    "-p user-verbatim:4 --question 'Which shard?' --expect pay-shard-7 --trials 6"
)


@app.command(epilog=PROBE_EXAMPLES)
def probe(
    log: Annotated[str, typer.Argument(metavar="LOG", help="An agent log (as tokprof whatif reads).")],
    question: Annotated[
        str, typer.Option("--question", metavar="TEXT", help="The question to ask after each policy's final prompt.")
    ],
    expect: Annotated[str, typer.Option("--expect", metavar="TEXT", help="The right answer's value (a hit holds it).")],
    endpoint: Annotated[
        str,
        typer.Option(
            "--endpoint",
            metavar="URL",
            help="An OpenAI-compatible chat endpoint you run (llama.cpp, vLLM, Ollama): nothing is sent without it.",
        ),
    ],
    policy: Annotated[
        Optional[list[str]],
        typer.Option("--policy", "-p", metavar="P", help="A policy to probe, repeatable (default: whatif's)."),
    ] = None,
    trials: Annotated[int, typer.Option("--trials", metavar="N", min=1, help="Requests per policy.")] = 1,
    endpoint_model: Annotated[
        Optional[str], typer.Option("--endpoint-model", metavar="NAME", help="The model name to send to the endpoint.")
    ] = None,
    api_key: Annotated[
        Optional[str],
        typer.Option(
            "--api-key",
            metavar="KEY",
            envvar="TOKPROF_PROBE_API_KEY",
            help="A key for a paid API (every request then costs money; a warning says so).",
        ),
    ] = None,
    temperature: Annotated[float, typer.Option("--temperature", metavar="T", help="Sampling temperature.")] = 0.0,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            metavar="S",
            help="Seconds per request, all in: its retries, and the answer however slowly it comes.",
        ),
    ] = 60.0,
    max_requests: Annotated[
        int, typer.Option("--max-requests", metavar="N", min=1, help="Refuse to send more requests than this.")
    ] = 50,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count and show what would be sent; send nothing.")
    ] = False,
    model: ModelName = None,
    input_format: InputFormat = None,
    fmt: Annotated[str, _format_option("probe")] = "table",
    output: Output = None,
) -> int:
    """Ask a local model a question after each policy's final prompt: does it still know?

    Per policy, and for the fact alone (the control): hits, confident wrong answers (a value of the
    expected shape that is not it), misses, with each probe's prompt tokens. Temperature 0 unless
    --temperature; retries with back-off; the number of requests and tokens is said before sending.
    """
    from tokprof.runs.whatif import probe
    from tokprof.base.chat_client import is_loopback

    _not_standard_input(log)
    if not 0 < timeout < float("inf"):  # NaN too
        raise TokprofError("--timeout: give a positive number of seconds")
    if api_key and not is_loopback(endpoint):
        print("tokprof: warning: a paid API: every probe request costs money", file=sys.stderr)

    def announce(requests: int, tokens: int) -> None:
        verb = "would send" if dry_run else "sending"
        print(
            f"tokprof: {verb} {requests} request{'s' if requests != 1 else ''} (about {tokens:,} prompt tokens) "
            f"to {visible(endpoint)}",
            file=sys.stderr,
        )

    from tokprof.base.text import visible

    result = probe(
        log,
        question,
        expect,
        endpoint,
        policy or None,
        _run_options(model, input_format),
        trials=trials,
        endpoint_model=endpoint_model,
        api_key=api_key,
        temperature=temperature,
        timeout=timeout,
        max_requests=max_requests,
        dry_run=dry_run,
        announce=announce,
    )
    _write([(output, _render(result, fmt, _options(fmt, output)))], (log,))
    return EXIT_OK


SERVE_HELP = (
    "Count prompts over a local HTTP endpoint, for harnesses in any language: POST /v1/count (a Chat Completions "
    "body: buckets, total, context window, fill, thresholds crossed), POST /v1/messages/count_tokens (an Anthropic "
    "Messages body, answered as Anthropic's endpoint answers, plus the buckets), GET /v1/models, GET /health. A "
    "request that extends an earlier one of the same conversation reuses its work. Listens on the loopback interface; "
    "another address needs a token, which every request then carries as a bearer token. Needs the serve extra: "
    "pip install 'tokprof[serve]'. See docs/serve.md."
)


@app.command(
    epilog=_esc(
        "Examples:\n\n  tokprof export ~/.claude/projects/ --endpoint http://127.0.0.1:4318/v1/traces\n\n"
        "  tokprof export sessions/ --prometheus /var/lib/node_exporter/textfile/tokprof.prom"
    )
)
def export(
    directory: Annotated[
        str, typer.Argument(metavar="DIR", help="A directory of sessions (any agent format tokprof reads).")
    ],
    endpoint: Annotated[
        Optional[str],
        typer.Option(
            "--endpoint", metavar="URL", help="Send a span per call to this OTLP HTTP traces endpoint (the otel extra)."
        ),
    ] = None,
    prometheus: Annotated[
        Optional[str],
        typer.Option(
            "--prometheus",
            metavar="FILE",
            help="Write Prometheus text exposition (for node_exporter's textfile collector).",
        ),
    ] = None,
    model: ModelName = None,
    price: Price = None,
    machine: Annotated[
        Optional[str], typer.Option("--machine", metavar="NAME", help="The machine, on every call.")
    ] = None,
    user: Annotated[Optional[str], typer.Option("--user", metavar="NAME", help="The person, on every call.")] = None,
    jobs: Annotated[
        Optional[int], typer.Option("--jobs", "-j", metavar="N", min=1, help="Processes to profile in.")
    ] = None,
    no_progress: NoProgress = False,
) -> int:
    """Per-call spans over OTLP, or metrics for Prometheus, from a directory of sessions."""
    from tokprof.runs.reports import prometheus_text, send_spans
    from tokprof.runs.sessions import profile_directory

    if not endpoint and not prometheus:
        raise TokprofError(f"{directory}: give --endpoint URL (OTLP) or --prometheus FILE, or both")
    if not os.path.isdir(directory) and "://" not in directory:
        raise TokprofError(f"{directory}: not a directory of sessions")
    run = replace(_run_options(model, no_progress=no_progress), jobs=jobs, prices=_user_prices(price), records=True)
    report = profile_directory(directory, replace(run, machine=machine, user=user))
    if prometheus:
        _write([(prometheus, prometheus_text(report))], (directory,))
    if endpoint:
        send_spans(report, endpoint)
    return EXIT_OK


@app.command(
    short_help="One line for Claude Code's status bar (its statusLine command).",
    epilog=_esc(
        'In ~/.claude/settings.json:\n\n  {"statusLine": {"type": "command", "command": "tokprof statusline"}}'
    ),
)
def statusline() -> int:
    """Read Claude Code's status line JSON on standard input and print one short line."""
    from tokprof.frontends.statusline import main as status

    print(status(sys.stdin.read()))
    return EXIT_OK


@app.command(
    short_help="Follow the sessions being written: context fill, buckets, cost, cache.",
    epilog=_esc(
        "Examples:\n\n  tokprof watch\n\n  tokprof watch ~/.claude/projects/my-project --json\n\n"
        "  tokprof watch --on-threshold 'notify-send tokprof context'"
    ),
)
def watch(
    paths: Annotated[
        Optional[list[str]],
        typer.Argument(
            metavar="[PATH]...", help="Session files or folders (default: Claude Code's and Codex's own folders)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line per new call, no live display.")] = False,
    on_threshold: Annotated[
        Optional[str],
        typer.Option(
            "--on-threshold",
            metavar="CMD",
            help="A command run (not through a shell) when a call crosses a threshold, "
            "with the figures in TOKPROF_* environment variables.",
        ),
    ] = None,
    thresholds: Annotated[
        str, typer.Option("--thresholds", metavar="P,Q", help="Fill thresholds in percent of the context window.")
    ] = "70,80",
    interval: Annotated[
        float, typer.Option("--interval", metavar="SECONDS", min=0.05, help="Seconds between reads.")
    ] = 0.5,
    model: Annotated[
        Optional[str],
        typer.Option(
            "--model", "-m", metavar="MODEL", help="The model that counts (default: from each call's model name)."
        ),
    ] = None,
) -> int:
    """Follow the sessions being written and show each one's newest call."""
    from tokprof.frontends import watch as watcher
    from tokprof.base.text import percentages

    watcher.watch(
        paths,
        thresholds=percentages(thresholds, "--thresholds"),
        as_json=as_json,
        on_threshold=on_threshold,
        interval=interval,
        model=model,
    )
    return EXIT_OK


@app.command(
    help=_esc(SERVE_HELP),
    short_help="Count prompts over a local HTTP endpoint (for harnesses in any language).",
    epilog=_esc(
        "Examples:\n\n  tokprof serve\n\n  tokprof serve --model qwen3 --model ./my-tokenizer --thresholds 60,75\n\n"
        "  TOKPROF_SERVE_TOKEN=s3cret tokprof serve --host 0.0.0.0"
    ),
)
def serve(
    host: Annotated[str, typer.Option("--host", metavar="ADDRESS", help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            "--port",
            metavar="PORT",
            min=0,
            max=65535,
            help="The port to listen on (0: any free port, printed at start).",
        ),
    ] = 8765,
    model: Annotated[
        Optional[list[str]],
        typer.Option(
            "--model",
            "-m",
            metavar="MODEL",
            help=_esc(
                "A model to load at start, repeatable; the first is the default for requests that name none "
                "(default: qwen2.5). Requests may also name any embedded model or a closed model (its proxy); "
                "directories and Hub ids only as --model."
            ),
        ),
    ] = None,
    token: Annotated[
        Optional[str],
        typer.Option(
            "--token",
            metavar="TOKEN",
            envvar="TOKPROF_SERVE_TOKEN",
            show_envvar=False,
            help="The token every request must carry (Authorization: Bearer TOKEN); required beyond the loopback "
            "interface. Also TOKPROF_SERVE_TOKEN, which other users of the machine cannot see in the process list.",
        ),
    ] = None,
    max_body: Annotated[
        int, typer.Option("--max-body", metavar="BYTES", min=1, help="The largest request body; larger ones get 413.")
    ] = 20 * 1024 * 1024,
    thresholds: Annotated[
        str,
        typer.Option(
            "--thresholds",
            metavar="P,Q",
            help="Fill thresholds in percent of the context window that answers report as "
            "crossed (a common compaction trigger and warning).",
        ),
    ] = "70,80",
    window: Annotated[
        Optional[int],
        typer.Option(
            "--window",
            metavar="N",
            min=1,
            help="The context window in tokens the fill is measured against (default: each model's).",
        ),
    ] = None,
    conversations: Annotated[
        int,
        typer.Option(
            "--conversations",
            metavar="N",
            min=1,
            help="Conversations kept for reuse at most (the least recently used are dropped first).",
        ),
    ] = 32,
    cache_memory: Annotated[
        int,
        typer.Option(
            "--cache-memory", metavar="MIB", min=1, help="Estimated memory the kept conversations may hold, in MiB."
        ),
    ] = 512,
    workers: Annotated[
        int, typer.Option("--workers", metavar="N", min=1, help="Processes that count, one request at a time each.")
    ] = 2,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            min=0.001,
            help="The time a count may take (waiting for a worker included) "
            "before its request gets 503 and its worker is restarted.",
        ),
    ] = 30.0,
    max_inflight: Annotated[
        int,
        typer.Option(
            "--max-inflight", metavar="N", min=1, help="Count requests read or counted at once; more get 503."
        ),
    ] = 32,
    max_inflight_bytes: Annotated[
        int,
        typer.Option(
            "--max-inflight-bytes",
            metavar="BYTES",
            min=1,
            help="The bodies of the requests in flight, in bytes, at most; more get 503.",
        ),
    ] = 64 * 1024 * 1024,
    read_timeout: Annotated[
        float,
        typer.Option(
            "--read-timeout",
            metavar="SECONDS",
            min=0.001,
            help="The time a request's head, then its body, may take to arrive.",
        ),
    ] = 10.0,
    max_connections: Annotated[
        int,
        typer.Option(
            "--max-connections",
            metavar="N",
            min=1,
            help="Open connections at most; beyond it the one idle longest is closed.",
        ),
    ] = 512,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No line per request on standard error.")] = False,
) -> int:
    """Count prompts over a local HTTP endpoint."""
    import importlib.util

    missing = [name for name in ("starlette", "uvicorn") if importlib.util.find_spec(name) is None]
    if missing:
        raise TokprofError(f"tokprof serve needs {' and '.join(missing)}: pip install 'tokprof[serve]'")
    from tokprof.frontends import serve as server

    server.check_bind(host, token)

    def ready(url: str) -> None:
        names = ", ".join(model or ["qwen2.5"])
        scope = "loopback only" if server.is_loopback(host) else "a token required"
        print(f"tokprof serve: counting with {names} on {url} ({scope}; Ctrl-C stops)", file=sys.stderr, flush=True)

    server.serve(
        host,
        port,
        quiet=quiet,
        on_ready=ready,
        models=model or (),
        token=token,
        max_body=max_body,
        thresholds=thresholds,
        window=window,
        cache_entries=conversations,
        cache_bytes=cache_memory * 1024 * 1024,
        workers=workers,
        timeout=timeout,
        max_inflight=max_inflight,
        max_inflight_bytes=max_inflight_bytes,
        read_timeout=read_timeout,
        max_connections=max_connections,
    )
    return EXIT_OK


from tokprof.frontends import mcp_cli as _mcp_cli  # noqa: E402  (it uses the helpers above)

app.command(
    name="mcp",
    help=_esc(_mcp_cli.MCP_HELP),
    epilog=_mcp_cli.EXAMPLES,
    short_help="What each configured MCP server's tools cost per request.",
)(_mcp_cli.mcp)


@app.command(
    context_settings={"allow_interspersed_args": False},
    short_help="Record every model call of an agent through a local proxy (tokprof[record]).",
    epilog=_esc(
        "Examples:\n\n  tokprof record -o recordings -- claude -p 'fix the tests'\n\n"
        "  tokprof record -o recordings --port 8766    (just serve; point the agent at it)\n\n"
        "See docs/record.md."
    ),
)
def record(
    command: Annotated[
        Optional[list[str]],
        typer.Argument(metavar="-- COMMAND [ARGS...]", help="The agent to run (without one: just serve)."),
    ] = None,
    output: Annotated[
        str, typer.Option("-o", "--output", metavar="DIR", help="The directory of recordings.")
    ] = "recordings",
    port: Annotated[
        int, typer.Option("--port", metavar="PORT", min=0, max=65535, help="The port on 127.0.0.1 (0: any free port).")
    ] = 0,
    upstream: Annotated[
        Optional[list[str]],
        typer.Option(
            "--upstream",
            metavar="[PROVIDER=]URL",
            help="Where calls go (default: the providers' public APIs); anthropic=URL or openai=URL for one.",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No line per call on standard error.")] = False,
) -> int:
    """Record every model call an agent makes through a local forwarding proxy."""
    import importlib.util

    missing = [name for name in ("httpx", "starlette", "uvicorn") if importlib.util.find_spec(name) is None]
    if missing:
        raise TokprofError(f"tokprof record needs {' and '.join(missing)}: pip install 'tokprof[record]'")
    from tokprof.frontends.record.run import record as run_record

    upstreams: dict[str, str] = {}
    for spec in upstream or []:
        provider, _, url = spec.partition("=") if spec.split("=", 1)[0] in ("anthropic", "openai") else ("", "", spec)
        for name in [provider] if provider else ["anthropic", "openai"]:
            upstreams[name] = url
    return run_record(output, command or [], port, upstreams, quiet)


from tokprof.frontends.collect import command as _collect_command  # noqa: E402

app.command(
    name="collect",
    help=_esc(_collect_command.HELP),
    epilog=_esc(_collect_command.EXAMPLES),
    short_help="Take agents' OpenTelemetry over OTLP/HTTP into Parquet tables (tokprof[collect]).",
)(_collect_command.collect)


# -- entry point ------------------------------------------------------------------------------
def _usage_line(exc: Exception, argv: list[str]) -> str:
    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    context = getattr(exc, "ctx", None)
    command = context.command_path if context is not None else "tokprof"
    command = re.sub(r"^\S+", "tokprof", command)
    return f"tokprof: error: {one_line(message)} (see '{command} --help')"


def main(argv: Optional[list[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or "-h" in args or "--help" in args:
        light_rich_help()
    only = command_named(app, args)
    registered = app.registered_commands
    if only is not None:
        app.registered_commands = [only]  # build only the command that runs (typer builds them all)
    try:
        result = app(args=args, prog_name="tokprof", standalone_mode=False)
    except TokprofError as exc:
        print(f"tokprof: error: {one_line(str(exc))}", file=sys.stderr)
        from tokprof.frontends.github import error_annotation

        command = error_annotation(str(exc))
        if command:  # a runner shows it on the pull request; nothing else went to standard output
            sys.stdout.write(command)
        return EXIT_USAGE
    except typer.Exit as exc:
        return int(getattr(exc, "exit_code", 0) or 0)
    except (KeyboardInterrupt, typer.Abort):
        print("tokprof: interrupted", file=sys.stderr)
        return 130
    except _CLICK_ERRORS as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare 'tokprof': the help (printed already), alone
            sys.stdout.write(str(exc))  # rich help printed itself and left the message empty
            return EXIT_OK
        print(_usage_line(exc, args), file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # the reader went away (tokprof profile LOG | head): nothing left to say
        from tokprof.frontends.stdout import quiet_stdout

        quiet_stdout()
        return EXIT_FAIL
    except MemoryError:
        print(
            "tokprof: error: out of memory: the log, or one of its prompts, is too large for this machine",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except OSError as exc:  # standard output on a full device, a closed terminal
        if exc.filename is not None:
            raise
        from tokprof.frontends.stdout import write_failed

        return write_failed(exc)
    finally:
        app.registered_commands = registered
    return result if isinstance(result, int) else EXIT_OK


def entry() -> None:
    """The console script."""
    raise SystemExit(main())
