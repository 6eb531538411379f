"""The command line: parse options, wire the stages, report errors in one line."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from tokprof import __version__
from tokprof.errors import TokprofError

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2

LOG_HELP = (
    "an agent log: OpenAI Chat Completions (a transcript, request records or captured request/response "
    "pairs), Anthropic Messages captures (claude-trace and proxy logs), OpenAI Responses API captures, an "
    "Inspect AI log (.json or .eval), a Claude Code transcript or a Codex CLI rollout; the format is detected "
    "(see --input-format)"
)


def one_line(text: str) -> str:
    """Text from the log (names, error types) can hold line breaks: keep a message on one line."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit code 2, like every other error
        print(f"tokprof: error: {message} (see '{self.prog} --help')", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _input_options(parser: argparse.ArgumentParser) -> None:
    from tokprof.formats import FORMATS

    parser.add_argument(
        "--input-format", "-i", choices=FORMATS, metavar="NAME",
        help="the log's format, instead of detecting it: " + ", ".join(FORMATS),
    )


def _model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", "-m",
        help="qwen2.5 or qwen3 (embedded, exact, offline); openai-proxy or claude-proxy (estimates for closed "
        "models, scaled to reported usage); a directory with tokenizer.json and tokenizer_config.json; or a "
        "Hugging Face Hub id (from the HF cache; downloaded only if reachable). Default: chosen from the model "
        "the log names (GPT and o-series: openai-proxy; Claude: claude-proxy; Qwen3: qwen3; Qwen or none: "
        "qwen2.5; any other: qwen2.5 as a labelled stand-in, its counts estimates)",
    )
    parser.add_argument("--chat-template", metavar="FILE", help="use this Jinja chat template instead of the model's")


def _supply_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tools", metavar="FILE", dest="tools_file",
        help="the tool definitions, for a log that does not record them (Claude Code, Codex): a JSON list "
        "(OpenAI, Anthropic or MCP tools/list)",
    )
    parser.add_argument(
        "--system", metavar="FILE", help="the system prompt, for a log that does not record it (Claude Code)"
    )


def _output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", "-f", choices=["table", "json", "csv"], default="table", help="output format (default: table)"
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE instead of standard output")
    parser.add_argument("--no-progress", action="store_true", help="never show a progress bar")


