"""The command line: parse options, wire the stages, report errors in one line."""

from __future__ import annotations

import argparse
import os
import sys

from tokprof import __version__
from tokprof.errors import TokprofError

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2

LOG_HELP = (
    'an agent log: an OpenAI Chat Completions transcript ({"model", "tools", "messages"}: every assistant '
    'message is one call) or a JSON list / JSONL file of request records ({"model", "messages", "tools", '
    '"usage"}: one record per call)'
)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit code 2, like every other error
        self.print_usage(sys.stderr)
        print(f"tokprof: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", "-m", default="qwen2.5",
        help="qwen2.5 (default) or qwen3 (embedded, offline), a directory with tokenizer.json and "
        "tokenizer_config.json, or a Hugging Face Hub id (from the HF cache; downloaded only if reachable)",
    )
    parser.add_argument("--chat-template", metavar="FILE", help="use this Jinja chat template instead of the model's")


def _output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", "-f", choices=["table", "json", "csv"], default="table", help="output format (default: table)"
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE instead of standard output")
    parser.add_argument("--no-progress", action="store_true", help="never show a progress bar")


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
    profile.add_argument("log", metavar="LOG", help=LOG_HELP)
    _model_options(profile)
    _output_options(profile)

    tools = commands.add_parser(
        "tools",
        help="what each tool definition costs per request, and what unused tools wasted",
        description="Price a tool catalogue: its cost per request, the scaffolding a template adds for tools, "
        "each tool's marginal cost, and, from a log, how often each tool was carried and called.",
    )
    tools.add_argument("log", metavar="LOG", nargs="?", help=LOG_HELP)
    tools.add_argument(
        "--tools", metavar="FILE", dest="tools_file",
        help="static mode, no log: a JSON list of tool definitions (OpenAI, Anthropic or MCP tools/list)",
    )
    tools.add_argument("--system", metavar="FILE", help="static mode: a system prompt to render the tools with")
    _model_options(tools)
    _output_options(tools)
    return parser


def _write_output(text: str, path: str | None) -> None:
    if path is None:
        sys.stdout.write(text)
        return
    from pathlib import Path

    from tokprof.cache import write_atomic

    try:
        write_atomic(Path(path), text.encode("utf-8"))
    except OSError as exc:
        raise TokprofError(f"{path}: cannot write output: {exc.strerror}") from None


def _color(args: argparse.Namespace) -> bool:
    return args.format == "table" and args.output is None and sys.stdout.isatty() and "NO_COLOR" not in os.environ


def _profile(args: argparse.Namespace, trace, model):
    """Run the profile stage, with a progress bar on a terminal."""
    from tokprof.attribution import RenderError
    from tokprof.profile import profile_trace

    show_progress = not args.no_progress and sys.stderr.isatty() and len(trace.calls) > 1
    try:
        if not show_progress:
            return profile_trace(trace, model)
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

        with Progress(
            "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
            console=Console(stderr=True), transient=True,
        ) as progress:
            task = progress.add_task("profiling calls", total=len(trace.calls))
            return profile_trace(trace, model, on_call=lambda _: progress.advance(task))
    except RenderError as exc:
        raise TokprofError(f"{trace.path}: {exc}") from None


def _tools_report(trace, model, billed_input):
    from tokprof.analyses.tools import tools_report

    try:
        return tools_report(trace, model, billed_input)
    except Exception as exc:  # a template failing on the isolated catalogue prompt
        import jinja2

        if isinstance(exc, jinja2.TemplateError):
            raise TokprofError(f"{trace.path}: the chat template failed on the tool catalogue: {exc}") from None
        raise


def _run_profile(args: argparse.Namespace) -> int:
    from tokprof.formats import read_trace
    from tokprof.models import resolve_model
    from tokprof.render import RENDERERS

    trace = read_trace(args.log)
    model = resolve_model(args.model, args.chat_template)
    profile = _profile(args, trace, model)
    report = _tools_report(trace, model, profile.summary()["billed_input"])
    profile.catalogue = report.summary_section()
    _write_output(RENDERERS[args.format]().render(profile, color=_color(args)), args.output)
    return EXIT_OK


def _run_tools(args: argparse.Namespace) -> int:
    from tokprof.models import resolve_model
    from tokprof.render.tools import ToolsCsvRenderer, ToolsJsonRenderer, ToolsTableRenderer

    if (args.log is None) == (args.tools_file is None):
        raise TokprofError("tools: give either a LOG or --tools FILE")
    if args.system and not args.tools_file:
        raise TokprofError("tools: --system goes with --tools (a log carries its own system prompt)")
    if args.tools_file:
        from tokprof.analyses.tools import static_report
        from tokprof.formats.toolsfile import read_system_file, read_tools_file

        tools = read_tools_file(args.tools_file)
        system = read_system_file(args.system) if args.system else None
        model = resolve_model(args.model, args.chat_template)
        report = static_report(model, tools, system, args.tools_file)
    else:
        from tokprof.formats import read_trace

        trace = read_trace(args.log)
        model = resolve_model(args.model, args.chat_template)
        profile = _profile(args, trace, model)
        report = _tools_report(trace, model, profile.summary()["billed_input"])
    renderer = {"table": ToolsTableRenderer, "json": ToolsJsonRenderer, "csv": ToolsCsvRenderer}[args.format]()
    _write_output(renderer.render(report, color=_color(args)), args.output)
    return EXIT_OK


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
    except TokprofError as exc:
        print(f"tokprof: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("tokprof: interrupted", file=sys.stderr)
        return 130
    return EXIT_USAGE
