"""The command line: parse options, wire the stages, report errors in one line."""

from __future__ import annotations

import argparse
import os
import sys

from tokprof import __version__
from tokprof.errors import TokprofError

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tokprof",
        description="Where do my prompt tokens go? Re-render every model call of an agent log with the "
        "model's own chat template and attribute each token to system, tool definitions, tool results "
        "or conversation.",
    )
    parser.add_argument("--version", action="version", version=f"tokprof {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    profile = commands.add_parser(
        "profile",
        help="profile an agent log: four buckets per call, billed input over the run",
        description="Profile an agent log. LOG is an OpenAI Chat Completions transcript "
        '({"model", "tools", "messages"}: every assistant message is one call) or a JSON list / JSONL '
        'file of request records ({"model", "messages", "tools", "usage"}: one record per call).',
    )
    profile.add_argument("log", metavar="LOG", help="the agent log to profile")
    profile.add_argument(
        "--model", "-m", default="qwen2.5",
        help="qwen2.5 (default) or qwen3 (embedded, offline), a directory with tokenizer.json and "
        "tokenizer_config.json, or a Hugging Face Hub id (from the HF cache; downloaded only if reachable)",
    )
    profile.add_argument("--chat-template", metavar="FILE", help="use this Jinja chat template instead of the model's")
    profile.add_argument("--format", "-f", choices=["table", "json", "csv"], default="table", help="output format (default: table)")
    profile.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE instead of standard output")
    profile.add_argument("--no-progress", action="store_true", help="never show a progress bar")
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


def _run_profile(args: argparse.Namespace) -> int:
    from tokprof.attribution import RenderError
    from tokprof.formats import read_trace
    from tokprof.models import resolve_model
    from tokprof.profile import profile_trace
    from tokprof.render import RENDERERS

    trace = read_trace(args.log)
    model = resolve_model(args.model, args.chat_template)
    show_progress = not args.no_progress and sys.stderr.isatty() and len(trace.calls) > 1
    try:
        if show_progress:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

            with Progress(
                "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                console=Console(stderr=True), transient=True,
            ) as progress:
                task = progress.add_task("profiling calls", total=len(trace.calls))
                profile = profile_trace(trace, model, on_call=lambda _: progress.advance(task))
        else:
            profile = profile_trace(trace, model)
    except RenderError as exc:
        raise TokprofError(f"{args.log}: {exc}") from None
    renderer = RENDERERS[args.format]()
    color = args.format == "table" and args.output is None and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    _write_output(renderer.render(profile, color=color), args.output)
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
    except TokprofError as exc:
        print(f"tokprof: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("tokprof: interrupted", file=sys.stderr)
        return 130
    return EXIT_USAGE