def _html_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--window", type=int, metavar="N", help="context window in tokens (default: the model's)")
    parser.add_argument(
        "--fill-lines", metavar="P,Q", default="70,80",
        help="context-window fill lines, in percent (default: 70,80: a common compaction trigger and warning level)",
    )


def _html(args: argparse.Namespace, profile, model, path: str) -> None:
    from tokprof.render.html import HtmlRenderer

    try:
        levels = tuple(float(p) / 100 for p in args.fill_lines.split(",") if p.strip())
    except ValueError:
        levels = ()
    if not levels or not all(0 < level <= 1 for level in levels):
        raise TokprofError(f"--fill-lines: expected percentages from 1 to 100 like 70,80, found {args.fill_lines!r}")
    if args.window is not None and args.window <= 0:
        raise TokprofError(f"--window: expected a positive number of tokens, found {args.window}")
    window = args.window or model.context_window or 131072
    _write_output(HtmlRenderer(window=window, levels=levels).render(profile), path)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tokprof",
        description="Where do my prompt tokens go? Re-render every model call of an agent log with the "
        "model's own chat template and attribute each token to system, tool definitions, tool results "
        "or conversation.",
    )
    parser.add_argument("--version", action="version", version=f"tokprof {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    profile = commands.add_parser(
        "profile",
        help="four buckets per call, and the billed input over the run",
        description="Profile an agent log: every call's prompt split into system, tool definitions, tool "
        "results and conversation, the billed input over the run, and the tool catalogue's cost.",
    )
    profile.add_argument("log", metavar="LOG", help=LOG_HELP + "; or a directory of Claude Code or Codex sessions")
    _input_options(profile)
    _supply_options(profile)
    profile.add_argument(
        "--session", metavar="ID",
        help="with a directory: profile the one session whose id or file name is or contains ID, call by call",
    )
    _model_options(profile)
    _output_options(profile)

    profile.add_argument("--html", metavar="FILE", help="also write the HTML report to FILE")
    _html_options(profile)

    report = commands.add_parser(
        "report",
        help="write a self-contained HTML report of a log (plotly, opens offline)",
        description="Write one self-contained HTML file: the summary, the four buckets per call with the billed "
        "input, the tool catalogue, the context-window fill and, with reported usage, computed versus reported.",
    )
    report.add_argument("log", metavar="LOG", help=LOG_HELP)
    _input_options(report)
    _supply_options(report)
    _model_options(report)
    report.add_argument("-o", "--output", metavar="FILE", required=True, help="the HTML file to write")
    report.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    _html_options(report)

    tools = commands.add_parser(
        "tools",
        help="what each tool definition costs per request, and what unused tools wasted",
        description="Price a tool catalogue: its cost per request, the scaffolding a template adds for tools, "
        "each tool's marginal cost, and, from a log, how often each tool was carried and called.",
    )
    tools.add_argument("log", metavar="LOG", nargs="?", help=LOG_HELP)
    _input_options(tools)
    tools.add_argument(
        "--tools", metavar="FILE", dest="tools_file",
        help="a JSON list of tool definitions (OpenAI, Anthropic or MCP tools/list): without a LOG, price it alone "
        "(static mode); with a LOG that does not record its tools (Claude Code, Codex), supply them",
    )
    tools.add_argument(
        "--system", metavar="FILE",
        help="a system prompt: to render static tools with, or for a LOG that does not record it (Claude Code)",
    )
    _model_options(tools)
    _output_options(tools)

    check = commands.add_parser(
        "check",
        help="fail a build when prompt or tool-catalogue tokens go over budget or regress",
        description="Check a log, or a tool catalogue, against the budgets in [tool.tokprof.budgets] of "
        "pyproject.toml or in tokprof.toml (found by walking up from the working directory), and against a "
        "committed baseline. Metrics: tool_definitions, system_prompt, first_prompt, largest_prompt, "
        "billed_input, largest_tool, unused_tool_waste. Settings: model, chat_template, baseline (default "
        "tokprof-baseline.json next to the configuration), max_increase, and [budgets] with metric = max or "
        "{max, level = error|warn, max_increase}. With GITHUB_STEP_SUMMARY set the Markdown report is appended "
        "to it; with GITHUB_ACTIONS=true failures are also printed as ::error:: annotations. Exit codes: 0 pass "
        "(warnings allowed), 1 a budget or the baseline failed, 2 bad input or configuration.",
    )
    check.add_argument("log", metavar="LOG", nargs="?", help=LOG_HELP)
    _input_options(check)
    check.add_argument(
        "--tools", metavar="FILE", dest="tools_file",
        help="check a tool catalogue instead of a log; with a LOG that does not record its tools, supply them",
    )
    check.add_argument("--system", metavar="FILE", help="the system prompt, with --tools or for a LOG that does not record it")
    _model_options(check)
    check.set_defaults(model=None)
    check.add_argument("--config", metavar="FILE", help="the configuration file (default: found from the working directory)")
    check.add_argument("--baseline", metavar="FILE", help="the baseline JSON to compare with (default: from the configuration)")
    check.add_argument("--update-baseline", action="store_true", help="write the measured values as the new baseline")
    check.add_argument(
        "--format", "-f", choices=["table", "markdown", "json"], default="table", help="output format (default: table)"
    )
    check.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE instead of standard output")
    check.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    return parser


def _write_output(text: str, path: str | None) -> None:
    """Standard output, or a file written atomically (a FIFO or device such as /dev/stdout is written through)."""
    if path is None:
        sys.stdout.write(text)
        return
    write_file(path, text.encode("utf-8"))


def write_file(path: str, data: bytes) -> None:
    from pathlib import Path

    from tokprof.cache import write_atomic

    target = Path(path)
    try:
        if target.is_dir():
            raise TokprofError(f"{path}: is a directory")
        if target.exists() and not target.is_file():
            with open(target, "wb") as f:
                f.write(data)
            return
        target = target.resolve()  # write to what a symlink points at, not over the link
        if not target.parent.is_dir():
            raise TokprofError(f"{path}: no such directory: {target.parent}")
        write_atomic(target, data, make_parents=False)
    except OSError as exc:
        raise TokprofError(f"{path}: cannot write: {exc.strerror}") from None


def _color(args: argparse.Namespace) -> bool:
    return args.format == "table" and args.output is None and sys.stdout.isatty() and "NO_COLOR" not in os.environ


def _profile(args: argparse.Namespace, trace, model):
    """Run the profile stage, with a progress bar on a terminal."""
    from tokprof.attribution import RenderError
    from tokprof.profile import profile_trace

    try:
        with _progress_bar(args, len(trace.calls), "profiling calls") as advance:
            return profile_trace(trace, model, on_call=lambda _: advance())
    except RenderError as exc:
        raise TokprofError(f"{trace.path}: {exc}") from None


def _tools_report(trace, model, billed_input):
    from tokprof.analyses.tools import tools_report

    try:
        return tools_report(trace, model, billed_input)
    except Exception as exc:  # a template failing on the isolated catalogue prompt (system + empty user)
        raise TokprofError(f"{trace.path}: the chat template failed on the tool catalogue alone: {exc}") from None


def _static(model, tools, system, path):
    from tokprof.analyses.tools import static_report

    try:
        return static_report(model, tools, system, path)
    except Exception as exc:  # a template failing on the catalogue prompt (system + empty user)
        raise TokprofError(f"{path}: the chat template failed on the tool catalogue: {exc}") from None


def _billed_before_scaling(profile) -> int:
    """The billed input in the units of the tool catalogue's counts: an estimate's catalogue is the
    proxy's own count, so its share of the run is taken of the proxy's billed input, not the scaled one."""
    return sum(row.rendered for row in profile.calls)


def _catalogue_section(profile, trace, model) -> None:
    """Add the catalogue to a profile; a template that cannot price it costs a warning, not the profile."""
    try:
        profile.catalogue = _tools_report(trace, model, _billed_before_scaling(profile)).summary_section()
    except TokprofError as exc:
        profile.warnings.append({"code": "catalogue-unpriced", "message": str(exc), "calls": []})


def _supply(args: argparse.Namespace, trace, path: str) -> None:
    """Give the trace the tools and system prompt named by --tools and --system."""
    from tokprof.formats.toolsfile import read_system_file, read_tools_file
    from tokprof.trace import supply

    tools = read_tools_file(args.tools_file) if args.tools_file else None
    system = read_system_file(args.system) if args.system else None
    try:
        supply(trace, tools, system)
    except ValueError as exc:
        raise TokprofError(f"{path}: {exc}") from None


def _read_log(args: argparse.Namespace, model_name: str | None, chat_template: str | None):
    """The log's trace, and the model: the one named, or one chosen from the model names in the log."""
    from tokprof.formats import read_trace
    from tokprof.models import resolve_model

    trace = read_trace(args.log, args.input_format)
    if getattr(args, "tools_file", None) or getattr(args, "system", None):
        _supply(args, trace, args.log)
    log_models = [trace.model] + [call.model for call in trace.calls]
    return trace, resolve_model(model_name, chat_template, log_models=log_models)


def _run_profile(args: argparse.Namespace) -> int:
    from tokprof.render import RENDERERS

    if os.path.isdir(args.log):
        if args.session is None:
            return _run_sessions(args)
        args.log = _pick_session(args.log, args.session)
    elif args.session is not None:
        raise TokprofError(f"{args.log}: --session picks a session in a directory, and this is a file")
    trace, model = _read_log(args, args.model, args.chat_template)
    profile = _profile(args, trace, model)
    _catalogue_section(profile, trace, model)
    text = RENDERERS[args.format]().render(profile, color=_color(args))
    if args.html:
        _html(args, profile, model, args.html)
    _write_output(text, args.output)
    return EXIT_OK


def _pick_session(directory: str, wanted: str) -> str:
    """The session file in a directory whose name or session id is (or starts with) ``wanted``."""
    from tokprof.formats import read_trace, session_files

    files = session_files(directory)
    matches = [path for _, path in files if path.stem == wanted or wanted in path.stem]
    if not matches:
        for name, path in files:
            try:
                if (read_trace(str(path), name).session or "").startswith(wanted):
                    matches.append(path)
            except TokprofError:
                continue
    if len(matches) != 1:
        found = "no session" if not matches else f"{len(matches)} sessions ({', '.join(p.name for p in matches[:5])})"
        raise TokprofError(f"{directory}: --session {wanted}: {found} match")
    return str(matches[0])


def _run_sessions(args: argparse.Namespace) -> int:
    """A directory of sessions: a summary row per session, and the totals."""
    import dataclasses
    from pathlib import Path

    from tokprof.analyses.sessions import SessionRow, SessionsReport
    from tokprof.attribution import RenderError
    from tokprof.formats import SESSION_FORMATS, read_trace, session_files
    from tokprof.models import auto_model, label, resolve_model
    from tokprof.profile import profile_trace
    from tokprof.render.sessions import SESSION_RENDERERS

    if args.html:
        raise TokprofError(f"{args.log}: --html needs one session: add --session ID")
    files = session_files(args.log)
    if args.input_format is not None:
        if args.input_format not in SESSION_FORMATS:
            raise TokprofError(f"{args.log}: a directory holds sessions of {' or '.join(SESSION_FORMATS)}, "
                               f"not {args.input_format}")
        files = [(name, path) for name, path in files if name == args.input_format]
    if not files:
        raise TokprofError(f"{args.log}: no Claude Code or Codex session files in this directory")
    report = SessionsReport(directory=args.log, model={})
    models: dict = {}
    seen_calls: set[str] = set()
    for name, path in _progress(args, files, "profiling sessions"):
        try:
            trace = read_trace(str(path), name)
            _count_once(trace, seen_calls)
            if args.tools_file or args.system:
                _supply(args, trace, str(path))
            if args.model:
                wanted, selected = args.model, None
            else:
                wanted, selected = auto_model([trace.model] + [c.model for c in trace.calls])
            if wanted not in models:  # load each model once; label it per session
                models[wanted] = resolve_model(wanted, args.chat_template)
            model = label(dataclasses.replace(models[wanted]), selected)
            report.model[model.name] = {k: v for k, v in model.describe().items() if k not in ("method", "selected")}
            profile = profile_trace(trace, model)
        except TokprofError as exc:
            report.skipped.append({"path": str(path), "error": str(exc)})
            continue
        except RenderError as exc:  # the template failed on one session: skip it, say why
            report.skipped.append({"path": str(path), "error": f"{path}: {exc}"})
            continue
        try:
            shown = str(Path(path).relative_to(args.log))
        except ValueError:
            shown = str(path)
        report.sessions.append(SessionRow.from_profile(profile, trace.session or Path(path).stem, shown))
    if not report.sessions:
        raise TokprofError(f"{args.log}: no session could be read; first: {report.skipped[0]['error']}")
    _write_output(SESSION_RENDERERS[args.format]().render(report, color=_color(args)), args.output)
    return EXIT_OK


def _count_once(trace, seen: set[str]) -> None:
    """Leave out calls already counted in another session file (Claude Code copies a resumed session's
    calls into the new transcript): each provider request id is counted once in a directory."""
    kept = []
    for call in trace.calls:
        if call.request_id is not None and call.request_id in seen:
            trace.note("duplicate-call", "a model call already counted in another session file is counted once "
                       "(a resumed or copied session)", call.where)
            continue
        if call.request_id is not None:
            seen.add(call.request_id)
        kept.append(call)
    if not kept and trace.calls:
        raise TokprofError(f"{trace.path}: every call is already counted in another session file")
    for index, call in enumerate(kept):
        call.index = index
    trace.calls = kept


@contextlib.contextmanager
def _progress_bar(args: argparse.Namespace, total: int, label: str):
    """A progress bar on standard error when it is a terminal (and there is more than one step):
    yields the function that advances it by one step."""
    if args.no_progress or not sys.stderr.isatty() or total < 2:
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(
        "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        console=Console(stderr=True), transient=True,
    ) as progress:
        task = progress.add_task(label, total=total)
        yield lambda: progress.advance(task)


def _progress(args: argparse.Namespace, items: list, label: str):
    """Iterate with a progress bar on a terminal."""
    with _progress_bar(args, len(items), label) as advance:
        for item in items:
            yield item
            advance()


def _run_report(args: argparse.Namespace) -> int:
    trace, model = _read_log(args, args.model, args.chat_template)
    profile = _profile(args, trace, model)
    _catalogue_section(profile, trace, model)
    _html(args, profile, model, args.output)
    print(f"tokprof: wrote {args.output}", file=sys.stderr)
    return EXIT_OK


def _log_or_tools(args: argparse.Namespace) -> None:
    """``tools`` and ``check`` take a log (with --tools and --system supplying what it does not record),
    or a tools file with an optional system prompt."""
    if args.log is None and args.tools_file is None:
        raise TokprofError(f"{args.command}: give a LOG or --tools FILE")
    if args.log is None and args.system and not args.tools_file:
        raise TokprofError(f"{args.command}: --system goes with --tools or a LOG")


def _run_tools(args: argparse.Namespace) -> int:
    from tokprof.models import DEFAULT_MODEL, resolve_model
    from tokprof.render.tools import ToolsCsvRenderer, ToolsJsonRenderer, ToolsTableRenderer

    _log_or_tools(args)
    if args.log is None:
        from tokprof.formats.toolsfile import read_system_file, read_tools_file

        tools = read_tools_file(args.tools_file)
        system = read_system_file(args.system) if args.system else None
        model = resolve_model(args.model or DEFAULT_MODEL, args.chat_template)
        report = _static(model, tools, system, args.tools_file)
    else:
        trace, model = _read_log(args, args.model, args.chat_template)
        profile = _profile(args, trace, model)
        report = _tools_report(trace, model, _billed_before_scaling(profile))
    renderer = {"table": ToolsTableRenderer, "json": ToolsJsonRenderer, "csv": ToolsCsvRenderer}[args.format]()
    _write_output(renderer.render(report, color=_color(args)), args.output)
    return EXIT_OK


def _run_check(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tokprof.analyses.budgets import evaluate, load_baseline, measure
    from tokprof.config import Config, ConfigError, find_config, load_file
    from tokprof.models import DEFAULT_MODEL, resolve_model
    from tokprof.render.check import (
        CheckJsonRenderer, CheckMarkdownRenderer, CheckTableRenderer, github_annotations,
    )

    _log_or_tools(args)
    if args.config:
        if not Path(args.config).is_file():
            raise ConfigError(f"{args.config}: no such configuration file")
        config = load_file(Path(args.config))
    else:
        config = find_config(Path.cwd()) or Config()
    base_dir = Path(config.path).parent if config.path else Path.cwd()

    def relative(path: str | None) -> str | None:
        if path is None or Path(path).is_absolute():
            return path
        return str(base_dir / path) if config.path else path

    chat_template = args.chat_template or relative(config.chat_template)
    if args.log is None:
        from tokprof.formats.toolsfile import read_system_file, read_tools_file

        model = resolve_model(args.model or config.model or DEFAULT_MODEL, chat_template)
        tools = read_tools_file(args.tools_file)
        system = read_system_file(args.system) if args.system else None
        report = _static(model, tools, system, args.tools_file)
        profile = None
        try:
            system_tokens = _static_system_tokens(model, tools, system)
        except Exception as exc:
            raise TokprofError(f"{args.tools_file}: the chat template failed: {exc}") from None
        source = args.tools_file
    else:
        trace, model = _read_log(args, args.model or config.model, chat_template)
        profile = _profile(args, trace, model)
        report = _tools_report(trace, model, _billed_before_scaling(profile))
        system_tokens = profile.calls[0].buckets["system"] if profile.calls else 0
        source = args.log
    measurement = measure(report, profile, system_tokens, source)

    baseline_path = args.baseline or relative(config.baseline)
    if baseline_path is None and (args.update_baseline or Path(relative("tokprof-baseline.json")).is_file()):
        baseline_path = relative("tokprof-baseline.json")  # the default, next to the configuration
    baseline = None
    notes = []
    if args.update_baseline:
        import json as _json

        target = Path(baseline_path)
        write_file(str(target), (_json.dumps(measurement.baseline_dict(), indent=2) + "\n").encode())
        notes.append(f"baseline written to {target}")
    elif baseline_path:
        if Path(baseline_path).is_file():
            baseline = load_baseline(baseline_path, measurement)
        elif args.baseline:
            raise ConfigError(f"{baseline_path}: no such baseline file")
        else:
            notes.append(f"no baseline at {baseline_path} yet: make one with --update-baseline")
    if not config.budgets and baseline is None and not args.update_baseline:
        raise ConfigError(
            "no budgets to check: add [tool.tokprof.budgets] to pyproject.toml (or a tokprof.toml), "
            "pass --config FILE, or compare with --baseline FILE"
        )
    if baseline is not None and config.max_increase is None:
        notes.append("no global max_increase: a metric without its own fails on any increase over the baseline")
    result = evaluate(config, measurement, baseline, baseline_path if baseline is not None else None)
    result.notes = notes + result.notes
    renderer = {"table": CheckTableRenderer, "markdown": CheckMarkdownRenderer, "json": CheckJsonRenderer}[args.format]()
    _write_output(renderer.render(result, color=_color(args)), args.output)
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        try:
            with open(summary_file, "a", encoding="utf-8") as f:
                f.write(CheckMarkdownRenderer().render(result))
        except OSError as exc:
            print(f"tokprof: warning: cannot append to GITHUB_STEP_SUMMARY: {exc.strerror}", file=sys.stderr)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        # workflow commands go to standard output, unless the JSON report is there
        stream = sys.stderr if args.format == "json" and args.output is None else sys.stdout
        stream.write(github_annotations(result))
    return result.exit_code


def _static_system_tokens(model, tools, system) -> int:
    """The system bucket of a one-turn prompt with the catalogue: what the system prompt costs."""
    from tokprof.attribution import Attributor
    from tokprof.trace import Call

    messages = ([{"role": "system", "content": system}] if system is not None else []) + [
        {"role": "user", "content": ""}
    ]
    return Attributor(model).attribute(Call(index=0, messages=messages, tools=tools, where="static")).system


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        if args.command == "profile":
            return _run_profile(args)
        if args.command == "tools":
            return _run_tools(args)
        if args.command == "check":
            return _run_check(args)
        if args.command == "report":
            return _run_report(args)
    except TokprofError as exc:
        print(f"tokprof: error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("tokprof: interrupted", file=sys.stderr)
        return 130
    return EXIT_USAGE
